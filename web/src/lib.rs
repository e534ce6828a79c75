//! The browser suite: every operator run on WebGPU in a page, as a browser application runs it
//! (wasm32, wgpu inside Fusion, every read async), each result compared with the Flex reference
//! compiled into the same wasm, on the spec's examples, error paths and seeded random inputs of
//! up to 2^22 elements.
//!
//! `www/index.html` calls [`run_suite`] and leaves the report on the page; `run.mjs` serves the
//! page on 127.0.0.1 and drives headless Chromium and Firefox through it (see CONTRIBUTING.md).

mod checks;
mod device;
mod inputs;
mod report;

use wasm_bindgen::prelude::*;

pub use device::Limits;
pub use report::Report;

/// Runs every check on a WebGPU device with the adapter's limits (`"adapter"`) or WebGPU's
/// default limits (`"default"`) and returns the report as JSON: the adapter, and each check's
/// name, outcome and detail. Each check's name goes to the console before it runs, so that a
/// page that dies names the check it died in.
///
/// # Errors
///
/// An unknown `limits`, or no WebGPU device.
#[wasm_bindgen]
pub async fn run_suite(limits: String) -> Result<String, JsValue> {
    report::log_panics();
    let limits = Limits::parse(&limits).map_err(|err| JsValue::from_str(&err))?;
    let gpu = device::webgpu(limits)
        .await
        .map_err(|err| JsValue::from_str(&err))?;
    let mut report = Report::new(format!("{gpu:?} at {limits:?} limits"));
    checks::run_all(&gpu, &mut report).await;
    Ok(report.to_json())
}
