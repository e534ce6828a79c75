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

/// An output position of a `[outer, slices, inner]` output as `(o, r, i)`: outer index, slice
/// and place in the slice, dividing only where `walk` needs it.
#[cube]
fn output_coordinates(
    position: usize,
    slices: usize,
    inner: usize,
    #[comptime] walk: SliceWalk,
) -> (usize, usize, usize) {
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
    (o, r, i)
}

/// Where slice `r` of outer index `o` of the output starts in a `[outer, axis_len, inner]`
/// input, or `end` (past the input) for padding: slice `r` of the output is input slice
/// `selected[r]` while `r < count`.
#[cube]
fn slice_source(
    o: usize,
    r: usize,
    selected: &[u32],
    count: u32,
    axis_len: usize,
    inner: usize,
    end: usize,
) -> usize {
    let mut source = end;
    if (r as u32) < count {
        let s = selected[r] as usize;
        // Always true for the compaction's rows below the count; the check keeps every load
        // inside the input whatever the list holds.
        if s < axis_len {
            source = (o * axis_len + s) * inner;
        }
    }
    source
}

/// Where output position `position` lies in the input, or `end` for padding (see
/// [`slice_source`]).
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
    let (o, r, i) = output_coordinates(position, slices, inner, walk);
    let base = slice_source(o, r, selected, count, axis_len, inner, end);
    let mut source = end;
    if base < end {
        source = base + i;
    }
    source
}

/// Unit `u` writes output vectors `u * per_unit..(u + 1) * per_unit` below `units` (an output
/// `[outer, slices, inner]` in vectors of `N` elements, `inner` counting vectors): the input's
/// vector at the listed slice, or zeros past `count[0]`. Unit 0 also stores the count in the
/// count's own type. `walk` follows the shape ([`SliceWalk::new`]). The unit steps from one
/// vector to the next without dividing, and reads a slice's listed index once: `per_unit` 1
/// keeps neighbouring units on neighbouring vectors (GPUs); more suits CPU drivers, which pay
/// per unit and per lane's load.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
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
    #[comptime] per_unit: usize,
    #[define(T)] _data_type: ElemType,
    #[define(C)] _count_type: ElemType,
) {
    let start = ABSOLUTE_POS * per_unit;
    let total = count[0];
    if ABSOLUTE_POS == 0 {
        count_out[0] = C::cast_from(total);
    }
    if start >= units {
        terminate!();
    }
    let end = input.len();
    // The list holds `slices` entries: a slice past them reads as padding whatever the count.
    let mut listed = total;
    if listed > slices as u32 {
        listed = slices as u32;
    }
    let (mut o, mut r, mut i) = output_coordinates(start, slices, inner, walk);
    let mut base = slice_source(o, r, selected, listed, axis_len, inner, end);
    #[unroll]
    for k in 0..per_unit {
        let position = start + k;
        if position < units {
            let mut value = Vector::<T, N>::new(T::from_int(0));
            if base < end {
                value = input[base + i];
            }
            output[position] = value;
        }
        if comptime!(k + 1 < per_unit) {
            // The next vector: the next place in the slice, or the next slice's first.
            i += 1;
            if i == inner {
                i = 0;
                r += 1;
                if comptime!(walk == SliceWalk::Any) && r == slices {
                    r = 0;
                    o += 1;
                }
                base = slice_source(o, r, selected, listed, axis_len, inner, end);
            }
        }
    }
}

/// [`compress_gather_slices`](fn@compress_gather_slices) for 8- and 16-bit elements that the
/// runtime [cannot bind](crate#types-the-runtime-cannot-bind) and whose slices do not fill whole
/// words: unit `w` writes output word `w` of `words`, the `32 / element_bits` elements it holds (of
/// `elements`), each from the input word that holds its source (of `elements_in`). The last word's
/// bits past the output keep their value: they may belong to whatever follows it.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
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
