//! Segments short enough for one cube: the whole LSD radix sort of a segment in shared memory,
//! in one launch, one cube per segment.

use cubecl::prelude::*;

use super::counters::{COUNTER_WORDS, count_digit, counter, cube_counter_prefix, zero_counters};
use super::radix::DIGITS;
use crate::nonzero::scan_rank;

/// Cube `s < segments` sorts segment `s` of `keys` (the low words, and for `key_words` 2 the
/// high words `len` further) and writes its positions, in sorted order, to `positions_out`. The
/// cube holds `cube_size * per_unit >= axis_len` elements in shared memory; each unit ranks the
/// run of `per_unit` consecutive elements at its scan rank with packed counters and one cube scan
/// per 4-bit digit, then moves them to their place: equal digits keep their order, so the sort is
/// stable. `passes` digits in all, low digits first (8 per key word; fewer for keys narrower
/// than 32 bits).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_segments_in_cube(
    keys: &[u32],
    positions: &[u32],
    positions_out: &mut [u32],
    len: usize,
    axis_len: usize,
    segments: usize,
    passes: u32,
    #[comptime] key_words: usize,
    #[comptime] per_unit: usize,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
) {
    let segment = CUBE_POS;
    if segment >= segments {
        terminate!();
    }
    let capacity = comptime!(cube_size * per_unit);
    let rank = scan_rank(cube_size, planes) as usize;
    let base = segment * axis_len;
    let first = rank * per_unit;
    let mut low = Shared::<[u32]>::new_slice(capacity);
    let mut high = Shared::<[u32]>::new_slice(comptime!(if key_words == 2 { capacity } else { 1 }));
    let mut place = Shared::<[u32]>::new_slice(capacity);
    let mut totals = Shared::<[u32]>::new_slice(COUNTER_WORDS);
    #[unroll]
    for e in 0..per_unit {
        let p = first + e;
        if p < axis_len {
            low[p] = keys[base + p];
            if comptime!(key_words == 2) {
                high[p] = keys[len + base + p];
            }
            place[p] = positions[base + p];
        }
    }
    sync_cube();
    let mut run_low = Array::<u32>::new(per_unit);
    let mut run_high = Array::<u32>::new(per_unit);
    let mut run_place = Array::<u32>::new(per_unit);
    for pass in 0..passes {
        let high_word = pass >= 8;
        let shift = (pass % 8) * 4;
        let mut mine = zero_counters();
        #[unroll]
        for e in 0..per_unit {
            let p = first + e;
            if p < axis_len {
                run_low[e] = low[p];
                if comptime!(key_words == 2) {
                    run_high[e] = high[p];
                }
                run_place[e] = place[p];
                let word = select(high_word, run_high[e], run_low[e]);
                count_digit(&mut mine, (word >> shift) & 15u32);
            }
        }
        // Its barriers also order every read of the shared arrays above before the moves below.
        let sums = cube_counter_prefix(&mine, cube_size, planes);
        if rank == comptime!(cube_size - 1) {
            #[unroll]
            for q in 0..COUNTER_WORDS {
                totals[q] = sums[q];
            }
        }
        sync_cube();
        let mut digit_first = Array::<u32>::new(DIGITS);
        let mut running = 0u32;
        #[unroll]
        for d in 0..DIGITS {
            digit_first[d] = running;
            running += (totals[comptime!(d / 2)] >> comptime!((d % 2) as u32 * 16)) & 0xFFFFu32;
        }
        let mut seen = zero_counters();
        #[unroll]
        for e in 0..per_unit {
            if first + e < axis_len {
                let word = select(high_word, run_high[e], run_low[e]);
                let digit = (word >> shift) & 15u32;
                let before = counter(&sums, digit) - counter(&mine, digit);
                let dest = (digit_first[digit as usize] + before + counter(&seen, digit)) as usize;
                count_digit(&mut seen, digit);
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
        let p = first + e;
        if p < axis_len {
            positions_out[base + p] = place[p];
        }
    }
}
