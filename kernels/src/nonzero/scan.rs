//! Cube-wide scans: in shared memory for runtimes without plane operations (lavapipe), and with
//! plane scans where the runtime has them.

use cubecl::prelude::*;

/// The unit's position in the order [`cube_inclusive_sum`] scans, from 0 to `cube_size - 1`.
///
/// Without planes that is `UNIT_POS`. With planes it is the plane's position times the plane
/// size plus the unit's position in the plane, the order plane scans follow, so the result holds
/// however a driver maps units to planes (it needs full planes: `cube_size` a multiple of the
/// plane size, which every plane size up to 256 gives).
#[cube]
pub(crate) fn scan_position(#[comptime] planes: bool) -> usize {
    if comptime!(planes) {
        PLANE_POS as usize * PLANE_DIM as usize + UNIT_POS_PLANE as usize
    } else {
        UNIT_POS as usize
    }
}

/// The inclusive prefix sum of `value` over the units of the cube, in [`scan_position`] order.
/// Every unit of the cube must call it, in uniform control flow.
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

/// The plane scan: each plane scans its units, the last unit of each plane publishes the plane
/// total, and after one barrier every unit adds the totals of the planes before its own.
#[cube]
fn inclusive_sum_planes(value: u32, #[comptime] cube_size: usize) -> u32 {
    // One slot per plane; `cube_size` slots cover planes of any size.
    let mut totals = Shared::<[u32]>::new_slice(cube_size);
    let inclusive = plane_inclusive_sum(value);
    let plane = PLANE_POS as usize;
    if UNIT_POS_PLANE == PLANE_DIM - 1 {
        totals[plane] = inclusive;
    }
    sync_cube();
    let mut offset = 0u32;
    for p in 0..plane {
        offset += totals[p];
    }
    inclusive + offset
}
