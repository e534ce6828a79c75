//! Cube-wide scans in shared memory, for runtimes without plane operations.

use cubecl::prelude::*;

/// The inclusive prefix sum of `value` over the units of the cube. Every unit of the cube must
/// call it: it synchronises the cube three times.
///
/// A raking scan: the cube's values are split into `segments` runs of `cube_size / segments`;
/// one unit per run scans it sequentially, one unit scans the run totals, and every unit adds
/// its run's offset. Three barriers instead of Hillis-Steele's `2 * log2(cube_size)`, which
/// matters where barriers are expensive (CPU Vulkan drivers such as lavapipe).
#[cube]
pub(crate) fn cube_inclusive_sum(value: u32, #[comptime] cube_size: usize) -> u32 {
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
