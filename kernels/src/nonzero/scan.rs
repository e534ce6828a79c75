//! Step 2 of the compaction, the tile scan, and the cube-wide scans every step uses: in shared
//! memory for runtimes without plane operations (lavapipe), and with plane scans where the
//! runtime has them.
//!
//! The plane scan orders units by plane (`PLANE_POS`), then by position among the plane's
//! active units. It holds on partial planes too: Vulkan and WebGPU promise full subgroups only
//! when a pipeline asks for them, which wgpu does not, so nothing here assumes that every plane
//! has `PLANE_DIM` units or that `UNIT_POS` follows the plane order.

use cubecl::prelude::*;

/// Where a unit stands among the cube's planes: the rank of its plane's first unit, the number
/// of active units in its plane, and its position among them. Every rank from 0 to
/// `cube_size - 1` belongs to exactly one unit, in [`cube_inclusive_sum`]'s order.
#[derive(CubeType, Clone, Copy)]
pub(crate) struct PlaneGeometry {
    /// The rank of the plane's first unit: the number of units in the planes before it.
    pub first: u32,
    /// The number of active units in the plane.
    pub units: u32,
    /// The unit's position among its plane's active units.
    pub lane: u32,
}

/// The unit's [`PlaneGeometry`]. One barrier: every unit of the cube must call it, in uniform
/// control flow.
#[cube]
pub(crate) fn plane_geometry(#[comptime] cube_size: usize) -> PlaneGeometry {
    let units = plane_sum(1u32);
    let lane = plane_exclusive_sum(1u32);
    let first = planes_before(units, cube_size);
    PlaneGeometry { first, units, lane }
}

/// The unit's rank in [`cube_inclusive_sum`]'s order, from 0 to `cube_size - 1`: `UNIT_POS`
/// without planes, its plane's first rank plus its lane with them (one barrier then). Every
/// unit of the cube must call it, in uniform control flow.
#[cube]
pub(crate) fn scan_rank(#[comptime] cube_size: usize, #[comptime] planes: bool) -> u32 {
    if comptime!(planes) {
        let geometry = plane_geometry(cube_size);
        geometry.first + geometry.lane
    } else {
        UNIT_POS
    }
}

/// The inclusive prefix sum of `value` over the units of the cube, in rank order (see
/// [`scan_rank`]). Every unit of the cube must call it, in uniform control flow.
#[cube]
pub(crate) fn cube_inclusive_sum(
    value: u32,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
) -> u32 {
    if comptime!(planes) {
        inclusive_sum_planes(value, cube_size)
    } else {
        inclusive_sum_shared(value, cube_size)
    }
}

/// The shared-memory scan: the cube's values are split into `segments` runs of
/// `cube_size / segments`; one unit per run scans it sequentially, one unit scans the run totals,
/// and every unit adds its run's offset. Three barriers instead of Hillis-Steele's
/// `2 * log2(cube_size)`, which matters where barriers are expensive (CPU Vulkan drivers such as
/// lavapipe).
#[cube]
fn inclusive_sum_shared(value: u32, #[comptime] cube_size: usize) -> u32 {
    let segments = comptime!(1usize << (cube_size.trailing_zeros() / 2));
    let run = comptime!(cube_size / segments);
    let mut values = Shared::<[u32]>::new_slice(cube_size);
    let mut offsets = Shared::<[u32]>::new_slice(segments);
    let unit = UNIT_POS as usize;

    values[unit] = value;
    sync_cube();
    if unit < segments {
        let start = unit * run;
        let mut running = 0u32;
        for i in 0..run {
            running += values[start + i];
            values[start + i] = running;
        }
        offsets[unit] = running;
    }
    sync_cube();
    if unit == 0 {
        let mut running = 0u32;
        for s in 0..segments {
            let total = offsets[s];
            offsets[s] = running;
            running += total;
        }
    }
    sync_cube();
    values[unit] + offsets[unit / run]
}

/// The plane scan: each plane scans its active units and adds the totals of the planes before
/// its own.
#[cube]
fn inclusive_sum_planes(value: u32, #[comptime] cube_size: usize) -> u32 {
    plane_inclusive_sum(value) + planes_before(plane_sum(value), cube_size)
}

/// The sum of `plane_total` over the planes before the unit's own (by `PLANE_POS`), where
/// `plane_total` is the same in every unit of a plane: the plane's first active unit publishes
/// it, and after one barrier every unit adds up the slots before its plane's. Every unit of the
/// cube must call it, in uniform control flow.
#[cube]
pub(crate) fn planes_before(plane_total: u32, #[comptime] cube_size: usize) -> u32 {
    // One slot per plane; `cube_size` slots cover planes of any size.
    let mut totals = Shared::<[u32]>::new_slice(cube_size);
    if plane_exclusive_sum(1u32) == 0 {
        totals[PLANE_POS as usize] = plane_total;
    }
    sync_cube();
    let mut offset = 0u32;
    for p in 0..PLANE_POS as usize {
        offset += totals[p];
    }
    offset
}

/// Tiles each unit of the staged tile scan holds per pass: a pass stages `cube_size` times as
/// many counts in shared memory (8 KiB at 256 units, under WebGPU's 16 KiB).
pub(super) const STAGED_PER_UNIT: usize = 8;

// `#[cube]` code has ranges but no iterator adapters.
#[allow(clippy::needless_range_loop)]
/// Step 2, one cube: `tile_offsets[t]` = sum of `tile_counts[..t]`, `tile_offsets[tiles]` and
/// `count[0]` = the sum of all of them.
///
/// With `planes` (GPUs) the cube stages `cube_size * 8` counts at a time in shared memory with
/// coalesced loads, every load of a pass in flight at once, scans them there and stores the
/// offsets coalesced too (see `scan_tiles_staged`); `chunk` is unused then. Without (CPU
/// drivers, where a unit's sequential loop is cheap and barriers are not), each unit scans a
/// contiguous chunk of `chunk` tiles straight from memory.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
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
    if comptime!(planes) {
        scan_tiles_staged::<O>(tile_counts, tile_offsets, count, tiles, cube_size);
    } else {
        scan_tiles_by_chunks::<O>(tile_counts, tile_offsets, count, tiles, chunk, cube_size);
    }
}

/// The tile scan with plane operations, in passes of `cube_size * STAGED_PER_UNIT` tiles.
///
/// A pass loads its counts coalesced (unit `u` loads tiles `u`, `u + cube_size`, ...; all
/// `STAGED_PER_UNIT` loads issued before the barrier) into shared memory; then the unit of scan
/// rank `r` adds up the `STAGED_PER_UNIT` consecutive counts at `r * STAGED_PER_UNIT`, one cube
/// scan of those sums gives each run its offset, the unit rewrites its run as exclusive offsets
/// (plus the passes before), and the cube stores the pass back coalesced. The per-unit
/// sequential loops read shared memory: read from device memory, one dependent load after
/// another, they dominate the launch on a GPU.
#[allow(clippy::needless_range_loop)]
#[cube]
fn scan_tiles_staged<O: Int>(
    tile_counts: &[u32],
    tile_offsets: &mut [u32],
    count: &mut [O],
    tiles: usize,
    #[comptime] cube_size: usize,
) {
    let per_unit = comptime!(STAGED_PER_UNIT);
    let span = comptime!(cube_size * STAGED_PER_UNIT);
    let rank = scan_rank(cube_size, true) as usize;
    let unit = UNIT_POS as usize;
    let first = rank * per_unit;
    let mut staged = Shared::<[u32]>::new_slice(span);
    let mut pass_total = Shared::<[u32]>::new_slice(1usize);
    let mut carry = 0u32;
    let passes = (tiles + comptime!(span - 1)) / span;
    for pass in 0..passes {
        let base = pass * span;
        #[unroll]
        for i in 0..per_unit {
            let at = comptime!(i * cube_size) + unit;
            let mut value = 0u32;
            if base + at < tiles {
                value = tile_counts[base + at];
            }
            staged[at] = value;
        }
        sync_cube();
        let mut local = 0u32;
        #[unroll]
        for i in 0..per_unit {
            local += staged[first + i];
        }
        let inclusive = cube_inclusive_sum(local, cube_size, true);
        let mut running = carry + inclusive - local;
        #[unroll]
        for i in 0..per_unit {
            let value = staged[first + i];
            staged[first + i] = running;
            running += value;
        }
        if rank == comptime!(cube_size - 1) {
            pass_total[0] = running;
        }
        sync_cube();
        carry = pass_total[0];
        #[unroll]
        for i in 0..per_unit {
            let at = comptime!(i * cube_size) + unit;
            if base + at < tiles {
                tile_offsets[base + at] = staged[at];
            }
        }
        // The next pass overwrites `staged` and `pass_total` only after every unit is done
        // reading them.
        sync_cube();
    }
    if unit == 0 {
        tile_offsets[tiles] = carry;
        count[0] = O::cast_from(carry);
    }
}

/// The tile scan without plane operations: each unit scans a contiguous chunk of `chunk` tiles
/// straight from memory, around one cube scan of the chunks' totals.
#[allow(clippy::needless_range_loop)]
#[cube]
fn scan_tiles_by_chunks<O: Int>(
    tile_counts: &[u32],
    tile_offsets: &mut [u32],
    count: &mut [O],
    tiles: usize,
    chunk: usize,
    #[comptime] cube_size: usize,
) {
    let position = scan_rank(cube_size, false) as usize;
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
    let inclusive = cube_inclusive_sum(local, cube_size, false);
    let mut running = inclusive - local;
    for t in start..end {
        tile_offsets[t] = running;
        running += tile_counts[t];
    }
    if position == cube_size - 1 {
        tile_offsets[tiles] = inclusive;
        count[0] = O::cast_from(inclusive);
    }
}
