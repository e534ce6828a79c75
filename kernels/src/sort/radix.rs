//! One pass of the LSD radix sort: 4-bit digits, counted per tile of `cube_size * per_unit`
//! elements of a segment, then moved to their place in a stable order.
//!
//! A tile's units hold a run of `per_unit` consecutive elements each, runs in scan-rank order
//! (see `scan_rank`), and rank each element among the tile's elements of its digit from the
//! unit's packed digit counters and one cube scan of all sixteen (`counters`). The count kernel
//! writes each digit's tile total to `counts[(segment * 16 + digit) * tiles_per_segment +
//! tile]`; the exclusive scan of that table over all segments gives each (segment, digit, tile)
//! its first place, since every segment's counts add up to its length. The scatter kernel moves
//! each element there plus its rank: equal digits keep their order, which makes the sort stable.

use cubecl::prelude::*;

use super::counters::{
    count_digit, counter, cube_counter_prefix, cube_counter_sums, zero_counters,
};
use crate::nonzero::{cube_inclusive_sum, scan_rank};

/// Buckets of a 4-bit digit.
pub(crate) const DIGITS: usize = 16;

/// Bits per radix pass.
pub(crate) const DIGIT_BITS: u32 = 4;

/// Where the unit's run lies: its segment, its tile in the segment, the position along the axis
/// of its first element, and whether the cube has a tile (cubes past the last one take part in
/// nothing but the scans).
#[derive(CubeType, Clone, Copy)]
struct RunSlot {
    segment: usize,
    tile: usize,
    first: usize,
    live: bool,
}

#[cube]
fn run_slot(
    rank: usize,
    tiles_per_segment: usize,
    tiles: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
) -> RunSlot {
    let tile_index = CUBE_POS;
    let tile = tile_index % tiles_per_segment;
    RunSlot {
        segment: tile_index / tiles_per_segment,
        tile,
        first: tile * comptime!(cube_size * per_unit) + rank * per_unit,
        live: tile_index < tiles,
    }
}

/// Counts the digit `(keys[word_offset + g] >> shift) & 15` of every element of each tile into
/// the count table (see the module docs). One cube per tile, `tiles` in all.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_count_digits(
    keys: &[u32],
    counts: &mut [u32],
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    word_offset: usize,
    shift: u32,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    let rank = scan_rank(cube_size, planes) as usize;
    let slot = run_slot(rank, tiles_per_segment, tiles, cube_size, per_unit);
    let row = word_offset + slot.segment * axis_len;
    let mut sums = zero_counters();
    #[unroll]
    for e in 0..per_unit {
        let p = slot.first + e;
        if slot.live && p < axis_len {
            count_digit(&mut sums, (keys[row + p] >> shift) & 15u32);
        }
    }
    cube_counter_sums(&mut sums, cube_size, planes);
    if slot.live && rank == comptime!(cube_size - 1) {
        #[unroll]
        for d in 0..DIGITS {
            let at = (slot.segment * DIGITS + d) * tiles_per_segment + slot.tile;
            counts[at] = counter(&sums, d as u32);
        }
    }
}

/// Moves every element (its `key_words` key words, planes `len` apart, and its position) to
/// its place for the digit at `shift` of key word `word_offset / len`: the scanned count table
/// (`offsets`, exclusive within blocks of `block` entries, plus `block_offsets` of its block)
/// plus its rank among its tile's elements of that digit. Stores past `len` are dropped.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_scatter_digits(
    keys: &[u32],
    positions: &[u32],
    offsets: &[u32],
    block_offsets: &[u32],
    keys_out: &mut [u32],
    positions_out: &mut [u32],
    len: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    word_offset: usize,
    shift: u32,
    block: usize,
    #[comptime] key_words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    let rank = scan_rank(cube_size, planes) as usize;
    let slot = run_slot(rank, tiles_per_segment, tiles, cube_size, per_unit);
    let row = slot.segment * axis_len;
    let mut digits = Array::<u32>::new(per_unit);
    let mut mine = zero_counters();
    #[unroll]
    for e in 0..per_unit {
        let p = slot.first + e;
        if slot.live && p < axis_len {
            let digit = (keys[word_offset + row + p] >> shift) & 15u32;
            digits[e] = digit;
            count_digit(&mut mine, digit);
        }
    }
    let sums = cube_counter_prefix(&mine, cube_size, planes);
    let mut seen = zero_counters();
    #[unroll]
    for e in 0..per_unit {
        let p = slot.first + e;
        if slot.live && p < axis_len {
            let digit = digits[e];
            let within = counter(&sums, digit) - counter(&mine, digit) + counter(&seen, digit);
            count_digit(&mut seen, digit);
            let at = (slot.segment * DIGITS + digit as usize) * tiles_per_segment + slot.tile;
            let dest = (offsets[at] + block_offsets[at / block] + within) as usize;
            if dest < len {
                let g = row + p;
                #[unroll]
                for w in 0..key_words {
                    keys_out[comptime!(w) * len + dest] = keys[comptime!(w) * len + g];
                }
                positions_out[dest] = positions[g];
            }
        }
    }
}

/// Step 1 of the count table's scan: each cube turns its block of `cube_size * per_unit`
/// entries into exclusive offsets within the block, in place, and writes the block's total to
/// `block_totals`. The blocks' offsets then come from one cube (`nonzero_scan_tiles`).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_scan_blocks(
    values: &mut [u32],
    block_totals: &mut [u32],
    len: usize,
    blocks: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    let rank = scan_rank(cube_size, planes) as usize;
    let start = (CUBE_POS * cube_size + rank) * per_unit;
    let mut local = 0u32;
    #[unroll]
    for i in 0..per_unit {
        if start + i < len {
            local += values[start + i];
        }
    }
    let inclusive = cube_inclusive_sum(local, cube_size, planes);
    let mut running = inclusive - local;
    #[unroll]
    for i in 0..per_unit {
        if start + i < len {
            let value = values[start + i];
            values[start + i] = running;
            running += value;
        }
    }
    if CUBE_POS < blocks && rank == cube_size - 1 {
        block_totals[CUBE_POS] = inclusive;
    }
}
