//! One pass of the LSD radix sort: 4-bit digits, counted per tile of `cube_size` elements of a
//! segment, then moved to their place in a stable order.
//!
//! A tile's units hold one element each, in scan-rank order (see `scan_rank`), and rank each
//! element among the tile's elements of its digit with four cube scans of packed counters (four
//! digits of 8 bits to a word, so a tile holds at most 255 elements). The count kernel writes
//! each digit's tile total to `counts[(segment * 16 + digit) * tiles_per_segment + tile]`; the
//! exclusive scan of that table over all segments gives each (segment, digit, tile) its first
//! place, since every segment's counts add up to its length. The scatter kernel moves each
//! element there plus its rank: equal digits keep their order, which makes the sort stable.

use cubecl::prelude::*;

use crate::nonzero::{cube_inclusive_sum, scan_rank};

/// Buckets of a 4-bit digit.
pub(crate) const DIGITS: usize = 16;

/// Bits per radix pass.
pub(crate) const DIGIT_BITS: u32 = 4;

/// Where the unit's element lies: its segment, its tile in the segment, its position along the
/// axis, and whether it exists (units past the axis's end, or of cubes past the last tile, hold
/// none but still take part in the scans).
#[derive(CubeType, Clone, Copy)]
struct TileSlot {
    segment: usize,
    tile: usize,
    position: usize,
    valid: bool,
}

#[cube]
fn tile_slot(
    rank: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    #[comptime] cube_size: usize,
) -> TileSlot {
    let tile_index = CUBE_POS;
    let segment = tile_index / tiles_per_segment;
    let tile = tile_index % tiles_per_segment;
    let position = tile * cube_size + rank;
    TileSlot {
        segment,
        tile,
        position,
        valid: tile_index < tiles && position < axis_len,
    }
}

/// The cube-wide inclusive sums of the unit's digit flags, four digits of 8 bits to a word:
/// word `q` holds digits `4q..4q + 4`. Every unit of the cube must call it.
#[cube]
fn digit_sums(
    digit: u32,
    valid: bool,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
) -> (u32, u32, u32, u32) {
    let flag = select(valid, 1u32 << ((digit % 4) * 8), 0u32);
    let group = digit / 4;
    let s0 = cube_inclusive_sum(select(group == 0, flag, 0u32), cube_size, planes);
    let s1 = cube_inclusive_sum(select(group == 1, flag, 0u32), cube_size, planes);
    let s2 = cube_inclusive_sum(select(group == 2, flag, 0u32), cube_size, planes);
    let s3 = cube_inclusive_sum(select(group == 3, flag, 0u32), cube_size, planes);
    (s0, s1, s2, s3)
}

/// Writes the four digit counts packed in `sums` (digits `4 * group..`) to the count table.
#[cube]
fn write_group(
    counts: &mut [u32],
    sums: u32,
    segment: usize,
    tile: usize,
    tiles_per_segment: usize,
    #[comptime] group: usize,
) {
    #[unroll]
    for f in 0..4usize {
        let digit = comptime!(group * 4 + f);
        let at = (segment * DIGITS + digit) * tiles_per_segment + tile;
        counts[at] = (sums >> comptime!((f * 8) as u32)) & 0xFFu32;
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
    #[comptime] planes: bool,
) {
    let rank = scan_rank(cube_size, planes) as usize;
    let slot = tile_slot(rank, axis_len, tiles_per_segment, tiles, cube_size);
    let mut digit = 0u32;
    if slot.valid {
        let g = slot.segment * axis_len + slot.position;
        digit = (keys[word_offset + g] >> shift) & 15u32;
    }
    let (s0, s1, s2, s3) = digit_sums(digit, slot.valid, cube_size, planes);
    if CUBE_POS < tiles && rank == cube_size - 1 {
        let segment = slot.segment;
        let tile = slot.tile;
        write_group(counts, s0, segment, tile, tiles_per_segment, 0usize);
        write_group(counts, s1, segment, tile, tiles_per_segment, 1usize);
        write_group(counts, s2, segment, tile, tiles_per_segment, 2usize);
        write_group(counts, s3, segment, tile, tiles_per_segment, 3usize);
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
    #[comptime] planes: bool,
) {
    let rank = scan_rank(cube_size, planes) as usize;
    let slot = tile_slot(rank, axis_len, tiles_per_segment, tiles, cube_size);
    let g = slot.segment * axis_len + slot.position;
    let mut digit = 0u32;
    if slot.valid {
        digit = (keys[word_offset + g] >> shift) & 15u32;
    }
    let (s0, s1, s2, s3) = digit_sums(digit, slot.valid, cube_size, planes);
    if slot.valid {
        let group = digit / 4;
        let sums = select(
            group == 0,
            s0,
            select(group == 1, s1, select(group == 2, s2, s3)),
        );
        let within = ((sums >> ((digit % 4) * 8)) & 0xFFu32) - 1;
        let at = (slot.segment * DIGITS + digit as usize) * tiles_per_segment + slot.tile;
        let dest = (offsets[at] + block_offsets[at / block] + within) as usize;
        if dest < len {
            #[unroll]
            for w in 0..key_words {
                keys_out[comptime!(w) * len + dest] = keys[comptime!(w) * len + g];
            }
            positions_out[dest] = positions[g];
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
