//! Helpers shared by the integration tests: the devices under test, rank dispatch for
//! `TensorData` of any rank, and value helpers.
#![allow(dead_code)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use burn::tensor::{DType, Device, DeviceKind, Float, Int, Tensor, TensorData};

#[path = "../../kernels/tests/common/skip.rs"]
mod skip;

use skip::left_out;

/// Burn's CPU backend: runs the reference implementation.
pub fn flex() -> Device {
    Device::flex()
}

/// The GPU device under test (Fusion-wrapped, as Burn builds it): wgpu, or CUDA in a build with
/// the `cuda` feature run with `BURN_DEVICE=cuda`. `None` where the runtime finds no device:
/// the caller then leaves its GPU part out, and the binary's exit line counts the test as not
/// run on a GPU (a failure under `BURN_DML_OPS_REQUIRE_GPU=1`; see `skip.rs`).
pub fn gpu() -> Option<Device> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    let (device, runtime) = gpu_under_test();
    let probe = PROBE.get_or_init(|| {
        // CubeCL's own lookup first: it returns the runtime's error instead of panicking in a
        // device thread. Then a round trip through Burn, which must work wherever a device is.
        probe_runtime()?;
        let device = device.clone();
        catch_unwind(AssertUnwindSafe(move || {
            Tensor::<1, Int>::from_data([1, 2, 3], &device).into_data()
        }))
        .map(|_| ())
        .map_err(|panic| {
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
    });
    match probe {
        Ok(()) => Some(device),
        Err(cause) => {
            left_out(&format!("no {runtime} device: {cause}"));
            None
        }
    }
}

/// Whether this run tests CUDA (`BURN_DEVICE=cuda` in a build with the `cuda` feature).
fn testing_cuda() -> bool {
    cfg!(feature = "cuda")
        && std::env::var("BURN_DEVICE").is_ok_and(|name| name.eq_ignore_ascii_case("cuda"))
}

/// The device [`gpu`] tests, and its runtime's name.
fn gpu_under_test() -> (Device, &'static str) {
    #[cfg(feature = "cuda")]
    if testing_cuda() {
        return (Device::cuda(0), "CUDA");
    }
    (Device::wgpu(DeviceKind::default()), "wgpu")
}

/// What Burn's `Debug` of the device [`gpu`] tests names: `Wgpu`, or `Cuda`.
pub fn gpu_debug_name() -> &'static str {
    if testing_cuda() { "Cuda" } else { "Wgpu" }
}

/// CubeCL's lookup of the runtime [`gpu`] tests.
fn probe_runtime() -> Result<(), String> {
    #[cfg(feature = "cuda")]
    if testing_cuda() {
        return catch_unwind(|| cubecl::Device::cuda(0).map(|_| ()))
            .map_err(|_| "the CUDA driver library could not be loaded".to_string())?
            .map_err(|err| err.to_string());
    }
    cubecl::Device::wgpu(Default::default())
        .map(|_| ())
        .map_err(|err| err.to_string())
}

/// `Device::default()`, which must be the device [`gpu`] tests (Fusion-wrapped wgpu under the
/// default features); `None` where [`gpu`] finds none.
pub fn default_device() -> Option<Device> {
    gpu().map(|_| Device::default())
}

/// Every device the tests compare: Flex (the reference) and wgpu (the kernels) where it has an
/// adapter.
pub fn devices() -> Vec<Device> {
    std::iter::once(flex()).chain(gpu()).collect()
}

/// Flex, wgpu as `Device::wgpu` builds it, and `Device::default()`: the last two where wgpu has
/// an adapter.
pub fn devices_and_default() -> Vec<Device> {
    let gpu = gpu();
    let default = gpu.as_ref().map(|_| Device::default());
    std::iter::once(flex()).chain(gpu).chain(default).collect()
}

/// Whether `device` stores `dtype` (wgpu on OpenGL holds no 64-bit integers). Where it does not,
/// the caller leaves the case out; this says so on stderr (past the harness's capture), naming
/// the case, so a run shows what it did not cover.
pub fn holds(device: &Device, dtype: DType, case: &str) -> bool {
    let held = can_store(device, dtype);
    if !held {
        // Straight to the process's stderr: the test harness captures `eprintln!` of passing
        // tests, and this line is for the person reading the run.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "left out on {device:?}, which cannot store {dtype:?}: {case}"
        );
    }
    held
}

/// Every Int dtype Burn has.
pub const INT_DTYPES: [DType; 8] = [
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
];

/// Every Float dtype Burn has, besides quantized ones.
pub const FLOAT_DTYPES: [DType; 5] = [
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
    DType::Flex32,
];

/// Whether Burn says `device` can store `dtype`.
pub fn can_store(device: &Device, dtype: DType) -> bool {
    use burn::backend::{Backend, DTypeUsage, Dispatch};
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Storage)
}

/// An Int tensor of `data`'s rank and dtype.
pub fn int_tensor<const D: usize>(data: TensorData, device: &Device) -> Tensor<D, Int> {
    let dtype = data.dtype();
    let tensor = Tensor::<D, Int>::from_data(data, (device, dtype));
    assert_eq!(
        tensor.dtype(),
        dtype,
        "the tensor keeps the dtype it was created with"
    );
    tensor
}

/// A Float tensor of `data`'s rank and dtype.
pub fn float_tensor<const D: usize>(data: TensorData, device: &Device) -> Tensor<D, Float> {
    let dtype = data.dtype();
    let tensor = Tensor::<D, Float>::from_data(data, (device, dtype));
    assert_eq!(
        tensor.dtype(),
        dtype,
        "the tensor keeps the dtype it was created with"
    );
    tensor
}

/// Calls `$f::<R>(args)` with the const rank `R` equal to the runtime `$rank` (1 to 8).
#[macro_export]
macro_rules! with_rank {
    ($rank:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $rank {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            6 => $f::<6>($($arg),*),
            7 => $f::<7>($($arg),*),
            8 => $f::<8>($($arg),*),
            rank => panic!("rank {rank} is outside 1..=8"),
        }
    };
}

/// The values of an Int or Float tensor's data as i64, whatever its dtype.
pub fn to_i64(data: &TensorData) -> Vec<i64> {
    data.clone()
        .convert_dtype(DType::I64)
        .try_to_vec::<i64>()
        .unwrap()
}

/// The `IntDType` of an Int `DType`.
pub fn int_dtype(dtype: DType) -> burn::tensor::IntDType {
    use burn::tensor::IntDType;
    match dtype {
        DType::I8 => IntDType::I8,
        DType::I16 => IntDType::I16,
        DType::I32 => IntDType::I32,
        DType::I64 => IntDType::I64,
        DType::U8 => IntDType::U8,
        DType::U16 => IntDType::U16,
        DType::U32 => IntDType::U32,
        DType::U64 => IntDType::U64,
        other => panic!("{other:?} is not an Int dtype"),
    }
}

/// ScatterND's index rule, written as explicit range tests (a different route from the crate's
/// wrap-then-check): the coordinate `v` addresses in a dimension of size `d`, or `None` when
/// the tuple is dropped.
pub fn oracle_index(v: i64, d: usize, clamp: bool) -> Option<usize> {
    let d = d as i64;
    if (0..d).contains(&v) {
        Some(v as usize)
    } else if (-d..0).contains(&v) {
        Some((d + v) as usize)
    } else if clamp && d > 0 {
        Some(if v < 0 { 0 } else { (d - 1) as usize })
    } else {
        None
    }
}

/// Deterministic values with about `density` of them non-zero.
pub fn with_density(len: usize, density: f64, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if (state >> 11) as f64 / (1u64 << 53) as f64 <= density && density > 0.0 {
                1.5
            } else {
                0.0
            }
        })
        .collect()
}

/// ScatterND options with `reduction`, and `Clamp` or `Skip` for out-of-range tuples.
pub fn scatter_options(
    reduction: burn_dml_ops::Reduction,
    clamp: bool,
) -> burn_dml_ops::ScatterNdOptions {
    use burn_dml_ops::OutOfBounds;
    burn_dml_ops::ScatterNdOptions {
        reduction,
        out_of_bounds: if clamp {
            OutOfBounds::Clamp
        } else {
            OutOfBounds::Skip
        },
        ..Default::default()
    }
}

pub mod compress;
pub mod nms;
pub mod nonzero;
pub mod scatter;
pub mod sort;
