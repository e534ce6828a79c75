//! The `#[cube]` kernel.

use cubecl::prelude::*;

/// Writes `count_ones(input[i])` into `output[i]` for `units` consecutive vectors starting at
/// vector index `first`.
///
/// `I` is the unsigned type of the input's storage width, `O` the output's integer type. The
/// host launches it twice over the same buffers: once with `N` lanes over every whole vector,
/// once with one lane over the elements left at the end. Each byte is read once.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn bit_count_kernel<I: Int, O: Int, N: Size>(
    input: &[Vector<I, N>],
    output: &mut [Vector<O, N>],
    first: usize,
    units: usize,
    #[define(I, O)] _types: [ElemType; 2],
) {
    if ABSOLUTE_POS >= units {
        terminate!();
    }
    let pos = first + ABSOLUTE_POS;
    output[pos] = Vector::cast_from(input[pos].count_ones());
}
