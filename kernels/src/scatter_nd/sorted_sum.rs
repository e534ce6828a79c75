//! Deterministic float `Add` along sorted rows
//! ([`ScatterStrategy::SortedDeterministic`](super::ScatterStrategy)): the same exact sum as
//! `exact_add.rs` ([`super::exact`]), computed by one unit per target row and group of
//! [`SUM_COLUMNS`] columns instead of scratch and atomics, so the bits are the same. The rows
//! are sorted by target first (`ordered.rs`); then the unit at each target's first sorted row,
//! per group of columns, walks the target's rows twice, for the largest exponent and for the
//! sum, and rounds. One walk serves the group's columns: its loads of the sorted rows and its
//! bookkeeping are shared.
//!
//! A walk takes at most `span` rows per launch (CPU drivers end a shader's loops after 65,535
//! iterations in all): a target with more rows lists its unit in the first launch
//! ([`SortedSumStep::Start`]), which keeps the walk's state in the list's slot, and further
//! launches run only the listed units: [`SortedSumStep::Observe`] the exponents of the next
//! `span` rows, then [`SortedSumStep::Sum`] their terms, then [`SortedSumStep::Finish`]
//! rounds.

use cubecl::prelude::*;

use super::exact::{SumFormat, add_term_at, observe, round_sum};
use super::exact_add::{EXACT_META_WORDS, EXACT_SUM_WORDS, term_at, typed_term, widen};
use super::ordered::{list_pending, unit_position, walk_range};

/// Columns one unit of a sorted sum takes.
pub const SUM_COLUMNS: usize = 8;

/// What the units of one launch of a sorted sum do (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortedSumStep {
    /// Every unit: a target's first sorted row sums the target whole when its rows fit the
    /// span, else lists itself and keeps the exponents of its first `span` rows.
    Start,
    /// Listed units: the exponents of the rows from `first` on.
    Observe,
    /// Listed units: the terms of the rows from `first` on (and from 0, the current values).
    Sum,
    /// Listed units: round and write.
    Finish,
}

/// Where a unit works: its sorted row, its first column and how many of the group's columns
/// the slice has.
#[derive(CubeType)]
struct Columns {
    sorted: usize,
    first: usize,
    count: usize,
}

#[cube]
fn columns(unit: usize, slice: usize, groups: usize) -> Columns {
    let sorted = unit / groups;
    let first = (unit - sorted * groups) * SUM_COLUMNS;
    let left = slice - first;
    Columns {
        sorted,
        first,
        count: select(left < SUM_COLUMNS, left, SUM_COLUMNS),
    }
}

/// Folds the exponents and flags of the updates of sorted rows `start..end` into `meta` (two
/// words per column).
#[cube]
fn observe_rows<T: Numeric>(
    meta: &mut Array<u32>,
    updates: &[T],
    order: &[u32],
    range: (usize, usize),
    slice: usize,
    cols: &Columns,
    #[comptime] packed: Option<SumFormat>,
) {
    let (start, end) = range;
    let mut sorted = start;
    while sorted < end {
        let base = order[sorted] as usize * slice + cols.first;
        #[unroll]
        for j in 0..SUM_COLUMNS {
            if j < cols.count {
                let term = term_at::<T>(updates, base + j, packed);
                let (scale, flags) = observe(
                    meta[j * EXACT_META_WORDS],
                    meta[j * EXACT_META_WORDS + 1],
                    term,
                );
                meta[j * EXACT_META_WORDS] = scale;
                meta[j * EXACT_META_WORDS + 1] = flags;
            }
        }
        sorted += 1usize;
    }
}

/// Adds the updates of sorted rows `start..end` on each column's grid (`meta`) to its
/// magnitudes (four words per column).
#[cube]
fn add_rows<T: Numeric>(
    positive: &mut Array<u32>,
    negative: &mut Array<u32>,
    meta: &Array<u32>,
    updates: &[T],
    order: &[u32],
    range: (usize, usize),
    slice: usize,
    cols: &Columns,
    #[comptime] packed: Option<SumFormat>,
) {
    let (start, end) = range;
    let mut sorted = start;
    while sorted < end {
        let base = order[sorted] as usize * slice + cols.first;
        #[unroll]
        for j in 0..SUM_COLUMNS {
            if j < cols.count {
                let term = term_at::<T>(updates, base + j, packed);
                let scale = meta[j * EXACT_META_WORDS];
                add_term_at(positive, negative, j * EXACT_SUM_WORDS, scale, term);
            }
        }
        sorted += 1usize;
    }
}

/// Column `j`'s sum rounded to `format`'s bits.
#[cube]
fn round_column(
    positive: &Array<u32>,
    negative: &Array<u32>,
    meta: &Array<u32>,
    #[comptime] j: usize,
    #[comptime] format: SumFormat,
) -> u32 {
    let mut high = Array::<u32>::new(EXACT_SUM_WORDS);
    let mut low = Array::<u32>::new(EXACT_SUM_WORDS);
    #[unroll]
    for i in 0..EXACT_SUM_WORDS {
        high[i] = positive[j * EXACT_SUM_WORDS + i];
        low[i] = negative[j * EXACT_SUM_WORDS + i];
    }
    let (scale, flags) = (meta[j * EXACT_META_WORDS], meta[j * EXACT_META_WORDS + 1]);
    round_sum(&high, &low, scale, flags, format)
}

/// This launch's part of the sums of a unit at a target's first sorted row, whose target
/// elements hold `current` (`f32` bits, one per column): writes the rounded sums, in
/// `format`'s bits, to `bits` and returns whether they are final (to be written).
#[cube]
fn sum_step<T: Numeric>(
    updates: &[T],
    order: &[u32],
    pending_count: &mut [Atomic<u32>],
    pending: &mut [u32],
    meta_state: &mut [u32],
    positive_state: &mut [u32],
    negative_state: &mut [u32],
    unit: usize,
    walk: (usize, usize, bool),
    slice: usize,
    cols: &Columns,
    first: usize,
    current: &Array<u32>,
    bits: &mut Array<u32>,
    #[comptime] step: SortedSumStep,
    #[comptime] format: SumFormat,
    #[comptime] packed: Option<SumFormat>,
) -> bool {
    let (start, end, more) = walk;
    let range = (start, end);
    let meta_len = comptime!(SUM_COLUMNS * EXACT_META_WORDS);
    let sum_len = comptime!(SUM_COLUMNS * EXACT_SUM_WORDS);
    let mut meta = Array::<u32>::new(meta_len);
    let mut positive = Array::<u32>::new(sum_len);
    let mut negative = Array::<u32>::new(sum_len);
    #[unroll]
    for i in 0..meta_len {
        meta[i] = 0u32;
    }
    #[unroll]
    for i in 0..sum_len {
        positive[i] = 0u32;
        negative[i] = 0u32;
    }
    // A listed unit's slot: its place in the list.
    let mut slot = ABSOLUTE_POS;
    let mut write = false;
    if comptime!(step == SortedSumStep::Start) {
        #[unroll]
        for j in 0..SUM_COLUMNS {
            let (scale, flags) = observe(0u32, 0u32, current[j]);
            meta[j * EXACT_META_WORDS] = scale;
            meta[j * EXACT_META_WORDS + 1] = flags;
        }
        observe_rows::<T>(&mut meta, updates, order, range, slice, cols, packed);
        if more {
            slot = list_pending(pending_count, pending, unit);
            if slot < pending.len() {
                #[unroll]
                for i in 0..meta_len {
                    meta_state[slot * meta_len + i] = meta[i];
                }
            }
        } else {
            #[unroll]
            for j in 0..SUM_COLUMNS {
                let scale = meta[j * EXACT_META_WORDS];
                add_term_at(
                    &mut positive,
                    &mut negative,
                    j * EXACT_SUM_WORDS,
                    scale,
                    current[j],
                );
            }
            add_rows::<T>(
                &mut positive,
                &mut negative,
                &meta,
                updates,
                order,
                range,
                slice,
                cols,
                packed,
            );
            #[unroll]
            for j in 0..SUM_COLUMNS {
                bits[j] = round_column(&positive, &negative, &meta, j, format);
            }
            write = true;
        }
    } else if slot < pending.len() {
        #[unroll]
        for i in 0..meta_len {
            meta[i] = meta_state[slot * meta_len + i];
        }
        if comptime!(step == SortedSumStep::Observe) {
            observe_rows::<T>(&mut meta, updates, order, range, slice, cols, packed);
            #[unroll]
            for i in 0..meta_len {
                meta_state[slot * meta_len + i] = meta[i];
            }
        } else {
            if comptime!(step == SortedSumStep::Sum) && first == 0usize {
                #[unroll]
                for j in 0..SUM_COLUMNS {
                    let scale = meta[j * EXACT_META_WORDS];
                    add_term_at(
                        &mut positive,
                        &mut negative,
                        j * EXACT_SUM_WORDS,
                        scale,
                        current[j],
                    );
                }
            } else {
                #[unroll]
                for i in 0..sum_len {
                    positive[i] = positive_state[slot * sum_len + i];
                    negative[i] = negative_state[slot * sum_len + i];
                }
            }
            if comptime!(step == SortedSumStep::Sum) {
                add_rows::<T>(
                    &mut positive,
                    &mut negative,
                    &meta,
                    updates,
                    order,
                    range,
                    slice,
                    cols,
                    packed,
                );
                #[unroll]
                for i in 0..sum_len {
                    positive_state[slot * sum_len + i] = positive[i];
                    negative_state[slot * sum_len + i] = negative[i];
                }
            } else {
                #[unroll]
                for j in 0..SUM_COLUMNS {
                    bits[j] = round_column(&positive, &negative, &meta, j, format);
                }
                write = true;
            }
        }
    }
    write
}

/// This launch's unit ([`unit_position`]), its columns, the first target element they
/// address, its walk ([`walk_range`] of its sorted row: the rows to take and whether more
/// follow) and whether it works: in [`SortedSumStep::Start`] a target's first sorted row, in
/// later steps every listed unit.
#[cube]
fn sum_walk(
    order: &[u32],
    targets: &[u32],
    pending_count: &mut [Atomic<u32>],
    pending: &mut [u32],
    sizes: (usize, usize, usize, usize),
    window: (usize, usize),
    #[comptime] step: SortedSumStep,
) -> (usize, Columns, usize, (usize, usize, bool), bool) {
    let (slice, groups, units, rows) = sizes;
    let (first, span) = window;
    let resume = comptime!(step != SortedSumStep::Start);
    let (unit, listed) = unit_position(pending_count, pending, units, resume);
    // Arithmetic only: any unit's columns lie in the slice.
    let cols = columns(unit, slice, groups);
    let mut base = 0usize;
    let mut start = 0usize;
    let mut end = 0usize;
    let mut more = false;
    let mut works = false;
    if listed {
        let (key, walk_start, walk_end, active, walk_more) =
            walk_range(order, targets, cols.sorted, rows, first, span);
        works = resume || active;
        if works {
            base = key as usize * slice + cols.first;
        }
        start = walk_start;
        end = walk_end;
        more = walk_more;
    }
    (unit, cols, base, (start, end, more), works)
}

/// A sorted exact sum's launch over typed data (see the module docs); `groups` groups of
/// columns per row, `units = rows * groups`.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_sum<T: Numeric>(
    output: &mut [T],
    updates: &[T],
    order: &[u32],
    targets: &[u32],
    pending_count: &mut [Atomic<u32>],
    pending: &mut [u32],
    meta: &mut [u32],
    positive: &mut [u32],
    negative: &mut [u32],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    first: usize,
    span: usize,
    #[comptime] step: SortedSumStep,
    #[comptime] format: SumFormat,
    #[define(T)] _data: ElemType,
) {
    let (unit, cols, base, walk, works) = sum_walk(
        order,
        targets,
        pending_count,
        pending,
        (slice, groups, units, rows),
        (first, span),
        step,
    );
    if !works {
        terminate!();
    }
    let mut current = Array::<u32>::new(SUM_COLUMNS);
    let mut bits = Array::<u32>::new(SUM_COLUMNS);
    #[unroll]
    for j in 0..SUM_COLUMNS {
        current[j] = 0u32;
        if j < cols.count {
            current[j] = typed_term::<T>(output[base + j]);
        }
    }
    let write = sum_step::<T>(
        updates,
        order,
        pending_count,
        pending,
        meta,
        positive,
        negative,
        unit,
        walk,
        slice,
        &cols,
        first,
        &current,
        &mut bits,
        step,
        format,
        comptime!(None::<SumFormat>),
    );
    if write {
        #[unroll]
        for j in 0..SUM_COLUMNS {
            if j < cols.count {
                output[base + j] = T::cast_from(widen(bits[j], format));
            }
        }
    }
}

/// A sorted exact sum's launch over `f16`/`bf16` packed two to a `u32` word: a unit XORs the
/// change of each of its fields into its word, which leaves the other field as its own unit
/// sets it.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_sum_packed(
    output: &mut [Atomic<u32>],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    pending_count: &mut [Atomic<u32>],
    pending: &mut [u32],
    meta: &mut [u32],
    positive: &mut [u32],
    negative: &mut [u32],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    first: usize,
    span: usize,
    #[comptime] step: SortedSumStep,
    #[comptime] format: SumFormat,
) {
    let (unit, cols, base, walk, works) = sum_walk(
        order,
        targets,
        pending_count,
        pending,
        (slice, groups, units, rows),
        (first, span),
        step,
    );
    if !works {
        terminate!();
    }
    let mut old = Array::<u32>::new(SUM_COLUMNS);
    let mut current = Array::<u32>::new(SUM_COLUMNS);
    let mut bits = Array::<u32>::new(SUM_COLUMNS);
    #[unroll]
    for j in 0..SUM_COLUMNS {
        old[j] = 0u32;
        current[j] = 0u32;
        if j < cols.count {
            let element = base + j;
            // Only this unit writes this field, so the load sees its current bits.
            let shift = ((element % 2usize) as u32) * 16u32;
            old[j] = (output[element / 2usize].load() >> shift) & 0xFFFFu32;
            current[j] = u32::reinterpret(widen(old[j], format));
        }
    }
    let write = sum_step::<u32>(
        updates,
        order,
        pending_count,
        pending,
        meta,
        positive,
        negative,
        unit,
        walk,
        slice,
        &cols,
        first,
        &current,
        &mut bits,
        step,
        format,
        comptime!(Some(format)),
    );
    if write {
        #[unroll]
        for j in 0..SUM_COLUMNS {
            if j < cols.count && bits[j] != old[j] {
                let element = base + j;
                let shift = ((element % 2usize) as u32) * 16u32;
                output[element / 2usize].fetch_xor((bits[j] ^ old[j]) << shift);
            }
        }
    }
}
