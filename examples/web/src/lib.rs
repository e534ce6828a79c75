//! An object detector's post-processing on WebGPU, in a web page: the page fetches a
//! detector's decoded boxes and class scores, [`detect`] keeps the best boxes on the device
//! (score threshold, non-maximum suppression per class, top-k) and reads them back with the
//! async reads, and the page draws them. Build and open it as README.md's "Browsers" section
//! says.

mod detections;
mod postprocess;

use std::cell::RefCell;

use burn::tensor::Device;
use wasm_bindgen::prelude::*;

pub use detections::Detections;
pub use postprocess::{Kept, Settings, keep_best};

thread_local! {
    /// The page's WebGPU device, requested on the first call.
    static DEVICE: RefCell<Option<Device>> = const { RefCell::new(None) };
}

/// Keeps the best boxes of `detections` (the JSON of `www/detections.json`) and returns them
/// as JSON: `{"device", "kept": [{"class", "label", "index", "score", "box"}]}`, best first.
///
/// # Errors
///
/// No WebGPU device, a malformed file, or an operator's error, as a JavaScript exception.
#[wasm_bindgen]
pub async fn detect(detections: String) -> Result<String, JsValue> {
    let device = match DEVICE.with(|device| device.borrow().clone()) {
        Some(device) => device,
        None => {
            let device = Device::wgpu_options()
                .init_async()
                .await
                .map_err(|err| JsValue::from_str(&format!("no WebGPU device: {err}")))?;
            DEVICE.with(|slot| *slot.borrow_mut() = Some(device.clone()));
            device
        }
    };
    let detections = Detections::parse(&detections).map_err(|err| JsValue::from_str(&err))?;
    let kept = keep_best(&device, &detections, &Settings::default())
        .await
        .map_err(|err| JsValue::from_str(&err))?;
    web_sys::console::log_1(
        &format!("kept {} of {} boxes", kept.len(), detections.boxes.len()).into(),
    );
    Ok(serde_json::json!({
        "device": format!("{device:?}"),
        "kept": postprocess::to_json(&kept, &detections),
    })
    .to_string())
}
