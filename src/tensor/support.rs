//! Which dtypes a device can hold, asked through Burn's dispatch backend.

use burn::backend::{Backend, DTypeUsage, Dispatch};
use burn::tensor::{DType, Device};

use crate::DmlOpsError;

/// Whether `device` can store tensors of `dtype` in its memory and bind them in kernels.
pub(crate) fn can_store(device: &Device, dtype: DType) -> bool {
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Storage)
}

/// The unsigned integer dtype of `bytes` bytes: how a kernel that looks only at raw bits reads
/// a buffer.
pub(crate) fn unsigned_of_width(bytes: usize) -> Option<DType> {
    match bytes {
        1 => Some(DType::U8),
        2 => Some(DType::U16),
        4 => Some(DType::U32),
        8 => Some(DType::U64),
        _ => None,
    }
}

/// The error for `dtype` on `device`, for `operator`.
pub(crate) fn unsupported(
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

/// What to tell a user whose device lacks a dtype.
pub(crate) const STORAGE_HINT: &str = "this device cannot store it (WGSL, the default wgpu \
    shader path, holds only 32-bit types plus i64/u64/f16 where the adapter allows; build with \
    the `vulkan` feature and use `Device::vulkan(..)` for 8- and 16-bit types, or cast the \
    tensor first)";
