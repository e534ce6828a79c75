//! The `#[cube]` kernels of the compaction. All of them are launched with cubes of
//! `cube_size` units (a power of two) in one dimension.

use cubecl::prelude::*;

use super::scan::cube_inclusive_sum;

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
    let total = cube_inclusive_sum(count, cube_size);
    if tile < tiles && UNIT_POS as usize == cube_size - 1 {
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
    #[define(O)] _output_type: ElemType,
) {
    let mut start = UNIT_POS as usize * chunk;
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
    let inclusive = cube_inclusive_sum(local, cube_size);
    let mut running = inclusive - local;
    for t in start..end {
        tile_offsets[t] = running;
        running += tile_counts[t];
    }
    if UNIT_POS as usize == cube_size - 1 {
        count[0] = O::cast_from(inclusive);
    }
}

/// Step 3: each unit writes the coordinates of the non-zero elements of its vectors (laid out
/// as in [`nonzero_tile_counts`]) at their rows: `tile_offsets[tile]` plus the number of
/// non-zero elements before the vector in the tile, from a scan of every vector's count in
/// element order in shared memory.
///
/// `dims` holds the sizes of the last `width` dimensions of the input; row `r` of the output is
/// `coordinates[r * width..(r + 1) * width]`.
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
    #[comptime] per_unit: usize,
    #[define(I, O)] _types: [ElemType; 2],
) {
    let tile = CUBE_POS;
    let unit = UNIT_POS as usize;
    let base = tile * cube_size * per_unit + unit;
    // offsets[k * cube_size + u]: first the count, then the exclusive offset within the tile,
    // of vector `u` of row `k`; that index order is element order.
    let mut offsets = Shared::<[u32]>::new_slice(comptime!(cube_size * per_unit));
    #[unroll]
    for k in 0..per_unit {
        let index = base + k * cube_size;
        let mut count = 0u32;
        if tile < tiles && index < vectors {
            count = count_lanes::<I, N>(input[index], ignore_sign);
        }
        offsets[k * cube_size + unit] = count;
    }
    sync_cube();
    // Raking: each unit scans `per_unit` consecutive entries, the cube scans the run totals.
    let start = unit * per_unit;
    let mut running = 0u32;
    #[unroll]
    for i in 0..per_unit {
        let count = offsets[start + i];
        offsets[start + i] = running;
        running += count;
    }
    let run_offset = cube_inclusive_sum(running, cube_size) - running;
    #[unroll]
    for i in 0..per_unit {
        offsets[start + i] += run_offset;
    }
    sync_cube();
    if tile < tiles {
        let tile_offset = tile_offsets[tile] as usize;
        for k in 0..per_unit {
            let index = base + k * cube_size;
            if index < vectors {
                let value = input[index];
                let flags = non_zero_lanes::<I, N>(value, ignore_sign);
                let lanes = value.vector_size().comptime();
                let mut row = tile_offset + offsets[k * cube_size + unit] as usize;
                #[unroll]
                for lane in 0..lanes {
                    if flags.extract(lane) != 0 {
                        let mut flat = index * lanes + lane;
                        let base_out = row * width;
                        #[unroll]
                        for d in 0..width {
                            let axis = comptime!(width - 1 - d);
                            let size = dims[axis] as usize;
                            coordinates[base_out + axis] = O::cast_from(flat % size);
                            flat /= size;
                        }
                        row += 1;
                    }
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
