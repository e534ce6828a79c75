//! The checks, by operator: each runs on the device under test and on Flex and compares the
//! results read with the async reads, or compares with values worked out by hand (the spec's
//! examples), or expects an error.

mod elementwise;
mod nms;
mod sample;
mod scatter;
mod sort;

use burn::tensor::{DType, Device, Tensor, TensorData};

use crate::report::{Report, same_values};

/// The device under test and the reference device.
pub struct Devices {
    pub gpu: Device,
    pub cpu: Device,
}

impl Devices {
    /// The Float dtypes both devices hold: `F32`, and `F16` where the adapter has `shader-f16`.
    pub fn float_dtypes(&self) -> Vec<DType> {
        let mut dtypes = vec![DType::F32];
        if self.gpu.supports_dtype(DType::F16) {
            dtypes.push(DType::F16);
        }
        dtypes
    }
}

/// Runs every check on `gpu`, the reference on Flex.
pub async fn run_all(gpu: &Device, report: &mut Report) {
    let devices = Devices {
        gpu: gpu.clone(),
        cpu: Device::flex(),
    };
    elementwise::run(&devices, report).await;
    scatter::run(&devices, report).await;
    sort::run(&devices, report).await;
    nms::run(&devices, report).await;
    sample::run(&devices, report).await;
}

/// Runs the async block `$body` (a `Result<(), String>`) as check `$name` of `$report`.
macro_rules! check {
    ($report:expr, $name:expr, $body:expr) => {{
        let name: String = $name;
        $report.start(&name);
        let result: Result<(), String> = $body.await;
        $report.record(&name, result);
    }};
}
pub(crate) use check;

/// A tensor's data, read with the async read.
pub async fn read<const D: usize, K>(tensor: Tensor<D, K>) -> Result<TensorData, String>
where
    K: burn::tensor::kind::Basic,
{
    tensor
        .into_data_async()
        .await
        .map_err(|err| format!("the read failed: {err:?}"))
}

/// `Ok` when `actual` (the device's) holds the values of `expected` (Flex's); `what` names the
/// output in the message.
pub async fn same<const D: usize, K>(
    what: &str,
    actual: Tensor<D, K>,
    expected: Tensor<D, K>,
) -> Result<(), String>
where
    K: burn::tensor::kind::Basic,
{
    let (actual, expected) = (read(actual).await?, read(expected).await?);
    same_values(&actual, &expected).map_err(|err| format!("{what}: {err}"))
}

/// `Ok` when the Int (or Bool, as 0/1) `tensor` holds `expected`, row-major.
pub async fn holds<const D: usize, K>(
    what: &str,
    tensor: Tensor<D, K>,
    expected: &[i64],
) -> Result<(), String>
where
    K: burn::tensor::kind::Basic,
{
    let data = read(tensor).await?;
    let values = data
        .convert_dtype(DType::I64)
        .try_into_vec::<i64>()
        .map_err(|err| format!("{what}: {err:?}"))?;
    if values == expected {
        Ok(())
    } else {
        Err(format!("{what}: {values:?}, expected {expected:?}"))
    }
}

/// `Ok` when `result` is an error (whose message the detail of a failure would not show).
pub fn is_error<T>(what: &str, result: Result<T, burn_dml_ops::DmlOpsError>) -> Result<(), String> {
    match result {
        Err(_) => Ok(()),
        Ok(_) => Err(format!("{what}: no error")),
    }
}
