//! `CubeBackend` (wgpu, Vulkan, CUDA): every operator launches a CubeCL kernel of the
//! `burn-dml-ops-kernels` crate on the tensor's stream. Nothing here reads back to the host.

use burn::backend::TensorMetadata;
use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeDevice};
use burn_dml_ops_kernels::nonzero::{NonZeroPredicate, launch_nonzero_coordinates};
use burn_dml_ops_kernels::{KernelError, StorageWidth, bit_count::launch_bit_count};
use cubecl::ir::{ElemType, IntKind, UIntKind};

use crate::DmlOps;

impl DmlOps for CubeBackend {
    fn int_bit_count(input: IntTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
    }

    fn float_bit_count(input: FloatTensor<Self>, out_dtype: IntDType) -> IntTensor<Self> {
        bit_count(input, out_dtype)
    }

    fn float_nonzero_coordinates(
        input: FloatTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        let predicate = NonZeroPredicate::AnyBitButSign;
        nonzero_coordinates(input, predicate, width, fill, out_dtype)
    }

    fn int_nonzero_coordinates(
        input: IntTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        nonzero_coordinates(input, NonZeroPredicate::AnyBit, width, fill, out_dtype)
    }

    fn bool_nonzero_coordinates(
        input: BoolTensor<Self>,
        width: usize,
        fill: Option<i64>,
        out_dtype: IntDType,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        nonzero_coordinates(input, NonZeroPredicate::AnyBit, width, fill, out_dtype)
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

/// The storage width of `tensor`'s elements; the tensor extension traits only let fixed-width
/// dtypes through.
fn storage_width(tensor: &CubeTensor, operator: &str) -> StorageWidth {
    StorageWidth::from_bytes(tensor.dtype.size()).unwrap_or_else(|| {
        panic!(
            "{operator}: dtype {:?} has no fixed element width; the tensor extension traits \
             refuse it before it gets here",
            tensor.dtype
        )
    })
}

/// Panics for a launcher error: the tensor extension traits check everything a launcher checks,
/// so reaching this is a bug in this crate.
fn launch_failed(operator: &str, device: &CubeDevice, err: KernelError) -> ! {
    panic!(
        "{operator} on {device:?}: {err}; the tensor extension traits check their arguments \
         before launching, so this is a bug in burn-dml-ops"
    )
}

fn bit_count(input: CubeTensor, out_dtype: IntDType) -> CubeTensor {
    let input = into_contiguous(input);
    let output = empty_device_dtype(
        input.client.clone(),
        input.device.clone(),
        input.shape(),
        DType::from(out_dtype),
    );
    launch_bit_count(
        &input.client,
        input.handle.clone(),
        storage_width(&input, "BitCount"),
        output.handle.clone(),
        int_elem(out_dtype),
        input.shape().num_elements(),
    )
    .unwrap_or_else(|err| launch_failed("BitCount", &input.device, err));
    output
}

fn nonzero_coordinates(
    input: CubeTensor,
    predicate: NonZeroPredicate,
    width: usize,
    fill: Option<i64>,
    out_dtype: IntDType,
) -> (CubeTensor, CubeTensor) {
    let input = into_contiguous(input);
    let shape = input.shape();
    let len = shape.num_elements();
    let dims = &shape[shape.num_dims() - width..];
    let empty = |shape: Shape| {
        empty_device_dtype(
            input.client.clone(),
            input.device.clone(),
            shape,
            DType::from(out_dtype),
        )
    };
    let count = empty([1].into());
    let coordinates = empty([len, width].into());
    launch_nonzero_coordinates(
        &input.client,
        input.handle.clone(),
        storage_width(&input, "NonZeroCoordinates"),
        predicate,
        len,
        dims,
        count.handle.clone(),
        coordinates.handle.clone(),
        int_elem(out_dtype),
        fill,
    )
    .unwrap_or_else(|err| launch_failed("NonZeroCoordinates", &input.device, err));
    (count, coordinates)
}
