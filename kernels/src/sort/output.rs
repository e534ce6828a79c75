//! The last launches of a sort: the first `k` of each sorted segment, as values gathered from
//! the input and as positions in the indices' dtype, both written as 32-bit words.

use cubecl::prelude::*;

use super::keys::load_field;

/// Output element `e` of a `[outer, k, inner]` output: its position along the input's axis
/// (sorted entry `r = e / inner % k` of its segment, whose positions lie `stride` apart) and the
/// input element there.
#[cube]
fn sorted_source(
    e: usize,
    positions: &[u32],
    k: usize,
    axis_len: usize,
    stride: usize,
    inner: usize,
) -> (u32, usize) {
    let i = e % inner;
    let rest = e / inner;
    let r = rest % k;
    let o = rest / k;
    let listed = positions[(o * inner + i) * stride + r];
    // Always below `axis_len`; the clamp keeps every load inside the input whatever it holds.
    let p = select((listed as usize) < axis_len, listed, (axis_len - 1) as u32);
    (p, (o * axis_len + p as usize) * inner + i)
}

/// Unit `w < words` writes word `w` of the values: the input elements (of `bits` bits, read as
/// words) that `positions` lists first in each segment (`stride` entries a segment), `out_len`
/// of them.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_gather_values(
    input: &[u32],
    positions: &[u32],
    output: &mut [u32],
    out_len: usize,
    words: usize,
    k: usize,
    axis_len: usize,
    stride: usize,
    inner: usize,
    #[comptime] bits: u32,
) {
    let w = ABSOLUTE_POS;
    if w >= words {
        terminate!();
    }
    if comptime!(bits == 64) {
        let (_, source) = sorted_source(w / 2, positions, k, axis_len, stride, inner);
        output[w] = input[2 * source + w % 2];
    } else if comptime!(bits == 32) {
        let (_, source) = sorted_source(w, positions, k, axis_len, stride, inner);
        output[w] = input[source];
    } else {
        let per_word = comptime!((32 / bits) as usize);
        let mut packed = 0u32;
        #[unroll]
        for s in 0..per_word {
            let e = w * per_word + s;
            if e < out_len {
                let (_, source) = sorted_source(e, positions, k, axis_len, stride, inner);
                packed |= load_field(input, source, bits) << comptime!(s as u32 * bits);
            }
        }
        output[w] = packed;
    }
}

/// Unit `w < words` writes word `w` of the indices: each output element's position along the
/// axis as an integer of `bits` bits (a 64-bit one as its low word and a zero high word), `out_len`
/// of them.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_write_indices(
    positions: &[u32],
    output: &mut [u32],
    out_len: usize,
    words: usize,
    k: usize,
    axis_len: usize,
    stride: usize,
    inner: usize,
    #[comptime] bits: u32,
) {
    let w = ABSOLUTE_POS;
    if w >= words {
        terminate!();
    }
    if comptime!(bits == 64) {
        let (p, _) = sorted_source(w / 2, positions, k, axis_len, stride, inner);
        output[w] = select(w % 2 == 1, 0u32, p);
    } else if comptime!(bits == 32) {
        let (p, _) = sorted_source(w, positions, k, axis_len, stride, inner);
        output[w] = p;
    } else {
        let per_word = comptime!((32 / bits) as usize);
        let mut packed = 0u32;
        #[unroll]
        for s in 0..per_word {
            let e = w * per_word + s;
            if e < out_len {
                let (p, _) = sorted_source(e, positions, k, axis_len, stride, inner);
                packed |= (p & comptime!((1u32 << bits) - 1)) << comptime!(s as u32 * bits);
            }
        }
        output[w] = packed;
    }
}
