//! Groups of columns: the deterministic kernels other than the sorted rows' exact sums give
//! each unit one row (an update row, or a position among the rows sorted by target) and
//! [`GROUP_COLUMNS`] consecutive columns of it, which it reads and writes in vectors where
//! whole vectors tile the slice. One test of the row serves the group, and CPU drivers, which
//! run every instruction of a kernel for each group of lanes and load or store lane by lane,
//! pay little more for a load of four lanes than for one of one.

use cubecl::prelude::*;

use super::exact::{SumFormat, typed_term, widen};

/// Columns one unit of a group takes.
pub const GROUP_COLUMNS: usize = 8;

/// Where a unit works: its row, its first column and how many of the group's columns the
/// slice has.
#[derive(CubeType)]
pub(super) struct Columns {
    pub row: usize,
    pub first: usize,
    pub count: usize,
}

#[cube]
pub(super) fn columns(unit: usize, slice: usize, groups: usize) -> Columns {
    let row = unit / groups;
    let first = (unit - row * groups) * GROUP_COLUMNS;
    let left = slice - first;
    Columns {
        row,
        first,
        count: select(left < GROUP_COLUMNS, left, GROUP_COLUMNS),
    }
}

/// The `f32` bits of the group's `count` columns of the slice whose first column is element
/// `element` of `data` (zeros past them): typed data one element a lane; data in words
/// (`packed`) one `f32` or two 16-bit fields a 32-bit lane. With vectors of several lanes the
/// caller keeps `element` and the slice a multiple of a vector's elements, so that whole
/// vectors cover the columns.
#[cube]
pub(super) fn load_columns<T: Numeric, N: Size>(
    data: &[Vector<T, N>],
    element: usize,
    count: usize,
    #[comptime] packed: Option<SumFormat>,
) -> Array<u32> {
    let lanes = data.vector_size();
    let per_lane = comptime!(packed.map_or(1, SumFormat::per_word));
    let per_vector = comptime!(lanes * per_lane);
    let format = comptime!(packed.unwrap_or(SumFormat::F32));
    let mut terms = Array::<u32>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        terms[j] = 0u32;
    }
    if comptime!(lanes == 1) {
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            if j < count {
                let at = element + j;
                if comptime!(packed.is_some()) {
                    let word = u32::cast_from(data[at / per_lane].extract(0usize));
                    terms[j] = u32::reinterpret(widen(field_in(word, at, format), format));
                } else {
                    terms[j] = typed_term::<T>(data[at].extract(0usize));
                }
            }
        }
    } else {
        let first_vector = element / per_vector;
        #[unroll]
        for v in 0..comptime!(GROUP_COLUMNS.div_ceil(per_vector)) {
            if comptime!(v * per_vector) < count {
                let value = data[first_vector + v];
                #[unroll]
                for lane in 0..lanes {
                    let column = comptime!(v * per_vector + lane * per_lane);
                    if comptime!(packed.is_some()) {
                        let word = u32::cast_from(value.extract(lane));
                        #[unroll]
                        for f in 0..per_lane {
                            terms[comptime!(column + f)] =
                                u32::reinterpret(widen(field_in(word, f, format), format));
                        }
                    } else {
                        terms[column] = typed_term::<T>(value.extract(lane));
                    }
                }
            }
        }
    }
    terms
}

/// Where element `index` of `format` lies in data held in 32-bit words: its word, the shift of
/// its field and the field's mask (`f32`: the whole word; `f16`/`bf16`: two fields a word).
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

/// The field of element `index` of `format` in `word`, the word that holds it (see
/// [`field_of`]).
#[cube]
pub(super) fn field_in(word: u32, index: usize, #[comptime] format: SumFormat) -> u32 {
    let (_, shift, mask) = field_of(index, format);
    (word >> shift) & mask
}

/// Writes `bits` over the field at `shift` of `output[word]` that holds `old`: for
/// `f16`/`bf16` two to a word it XORs the change into the word, which leaves the other field as
/// its own unit sets it.
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

/// Stores the group's `count` columns `values` to the typed slice whose first column is element
/// `element` of `data`, in whole vectors as [`load_columns`] reads them.
#[cube]
pub(super) fn store_columns<T: Numeric, N: Size>(
    data: &mut [Vector<T, N>],
    element: usize,
    count: usize,
    values: &Array<f32>,
) {
    let lanes = data.vector_size();
    if comptime!(lanes == 1) {
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            if j < count {
                data[element + j] = Vector::<T, N>::new(T::cast_from(values[j]));
            }
        }
    } else {
        let first_vector = element / lanes;
        #[unroll]
        for v in 0..comptime!(GROUP_COLUMNS.div_ceil(lanes)) {
            if comptime!(v * lanes) < count {
                let mut value = Vector::<T, N>::new(T::from_int(0));
                #[unroll]
                for lane in 0..lanes {
                    value.insert(lane, T::cast_from(values[comptime!(v * lanes + lane)]));
                }
                data[first_vector + v] = value;
            }
        }
    }
}

/// The bits of the group's `count` fields of data in words of `format` (see [`field_of`]) from
/// element `element` on (zeros past them). Only the unit of a group writes its fields during a
/// launch, so the loads see their current bits.
#[cube]
pub(super) fn load_fields(
    output: &[Atomic<u32>],
    element: usize,
    count: usize,
    #[comptime] format: SumFormat,
) -> Array<u32> {
    let mut fields = Array::<u32>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        fields[j] = 0u32;
        if j < count {
            let (word, _, _) = field_of(element + j, format);
            fields[j] = field_in(output[word].load(), element + j, format);
        }
    }
    fields
}

/// Writes `fields` over the group's `count` fields of data in words of `format` from element
/// `element` on, which hold `old` (see [`write_field`]).
#[cube]
pub(super) fn store_fields(
    output: &mut [Atomic<u32>],
    element: usize,
    count: usize,
    old: &Array<u32>,
    fields: &Array<u32>,
    #[comptime] format: SumFormat,
) {
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        if j < count {
            let (word, shift, _) = field_of(element + j, format);
            write_field(output, word, shift, old[j], fields[j]);
        }
    }
}
