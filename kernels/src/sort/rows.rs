//! The radix select of short enough rows in one launch: one cube per sequence finds its `k`-th
//! key digit by digit in shared memory and writes its `k` candidates in position order, with no
//! launch per digit and no count table (what `select_gather` writes, for the same stable sort).

use cubecl::prelude::*;

use super::select::{SELECT_BINS, TakenRun, key_words_at, tie_class, write_candidates};
use crate::nonzero::{cube_inclusive_sum, scan_rank};

/// Cube `s < segments` writes segment `s`'s `k` smallest keys to `candidates[s * k..]` (key words
/// `candidates_len` apart) and their positions along the axis to `positions[s * k..]`, in
/// position order, as [`select_gather`](fn@crate::sort::select_gather) does. Per 8-bit digit, high
/// digits first, the cube counts the digit of every key that matches the prefix found so far in
/// a shared histogram and picks the bin that holds the `remaining`-th key; then it walks the
/// row in runs, scanning how many keys below the `k`-th key and equal to it come before each.
/// The cube's units are the histogram's bins, one each.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn select_rows(
    keys: &[u32],
    candidates: &mut [u32],
    positions: &mut [u32],
    len: usize,
    axis_len: usize,
    segments: usize,
    k: usize,
    candidates_len: usize,
    #[comptime] key_words: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    let segment = CUBE_POS;
    if segment >= segments {
        terminate!();
    }
    let cube_size = comptime!(SELECT_BINS);
    let chunk = comptime!(SELECT_BINS * per_unit);
    let chunks = (axis_len + comptime!(chunk - 1)) / chunk;
    let unit = UNIT_POS as usize;
    let rank = scan_rank(cube_size, planes) as usize;
    let row = segment * axis_len;
    let bins = Shared::<[Atomic<u32>]>::new_slice(SELECT_BINS);
    let mut picked = Shared::<[u32]>::new_slice(2usize);
    let mut prefix_low = 0u32;
    let mut prefix_high = 0u32;
    let mut remaining = k as u32;
    for digit in 0..comptime!(4 * key_words as u32) {
        let mut high_word = false;
        if comptime!(key_words == 2) {
            high_word = digit < 4;
        }
        let shift = 24u32 - 8u32 * (digit % 4);
        // The bits the digits before this one fixed, in the word of this digit and above it.
        let mut above = 0u32;
        if shift < 24 {
            above = 0xFFFF_FFFFu32 << (shift + 8u32);
        }
        let mut mask_low = above;
        let mut mask_high = 0u32;
        if comptime!(key_words == 2) {
            mask_high = 0xFFFF_FFFFu32;
            if high_word {
                mask_low = 0u32;
                mask_high = above;
            }
        }
        bins[unit].store(0u32);
        sync_cube();
        for c in 0..chunks {
            #[unroll]
            for e in 0..per_unit {
                let p = c * chunk + comptime!(e * SELECT_BINS) + unit;
                if p < axis_len {
                    let (low, high) = key_words_at(keys, len, row + p, key_words);
                    if (low & mask_low) == prefix_low && (high & mask_high) == prefix_high {
                        let word = select(high_word, high, low);
                        bins[((word >> shift) & 255u32) as usize].fetch_add(1u32);
                    }
                }
            }
        }
        sync_cube();
        let count = bins[rank].load();
        let inclusive = cube_inclusive_sum(count, cube_size, planes);
        let before = inclusive - count;
        if before < remaining && remaining <= inclusive {
            picked[0] = rank as u32;
            picked[1] = remaining - before;
        }
        sync_cube();
        let bin = picked[0] << shift;
        remaining = picked[1];
        if high_word {
            prefix_high |= bin;
        } else {
            prefix_low |= bin;
        }
    }
    // The candidates: every key below the `k`-th and the first `remaining` equal to it.
    let mut chunk_total = Shared::<[u32]>::new_slice(1usize);
    let mut carry_below = 0u32;
    let mut carry_equal = 0u32;
    for c in 0..chunks {
        let first = c * chunk + rank * per_unit;
        let mut classes = Array::<u32>::new(per_unit);
        let mut packed = 0u32;
        #[unroll]
        for e in 0..per_unit {
            let mut class = 0u32;
            if first + e < axis_len {
                let (low, high) = key_words_at(keys, len, row + first + e, key_words);
                class = tie_class(low, high, prefix_low, prefix_high);
            }
            classes[e] = class;
            packed += class;
        }
        let inclusive = cube_inclusive_sum(packed, cube_size, planes);
        let before = inclusive - packed;
        let taken = TakenRun {
            row,
            len,
            first,
            slots: segment * k,
            k,
            candidates_len,
            below: carry_below + (before & 0xFFFFu32),
            equal: carry_equal + (before >> 16u32),
            remaining,
        };
        write_candidates(
            keys, candidates, positions, &classes, &taken, key_words, per_unit,
        );
        if rank == comptime!(SELECT_BINS - 1) {
            chunk_total[0] = inclusive;
        }
        sync_cube();
        let total = chunk_total[0];
        carry_below += total & 0xFFFFu32;
        carry_equal += total >> 16u32;
        sync_cube();
    }
}
