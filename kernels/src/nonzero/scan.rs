//! Cube-wide scans in shared memory, for runtimes without plane operations.

use cubecl::prelude::*;

/// The inclusive prefix sum of `value` over the units of the cube (Hillis-Steele, in shared
/// memory). Every unit of the cube must call it: it synchronises the cube.
#[cube]
pub(crate) fn cube_inclusive_sum(value: u32, #[comptime] cube_size: usize) -> u32 {
    let mut shared = Shared::<[u32]>::new_slice(cube_size);
    let unit = UNIT_POS as usize;
    shared[unit] = value;
    sync_cube();
    let steps = comptime!(cube_size.trailing_zeros() as usize);
    #[unroll]
    for step in 0..steps {
        let offset = comptime!(1usize << step);
        let mut add = 0u32;
        if unit >= offset {
            add = shared[unit - offset];
        }
        sync_cube();
        shared[unit] += add;
        sync_cube();
    }
    shared[unit]
}
