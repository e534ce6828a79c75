//! Groups of columns: the deterministic kernels other than the exact sums by segments give
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
    let per_lane = comptime!(fields_per_word(packed));
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
                    terms[j] = u32::reinterpret(widen(field(word, at, format), format));
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
                                u32::reinterpret(widen(field(word, f, format), format));
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

/// Elements of data in words (`packed`: its format) per 32-bit word: two 16-bit fields, or one
/// `f32` (typed data, `None`, one a lane too).
fn fields_per_word(packed: Option<SumFormat>) -> usize {
    match packed {
        Some(SumFormat::F16 | SumFormat::BF16) => 2,
        _ => 1,
    }
}

/// The field of element `at` of `format` in `word`, the word that holds it: 16 bits, the low
/// ones for an even element, or for `f32` the whole word.
#[cube]
fn field(word: u32, at: usize, #[comptime] format: SumFormat) -> u32 {
    let mut bits = word;
    if comptime!(format != SumFormat::F32) {
        bits = (word >> (((at % 2usize) as u32) * 16u32)) & 0xFFFFu32;
    }
    bits
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

/// The bits of the group's `count` fields of data in words of `format` (see [`field`]) from
/// element `element` on (zeros past them). Only the unit of a group writes its fields during a
/// launch, so the loads see their current bits.
#[cube]
pub(super) fn load_fields(
    output: &[Atomic<u32>],
    element: usize,
    count: usize,
    #[comptime] format: SumFormat,
) -> Array<u32> {
    let per_word = comptime!(fields_per_word(Some(format)));
    let mut fields = Array::<u32>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        fields[j] = 0u32;
        if j < count {
            let at = element + j;
            fields[j] = field(output[at / per_word].load(), at, format);
        }
    }
    fields
}

/// Writes `fields` over the group's `count` fields of data in words of `format` from element
/// `element` on, which hold `old`: each change XORed into its word, which leaves a word's other
/// field as its own unit sets it.
#[cube]
pub(super) fn store_fields(
    output: &mut [Atomic<u32>],
    element: usize,
    count: usize,
    old: &Array<u32>,
    fields: &Array<u32>,
    #[comptime] format: SumFormat,
) {
    let per_word = comptime!(fields_per_word(Some(format)));
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        if j < count && fields[j] != old[j] {
            let at = element + j;
            let shift = ((at % per_word) as u32) * 16u32;
            output[at / per_word].fetch_xor((fields[j] ^ old[j]) << shift);
        }
    }
}
