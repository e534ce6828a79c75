//! The result rows: each segment's kept boxes, compacted by the exclusive scan of the kept
//! counts, as `(batch, class, box)` rows in the output's integer type, then rows of -1.

use cubecl::prelude::*;

/// Element `e` of the selected rows as 32 bits (its low word where the type has 64), and
/// whether it is padding (-1).
#[cube]
fn row_element(
    e: usize,
    offsets: &[u32],
    kept_index: &[u32],
    segments: usize,
    classes: usize,
    cap: usize,
) -> (u32, bool) {
    let row = (e / 3) as u32;
    let column = e % 3;
    let total = offsets[segments];
    let mut value = 0u32;
    let padding = row >= total;
    if !padding {
        // The last segment whose first row is at or before `row`: the one that holds it, since
        // segments that kept nothing share their offset with the next.
        let mut low = 0usize;
        let mut high = segments;
        loop {
            if high - low <= 1 {
                break;
            }
            let middle = (low + high) / 2;
            if offsets[middle] <= row {
                low = middle;
            } else {
                high = middle;
            }
        }
        let slot = (row - offsets[low]) as usize;
        let listed = kept_index[low * cap + select(slot < cap, slot, cap - 1)];
        value = select(
            column == 2,
            listed,
            select(column == 1, (low % classes) as u32, (low / classes) as u32),
        );
    }
    (value, padding)
}

/// Unit `w < words` writes word `w` of the `out_len` row elements, of `bits` bits (a 64-bit one
/// as two words, low first; -1 in every bit of the padding); unit 0 also writes the total from
/// `offsets[segments]` into `count` (an 8- or 16-bit count into the low bits of its word).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn nms_write_rows(
    offsets: &[u32],
    kept_index: &[u32],
    selected: &mut [u32],
    count: &mut [u32],
    segments: usize,
    classes: usize,
    cap: usize,
    out_len: usize,
    words: usize,
    #[comptime] bits: u32,
) {
    let w = ABSOLUTE_POS;
    if w >= words.max(1) {
        terminate!();
    }
    if w == 0 {
        let total = offsets[segments];
        if comptime!(bits == 64) {
            count[0] = total;
            count[1] = 0u32;
        } else if comptime!(bits == 32) {
            count[0] = total;
        } else {
            let mask = comptime!((1u32 << bits) - 1);
            count[0] = (count[0] & !mask) | (total & mask);
        }
    }
    if w < words {
        if comptime!(bits == 64) {
            let (value, padding) = row_element(w / 2, offsets, kept_index, segments, classes, cap);
            let low = select(padding, 0xFFFF_FFFFu32, value);
            let high = select(padding, 0xFFFF_FFFFu32, 0u32);
            selected[w] = select(w % 2 == 1, high, low);
        } else if comptime!(bits == 32) {
            let (value, padding) = row_element(w, offsets, kept_index, segments, classes, cap);
            selected[w] = select(padding, 0xFFFF_FFFFu32, value);
        } else {
            let per_word = comptime!((32 / bits) as usize);
            let mask = comptime!((1u32 << bits) - 1);
            let mut packed = 0u32;
            #[unroll]
            for s in 0..per_word {
                let e = w * per_word + s;
                if e < out_len {
                    let (value, padding) =
                        row_element(e, offsets, kept_index, segments, classes, cap);
                    let field = select(padding, mask, value & mask);
                    packed |= field << comptime!(s as u32 * bits);
                }
            }
            selected[w] = packed;
        }
    }
}
