//! Step 1 of the compaction: each cube reads its tile once, counts its non-zero elements and
//! leaves one bit per element in the mask (see [`TileShape`] for the layout).

use cubecl::prelude::*;

use super::scan::{cube_inclusive_sum, scan_rank};
use super::tile::TileShape;

/// How the count kernel reads elements: typed (`element_bits` 0), or as 32-bit words holding
/// 8-, 16- or 64-bit elements (`element_bits`) for runtimes that cannot bind those types; with
/// `ignore_sign` (floats) an element's sign bit is not counted, so `-0.0` is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementRead {
    /// Whether the sign bit is left out (IEEE floats).
    pub ignore_sign: bool,
    /// 0 for a typed read, else the width of the elements packed into 32-bit words.
    pub element_bits: usize,
}

/// The lanes of `value` that are non-zero, as bits `0..lanes` of a `u32`. With `ignore_sign`
/// (float inputs read as unsigned bits) the sign bit is dropped first, so `-0.0` is zero and NaN
/// is not.
#[cube]
fn non_zero_bits<I: Int, N: Size>(value: Vector<I, N>, #[comptime] ignore_sign: bool) -> u32 {
    let zero = Vector::<I, N>::new(I::from_int(0));
    let flags = if comptime!(ignore_sign) {
        Vector::<u32, N>::cast_from((value << Vector::<I, N>::new(I::from_int(1))).not_equal(&zero))
    } else {
        Vector::<u32, N>::cast_from(value.not_equal(&zero))
    };
    let mut bits = 0u32;
    #[unroll]
    for lane in 0..value.vector_size() {
        bits |= flags.extract(lane) << comptime!(lane as u32);
    }
    bits
}

/// Elements per input vector of `vector` lanes: one per lane for a typed read
/// (`element_bits == 0`), `32 / element_bits` per 32-bit lane for 8- and 16-bit elements read
/// as words, one per two lanes for 64-bit elements read as words.
pub(crate) fn elements_per_vector(vector: usize, element_bits: usize) -> usize {
    match element_bits {
        0 => vector,
        64 => vector / 2,
        bits => vector * (32 / bits),
    }
}

/// The elements of `value` that are non-zero, as bits `0..elements_per_vector` of a `u32`.
/// `element_bits` 0 reads each lane as one element of its own type ([`non_zero_bits`]); 8 or 16
/// reads each 32-bit lane as `32 / element_bits` elements, lowest bits first (little-endian
/// storage); 64 reads each pair of 32-bit lanes as one element, low word first. With
/// `ignore_sign` each element's top bit is dropped.
#[cube]
fn vector_bits<I: Int, N: Size>(
    value: Vector<I, N>,
    #[comptime] ignore_sign: bool,
    #[comptime] element_bits: usize,
) -> u32 {
    let mut bits = 0u32;
    let vector = value.vector_size();
    if comptime!(element_bits == 0) {
        bits = non_zero_bits::<I, N>(value, ignore_sign);
    } else if comptime!(element_bits == 64) {
        let high_mask = comptime!(if ignore_sign {
            0x7FFF_FFFFu32
        } else {
            u32::MAX
        });
        #[unroll]
        for e in 0..comptime!(vector / 2) {
            let low = u32::cast_from(value.extract(comptime!(2 * e)));
            let high = u32::cast_from(value.extract(comptime!(2 * e + 1)));
            bits |= select((low | (high & high_mask)) != 0, 1u32, 0u32) << comptime!(e as u32);
        }
    } else {
        let per_lane = comptime!(32 / element_bits);
        let field = comptime!(((1u64 << (element_bits - usize::from(ignore_sign))) - 1) as u32);
        #[unroll]
        for lane in 0..vector {
            let word = u32::cast_from(value.extract(lane));
            #[unroll]
            for s in 0..per_lane {
                let element = (word >> comptime!((s * element_bits) as u32)) & field;
                bits |= select(element != 0, 1u32, 0u32) << comptime!((lane * per_lane + s) as u32);
            }
        }
    }
    bits
}

/// The bits of vector `index` (of `lanes` elements) that stand for elements before `len`: all
/// of them but in the last, partly filled vector of an input of 8- or 16-bit elements read as
/// words, whose last word also holds bytes past the input.
#[cube]
fn valid_bits(index: usize, len: usize, #[comptime] lanes: usize) -> u32 {
    // Selects, not branches: the plane scans that follow run with the whole plane.
    let first = index * lanes;
    let left = select(first < len, len, first) - first;
    let partial = (1u32 << u32::cast_from(select(left < lanes, left, 0))) - 1;
    select(
        left < lanes,
        partial,
        comptime!(((1u64 << lanes) - 1) as u32),
    )
}

/// Vector `index` of `input`, or zeros at or past `vectors` (`vectors > 0`). Selects rather
/// than branches, so the plane scans that follow run with the whole plane: past the end it
/// reads vector 0 and discards it.
#[cube]
fn load_or_zero<I: Int, N: Size>(
    input: &[Vector<I, N>],
    index: usize,
    vectors: usize,
) -> Vector<I, N> {
    let inside = index < vectors;
    let value = input[select(inside, index, 0)];
    select(inside, value, Vector::<I, N>::new(I::from_int(0)))
}

/// Step 1: `tile_counts[t]` = number of non-zero elements in tile `t` with planes, or without
/// `tile_counts[t * cube_size + s]` = the number in the run of the unit in slot `s` (no
/// barrier then); and tile `t`'s part of the mask (see [`TileShape`]). `vectors` counts input
/// vectors and `len` elements; `read` says how a vector holds them. The last word of 8- or
/// 16-bit elements read as words may hold bytes past element `len - 1`, which are never
/// counted.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn nonzero_tile_counts<I: Int, N: Size>(
    input: &[Vector<I, N>],
    tile_counts: &mut [u32],
    mask: &mut [u32],
    vectors: usize,
    tiles: usize,
    len: usize,
    #[comptime] shape: TileShape,
    #[comptime] read: ElementRead,
    #[define(I)] _input_type: ElemType,
) {
    let tile = CUBE_POS;
    let ignore_sign = comptime!(read.ignore_sign);
    let element_bits = comptime!(read.element_bits);
    let cube_size = comptime!(shape.cube_size);
    let per_unit = comptime!(shape.per_unit);
    let lanes = comptime!(shape.lanes);
    let words = comptime!(shape.words);
    let planes = comptime!(shape.planes);
    let slot = UNIT_POS as usize;
    // The unit's vectors (see [`TileShape`]): a row apart with planes, consecutive
    // without.
    let stride = comptime!(if planes { cube_size } else { 1 });
    let first = if comptime!(planes) {
        slot
    } else {
        slot * per_unit
    };
    let base = tile * cube_size * per_unit + first;
    // With planes (GPUs) every load is issued before any bit is tested, so a unit has
    // `per_unit` loads in flight, and only the last tile guards them. Without (CPU drivers,
    // which gain nothing from loads in flight) each vector is tested as soon as it is loaded.
    // The vectors held with planes (one unused slot without).
    let mut values = Array::<Vector<I, N>>::new(comptime!(if planes { per_unit } else { 1 }));
    if comptime!(planes) {
        if (tile + 1) * cube_size * per_unit <= vectors {
            #[unroll]
            for k in 0..per_unit {
                values[k] = input[base + k * stride];
            }
        } else {
            #[unroll]
            for k in 0..per_unit {
                values[k] = load_or_zero::<I, N>(input, base + k * stride, vectors);
            }
        }
    }
    let mut count = 0u32;
    if tile < tiles {
        #[unroll]
        for m in 0..words {
            let mut word = 0u32;
            #[unroll]
            for r in 0..comptime!(32 / lanes) {
                let k = comptime!(m * (32 / lanes) + r);
                if comptime!(k < per_unit) {
                    let value = if comptime!(planes) {
                        values[k]
                    } else {
                        load_or_zero::<I, N>(input, base + k * stride, vectors)
                    };
                    let mut bits = vector_bits::<I, N>(value, ignore_sign, element_bits);
                    if comptime!(element_bits == 8 || element_bits == 16) {
                        bits &= valid_bits(base + k * stride, len, lanes);
                    }
                    word |= bits << comptime!((r * lanes) as u32);
                }
            }
            count += word.count_ones();
            mask[(tile * words + m) * cube_size + slot] = word;
        }
    }
    if comptime!(planes) {
        let rank = scan_rank(cube_size, planes) as usize;
        let total = cube_inclusive_sum(count, cube_size, planes);
        if tile < tiles && rank == cube_size - 1 {
            tile_counts[tile] = total;
        }
    } else if tile < tiles {
        tile_counts[tile * cube_size + slot] = count;
    }
}
