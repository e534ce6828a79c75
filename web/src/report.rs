//! What the suite found: each check's name, outcome and detail, and the comparisons that decide
//! them.

use burn::tensor::{DType, TensorData};
use serde_json::json;

/// One check's outcome.
struct Outcome {
    name: String,
    passed: bool,
    detail: String,
}

/// Every check's outcome, in the order they ran, on the device `device`.
pub struct Report {
    device: String,
    outcomes: Vec<Outcome>,
}

impl Report {
    /// An empty report for the device described by `device`.
    pub fn new(device: String) -> Self {
        Self {
            device,
            outcomes: Vec::new(),
        }
    }

    /// Says on the console that check `name` starts: the last such line names the check a dead
    /// page died in.
    pub fn start(&self, name: &str) {
        log(&format!("start: {name}"));
    }

    /// Records check `name` as passed, or failed with the message of `result`.
    pub fn record(&mut self, name: &str, result: Result<(), String>) {
        let (passed, detail) = match result {
            Ok(()) => (true, String::new()),
            Err(detail) => (false, detail),
        };
        log(&format!(
            "{}: {name}{}{detail}",
            if passed { "pass" } else { "FAIL" },
            if passed { "" } else { ": " }
        ));
        self.outcomes.push(Outcome {
            name: name.to_string(),
            passed,
            detail,
        });
    }

    /// The checks that passed and those that failed.
    pub fn counts(&self) -> (usize, usize) {
        let passed = self.outcomes.iter().filter(|o| o.passed).count();
        (passed, self.outcomes.len() - passed)
    }

    /// The report as JSON: `{"device", "passed", "failed", "checks": [{"name", "passed",
    /// "detail"}]}`.
    pub fn to_json(&self) -> String {
        let (passed, failed) = self.counts();
        let checks: Vec<_> = self
            .outcomes
            .iter()
            .map(|o| json!({"name": o.name, "passed": o.passed, "detail": o.detail}))
            .collect();
        json!({
            "device": self.device,
            "passed": passed,
            "failed": failed,
            "checks": checks,
        })
        .to_string()
    }
}

/// A line on the browser's console (stderr natively).
fn log(line: &str) {
    #[cfg(target_family = "wasm")]
    web_sys::console::log_1(&line.into());
    #[cfg(not(target_family = "wasm"))]
    eprintln!("{line}");
}

/// Sends a panic's message to the console before the wasm instance aborts, so that the driver
/// can report it with the check that was running.
pub fn log_panics() {
    #[cfg(target_family = "wasm")]
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&format!("panic: {info}").into());
    }));
}

/// `Ok` when the device's `actual` holds the reference's `expected` values: floats bit for bit
/// (NaN equal to any NaN, after widening both to `f32`), integers as `i64`, bools as bools;
/// else where the first difference lies.
pub fn same_values(actual: &TensorData, expected: &TensorData) -> Result<(), String> {
    if actual.shape() != expected.shape() {
        return Err(format!(
            "shape {:?}, the reference's {:?}",
            actual.shape(),
            expected.shape()
        ));
    }
    let first_difference = |a: Vec<String>, e: Vec<String>| {
        a.iter()
            .zip(&e)
            .position(|(a, e)| a != e)
            .map(|at| {
                let differing = a.iter().zip(&e).filter(|(a, e)| a != e).count();
                format!(
                    "{differing} of {} values differ; the first at flat index {at}: {}, the \
                     reference's {}",
                    a.len(),
                    a[at],
                    e[at]
                )
            })
            .map_or(Ok(()), Err)
    };
    let dtype = expected.dtype();
    if matches!(dtype, DType::Bool(_)) {
        return first_difference(bools(actual)?, bools(expected)?);
    }
    if dtype.is_float() {
        return first_difference(float_bits(actual)?, float_bits(expected)?);
    }
    first_difference(integers(actual)?, integers(expected)?)
}

/// A float tensor's values as the bits of their `f32` widening, NaNs as one word.
fn float_bits(data: &TensorData) -> Result<Vec<String>, String> {
    let values = data
        .clone()
        .convert_dtype(DType::F32)
        .try_into_vec::<f32>()
        .map_err(|err| format!("{err:?}"))?;
    Ok(values
        .into_iter()
        .map(|v| {
            if v.is_nan() {
                "NaN".to_string()
            } else {
                format!("{v:e} ({:#010x})", v.to_bits())
            }
        })
        .collect())
}

/// An Int tensor's values, whatever its dtype.
fn integers(data: &TensorData) -> Result<Vec<String>, String> {
    let values = data
        .clone()
        .convert_dtype(DType::I64)
        .try_into_vec::<i64>()
        .map_err(|err| format!("{err:?}"))?;
    Ok(values.into_iter().map(|v| v.to_string()).collect())
}

/// A Bool tensor's values.
fn bools(data: &TensorData) -> Result<Vec<String>, String> {
    let values = data
        .clone()
        .try_into_vec::<bool>()
        .map_err(|err| format!("{err:?}"))?;
    Ok(values.into_iter().map(|v| v.to_string()).collect())
}
