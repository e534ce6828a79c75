//! `CubeBackend` (wgpu, Vulkan, CUDA): every operator launches a CubeCL kernel of the
//! `burn-dml-ops-kernels` crate on the tensor's stream. Nothing here reads back to the host.

use burn::backend::TensorMetadata;
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::tensor::{DType, IntDType};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops_kernels::{StorageWidth, bit_count::launch_bit_count};
use cubecl::ir::{ElemType, IntKind, UIntKind};

use crate::DmlOps;

impl DmlOps for CubeBackend {
    fn int_bit_count(input: IntTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
    }

    fn float_bit_count(input: FloatTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
    }
}

/// The kernel's element type for an Int dtype.
fn int_elem(dtype: IntDType) -> ElemType {
    match dtype {
        IntDType::I64 => ElemType::Int(IntKind::I64),
        IntDType::I32 => ElemType::Int(IntKind::I32),
        IntDType::I16 => ElemType::Int(IntKind::I16),
        IntDType::I8 => ElemType::Int(IntKind::I8),
        IntDType::U64 => ElemType::UInt(UIntKind::U64),
        IntDType::U32 => ElemType::UInt(UIntKind::U32),
        IntDType::U16 => ElemType::UInt(UIntKind::U16),
        IntDType::U8 => ElemType::UInt(UIntKind::U8),
    }
}

fn bit_count(input: CubeTensor, out_dtype: IntDType) -> CubeTensor {
    let input = into_contiguous(input);
    let output = empty_device_dtype(
        input.client.clone(),
        input.device.clone(),
        input.shape(),
        DType::from(out_dtype),
    );
    let width = StorageWidth::from_bytes(input.dtype.size()).unwrap_or_else(|| {
        panic!(
            "BitCount: dtype {:?} has no fixed element width; the tensor extension traits \
             refuse it before it gets here",
            input.dtype
        )
    });
    launch_bit_count(
        &input.client,
        input.handle.clone(),
        width,
        output.handle.clone(),
        int_elem(out_dtype),
        input.shape().num_elements(),
    )
    .unwrap_or_else(|err| {
        panic!(
            "BitCount on {:?}: {err}; the tensor extension traits check dtypes before launching, \
             so this is a bug in burn-dml-ops",
            input.device
        )
    });
    output
}
