//! Per-unit digit counters for a unit that holds a run of elements: sixteen 16-bit counters
//! packed two to a word, and their cube-wide prefix sums over all eight words at once, so that a
//! cube ranks `cube_size * per_unit` elements with the barriers of a single scan.

use cubecl::prelude::*;

/// Buckets of a 4-bit digit.
pub(crate) const DIGITS: usize = 16;

/// Bits of the digit the counters count.
pub(crate) const DIGIT_BITS: u32 = 4;

/// Words of packed counters: 16 digits, two 16-bit counters to a word (digit `d` in word `d / 2`,
/// bits `16 * (d % 2)..`). A cube holds at most 65,535 elements, so no counter overflows.
pub(crate) const COUNTER_WORDS: usize = 8;

/// Eight zero words.
#[cube]
pub(crate) fn zero_counters() -> Array<u32> {
    let mut counters = Array::<u32>::new(COUNTER_WORDS);
    #[unroll]
    for q in 0..COUNTER_WORDS {
        counters[q] = 0u32;
    }
    counters
}

/// Adds one to digit `digit`'s counter.
#[cube]
pub(crate) fn count_digit(counters: &mut Array<u32>, digit: u32) {
    let word = (digit / 2) as usize;
    counters[word] += 1u32 << ((digit % 2) * 16);
}

/// Digit `digit`'s counter.
#[cube]
pub(crate) fn counter(counters: &Array<u32>, digit: u32) -> u32 {
    (counters[(digit / 2) as usize] >> ((digit % 2) * 16)) & 0xFFFFu32
}

/// The inclusive sums of every counter word over the cube's units in rank order (see
/// `scan_rank`), in place. Every unit of the cube must call it, in uniform control flow.
#[cube]
pub(crate) fn cube_counter_sums(
    counters: &mut Array<u32>,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
) {
    if comptime!(planes) {
        counter_sums_planes(counters, cube_size);
    } else {
        counter_sums_shared(counters, cube_size);
    }
}

/// A copy of `counters` scanned by [`cube_counter_sums`]: the unit's own counts stay in
/// `counters`, so `sums - counters` is what the units before it hold. Every unit of the cube
/// must call it, in uniform control flow.
#[cube]
pub(crate) fn cube_counter_prefix(
    counters: &Array<u32>,
    #[comptime] cube_size: usize,
    #[comptime] planes: bool,
) -> Array<u32> {
    let mut sums = zero_counters();
    #[unroll]
    for q in 0..COUNTER_WORDS {
        sums[q] = counters[q];
    }
    cube_counter_sums(&mut sums, cube_size, planes);
    sums
}

/// The places, stably ordered by 4-bit digit, of the cube's `cube_size * per_unit` elements held
/// in runs: the unit at scan rank `rank` holds elements `rank * per_unit..`, the first `live` of
/// them, with their `digits`. Every unit of the cube must call it, in uniform control flow; its
/// barriers order every unit's reads of the elements before the caller moves them.
#[cube]
pub(crate) fn run_places(
    digits: &Array<u32>,
    live: usize,
    rank: usize,
    #[comptime] cube_size: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: bool,
) -> Array<u32> {
    let mut mine = zero_counters();
    #[unroll]
    for e in 0..per_unit {
        if e < live {
            count_digit(&mut mine, digits[e]);
        }
    }
    let sums = cube_counter_prefix(&mine, cube_size, planes);
    let mut totals = Shared::<[u32]>::new_slice(COUNTER_WORDS);
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
    let mut places = Array::<u32>::new(per_unit);
    #[unroll]
    for e in 0..per_unit {
        if e < live {
            let digit = digits[e];
            let before = counter(&sums, digit) - counter(&mine, digit);
            places[e] = digit_first[digit as usize] + before + counter(&seen, digit);
            count_digit(&mut seen, digit);
        }
    }
    places
}

/// The shared-memory scan of `inclusive_sum_shared`, for all eight words with its three
/// barriers: each word's values split into runs that one unit each scans sequentially.
#[cube]
fn counter_sums_shared(counters: &mut Array<u32>, #[comptime] cube_size: usize) {
    let segments = comptime!(1usize << (cube_size.trailing_zeros() / 2));
    let run = comptime!(cube_size / segments);
    let mut values = Shared::<[u32]>::new_slice(cube_size * COUNTER_WORDS);
    let mut offsets = Shared::<[u32]>::new_slice(segments * COUNTER_WORDS);
    let unit = UNIT_POS as usize;
    #[unroll]
    for q in 0..COUNTER_WORDS {
        values[comptime!(q * cube_size) + unit] = counters[q];
    }
    sync_cube();
    // One unit per (word, run): `segments * 8` of them, at most the cube's.
    for job in 0..comptime!(segments * COUNTER_WORDS).div_ceil(cube_size) {
        let task = job * cube_size + unit;
        if task < comptime!(segments * COUNTER_WORDS) {
            let word = task / segments;
            let start = word * cube_size + task % segments * run;
            let mut running = 0u32;
            for i in 0..run {
                running += values[start + i];
                values[start + i] = running;
            }
            offsets[task] = running;
        }
    }
    sync_cube();
    if unit < COUNTER_WORDS {
        let mut running = 0u32;
        for s in 0..segments {
            let total = offsets[unit * segments + s];
            offsets[unit * segments + s] = running;
            running += total;
        }
    }
    sync_cube();
    #[unroll]
    for q in 0..COUNTER_WORDS {
        counters[q] =
            values[comptime!(q * cube_size) + unit] + offsets[comptime!(q * segments) + unit / run];
    }
}

/// The plane scan of every word, with one barrier for the planes' totals of all eight.
#[cube]
fn counter_sums_planes(counters: &mut Array<u32>, #[comptime] cube_size: usize) {
    let mut totals = Shared::<[u32]>::new_slice(cube_size * COUNTER_WORDS);
    let first = plane_exclusive_sum(1u32) == 0;
    #[unroll]
    for q in 0..COUNTER_WORDS {
        let value = counters[q];
        let total = plane_sum(value);
        counters[q] = plane_inclusive_sum(value);
        if first {
            totals[comptime!(q * cube_size) + PLANE_POS as usize] = total;
        }
    }
    sync_cube();
    for p in 0..PLANE_POS as usize {
        #[unroll]
        for q in 0..COUNTER_WORDS {
            counters[q] += totals[comptime!(q * cube_size) + p];
        }
    }
}
