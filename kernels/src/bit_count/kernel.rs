//! The `#[cube]` kernels: one over typed elements, one over 32-bit words.

use cubecl::prelude::*;

use crate::strided::strided_offset;

/// Writes `count_ones(input[i])` into `output[i]` for the first `units` vectors of `N` lanes of
/// two contiguous buffers.
///
/// `I` is the unsigned type of the input's storage width, `O` the output's integer type. The
/// host picks `N` to divide the element count, so one launch covers every element. Each unit
/// handles `per_unit` vectors, one cube's width apart (so each load and each store of a cube is
/// one contiguous range), and issues all its loads before its first store: the loads cannot wait
/// on stores that the compiler must assume alias them, which keeps `per_unit` loads in flight.
/// Each input byte is read once.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn bit_count_kernel<I: Int, O: Int, N: Size>(
    input: &[Vector<I, N>],
    output: &mut [Vector<O, N>],
    units: usize,
    #[comptime] per_unit: usize,
    #[define(I, O)] _types: [ElemType; 2],
) {
    let cube = CUBE_DIM as usize;
    let first = CUBE_POS * cube * per_unit + UNIT_POS as usize;
    let mut counts = Array::<Vector<u32, N>>::new(per_unit);
    #[unroll]
    for i in 0..per_unit {
        let position = first + i * cube;
        if position < units {
            counts[i] = input[position].count_ones();
        }
    }
    #[unroll]
    for i in 0..per_unit {
        let position = first + i * cube;
        if position < units {
            output[position] = Vector::cast_from(counts[i]);
        }
    }
}

/// How many elements one unit of [`bit_count_words_kernel`] handles: enough that its input and
/// its output both start and end on 32-bit word boundaries.
pub(crate) fn elements_per_unit(input_bytes: usize, output_bytes: usize) -> usize {
    4 / input_bytes.min(output_bytes).min(4)
}

/// The set bits of element `element` of a buffer of `bytes`-byte elements read as words.
#[cube]
fn count_element(input: &[u32], element: usize, #[comptime] bytes: usize) -> u32 {
    let mut count = 0u32;
    if comptime!(bytes < 4) {
        let per_word = comptime!(4 / bytes);
        let word = input[element / per_word];
        let shift = ((element % per_word) * comptime!(8 * bytes)) as u32;
        count = ((word >> shift) & comptime!(((1u64 << (8 * bytes)) - 1) as u32)).count_ones();
    } else {
        let words = comptime!(bytes / 4);
        #[unroll]
        for w in 0..words {
            count += input[element * words + w].count_ones();
        }
    }
    count
}

/// Puts the counts of elements `first..first + per_unit` of a contiguous buffer into
/// `counts[at..at + per_unit]`, 0 past `len`. Each word is loaded once, and only when it holds
/// an element before `len`.
#[cube]
fn count_contiguous(
    input: &[u32],
    counts: &mut Array<u32>,
    first: usize,
    len: usize,
    #[comptime] at: usize,
    #[comptime] bytes: usize,
    #[comptime] per_unit: usize,
) {
    let words = comptime!(per_unit * bytes / 4);
    let per_word = comptime!(4 / bytes.min(4));
    let words_per_element = comptime!(bytes.div_ceil(4));
    let first_word = first * bytes / 4;
    let mut loaded = Array::<u32>::new(words);
    #[unroll]
    for w in 0..words {
        // The element that word `w` (partly) holds.
        let element = first + comptime!(w * per_word / words_per_element);
        // A branch, not a select: the load must not run past the last element.
        loaded[w] = 0u32;
        if element < len {
            loaded[w] = input[first_word + w];
        }
    }
    #[unroll]
    for j in 0..per_unit {
        let mut count = 0u32;
        if comptime!(bytes < 4) {
            let shift = comptime!(((j % per_word) * 8 * bytes) as u32);
            let mask = comptime!(((1u64 << (8 * bytes)) - 1) as u32);
            count = ((loaded[comptime!(j / per_word)] >> shift) & mask).count_ones();
        } else {
            #[unroll]
            for w in 0..words_per_element {
                count += loaded[comptime!(j * words_per_element + w)].count_ones();
            }
        }
        counts[comptime!(at + j)] = select(first + j < len, count, 0u32);
    }
}

/// Stores the counts of elements `first..first + per_unit` (in `counts[at..at + per_unit]`) as
/// `bytes`-byte integers into the words of `output`, skipping elements past `len`. A word that also
/// holds bytes past the last element keeps them: it is read, merged and written back, so the store
/// never changes a byte outside the output even when the buffer continues past it.
#[cube]
fn store_counts(
    output: &mut [u32],
    counts: &Array<u32>,
    first: usize,
    len: usize,
    #[comptime] at: usize,
    #[comptime] bytes: usize,
    #[comptime] per_unit: usize,
) {
    if comptime!(bytes < 4) {
        let per_word = comptime!(4 / bytes);
        let words = comptime!(per_unit / per_word);
        let first_word = first / per_word;
        #[unroll]
        for w in 0..words {
            let element = first + comptime!(w * per_word);
            if element < len {
                let mut packed = 0u32;
                #[unroll]
                for s in 0..per_word {
                    packed |= counts[comptime!(at + w * per_word + s)]
                        << comptime!((s * 8 * bytes) as u32);
                }
                let valid = len - element;
                if valid < per_word {
                    // The last word: keep the bytes after the output's end.
                    let kept = !((1u32 << (valid * comptime!(8 * bytes)) as u32) - 1);
                    packed |= output[first_word + w] & kept;
                }
                output[first_word + w] = packed;
            }
        }
    } else {
        let words = comptime!(bytes / 4);
        #[unroll]
        for j in 0..per_unit {
            let element = first + j;
            if element < len {
                output[element * words] = counts[comptime!(at + j)];
                if comptime!(words == 2) {
                    output[element * words + 1] = 0u32;
                }
            }
        }
    }
}

/// How [`bit_count_words_kernel()`] reads and writes: element sizes, whether the input is
/// contiguous (read by offset alone), and the groups each unit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WordsLayout {
    /// Bytes per input element.
    pub input_bytes: usize,
    /// Bytes per output element.
    pub output_bytes: usize,
    /// Whether element `i` sits at offset `i` (otherwise `shape` and `strides` place it).
    pub contiguous: bool,
    /// Groups each unit counts, a cube's width apart.
    pub groups: usize,
}

/// BitCount over buffers read and written as 32-bit words, for element types the runtime
/// [cannot bind](crate#types-the-runtime-cannot-bind).
///
/// A *group* is `per_unit` consecutive elements (see `elements_per_unit`), so that it reads and
/// writes whole words: two f16 or four u8 per input word, an i64 as two words. Each unit counts
/// `groups` groups, one cube's width apart (neighbouring units read neighbouring words), and
/// issues every load before its first store, so that `groups` loads are in flight per unit.
/// With `contiguous`, element `i` is at offset `i` and each input word is loaded once;
/// otherwise its offset comes from `shape` and `strides` (in elements), which may be those of a
/// transposed, sliced or broadcast view. The tail is handled in the same launch: loads stop at
/// the last element, and the last output word keeps the bytes past the output's end.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn bit_count_words_kernel(
    input: &[u32],
    output: &mut [u32],
    shape: Sequence<usize>,
    strides: Sequence<usize>,
    len: usize,
    #[comptime] layout: WordsLayout,
) {
    let input_bytes = comptime!(layout.input_bytes);
    let output_bytes = comptime!(layout.output_bytes);
    let contiguous = comptime!(layout.contiguous);
    let groups = comptime!(layout.groups);
    let per_unit = comptime!(elements_per_unit(input_bytes, output_bytes));
    let cube = CUBE_DIM as usize;
    let first_group = CUBE_POS * cube * groups + UNIT_POS as usize;
    let mut counts = Array::<u32>::new(comptime!(per_unit * groups));
    #[unroll]
    for g in 0..groups {
        let first = (first_group + g * cube) * per_unit;
        let at = comptime!(g * per_unit);
        if comptime!(contiguous) {
            count_contiguous(input, &mut counts, first, len, at, input_bytes, per_unit);
        } else {
            #[unroll]
            for j in 0..per_unit {
                let element = first + j;
                counts[comptime!(at + j)] = 0u32;
                if element < len {
                    let offset = strided_offset(element, &shape, &strides);
                    counts[comptime!(at + j)] = count_element(input, offset, input_bytes);
                }
            }
        }
    }
    #[unroll]
    for g in 0..groups {
        let first = (first_group + g * cube) * per_unit;
        if first < len {
            store_counts(
                output,
                &counts,
                first,
                len,
                comptime!(g * per_unit),
                output_bytes,
                per_unit,
            );
        }
    }
}
