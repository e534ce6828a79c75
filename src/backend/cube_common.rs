//! What the cube backend's modules share: output tensors, Int element types and the panic for
//! a launcher's error.

use burn::backend::cubecl::dtype_to_elem_type;
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::CubeDevice;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops_kernels::KernelError;
use cubecl::ir::ElemType;

/// The kernel's element type for an Int dtype.
pub(super) fn int_elem(dtype: IntDType) -> ElemType {
    dtype_to_elem_type(DType::from(dtype))
}

/// Panics for a launcher error. The tensor extension traits check everything a launcher checks
/// and return it as a `DmlOpsError`, so only a direct `DmlOps` call with arguments those traits
/// refuse gets here (or a bug in this crate, if a trait let them through).
pub(super) fn launch_failed(operator: &str, device: &CubeDevice, err: KernelError) -> ! {
    panic!(
        "{operator} on {device:?}: {err}. `DmlOps` methods take checked arguments: the tensor \
         extension traits (`burn_dml_ops::prelude`) return this as a `DmlOpsError` instead"
    )
}

/// A contiguous tensor of `shape` and `dtype` on `like`'s device, uninitialised. Contiguous,
/// not CubeCL's optimized layout, which may pad rows: the kernels write outputs row-major.
pub(super) fn empty_output(like: &CubeTensor, shape: Shape, dtype: DType) -> CubeTensor {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, dtype)
}
