//! The `#[cube]` kernels of the compaction. All of them are launched with cubes of
//! `cube_size` units (a power of two) in one dimension.

use cubecl::prelude::*;

use super::scan::{cube_inclusive_sum, scan_position};

/// The lanes of `value` that are non-zero, as 0/1 per lane. With `ignore_sign` (float inputs
/// read as unsigned bits) the sign bit is dropped first, so `-0.0` is zero and NaN is not.
#[cube]
fn non_zero_lanes<I: Int, N: Size>(
    value: Vector<I, N>,
    #[comptime] ignore_sign: bool,
) -> Vector<u32, N> {
    let zero = Vector::<I, N>::new(I::from_int(0));
    if comptime!(ignore_sign) {
        Vector::cast_from((value << Vector::<I, N>::new(I::from_int(1))).not_equal(&zero))
    } else {
        Vector::cast_from(value.not_equal(&zero))
    }
}

/// The number of non-zero lanes of `value`.
#[cube]
fn count_lanes<I: Int, N: Size>(value: Vector<I, N>, #[comptime] ignore_sign: bool) -> u32 {
    let flags = non_zero_lanes::<I, N>(value, ignore_sign);
    let mut count = 0u32;
    #[unroll]
    for lane in 0..value.vector_size() {
        count += flags.extract(lane);
    }
    count
}

/// The coordinates of flat index `flat` in the dimensions `sizes` (`width` of them): one
/// division per axis but the first.
#[cube]
fn unravel(flat: u32, sizes: &Array<u32>, #[comptime] width: usize) -> Array<u32> {
    let mut coords = Array::<u32>::new(width);
    let mut rest = flat;
    #[unroll]
    for d in 0..width {
        let axis = comptime!(width - 1 - d);
        if comptime!(axis == 0) {
            coords[axis] = rest;
        } else {
            coords[axis] = rest % sizes[axis];
            rest /= sizes[axis];
        }
    }
    coords
}

/// Moves `coords` to the next flat index without dividing: adds one to the last axis and
/// carries on wrap.
#[cube]
fn step_to_next(coords: &mut Array<u32>, sizes: &Array<u32>, #[comptime] width: usize) {
    let mut carry = 1u32;
    #[unroll]
    for d in 0..width {
        let axis = comptime!(width - 1 - d);
        let next = coords[axis] + carry;
        let wrap = next == sizes[axis];
        coords[axis] = select(wrap, 0u32, next);
        carry = select(wrap, carry, 0u32);
    }
}

/// Step 1: `tile_counts[t]` = number of non-zero elements in tile `t`. A tile is `per_unit`
/// rows of `cube_size` consecutive vectors; unit `u` holds vector `u` of every row, so
/// neighbouring units read neighbouring vectors (coalesced on GPUs, contiguous SIMD loads on CPU
/// drivers).
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_tile_counts<I: Int, N: Size>(
    input: &[Vector<I, N>],
    tile_counts: &mut [u32],
    vectors: usize,
    tiles: usize,
    #[comptime] ignore_sign: bool,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
    #[comptime] per_unit: usize,
    #[define(I)] _input_type: ElemType,
) {
    let tile = CUBE_POS;
    let base = tile * cube_size * per_unit + UNIT_POS as usize;
    let mut count = 0u32;
    if tile < tiles {
        #[unroll]
        for k in 0..per_unit {
            let index = base + k * cube_size;
            if index < vectors {
                count += count_lanes::<I, N>(input[index], ignore_sign);
            }
        }
    }
    let total = cube_inclusive_sum(count, cube_size, planes);
    if tile < tiles && scan_position(planes) == cube_size - 1 {
        tile_counts[tile] = total;
    }
}

// `#[cube]` code has ranges but no iterator adapters.
#[allow(clippy::needless_range_loop)]
/// Step 2, one cube: `tile_offsets[t]` = sum of `tile_counts[..t]`, and `count[0]` = the sum of
/// all of them. Each unit scans a contiguous chunk of `chunk` tiles.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_scan_tiles<O: Int>(
    tile_counts: &[u32],
    tile_offsets: &mut [u32],
    count: &mut [O],
    tiles: usize,
    chunk: usize,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
    #[define(O)] _output_type: ElemType,
) {
    let position = scan_position(planes);
    let mut start = position * chunk;
    let mut end = start + chunk;
    if end > tiles {
        end = tiles;
    }
    if start > end {
        start = end;
    }
    let mut local = 0u32;
    for t in start..end {
        local += tile_counts[t];
    }
    let inclusive = cube_inclusive_sum(local, cube_size, planes);
    let mut running = inclusive - local;
    for t in start..end {
        tile_offsets[t] = running;
        running += tile_counts[t];
    }
    if position == cube_size - 1 {
        count[0] = O::cast_from(inclusive);
    }
}

/// Step 3: each unit takes `per_unit` consecutive vectors of the tile into registers and counts
/// their non-zero elements; a cube-wide scan of the unit totals, plus `tile_offsets[tile]`,
/// gives the unit its first row. The unit then walks its vectors in element order and writes
/// the coordinates of every non-zero element at the next row.
///
/// A tile holds the same vectors as in [`nonzero_tile_counts`], so the offsets agree; only the
/// unit that reads each vector differs, which lets a unit's rows follow from its own scan
/// without a transpose through shared memory (one cube scan per tile instead of one per row).
///
/// `dims` holds the sizes of the last `width` dimensions of the input; row `r` of the output is
/// `coordinates[r * width..(r + 1) * width]`. A vector's first element is unravelled once
/// (`width - 1` divisions); each further lane advances the coordinates by one with carries, so
/// no lane divides.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_write_coordinates<I: Int, O: Int, N: Size>(
    input: &[Vector<I, N>],
    tile_offsets: &[u32],
    dims: &[u32],
    coordinates: &mut [O],
    vectors: usize,
    tiles: usize,
    #[comptime] width: usize,
    #[comptime] ignore_sign: bool,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
    #[comptime] per_unit: usize,
    #[define(I, O)] _types: [ElemType; 2],
) {
    let tile = CUBE_POS;
    let first = tile * cube_size * per_unit + scan_position(planes) * per_unit;
    // The unit's vectors and their counts stay in registers between the scan and the writes.
    let mut counts = Array::<u32>::new(per_unit);
    let mut values = Array::<Vector<I, N>>::new(per_unit);
    let mut total = 0u32;
    #[unroll]
    for k in 0..per_unit {
        let index = first + k;
        let mut count = 0u32;
        let mut value = Vector::<I, N>::new(I::from_int(0));
        if tile < tiles && index < vectors {
            value = input[index];
            count = count_lanes::<I, N>(value, ignore_sign);
        }
        values[k] = value;
        counts[k] = count;
        total += count;
    }
    let exclusive = cube_inclusive_sum(total, cube_size, planes) - total;
    if tile < tiles {
        let mut sizes = Array::<u32>::new(width);
        #[unroll]
        for d in 0..width {
            sizes[d] = dims[d];
        }
        let mut row = (tile_offsets[tile] + exclusive) as usize;
        #[unroll]
        for k in 0..per_unit {
            if counts[k] != 0 {
                let index = first + k;
                let value = values[k];
                let lanes = value.vector_size().comptime();
                let flags = non_zero_lanes::<I, N>(value, ignore_sign);
                let mut coords = unravel(u32::cast_from(index * lanes), &sizes, width);
                #[unroll]
                for lane in 0..lanes {
                    if flags.extract(lane) != 0 {
                        let base_out = row * width;
                        #[unroll]
                        for d in 0..width {
                            coordinates[base_out + d] = O::cast_from(coords[d]);
                        }
                        row += 1;
                    }
                    step_to_next(&mut coords, &sizes, width);
                }
            }
        }
    }
}

/// Step 4 (optional): every element of rows `count[0]..rows` becomes `fill`.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn nonzero_fill_padding<O: Int>(
    coordinates: &mut [O],
    count: &[O],
    fill: InputScalar,
    elements: usize,
    #[comptime] width: usize,
    #[define(O)] _output_type: ElemType,
) {
    let position = ABSOLUTE_POS;
    if position >= elements {
        terminate!();
    }
    let first_padding = usize::cast_from(count[0]) * width;
    if position >= first_padding {
        coordinates[position] = fill.get::<O>();
    }
}
