//! The recorded inputs and expected outputs of a case (`cases/<name>.json`, written by
//! `make_cases.py`), the inputs as tensors on a device, and the comparison of outputs.

use burn::tensor::{Bool, DType, Device, Float, Int, Tensor, TensorData};
use half::{bf16, f16};
use serde_json::Value;

/// A case's inputs and expected outputs, as host data in their ONNX dtypes.
pub struct Recorded {
    /// The model's inputs, in the order of its graph.
    pub inputs: Vec<TensorData>,
    /// The expected outputs, in the order of its graph.
    pub outputs: Vec<TensorData>,
}

impl Recorded {
    /// Reads `cases/<name>.json`.
    ///
    /// # Panics
    ///
    /// Where the file is missing or malformed (rerun `make_cases.py`).
    pub fn load(name: &str) -> Self {
        let path = format!("{}/cases/{name}.json", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{path}: {err}; rerun onnx-tests/make_cases.py"));
        let json: Value = serde_json::from_str(&text).unwrap_or_else(|err| panic!("{path}: {err}"));
        let tensors = |key: &str| -> Vec<TensorData> {
            json[key]
                .as_array()
                .unwrap_or_else(|| panic!("{path}: no {key}"))
                .iter()
                .map(|tensor| tensor_data(tensor, &path))
                .collect()
        };
        Self {
            inputs: tensors("inputs"),
            outputs: tensors("outputs"),
        }
    }

    /// The inputs on `device`, in their recorded dtypes where the device stores them. Where it
    /// does not, a float or int input takes the device's default dtype of its kind (wgpu's
    /// OpenGL backend has no 64-bit integers), and a 64-bit int input whose values do not fit in
    /// 32 bits leaves the case out on that device (`None`, said on stderr).
    pub fn inputs(&self, device: &Device) -> Option<Inputs> {
        for data in &self.inputs {
            let wide = data.dtype().size() == 8 && !data.dtype().is_float();
            if wide && !can_store(device, data.dtype()) {
                let fits = to_i64(data).iter().all(|&v| i32::try_from(v).is_ok());
                if !fits {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "left out on {device:?}, which cannot store {:?} values beyond 32 bits",
                        data.dtype()
                    );
                    return None;
                }
            }
        }
        Some(Inputs {
            data: self.inputs.clone(),
            device: device.clone(),
        })
    }
}

/// A case's inputs, made into tensors on one device as the model's `forward` asks for them.
pub struct Inputs {
    data: Vec<TensorData>,
    device: Device,
}

impl Inputs {
    /// The device the tensors are made on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The dtype input `index` is made in: its own, or the device's default of its kind.
    fn dtype(&self, index: usize) -> DType {
        let dtype = self.data[index].dtype();
        if can_store(&self.device, dtype) || dtype.is_bool() {
            return dtype;
        }
        let settings = self.device.settings();
        if dtype.is_float() {
            settings.float_dtype.into()
        } else {
            settings.int_dtype.into()
        }
    }

    /// Input `index` as a Float tensor of rank `D`.
    pub fn float<const D: usize>(&self, index: usize) -> Tensor<D, Float> {
        let dtype = self.dtype(index);
        let data = self.data[index].clone().convert_dtype(dtype);
        Tensor::from_data(data, (&self.device, dtype))
    }

    /// Input `index` as an Int tensor of rank `D`.
    pub fn int<const D: usize>(&self, index: usize) -> Tensor<D, Int> {
        let dtype = self.dtype(index);
        let data = self.data[index].clone().convert_dtype(dtype);
        Tensor::from_data(data, (&self.device, dtype))
    }

    /// Input `index` as a Bool tensor of rank `D`.
    pub fn bool<const D: usize>(&self, index: usize) -> Tensor<D, Bool> {
        Tensor::from_data(self.data[index].clone(), &self.device)
    }
}

/// Whether Burn says `device` can store `dtype`.
fn can_store(device: &Device, dtype: DType) -> bool {
    use burn::backend::{Backend, DTypeUsage, Dispatch};
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Storage)
}

/// Checks `outputs` against `expected`: the same shapes, and the same values (ints and bools
/// exactly, floats within a relative 1e-5 for sums whose order differs, NaN where NaN was
/// expected). The output dtype may differ from the recorded one (NonZero's on OpenGL).
pub fn compare(outputs: &[TensorData], expected: &[TensorData]) -> Result<(), String> {
    if outputs.len() != expected.len() {
        return Err(format!(
            "{} outputs, expected {}",
            outputs.len(),
            expected.len()
        ));
    }
    for (index, (got, want)) in outputs.iter().zip(expected).enumerate() {
        if got.shape() != want.shape() {
            return Err(format!(
                "output {index} has shape {:?}, expected {:?}",
                got.shape(),
                want.shape()
            ));
        }
        let same = if want.dtype().is_float() {
            let (got, want) = (to_f64(got), to_f64(want));
            got.iter().zip(&want).all(|(&g, &w)| {
                (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-5 * w.abs().max(1.0)
            })
        } else if want.dtype().is_bool() {
            got.as_slice::<bool>().ok() == want.as_slice::<bool>().ok()
                || to_i64(got) == to_i64(want)
        } else {
            to_i64(got) == to_i64(want)
        };
        if !same {
            return Err(format!(
                "output {index} is {:?}, expected {:?}",
                got.to_string(),
                want.to_string()
            ));
        }
    }
    Ok(())
}

fn to_f64(data: &TensorData) -> Vec<f64> {
    data.clone()
        .convert_dtype(DType::F64)
        .try_to_vec::<f64>()
        .expect("a float tensor converts to f64")
}

fn to_i64(data: &TensorData) -> Vec<i64> {
    data.clone()
        .convert_dtype(DType::I64)
        .try_to_vec::<i64>()
        .expect("an int or bool tensor converts to i64")
}

/// One recorded tensor: `{"dtype", "shape", "data"}`, non-finite floats as strings.
fn tensor_data(json: &Value, path: &str) -> TensorData {
    let shape: Vec<usize> = json["shape"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: a tensor without a shape"))
        .iter()
        .map(|d| d.as_u64().expect("dimensions are integers") as usize)
        .collect();
    let values = json["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: a tensor without data"));
    let float = |v: &Value| match v {
        Value::String(s) => s.parse::<f64>().unwrap_or_else(|_| match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            other => panic!("{path}: the float {other}"),
        }),
        v => v.as_f64().expect("a float value"),
    };
    let int = |v: &Value| v.as_i64().expect("an integer value");
    let dtype = json["dtype"].as_str().expect("a dtype");
    match dtype {
        "float32" => TensorData::new(values.iter().map(|v| float(v) as f32).collect(), shape),
        "float64" => TensorData::new(values.iter().map(float).collect(), shape),
        "float16" => TensorData::new(
            values.iter().map(|v| f16::from_f64(float(v))).collect(),
            shape,
        ),
        "bfloat16" => TensorData::new(
            values.iter().map(|v| bf16::from_f64(float(v))).collect(),
            shape,
        ),
        "int64" => TensorData::new(values.iter().map(int).collect(), shape),
        "int32" => TensorData::new(values.iter().map(|v| int(v) as i32).collect(), shape),
        "uint64" => TensorData::new(
            values
                .iter()
                .map(|v| v.as_u64().expect("an unsigned value"))
                .collect(),
            shape,
        ),
        "bool" => TensorData::new(
            values
                .iter()
                .map(|v| v.as_bool().expect("a bool value"))
                .collect(),
            shape,
        ),
        other => panic!("{path}: dtype {other} is not one the cases use"),
    }
}
