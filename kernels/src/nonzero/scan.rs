//! Cube-wide scans: in shared memory for runtimes without plane operations (lavapipe), and with
//! plane scans where the runtime has them.
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
