//! ONNX's node tests of ScatterND, ScatterElements, GatherND, NonZero, Compress and TopK, and this
//! workspace's own cases (Multinomial's too, compared in distribution), imported by `build.rs` with burn-dml-ops-onnx's overrides, run on Flex
//! and on wgpu against the expected outputs that `make_cases.py` recorded. With the `builtin`
//! feature the same models imported by Burn alone come too, for `examples/builtin_report.rs` and
//! `benches/imported.rs`.

mod cases;
mod data;
mod distribution;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use burn::tensor::{Device, DeviceKind, Int, Tensor, TensorData};

#[cfg(feature = "builtin")]
pub use cases::{BUILTIN, builtin};
pub use cases::{CASES, dml};
pub use data::{Inputs, Recorded, compare};
pub use distribution::check_distribution;

#[path = "../../kernels/tests/common/skip.rs"]
pub mod skip;

/// One imported model: its name (that of its files) and what runs it.
pub struct Case {
    /// The model's file stem under `models/` and `cases/`.
    pub name: &'static str,
    /// Runs the model on the inputs, returning its outputs in the graph's order.
    pub run: fn(&Inputs) -> Vec<TensorData>,
}

/// The generated source of the model `name` imported with the overrides (`"dml"`) or by Burn
/// alone (`"builtin"`).
///
/// # Panics
///
/// Where `build.rs` wrote no such file.
pub fn generated_source(variant: &str, name: &str) -> String {
    let path = format!("{}/{variant}/{name}.rs", env!("OUT_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// The case named `name`.
///
/// # Panics
///
/// Where no case has that name.
pub fn case(name: &str) -> &'static Case {
    CASES
        .iter()
        .find(|case| case.name == name)
        .unwrap_or_else(|| panic!("no imported case is named {name}"))
}

/// Cases whose graphs compute int64 values with Burn's own kernels (a Cast to int64, then a
/// ReduceSum), which a device without 64-bit integer arithmetic (wgpu's OpenGL backend) cannot
/// run, with or without the overrides.
const INT64_ARITHMETIC: [&str; 1] = ["own_topk_runtime_k_made_on_device"];

/// Whether `device` computes with int64 (not only stores it).
fn computes_int64(device: &Device) -> bool {
    use burn::backend::{Backend, DTypeUsage, Dispatch};
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), burn::tensor::DType::I64)
        .contains(DTypeUsage::Arithmetic)
}

/// Runs the case `name` imported with the overrides on Flex and on wgpu (where it finds an
/// adapter; see `skip.rs`), and asserts that each output equals the recorded one.
pub fn check_case(name: &str) {
    let case = case(name);
    let recorded = Recorded::load(name);
    for device in devices() {
        if INT64_ARITHMETIC.contains(&name) && !computes_int64(&device) {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "left out on {device:?}, which has no int64 arithmetic for the graph's own \
                 Cast and ReduceSum: {name}"
            );
            continue;
        }
        let Some(inputs) = recorded.inputs(&device) else {
            continue;
        };
        let outputs = (case.run)(&inputs);
        compare(&outputs, &recorded.outputs)
            .unwrap_or_else(|err| panic!("{name} on {device:?}: {err}"));
    }
}

/// Flex, and wgpu where the machine has an adapter (`None` is recorded as a test that left its
/// GPU part out, a failure under `BURN_DML_OPS_REQUIRE_GPU=1`).
pub fn devices() -> Vec<Device> {
    std::iter::once(Device::flex()).chain(wgpu()).collect()
}

/// The wgpu device, Fusion-wrapped as Burn builds it, once a round trip through it has worked.
pub fn wgpu() -> Option<Device> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    let device = Device::wgpu(DeviceKind::default());
    let probe = PROBE.get_or_init(|| {
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
            skip::left_out(&format!("no wgpu device: {cause}"));
            None
        }
    }
}
