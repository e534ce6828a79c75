//! Deterministic float `Add` along sorted rows
//! ([`ScatterStrategy::SortedDeterministic`](super::ScatterStrategy)): the same exact sum as
//! `exact_add.rs` ([`super::exact`]), computed by one unit per target element instead of
//! scratch and atomics, so the bits are the same. The rows are sorted by target first
//! (`ordered.rs`); then the unit at each target's first sorted row, per column, walks the
//! target's rows twice, for the largest exponent and for the sum, and rounds.
//!
//! A walk takes at most `span` rows per launch (CPU drivers end a shader's loops after 65,535
//! iterations in all): a target with more rows lists its unit in the first launch
//! ([`SortedSumStep::Start`]), which keeps the walk's state in the list's slot, and further
//! launches run only the listed units: [`SortedSumStep::Observe`] the exponents of the next
//! `span` rows, then [`SortedSumStep::Sum`] their terms, then [`SortedSumStep::Finish`]
//! rounds.

use cubecl::prelude::*;

use super::exact::{SumFormat, add_term, observe, round_sum};
use super::exact_add::{EXACT_META_WORDS, EXACT_SUM_WORDS, term_at, typed_term, widen};
use super::ordered::{list_pending, unit_position, walk_range};

/// What the units of one launch of a sorted sum do (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortedSumStep {
    /// Every unit: a target's first sorted row sums the target whole when its rows fit the
    /// span, else lists itself and keeps the exponent of its first `span` rows.
    Start,
    /// Listed units: the exponents of the rows from `first` on.
    Observe,
    /// Listed units: the terms of the rows from `first` on (and from 0, the current value).
    Sum,
    /// Listed units: round and write.
    Finish,
}

/// The exponent and flags of `current` (unless `None`) and of the updates of sorted rows
/// `start..end` at column `col`, on top of `scale` and `flags`.
#[cube]
fn observe_rows<T: Numeric>(
    updates: &[T],
    order: &[u32],
    range: (usize, usize),
    slice: usize,
    col: usize,
    state: (u32, u32),
    #[comptime] packed: Option<SumFormat>,
) -> (u32, u32) {
    let (start, end) = range;
    let (mut scale, mut flags) = state;
    let mut sorted = start;
    while sorted < end {
        let term = term_at::<T>(updates, order[sorted] as usize * slice + col, packed);
        let (next_scale, next_flags) = observe(scale, flags, term);
        scale = next_scale;
        flags = next_flags;
        sorted += 1usize;
    }
    (scale, flags)
}

/// Adds the updates of sorted rows `start..end` at column `col` on the grid of `scale`.
#[cube]
fn add_rows<T: Numeric>(
    positive: &mut Array<u32>,
    negative: &mut Array<u32>,
    updates: &[T],
    order: &[u32],
    range: (usize, usize),
    slice: usize,
    col: usize,
    scale: u32,
    #[comptime] packed: Option<SumFormat>,
) {
    let (start, end) = range;
    let mut sorted = start;
    while sorted < end {
        let term = term_at::<T>(updates, order[sorted] as usize * slice + col, packed);
        add_term(positive, negative, scale, term);
        sorted += 1usize;
    }
}

/// This launch's part of the sum for the unit at `position` (a target's first sorted row),
/// whose target element holds `current` (`f32` bits): the rounded sum, in `format`'s bits, and
/// whether it is final (to be written).
#[cube]
fn sum_step<T: Numeric>(
    updates: &[T],
    order: &[u32],
    pending_count: &mut [Atomic<u32>],
    pending: &mut [u32],
    meta: &mut [u32],
    positive_sums: &mut [u32],
    negative_sums: &mut [u32],
    position: usize,
    range: (usize, usize),
    more: bool,
    slice: usize,
    first: usize,
    current: u32,
    #[comptime] step: SortedSumStep,
    #[comptime] format: SumFormat,
    #[comptime] packed: Option<SumFormat>,
) -> (u32, bool) {
    let col = position % slice;
    let mut positive = Array::<u32>::new(EXACT_SUM_WORDS);
    let mut negative = Array::<u32>::new(EXACT_SUM_WORDS);
    #[unroll]
    for i in 0..EXACT_SUM_WORDS {
        positive[i] = 0u32;
        negative[i] = 0u32;
    }
    // The slot of a listed unit: its place in the list.
    let mut slot = ABSOLUTE_POS;
    let mut bits = 0u32;
    let mut write = false;
    if comptime!(step == SortedSumStep::Start) {
        let (scale, flags) = observe_rows::<T>(
            updates,
            order,
            range,
            slice,
            col,
            observe(0u32, 0u32, current),
            packed,
        );
        if more {
            slot = list_pending(pending_count, pending, position);
        } else {
            add_term(&mut positive, &mut negative, scale, current);
            add_rows::<T>(
                &mut positive,
                &mut negative,
                updates,
                order,
                range,
                slice,
                col,
                scale,
                packed,
            );
            bits = round_sum(&positive, &negative, scale, flags, format);
            write = true;
        }
        if more && slot < pending.len() {
            meta[slot * EXACT_META_WORDS] = scale;
            meta[slot * EXACT_META_WORDS + 1usize] = flags;
        }
    } else if slot < pending.len() {
        let base = slot * EXACT_META_WORDS;
        let (scale, flags) = (meta[base], meta[base + 1usize]);
        let sums = slot * EXACT_SUM_WORDS;
        if comptime!(step == SortedSumStep::Observe) {
            let (scale, flags) =
                observe_rows::<T>(updates, order, range, slice, col, (scale, flags), packed);
            meta[base] = scale;
            meta[base + 1usize] = flags;
        } else if comptime!(step == SortedSumStep::Sum) {
            if first == 0usize {
                add_term(&mut positive, &mut negative, scale, current);
            } else {
                #[unroll]
                for i in 0..EXACT_SUM_WORDS {
                    positive[i] = positive_sums[sums + i];
                    negative[i] = negative_sums[sums + i];
                }
            }
            add_rows::<T>(
                &mut positive,
                &mut negative,
                updates,
                order,
                range,
                slice,
                col,
                scale,
                packed,
            );
            #[unroll]
            for i in 0..EXACT_SUM_WORDS {
                positive_sums[sums + i] = positive[i];
                negative_sums[sums + i] = negative[i];
            }
        } else {
            #[unroll]
            for i in 0..EXACT_SUM_WORDS {
                positive[i] = positive_sums[sums + i];
                negative[i] = negative_sums[sums + i];
            }
            bits = round_sum(&positive, &negative, scale, flags, format);
            write = true;
        }
    }
    (bits, write)
}

/// A sorted exact sum's launch over typed data (see the module docs).
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
    units: usize,
    rows: usize,
    first: usize,
    span: usize,
    #[comptime] step: SortedSumStep,
    #[comptime] format: SumFormat,
    #[define(T)] _data: ElemType,
) {
    let resume = comptime!(step != SortedSumStep::Start);
    let (position, listed) = unit_position(pending_count, pending, units, resume);
    if !listed {
        terminate!();
    }
    let (key, start, end, active, more) =
        walk_range(order, targets, position, slice, rows, first, span);
    if comptime!(!resume) && !active {
        terminate!();
    }
    let element = key as usize * slice + position % slice;
    let current = typed_term::<T>(output[element]);
    let (bits, write) = sum_step::<T>(
        updates,
        order,
        pending_count,
        pending,
        meta,
        positive,
        negative,
        position,
        (start, end),
        more,
        slice,
        first,
        current,
        step,
        format,
        comptime!(None::<SumFormat>),
    );
    if write {
        output[element] = T::cast_from(widen(bits, format));
    }
}

/// A sorted exact sum's launch over `f16`/`bf16` packed two to a `u32` word: a unit XORs the
/// change of its field into the word, which leaves the other field as its own unit sets it.
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
    units: usize,
    rows: usize,
    first: usize,
    span: usize,
    #[comptime] step: SortedSumStep,
    #[comptime] format: SumFormat,
) {
    let resume = comptime!(step != SortedSumStep::Start);
    let (position, listed) = unit_position(pending_count, pending, units, resume);
    if !listed {
        terminate!();
    }
    let (key, start, end, active, more) =
        walk_range(order, targets, position, slice, rows, first, span);
    if comptime!(!resume) && !active {
        terminate!();
    }
    let element = key as usize * slice + position % slice;
    let word = element / 2usize;
    let shift = ((element % 2usize) as u32) * 16u32;
    // Only this unit writes this field, so the load sees its current bits.
    let old = (output[word].load() >> shift) & 0xFFFFu32;
    let current = u32::reinterpret(widen(old, format));
    let (bits, write) = sum_step::<u32>(
        updates,
        order,
        pending_count,
        pending,
        meta,
        positive,
        negative,
        position,
        (start, end),
        more,
        slice,
        first,
        current,
        step,
        format,
        comptime!(Some(format)),
    );
    if write && bits != old {
        output[word].fetch_xor((bits ^ old) << shift);
    }
}
