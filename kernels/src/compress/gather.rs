//! The last launch of a compress: each output slice from the input slice that the compaction
//! listed for it, or zeros past the count.

use cubecl::prelude::*;

/// Which of the output's coordinates a gather unit works out: divisions are dear on CPU
/// drivers, which run them one lane at a time, so the kernels divide only where the shape needs
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SliceWalk {
    /// One outer index and slices of one unit: a unit's position is its slice.
    Elements,
    /// One outer index: the slice and the place in it.
    Leading,
    /// Any shape: the outer index too.
    Any,
}

impl SliceWalk {
    /// The walk for an output of `outer` outer indices and slices of `inner` units.
    pub fn new(outer: usize, inner: usize) -> Self {
        match (outer, inner) {
            (1, 1) => Self::Elements,
            (1, _) => Self::Leading,
            _ => Self::Any,
        }
    }
}

/// Where output position `position` of a `[outer, slices, inner]` output lies in a
/// `[outer, axis_len, inner]` input, or `end` (past the input) for padding: slice `r` of the
/// output is input slice `selected[r]` while `r < count`.
#[cube]
fn source_of(
    position: usize,
    selected: &[u32],
    count: u32,
    axis_len: usize,
    slices: usize,
    inner: usize,
    end: usize,
    #[comptime] walk: SliceWalk,
) -> usize {
    let mut i = 0usize;
    let mut r = position;
    let mut o = 0usize;
    if comptime!(walk != SliceWalk::Elements) {
        i = position % inner;
        r = position / inner;
    }
    if comptime!(walk == SliceWalk::Any) {
        o = r / slices;
        r %= slices;
    }
    let mut source = end;
    if (r as u32) < count {
        let s = selected[r] as usize;
        // Always true for the compaction's rows below the count; the check keeps every load
        // inside the input whatever the list holds.
        if s < axis_len {
            source = (o * axis_len + s) * inner + i;
        }
    }
    source
}

/// Unit `p` writes output vector `p` of `units` (an output `[outer, slices, inner]` in vectors
/// of `N` elements, `inner` counting vectors): the input's vector at the listed slice, or zeros
/// past `count[0]`. Unit 0 also stores the count in the count's own type. `walk` follows the
/// shape ([`SliceWalk::new`]).
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn compress_gather_slices<T: Numeric, N: Size, C: Int>(
    input: &[Vector<T, N>],
    selected: &[u32],
    count: &[u32],
    output: &mut [Vector<T, N>],
    count_out: &mut [C],
    axis_len: usize,
    slices: usize,
    inner: usize,
    units: usize,
    #[comptime] walk: SliceWalk,
    #[define(T)] _data_type: ElemType,
    #[define(C)] _count_type: ElemType,
) {
    let position = ABSOLUTE_POS;
    let total = count[0];
    if position == 0 {
        count_out[0] = C::cast_from(total);
    }
    if position >= units {
        terminate!();
    }
    let end = input.len();
    let source = source_of(
        position, selected, total, axis_len, slices, inner, end, walk,
    );
    let mut value = Vector::<T, N>::new(T::from_int(0));
    if source < end {
        value = input[source];
    }
    output[position] = value;
}

/// [`compress_gather_slices`](fn@compress_gather_slices) for 8- and 16-bit elements that the runtime
/// [cannot bind](crate#types-the-runtime-cannot-bind) and whose slices do not fill whole
/// words: unit `w` writes output word `w` of `words`, the `32 / element_bits` elements it holds
/// (of `elements`), each from the input word that holds its source (of `elements_in`). The
/// last word's bits past the output keep their value: they may belong to whatever follows it.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn compress_gather_packed<C: Int>(
    input: &[u32],
    selected: &[u32],
    count: &[u32],
    output: &mut [u32],
    count_out: &mut [C],
    axis_len: usize,
    slices: usize,
    inner: usize,
    elements_in: usize,
    elements: usize,
    words: usize,
    #[comptime] element_bits: usize,
    #[comptime] walk: SliceWalk,
    #[define(C)] _count_type: ElemType,
) {
    let word = ABSOLUTE_POS;
    let total = count[0];
    if word == 0 {
        count_out[0] = C::cast_from(total);
    }
    if word >= words {
        terminate!();
    }
    let per_word = comptime!(32 / element_bits);
    let field = comptime!(((1u64 << element_bits) - 1) as u32);
    let mut packed = 0u32;
    let mut kept = 0u32;
    #[unroll]
    for e in 0..per_word {
        let element = word * per_word + e;
        let shift = comptime!((e * element_bits) as u32);
        if element < elements {
            let source = source_of(
                element,
                selected,
                total,
                axis_len,
                slices,
                inner,
                elements_in,
                walk,
            );
            if source < elements_in {
                let bits = (input[source / per_word]
                    >> ((source % per_word) * element_bits) as u32)
                    & field;
                packed |= bits << shift;
            }
        } else {
            kept |= field << shift;
        }
    }
    output[word] = packed | (output[word] & kept);
}
