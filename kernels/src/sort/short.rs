//! Segments short enough for one cube: the whole LSD radix sort of a segment in shared memory,
//! in one launch, one cube per segment, or several short segments to a cube.

use cubecl::prelude::*;

use super::counters::{DIGIT_BITS, run_places};
use super::radix::{padded, padded_len};
use crate::nonzero::scan_rank;

/// Cube `c` sorts segments `c * rows_per_cube..` of `keys` (the low words, and for `key_words` 2
/// the high words `len` further) and writes their positions, in sorted order, to
/// `positions_out`. The cube holds its segments' `rows_per_cube * axis_len <= cube_size *
/// per_unit` elements in shared memory, loaded and stored coalesced and laid out against bank
/// conflicts; each unit ranks the run of `per_unit` consecutive elements at its scan rank with
/// packed counters and one cube scan per 4-bit digit, then moves them to their place: equal
/// digits keep their order, so the sort is stable. `key_passes` digits of the key, low digits
/// first (8 per key word; fewer for keys narrower than 32 bits), then `row_passes` digits of
/// each element's segment within the cube, which group the segments again in order (several
/// segments to a cube only where positions are below 65,536: the segment rides above them).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_segments_in_cube(
    keys: &[u32],
    positions: &[u32],
    positions_out: &mut [u32],
    len: usize,
    axis_len: usize,
    segments: usize,
    rows_per_cube: usize,
    key_passes: u32,
    row_passes: u32,
    #[comptime] key_words: usize,
    #[comptime] per_unit: usize,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
) {
    let first_row = CUBE_POS * rows_per_cube;
    if first_row >= segments {
        terminate!();
    }
    let capacity = comptime!(cube_size * per_unit);
    let mut rows = segments - first_row;
    if rows > rows_per_cube {
        rows = rows_per_cube;
    }
    let count = rows * axis_len;
    let base = first_row * axis_len;
    let packed = rows_per_cube > 1;
    let unit = UNIT_POS as usize;
    let rank = scan_rank(cube_size, planes) as usize;
    let first = rank * per_unit;
    let mut low = Shared::<[u32]>::new_slice(comptime!(padded_len(capacity)));
    let mut high = Shared::<[u32]>::new_slice(comptime!(if key_words == 2 {
        padded_len(capacity)
    } else {
        1
    }));
    let mut place = Shared::<[u32]>::new_slice(comptime!(padded_len(capacity)));
    #[unroll]
    for e in 0..per_unit {
        let q = comptime!(e * cube_size) + unit;
        if q < count {
            let at = padded(q);
            low[at] = keys[base + q];
            if comptime!(key_words == 2) {
                high[at] = keys[len + base + q];
            }
            let mut position = positions[base + q];
            if packed {
                position |= ((q / axis_len) as u32) << 16u32;
            }
            place[at] = position;
        }
    }
    sync_cube();
    let mut run_low = Array::<u32>::new(per_unit);
    let mut run_high = Array::<u32>::new(per_unit);
    let mut run_place = Array::<u32>::new(per_unit);
    let mut digits = Array::<u32>::new(per_unit);
    let mut live = 0usize;
    if first < count {
        live = count - first;
        if live > per_unit {
            live = per_unit;
        }
    }
    for pass in 0..key_passes + row_passes {
        let row_pass = pass >= key_passes;
        let high_word = pass >= 8;
        let mut shift = (pass % 8) * DIGIT_BITS;
        if row_pass {
            shift = 16u32 + (pass - key_passes) * DIGIT_BITS;
        }
        #[unroll]
        for e in 0..per_unit {
            if e < live {
                let at = padded(first + e);
                run_low[e] = low[at];
                if comptime!(key_words == 2) {
                    run_high[e] = high[at];
                }
                run_place[e] = place[at];
                let mut word = select(high_word, run_high[e], run_low[e]);
                if row_pass {
                    word = run_place[e];
                }
                digits[e] = (word >> shift) & 15u32;
            }
        }
        let places = run_places(&digits, live, rank, cube_size, per_unit, planes);
        #[unroll]
        for e in 0..per_unit {
            if e < live {
                let dest = padded(places[e] as usize);
                low[dest] = run_low[e];
                if comptime!(key_words == 2) {
                    high[dest] = run_high[e];
                }
                place[dest] = run_place[e];
            }
        }
        sync_cube();
    }
    #[unroll]
    for e in 0..per_unit {
        let q = comptime!(e * cube_size) + unit;
        if q < count {
            let mut position = place[padded(q)];
            if packed {
                position &= 0xFFFFu32;
            }
            positions_out[base + q] = position;
        }
    }
}
