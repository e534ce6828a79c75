//! Float data held in 32-bit words of a [`SumFormat`] (`f32` one to a word, `f16`/`bf16` two),
//! as the deterministic float kernels read and write it: one unit writes each element's field,
//! XORing its change into the word, which leaves the other field as its own unit sets it.

use cubecl::prelude::*;

use super::exact::{SumFormat, widen};

/// Where element `index` of `format` lies: its word, the shift of its field and the field's
/// mask.
#[cube]
pub(super) fn field_of(index: usize, #[comptime] format: SumFormat) -> (usize, u32, u32) {
    let per_word = comptime!(format.per_word());
    let mask = comptime!(if per_word == 1 {
        0xFFFF_FFFFi64
    } else {
        0xFFFFi64
    });
    (
        index / per_word,
        ((index % per_word) as u32) * 16u32,
        u32::new(mask),
    )
}

/// The `f32` bits of element `index` of `data` (every `f16` and `bf16` widens exactly).
#[cube]
pub(super) fn term_at(data: &[u32], index: usize, #[comptime] format: SumFormat) -> u32 {
    let (word, shift, mask) = field_of(index, format);
    u32::reinterpret(widen((data[word] >> shift) & mask, format))
}

/// Element `index` of the output: its word, its field's shift and its bits. Only this unit
/// writes the field, so the load sees its current bits.
#[cube]
pub(super) fn read_field(
    output: &[Atomic<u32>],
    index: usize,
    #[comptime] format: SumFormat,
) -> (usize, u32, u32) {
    let (word, shift, mask) = field_of(index, format);
    (word, shift, (output[word].load() >> shift) & mask)
}

/// Writes `bits` over the field at `shift` of `output[word]` that holds `old`.
#[cube]
pub(super) fn write_field(
    output: &mut [Atomic<u32>],
    word: usize,
    shift: u32,
    old: u32,
    bits: u32,
) {
    if bits != old {
        output[word].fetch_xor((bits ^ old) << shift);
    }
}
