//! Outputs of an integer type the runtime [cannot bind](crate#types-the-runtime-cannot-bind): the
//! compaction writes `u32` coordinates and count into scratch buffers, and one more launch stores
//! them into the outputs as 32-bit words, two or four values to a word or one value to two words,
//! with the padding rows set to the fill value.

use cubecl::prelude::*;

/// Unit `w` writes output word `w` of the `values` coordinates (`rows[v]` for `v < count *
/// width`, the fill's bits after that when `has_fill`, and otherwise the word's own bits as they
/// were), and unit 0 also writes the count. `bits` is the output's width: 8, 16 or 64. Bytes of
/// a word past the last value (and past the count) keep their value.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn nonzero_output_words(
    rows: &[u32],
    count: &[u32],
    coordinates: &mut [u32],
    count_out: &mut [u32],
    values: usize,
    words: usize,
    width: usize,
    fill_low: u32,
    fill_high: u32,
    #[comptime] bits: u32,
    #[comptime] has_fill: bool,
) {
    let word = ABSOLUTE_POS;
    if word >= words.max(1) {
        terminate!();
    }
    let total = count[0];
    let written = total as usize * width;
    if comptime!(bits == 64) {
        if word == 0 {
            count_out[0] = total;
            count_out[1] = 0u32;
        }
        if word < words {
            let value = word / 2;
            let high = word % 2 == 1;
            if value < written {
                // Coordinates are below 2^32: the high word is zero.
                let mut bits_out = rows[value];
                if high {
                    bits_out = 0u32;
                }
                coordinates[word] = bits_out;
            } else if comptime!(has_fill) {
                let mut bits_out = fill_low;
                if high {
                    bits_out = fill_high;
                }
                coordinates[word] = bits_out;
            }
        }
    } else {
        let per_word = comptime!((32 / bits) as usize);
        let mask = comptime!(((1u64 << bits) - 1) as u32);
        if word == 0 {
            count_out[0] = (count_out[0] & !mask) | (total & mask);
        }
        if word < words {
            let mut packed = coordinates[word];
            #[unroll]
            for s in 0..per_word {
                let value = word * per_word + s;
                let shift = comptime!((s as u32) * bits);
                if value < written {
                    packed = (packed & !(mask << shift)) | ((rows[value] & mask) << shift);
                } else if comptime!(has_fill) && value < values {
                    packed = (packed & !(mask << shift)) | ((fill_low & mask) << shift);
                }
            }
            coordinates[word] = packed;
        }
    }
}
