//! Radix select: the `k` smallest keys of each segment without sorting the segment, for a small
//! `k` on a long axis (torch's `topk` does the same).
//!
//! 1. [`select_start`](fn@select_start) clears each segment's 256-bin histogram and its state:
//!    the key prefix found so far (two words) and how many of the `k` are still to find.
//! 2. Per 8-bit digit, high digits first: [`select_histogram`](fn@select_histogram) counts the
//!    digit of every key that matches its segment's prefix (a shared-memory histogram per tile,
//!    added to the segment's), and [`select_pick_digit`](fn@select_pick_digit) finds the digit
//!    whose bin holds the `remaining`-th key, appends it to the prefix and clears the bins. After
//!    the last digit the prefix is the `k`-th smallest key `T`, and `remaining` says how many keys
//!    equal to `T` belong to the `k`.
//! 3. [`select_count_ties`](fn@select_count_ties) counts each tile's keys below `T` and equal to
//!    it; the scan of each of the table's rows (one launch, `sort_scan_digits`) gives each tile
//!    how many of each come before it in its segment, and [`select_gather`](fn@select_gather)
//!    writes every key below `T` and the first `remaining` equal to it, with their positions, in
//!    position order: the `k` candidates, which a stable sort then orders.

use cubecl::prelude::*;

use super::radix::zeroed_bins;
use crate::nonzero::{cube_inclusive_sum, scan_rank};

/// Bins of an 8-bit digit.
pub(crate) const SELECT_BINS: usize = 256;

/// Words of a segment's state: the prefix's low and high words, the count still to find, and
/// one unused word.
pub(crate) const STATE_WORDS: usize = 4;

/// Unit `g < segments * 256` clears histogram entry `g`; the first unit of each segment's bins
/// also sets its state to an empty prefix with all `k` still to find.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn select_start(histogram: &mut [u32], state: &mut [u32], segments: usize, k: u32) {
    let g = ABSOLUTE_POS;
    if g >= segments * SELECT_BINS {
        terminate!();
    }
    histogram[g] = 0u32;
    let bin = g % SELECT_BINS;
    if bin == 0 {
        let at = g / SELECT_BINS * STATE_WORDS;
        state[at] = 0u32;
        state[at + 1] = 0u32;
        state[at + 2] = k;
        state[at + 3] = 0u32;
    }
}

/// A key's two words (the high one 0 for one-word keys).
#[cube]
pub(super) fn key_words_at(
    keys: &[u32],
    len: usize,
    g: usize,
    #[comptime] key_words: usize,
) -> (u32, u32) {
    let mut high = 0u32;
    if comptime!(key_words == 2) {
        high = keys[len + g];
    }
    (keys[g], high)
}

/// Adds to `histogram[segment * 256 + d]` how many keys of each tile of `cube_size * per_unit`
/// elements of its segment have the digit `d` at `shift` of their high word (`high_word` 1) or
/// low word (0), among those whose bits under `mask_low` / `mask_high` equal the segment's
/// prefix. One cube per tile, `tiles` in all; loads are coalesced across the cube's units.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn select_histogram(
    keys: &[u32],
    state: &[u32],
    histogram: &mut [Atomic<u32>],
    len: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    high_word: u32,
    shift: u32,
    mask_low: u32,
    mask_high: u32,
    #[comptime] key_words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
) {
    let bins = zeroed_bins(cube_size);
    let unit = UNIT_POS as usize;
    let live = CUBE_POS < tiles;
    let segment = CUBE_POS / tiles_per_segment;
    let first = (CUBE_POS % tiles_per_segment) * comptime!(cube_size * per_unit);
    let mut prefix_low = 0u32;
    let mut prefix_high = 0u32;
    if live {
        prefix_low = state[segment * STATE_WORDS];
        prefix_high = state[segment * STATE_WORDS + 1];
    }
    #[unroll]
    for e in 0..per_unit {
        let p = first + comptime!(e * cube_size) + unit;
        if live && p < axis_len {
            let (low, high) = key_words_at(keys, len, segment * axis_len + p, key_words);
            if (low & mask_low) == prefix_low && (high & mask_high) == prefix_high {
                let word = select(high_word == 1, high, low);
                bins[((word >> shift) & 255u32) as usize].fetch_add(1u32);
            }
        }
    }
    sync_cube();
    #[unroll]
    for i in 0..comptime!(SELECT_BINS / cube_size) {
        let bin = comptime!(i * cube_size) + unit;
        let count = bins[bin].load();
        if live && count > 0 {
            histogram[segment * SELECT_BINS + bin].fetch_add(count);
        }
    }
}

/// One cube of 256 units per segment: the digit at `shift` of the `remaining`-th smallest
/// matching key is the bin where the histogram's inclusive scan first reaches `remaining`. Its
/// unit appends the digit to the prefix's high word (`high_word` 1) or low word and subtracts
/// the keys of the bins before it from `remaining`; every unit clears its bin for the next digit.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn select_pick_digit(
    histogram: &mut [u32],
    state: &mut [u32],
    segments: usize,
    high_word: u32,
    shift: u32,
    #[comptime] planes: bool,
) {
    let segment = CUBE_POS;
    if segment >= segments {
        terminate!();
    }
    let bin = scan_rank(SELECT_BINS, planes) as usize;
    let at = segment * STATE_WORDS;
    let remaining = state[at + 2];
    let count = histogram[segment * SELECT_BINS + bin];
    let inclusive = cube_inclusive_sum(count, SELECT_BINS, planes);
    // The scan's barriers order shared memory only (WGSL, Vulkan): a storage barrier orders
    // every unit's read of the state before the one write below.
    sync_storage();
    histogram[segment * SELECT_BINS + bin] = 0u32;
    let before = inclusive - count;
    if before < remaining && remaining <= inclusive {
        let word = at + high_word as usize;
        state[word] |= (bin as u32) << shift;
        state[at + 2] = remaining - before;
    }
}

/// Whether the key `(low, high)` is below `(t_low, t_high)` and whether it equals it, packed as
/// one count of each: `1` below, `1 << 16` equal.
#[cube]
pub(super) fn tie_class(low: u32, high: u32, t_low: u32, t_high: u32) -> u32 {
    let below = high < t_high || (high == t_high && low < t_low);
    let equal = high == t_high && low == t_low;
    select(below, 1u32, select(equal, 1u32 << 16, 0u32))
}

/// Where a unit's run of `per_unit` consecutive elements (at its scan rank) lies: its segment,
/// the position of its first element, and whether its cube has a tile.
#[derive(CubeType, Clone, Copy)]
struct TieRun {
    segment: usize,
    first: usize,
    live: bool,
}

#[cube]
fn tie_run(
    rank: usize,
    tiles_per_segment: usize,
    tiles: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
) -> TieRun {
    let tile = CUBE_POS % tiles_per_segment;
    TieRun {
        segment: CUBE_POS / tiles_per_segment,
        first: tile * comptime!(cube_size * per_unit) + rank * per_unit,
        live: CUBE_POS < tiles,
    }
}

/// The class (see [`tie_class`]; 0 past the axis) of each element of the unit's run against its
/// segment's `k`-th key, and their sum: the run's packed below / equal counts.
#[cube]
fn run_ties(
    keys: &[u32],
    state: &[u32],
    len: usize,
    axis_len: usize,
    run: &TieRun,
    #[comptime] key_words: usize,
    #[comptime] per_unit: usize,
) -> (Array<u32>, u32) {
    let mut classes = Array::<u32>::new(per_unit);
    let mut packed = 0u32;
    let mut t_low = 0u32;
    let mut t_high = 0u32;
    if run.live {
        t_low = state[run.segment * STATE_WORDS];
        t_high = state[run.segment * STATE_WORDS + 1];
    }
    #[unroll]
    for e in 0..per_unit {
        let p = run.first + e;
        let mut class = 0u32;
        if run.live && p < axis_len {
            let (low, high) = key_words_at(keys, len, run.segment * axis_len + p, key_words);
            class = tie_class(low, high, t_low, t_high);
        }
        classes[e] = class;
        packed += class;
    }
    (classes, packed)
}

/// Writes each tile's count of keys below its segment's `k`-th key to
/// `table[(segment * 2) * tiles_per_segment + tile]` and of keys equal to it to
/// `table[(segment * 2 + 1) * tiles_per_segment + tile]`. One cube per tile of
/// `cube_size * per_unit` elements (at most 65,535).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn select_count_ties(
    keys: &[u32],
    state: &[u32],
    table: &mut [u32],
    len: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    #[comptime] key_words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    let rank = scan_rank(cube_size, planes) as usize;
    let run = tie_run(rank, tiles_per_segment, tiles, cube_size, per_unit);
    let (_, packed) = run_ties(keys, state, len, axis_len, &run, key_words, per_unit);
    let total = cube_inclusive_sum(packed, cube_size, planes);
    if run.live && rank == comptime!(cube_size - 1) {
        let at = run.segment * 2 * tiles_per_segment + CUBE_POS % tiles_per_segment;
        table[at] = total & 0xFFFFu32;
        table[at + tiles_per_segment] = total >> 16;
    }
}

/// Where a run of consecutive elements of a segment puts its candidates.
#[derive(CubeType, Clone, Copy)]
pub(super) struct TakenRun {
    /// Where the segment's keys start, and the distance between key word planes.
    pub row: usize,
    pub len: usize,
    /// The run's first position along the axis.
    pub first: usize,
    /// The segment's first candidate slot, `k`, and the distance between candidate word planes.
    pub slots: usize,
    pub k: usize,
    pub candidates_len: usize,
    /// Keys below the `k`-th key and equal to it before the run, and equal keys the `k` take.
    pub below: u32,
    pub equal: u32,
    pub remaining: u32,
}

/// Writes the candidates of a run of `per_unit` elements with their `classes` (see
/// [`tie_class`]): every key below the `k`-th and each equal one while fewer than `remaining`
/// came before it, to its slot of `candidates` with its position, in position order. Only the
/// keys taken are read.
#[cube]
pub(super) fn write_candidates(
    keys: &[u32],
    candidates: &mut [u32],
    positions: &mut [u32],
    classes: &Array<u32>,
    run: &TakenRun,
    #[comptime] key_words: usize,
    #[comptime] per_unit: usize,
) {
    let mut below = run.below;
    let mut equal = run.equal;
    #[unroll]
    for e in 0..per_unit {
        let class = classes[e];
        let taken = class == 1u32 || (class != 0u32 && equal < run.remaining);
        let dest = (below + select(equal < run.remaining, equal, run.remaining)) as usize;
        if taken && dest < run.k {
            let p = run.first + e;
            let (low, high) = key_words_at(keys, run.len, run.row + p, key_words);
            let at = run.slots + dest;
            candidates[at] = low;
            if comptime!(key_words == 2) {
                candidates[run.candidates_len + at] = high;
            }
            positions[at] = p as u32;
        }
        below += select(class == 1u32, 1u32, 0u32);
        equal += class >> 16u32;
    }
}

/// Writes segment `s`'s `k` candidates to `candidates[s * k..]` (key words `candidates_len`
/// apart) and their positions along the axis to `positions[s * k..]`, in position order: every
/// key below the segment's `k`-th key, and the first `remaining` keys equal to it. `offsets`,
/// the tie table with each row scanned on its own (`sort_scan_digits`), says how many of each
/// lie before the unit's tile in its segment.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn select_gather(
    keys: &[u32],
    state: &[u32],
    offsets: &[u32],
    candidates: &mut [u32],
    positions: &mut [u32],
    len: usize,
    axis_len: usize,
    tiles_per_segment: usize,
    tiles: usize,
    k: usize,
    candidates_len: usize,
    #[comptime] key_words: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) {
    let rank = scan_rank(cube_size, planes) as usize;
    let run = tie_run(rank, tiles_per_segment, tiles, cube_size, per_unit);
    let (classes, packed) = run_ties(keys, state, len, axis_len, &run, key_words, per_unit);
    let before_in_tile = cube_inclusive_sum(packed, cube_size, planes) - packed;
    let segment = run.segment;
    if run.live {
        let tile = CUBE_POS % tiles_per_segment;
        let below_at = segment * 2 * tiles_per_segment;
        let equal_at = below_at + tiles_per_segment;
        let below = offsets[below_at + tile] + (before_in_tile & 0xFFFFu32);
        let equal = offsets[equal_at + tile] + (before_in_tile >> 16);
        let remaining = state[segment * STATE_WORDS + 2];
        // Only the keys taken are read again.
        let taken = TakenRun {
            row: segment * axis_len,
            len,
            first: run.first,
            slots: segment * k,
            k,
            candidates_len,
            below,
            equal,
            remaining,
        };
        write_candidates(
            keys, candidates, positions, &classes, &taken, key_words, per_unit,
        );
    }
}
