//! `#[cube]` helpers for kernels that read a strided view of a buffer.

use cubecl::prelude::*;

/// The offset, in elements, of element `index` (row-major over `shape`) of a strided tensor.
#[cube]
pub(crate) fn strided_offset(
    index: usize,
    shape: &Sequence<usize>,
    strides: &Sequence<usize>,
) -> usize {
    let rank = comptime!(shape.len());
    let mut rest = index;
    let mut offset = 0usize;
    #[unroll]
    for d in 0..rank {
        let axis = comptime!(rank - 1 - d);
        let size = shape[axis];
        offset += (rest % size) * strides[axis];
        rest /= size;
    }
    offset
}
