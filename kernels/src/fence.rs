//! A fence against the compiler's float rewrites.

use cubecl::prelude::*;

/// `value` passed through an integer XOR with `opaque`, a launch argument that is always zero:
/// the compiler cannot see through it, so it neither fuses the operation that made `value` into
/// a multiply-add nor folds or reassociates it with the next one. Each fenced result is one
/// correctly rounded IEEE operation, as the host computes it.
#[cube]
pub(crate) fn unfused(value: f32, opaque: u32) -> f32 {
    f32::reinterpret(u32::reinterpret(value) ^ opaque)
}
