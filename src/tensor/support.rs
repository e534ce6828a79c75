//! Which dtypes a device can hold, asked through Burn's dispatch backend, and the one read back
//! that the `into_exact` forms make.

use burn::backend::{Backend, DTypeUsage, Dispatch};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};

use crate::scatter_nd_rules::Reduction;
use crate::{DmlOps, DmlOpsError};

/// Whether `device` can store tensors of `dtype` in its memory and bind them in kernels.
fn can_store(device: &Device, dtype: DType) -> bool {
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Storage)
}

/// The unsigned integer dtype of `bytes` bytes: how a kernel that looks only at raw bits reads
/// a buffer.
fn unsigned_of_width(bytes: usize) -> Option<DType> {
    match bytes {
        1 => Some(DType::U8),
        2 => Some(DType::U16),
        4 => Some(DType::U32),
        8 => Some(DType::U64),
        _ => None,
    }
}

/// The error for `dtype` on `device`, for `operator`.
fn unsupported(
    operator: &'static str,
    dtype: DType,
    device: &Device,
    detail: impl Into<String>,
) -> DmlOpsError {
    DmlOpsError::UnsupportedDType {
        operator,
        dtype,
        device: format!("{device:?}"),
        detail: detail.into(),
    }
}

/// Whether `device` can compute with `dtype` (not only store it).
pub(crate) fn can_compute(device: &Device, dtype: DType) -> bool {
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Arithmetic)
}

/// The unsigned integer dtype of `dtype`'s width, after checking that `dtype` has a fixed-width
/// encoding of its own: not quantized, 8, 16, 32 or 64 bits.
pub(crate) fn check_encoding(
    operator: &'static str,
    device: &Device,
    dtype: DType,
) -> Result<DType, DmlOpsError> {
    if let DType::QFloat(_) = dtype {
        return Err(unsupported(
            operator,
            dtype,
            device,
            "a quantized tensor packs its values with a shared scale, so its elements have no \
             encoding of their own; dequantize it first",
        ));
    }
    unsigned_of_width(dtype.size()).ok_or_else(|| {
        unsupported(
            operator,
            dtype,
            device,
            "the element width is not 8, 16, 32 or 64 bits",
        )
    })
}

/// Checks the data dtype of a scatter with `reduction`. Any dtype with an encoding of its own
/// runs (the tensor exists, so the device holds it): the kernels bind it typed where the
/// runtime can, and otherwise hold it in 32-bit words, 8- and 16-bit elements packed and
/// computed in 32 bits, 64-bit ones (OpenGL) as word pairs with integer arithmetic on the
/// words. What stays out: a reduction on a 32- or 64-bit dtype the device stores but cannot
/// compute with, and `Add`/`Mul` on a 64-bit float the device cannot store (f64 on OpenGL),
/// which would need f64 arithmetic.
pub(crate) fn check_scatter_data_dtype(
    operator: &'static str,
    device: &Device,
    dtype: DType,
    reduction: Reduction,
) -> Result<(), DmlOpsError> {
    check_encoding(operator, device, dtype)?;
    if dtype.size() <= 2 || reduction == Reduction::Assign {
        return Ok(());
    }
    if can_store(device, dtype) {
        if !can_compute(device, dtype) {
            return Err(unsupported(
                operator,
                dtype,
                device,
                "a reduction computes with it and this device has no arithmetic for it; cast \
                 the tensors to a wider dtype first",
            ));
        }
    } else if dtype.is_float() && matches!(reduction, Reduction::Add | Reduction::Mul) {
        return Err(unsupported(
            operator,
            dtype,
            device,
            format!(
                "this device stores no {dtype:?} (wgpu's OpenGL backend has no 64-bit types), so \
                 the kernels hold the data as pairs of 32-bit words: that serves Assign, Min and \
                 Max, which move and compare bits, but {reduction:?} needs float arithmetic of \
                 that width; cast the tensors to F32, or run on a Vulkan device"
            ),
        ));
    }
    Ok(())
}

/// Checks an index dtype of a scatter: every Int dtype runs, read typed where the runtime binds
/// it and otherwise as 32-bit words, resolved into coordinates by one extra launch.
pub(crate) fn check_index_dtype(
    operator: &'static str,
    device: &Device,
    dtype: DType,
) -> Result<(), DmlOpsError> {
    check_encoding(operator, device, dtype).map(|_| ())
}

/// Checks that `device` can run a kernel that reads `input`'s raw bits: the dtype rule of
/// NonZeroCoordinates. Any `input` with an encoding of its own runs (the tensor exists, so the
/// device holds it): the kernels read its bits as the unsigned integer of their width, or as
/// 32-bit words where the runtime cannot bind that type. Every Int output dtype runs too: where
/// the runtime cannot
/// bind it, the kernels write `u32` scratch and store it into the outputs as 32-bit words.
pub(crate) fn check_raw_bits_input(
    operator: &'static str,
    device: &Device,
    input: DType,
) -> Result<(), DmlOpsError> {
    check_encoding(operator, device, input).map(|_| ())
}

/// The value of a `[1]` count tensor (NonZeroCoordinates', Compress', NMS'), read back to the
/// host: one synchronisation.
pub(crate) fn read_count(count: Tensor<1, Int>) -> usize {
    count_value(count.into_data())
}

/// [`read_count`] without blocking, for browsers: the read completes when the device has run.
pub(crate) async fn read_count_async(count: Tensor<1, Int>) -> usize {
    count_value(
        count
            .into_data_async()
            .await
            .expect("the device reads the count back"),
    )
}

/// The count in a `[1]` Int tensor's data.
fn count_value(data: TensorData) -> usize {
    let value = data
        .convert_dtype(DType::I64)
        .try_to_vec::<i64>()
        .expect("count is an Int tensor")[0];
    usize::try_from(value).expect("count is never negative")
}

/// `tensor`'s values on the host, read through a contiguous copy of its raw bits: reading a
/// view directly makes Burn copy it with a kernel of its type, which a runtime may lack (8- and
/// 16-bit integers on WGSL, 64-bit ones on OpenGL). One synchronisation.
pub(crate) fn read_int_bits<const D: usize>(tensor: Tensor<D, Int>) -> TensorData {
    let dims = tensor.dims();
    if dims.iter().product::<usize>() == 0 {
        return tensor.into_data();
    }
    let copy = <Dispatch as DmlOps>::int_leading_slices(tensor.into_dispatch(), 0, dims[0]);
    Tensor::<D, Int>::from_dispatch(copy).into_data()
}

/// [`read_int_bits`] without blocking, for browsers: the read completes when the device has
/// run.
pub(crate) async fn read_int_bits_async<const D: usize>(tensor: Tensor<D, Int>) -> TensorData {
    let dims = tensor.dims();
    let tensor = if dims.iter().product::<usize>() == 0 {
        tensor
    } else {
        let copy = <Dispatch as DmlOps>::int_leading_slices(tensor.into_dispatch(), 0, dims[0]);
        Tensor::<D, Int>::from_dispatch(copy)
    };
    tensor
        .into_data_async()
        .await
        .expect("the device reads the indices back")
}

/// The first `rows` rows of a padded `[capacity, width]` result (NonZeroCoordinates' and NMS'
/// exact forms): a contiguous copy of them, or an empty tensor of the same width and dtype.
pub(crate) fn leading_rows(tensor: Tensor<2, Int>, rows: usize) -> Tensor<2, Int> {
    let [capacity, _] = tensor.dims();
    assert!(
        rows <= capacity,
        "the device counted {rows} rows of at most {capacity}: a kernel did not run as launched \
         (a shader the device rejected?), so no result of this device can be trusted"
    );
    if rows == 0 {
        let [_, width] = tensor.dims();
        return Tensor::empty([0, width], (&tensor.device(), tensor.dtype()));
    }
    Tensor::from_dispatch(<Dispatch as DmlOps>::int_leading_slices(
        tensor.into_dispatch(),
        0,
        rows,
    ))
}
