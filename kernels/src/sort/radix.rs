//! One pass of the LSD radix sort over device memory: an 8-bit digit in two launches (three
//! where nothing counted the digits before), over tiles of `cube_size * per_unit` elements of a
//! segment.
//!
//! 1. [`sort_count_digits`](fn@sort_count_digits) counts each tile's digits in a shared-memory
//!    histogram and writes them to the table, `counts[(segment * 256 + digit) *
//!    tiles_per_segment + tile]`. Only where nothing counted them already: the keys launch counts
//!    the first pass's digits ([`sort_keys_counted`](fn@crate::sort::sort_keys_counted)) and each
//!    scatter the next pass's.
//! 2. [`sort_scan_digits`](fn@sort_scan_digits) turns each (segment, digit) row of the table
//!    into exclusive offsets across the segment's tiles, in place, and writes the row's total.
//! 3. [`sort_scatter_digits`](fn@sort_scatter_digits) orders each tile by its digit in shared
//!    memory (two stable 4-bit steps), adds each digit's first place in the segment (the scan of
//!    the totals) and in the tile's share of it (the table), and moves every key and position
//!    there. Equal digits keep their order, so the sort is stable.
//!
//! Loads and stores of keys are coalesced across a cube's units, and units that scan runs of
//! consecutive elements read them from shared memory padded against bank conflicts.

use cubecl::prelude::*;

use super::counters::run_places;
use crate::nonzero::{cube_inclusive_sum, scan_rank};

/// Buckets of an 8-bit digit.
pub(crate) const RADIX_BINS: usize = 256;

/// Bits per radix pass.
pub(crate) const RADIX_BITS: u32 = 8;

/// Words of shared memory that hold `capacity` elements padded against bank conflicts.
pub(crate) const fn padded_len(capacity: usize) -> usize {
    capacity + capacity / 32
}

/// Where element `i` lies in shared memory padded by one word per 32: a run of 16 or 32
/// consecutive elements per unit then spans distinct banks across a plane, and so does one
/// element per unit.
#[cube]
pub(crate) fn padded(i: usize) -> usize {
    i + i / 32
}

/// A tile's 256 digit bins in shared memory, zeroed. Every unit of the cube must call it, in
/// uniform control flow.
#[cube]
pub(crate) fn zeroed_bins(#[comptime] cube_size: usize) -> Shared<[Atomic<u32>]> {
    let bins = Shared::<[Atomic<u32>]>::new_slice(RADIX_BINS);
    #[unroll]
    for i in 0..comptime!(RADIX_BINS / cube_size) {
        bins[comptime!(i * cube_size) + UNIT_POS as usize].store(0u32);
    }
    sync_cube();
    bins
}

/// Writes tile `tile`'s counted `bins` to its entries of the count table (see the module docs);
/// the caller has synchronised the cube since the last count.
#[cube]
pub(crate) fn write_tile_counts(
    bins: &Shared<[Atomic<u32>]>,
    counts: &mut [u32],
    segment: usize,
    tile: usize,
    tiles_per_segment: usize,
    #[comptime] cube_size: usize,
) {
    #[unroll]
    for i in 0..comptime!(RADIX_BINS / cube_size) {
        let digit = comptime!(i * cube_size) + UNIT_POS as usize;
        counts[(segment * RADIX_BINS + digit) * tiles_per_segment + tile] = bins[digit].load();
    }
}

/// Counts the digit `(keys[word_offset + g] >> shift) & 255` of every element of each tile into
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
) {
    if CUBE_POS >= tiles {
        terminate!();
    }
    let bins = zeroed_bins(cube_size);
    let unit = UNIT_POS as usize;
    let segment = CUBE_POS / tiles_per_segment;
    let tile = CUBE_POS % tiles_per_segment;
    let row = word_offset + segment * axis_len;
    let first = tile * comptime!(cube_size * per_unit);
    #[unroll]
    for e in 0..per_unit {
        let p = first + comptime!(e * cube_size) + unit;
        if p < axis_len {
            bins[((keys[row + p] >> shift) & 255u32) as usize].fetch_add(1u32);
        }
    }
    sync_cube();
    write_tile_counts(&bins, counts, segment, tile, tiles_per_segment, cube_size);
}

/// Turns each of the `rows` rows of `row_len` entries of `counts` into its exclusive prefix sums,
/// in place, and writes each row's total to `totals[row]`; with `clear_next`, zeroes the same
/// entries of `next`, the table the scatter counts the next pass's digits into. Cube `c` scans
/// rows `c * rows_per_cube..`: several whole rows in one pass of `cube_size * per_unit` entries
/// where they fit, one row in as many passes as it takes otherwise (`rows_per_cube` 1).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_scan_digits(
    counts: &mut [u32],
    totals: &mut [u32],
    next: &mut [u32],
    rows: usize,
    row_len: usize,
    rows_per_cube: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
    #[comptime] clear_next: bool,
) {
    let first_row = CUBE_POS * rows_per_cube;
    if first_row >= rows {
        terminate!();
    }
    let capacity = comptime!(cube_size * per_unit);
    let mut cube_rows = rows - first_row;
    if cube_rows > rows_per_cube {
        cube_rows = rows_per_cube;
    }
    let span = cube_rows * row_len;
    let origin = first_row * row_len;
    let mut sums = Shared::<[u32]>::new_slice(comptime!(padded_len(capacity)));
    let unit = UNIT_POS as usize;
    let run = scan_rank(cube_size, planes) as usize * per_unit;
    let mut carry = 0u32;
    for pass in 0..(span + comptime!(capacity - 1)) / capacity {
        let start = pass * capacity;
        #[unroll]
        for e in 0..per_unit {
            let i = comptime!(e * cube_size) + unit;
            let mut value = 0u32;
            if start + i < span {
                value = counts[origin + start + i];
            }
            sums[padded(i)] = value;
        }
        sync_cube();
        let mut local = 0u32;
        #[unroll]
        for e in 0..per_unit {
            local += sums[padded(run + e)];
        }
        let inclusive = cube_inclusive_sum(local, cube_size, planes);
        let mut running = carry + inclusive - local;
        #[unroll]
        for e in 0..per_unit {
            let at = padded(run + e);
            running += sums[at];
            sums[at] = running;
        }
        sync_cube();
        #[unroll]
        for e in 0..per_unit {
            let i = comptime!(e * cube_size) + unit;
            let j = start + i;
            if j < span {
                // Rows start inside a pass only where whole rows fit one, so `start` is 0.
                let row_start = j / row_len * row_len;
                let mut base = 0u32;
                if row_start > 0 {
                    base = sums[padded(row_start - 1)];
                }
                let mut before = carry;
                if i > 0 {
                    before = sums[padded(i - 1)];
                }
                counts[origin + j] = before - base;
                if comptime!(clear_next) {
                    next[origin + j] = 0u32;
                }
                if j % row_len == row_len - 1 {
                    totals[first_row + j / row_len] = sums[padded(i)] - base;
                }
            }
        }
        let next = sums[padded(comptime!(capacity - 1))];
        sync_cube();
        carry = next;
    }
}

/// Moves every element (its `key_words` key words, planes `len` apart, and its position) to its
/// place for the digit at `shift` of key word `word_offset / len` (see the module docs):
/// `offsets` is the scanned count table and `totals` each (segment, digit)'s count. Also counts
/// the next pass's digit (at `next_shift` of key word `next_word_offset / len`) of each element
/// into `next_counts` at the tile it moves to, so the next pass needs no count launch: a unit
/// adds its run of consecutive places with one atomic per change of tile or digit. One cube per
/// tile, `tiles` in all; a tile holds at most 65,536 elements. The last pass, which counts
/// nothing, is [`sort_scatter_last_digits`](fn@sort_scatter_last_digits).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_scatter_digits(
    keys: &[u32],
    positions: &[u32],
    offsets: &[u32],
    totals: &[u32],
    keys_out: &mut [u32],
    positions_out: &mut [u32],
    next_counts: &mut [Atomic<u32>],
    len: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    word_offset: usize,
    shift: u32,
    next_word_offset: usize,
    next_shift: u32,
    #[comptime] key_words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    if CUBE_POS >= tiles {
        terminate!();
    }
    let capacity = comptime!(cube_size * per_unit);
    let mut slots = Shared::<[u32]>::new_slice(comptime!(padded_len(capacity)));
    let mut digit_place = Shared::<[u32]>::new_slice(RADIX_BINS);
    let mut digit_start = Shared::<[u32]>::new_slice(RADIX_BINS);
    let (run, live) = move_tile(
        keys,
        positions,
        offsets,
        totals,
        keys_out,
        positions_out,
        &mut slots,
        &mut digit_place,
        &mut digit_start,
        (len, axis_len, tiles_per_segment),
        (word_offset, shift),
        (next_word_offset, next_shift),
        key_words,
        cube_size,
        per_unit,
        planes,
        true,
    );
    let segment = CUBE_POS / tiles_per_segment;
    let mut pending_at = 0usize;
    let mut pending = 0u32;
    #[unroll]
    for e in 0..per_unit {
        if e < live {
            let i = run + e;
            let slot = slots[padded(i)];
            let digit = ((slot >> 16u32) & 255u32) as usize;
            let dest = (digit_place[digit] + i as u32 - digit_start[digit]) as usize;
            if dest < axis_len {
                let next_digit = (slot >> 24u32) as usize;
                let at = (segment * RADIX_BINS + next_digit) * tiles_per_segment + dest / capacity;
                if pending > 0 && at != pending_at {
                    next_counts[pending_at].fetch_add(pending);
                    pending = 0u32;
                }
                pending_at = at;
                pending += 1u32;
            }
        }
    }
    if pending > 0 {
        next_counts[pending_at].fetch_add(pending);
    }
}

/// The last pass of [`sort_scatter_digits`](fn@sort_scatter_digits), which counts no next
/// digit: a kernel of its own, since WebGPU forbids an atomic buffer that a kernel never writes
/// (CubeCL declares such a buffer read-only for browsers).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sort_scatter_last_digits(
    keys: &[u32],
    positions: &[u32],
    offsets: &[u32],
    totals: &[u32],
    keys_out: &mut [u32],
    positions_out: &mut [u32],
    len: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    word_offset: usize,
    shift: u32,
    #[comptime] key_words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    if CUBE_POS >= tiles {
        terminate!();
    }
    let capacity = comptime!(cube_size * per_unit);
    let mut slots = Shared::<[u32]>::new_slice(comptime!(padded_len(capacity)));
    let mut digit_place = Shared::<[u32]>::new_slice(RADIX_BINS);
    let mut digit_start = Shared::<[u32]>::new_slice(RADIX_BINS);
    move_tile(
        keys,
        positions,
        offsets,
        totals,
        keys_out,
        positions_out,
        &mut slots,
        &mut digit_place,
        &mut digit_start,
        (len, axis_len, tiles_per_segment),
        (word_offset, shift),
        (word_offset, shift),
        key_words,
        cube_size,
        per_unit,
        planes,
        false,
    );
}

/// A scatter's moves for this cube's tile: orders the tile by digit in `slots` (each element as
/// its next digit, its digit and its place in the tile, 8 + 8 + 16 bits; the next digit only
/// with `count_next`), fills `digit_place` and `digit_start` (each digit's place in the segment
/// and first place in the tile) and moves the keys and positions. Returns the unit's run of
/// sorted places, its first and how many are live. Every unit of the cube must call it, in
/// uniform control flow.
#[cube]
fn move_tile(
    keys: &[u32],
    positions: &[u32],
    offsets: &[u32],
    totals: &[u32],
    keys_out: &mut [u32],
    positions_out: &mut [u32],
    slots: &mut [u32],
    digit_place: &mut [u32],
    digit_start: &mut [u32],
    sizes: (usize, usize, usize),
    digit: (usize, u32),
    next: (usize, u32),
    #[comptime] key_words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
    #[comptime] count_next: bool,
) -> (usize, usize) {
    let (len, axis_len, tiles_per_segment) = sizes;
    let (word_offset, shift) = digit;
    let (next_word_offset, next_shift) = next;
    let capacity = comptime!(cube_size * per_unit);
    let segment = CUBE_POS / tiles_per_segment;
    let tile = CUBE_POS % tiles_per_segment;
    let row = segment * axis_len;
    let first = tile * capacity;
    let mut count = axis_len - first;
    if count > capacity {
        count = capacity;
    }
    let unit = UNIT_POS as usize;
    let rank = scan_rank(cube_size, planes) as usize;
    #[unroll]
    for e in 0..per_unit {
        let i = comptime!(e * cube_size) + unit;
        if i < count {
            let at = row + first + i;
            let word = keys[word_offset + at];
            let mut next_digit = 0u32;
            if comptime!(count_next) {
                let mut next_word = word;
                if next_word_offset != word_offset {
                    next_word = keys[next_word_offset + at];
                }
                next_digit = (next_word >> next_shift) & 255u32;
            }
            let digit = (word >> shift) & 255u32;
            slots[padded(i)] = (next_digit << 24u32) | (digit << 16u32) | i as u32;
        }
    }
    // Each digit's first place in the segment (the exclusive scan of its digit totals) plus the
    // tile's first place among the segment's elements of that digit (the scanned table).
    let per_digit_unit = comptime!(RADIX_BINS / cube_size);
    let mut held = Array::<u32>::new(per_digit_unit);
    let mut local = 0u32;
    #[unroll]
    for q in 0..per_digit_unit {
        held[q] = totals[segment * RADIX_BINS + rank * per_digit_unit + q];
        local += held[q];
    }
    let inclusive = cube_inclusive_sum(local, cube_size, planes);
    let mut running = inclusive - local;
    #[unroll]
    for q in 0..per_digit_unit {
        let digit = rank * per_digit_unit + q;
        let at = (segment * RADIX_BINS + digit) * tiles_per_segment + tile;
        digit_place[digit] = running + offsets[at];
        running += held[q];
    }
    sync_cube();
    // Two stable 4-bit steps order the tile by digit (a loop, not unrolled, so that their scans
    // share one allocation of shared memory).
    let run = rank * per_unit;
    let mut live = 0usize;
    if run < count {
        live = count - run;
        if live > per_unit {
            live = per_unit;
        }
    }
    let mut run_slots = Array::<u32>::new(per_unit);
    let mut digits = Array::<u32>::new(per_unit);
    for step in 0..2u32 {
        #[unroll]
        for e in 0..per_unit {
            if e < live {
                run_slots[e] = slots[padded(run + e)];
                digits[e] = (run_slots[e] >> (16u32 + 4u32 * step)) & 15u32;
            }
        }
        let places = run_places(&digits, live, rank, cube_size, per_unit, planes);
        #[unroll]
        for e in 0..per_unit {
            if e < live {
                slots[padded(places[e] as usize)] = run_slots[e];
            }
        }
        sync_cube();
    }
    // Each digit's first place in the tile.
    #[unroll]
    for e in 0..per_unit {
        let i = comptime!(e * cube_size) + unit;
        if i < count {
            let digit = (slots[padded(i)] >> 16u32) & 255u32;
            let mut head = i == 0;
            if i > 0 {
                head = (slots[padded(i - 1)] >> 16u32) & 255u32 != digit;
            }
            if head {
                digit_start[digit as usize] = i as u32;
            }
        }
    }
    sync_cube();
    #[unroll]
    for e in 0..per_unit {
        let i = comptime!(e * cube_size) + unit;
        if i < count {
            let slot = slots[padded(i)];
            let digit = ((slot >> 16u32) & 255u32) as usize;
            let from = row + first + (slot & 0xFFFFu32) as usize;
            let dest = (digit_place[digit] + i as u32 - digit_start[digit]) as usize;
            if dest < axis_len {
                let to = row + dest;
                #[unroll]
                for w in 0..key_words {
                    keys_out[comptime!(w) * len + to] = keys[comptime!(w) * len + from];
                }
                positions_out[to] = positions[from];
            }
        }
    }
    (run, live)
}
