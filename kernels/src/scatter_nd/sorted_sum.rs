//! Deterministic float `Add` along the rows sorted by target: each target element becomes the
//! exact sum of its value and its updates, rounded once ([`super::exact`]). Integer sums are
//! order-free, so the passes of `sorted.rs` give the same bits however the runs are cut: each
//! node adds its terms (or its nodes' sums) exactly, and the join adds the run's nodes and
//! updates and the current value, and rounds. The data is read and written as 32-bit words
//! (`f32` one to a word, 16-bit floats two).
//!
//! A node's entry holds a word of flags and [`SumFormat::sum_words`] words of sum per column:
//! with a node per 32 positions and fewer above, about `(1 + words) / 28` words per update
//! element.

use cubecl::prelude::*;

use super::exact::{
    SumFormat, add_signed_term_at, add_signed_words, observe, round_signed_sum, widen,
};
use super::fields::{read_field, term_at, write_field};
use super::sorted::{CHUNK_ROWS, NODE_FAN, join_step, join_task, key_at, node_index, node_task};

/// A zeroed two's-complement sum of `format`'s words.
#[cube]
fn zero_sum(#[comptime] format: SumFormat) -> Array<u32> {
    let words = comptime!(format.sum_words());
    let mut sum = Array::<u32>::new(words);
    #[unroll]
    for i in 0..words {
        sum[i] = 0u32;
    }
    sum
}

/// Adds to `sum` the term of update element `index` (held in words of `format`), and returns
/// `flags` with its special values.
#[cube]
fn add_update(
    sum: &mut Array<u32>,
    flags: u32,
    updates: &[u32],
    index: usize,
    #[comptime] format: SumFormat,
) -> u32 {
    let term = term_at(updates, index, format);
    add_signed_term_at(sum, 0usize, term, format);
    observe(flags, term)
}

/// Stores the sum `sum` and its flags at node entry `entry` of `partials`: the flags at that
/// index, the sum at `entries + entry * words`.
#[cube]
fn store_entry(
    partials: &mut [u32],
    entry: usize,
    entries: usize,
    sum: &Array<u32>,
    flags: u32,
    #[comptime] format: SumFormat,
) {
    let words = comptime!(format.sum_words());
    partials[entry] = flags;
    #[unroll]
    for i in 0..words {
        partials[entries + entry * words + i] = sum[i];
    }
}

/// Adds the sum at node entry `entry` of `partials` (see [`store_entry`]) to `sum`, and returns
/// `flags` with its flags.
#[cube]
fn add_entry(
    sum: &mut Array<u32>,
    flags: u32,
    partials: &[u32],
    entry: usize,
    entries: usize,
    #[comptime] format: SumFormat,
) -> u32 {
    let words = comptime!(format.sum_words());
    add_signed_words(sum, partials, entries + entry * words, format);
    flags | partials[entry]
}

/// The exact sums of the nodes of `level`, one unit per node and column (`units`): a node of
/// one target adds its updates' terms (level 0) or its nodes' sums, and stores the sum and its
/// flags at its entry (`entries` entries of a word of flags and `words` of sum).
///
/// `order` and `targets` are final here: earlier launches on the stream wrote them.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_sum_nodes(
    partials: &mut [u32],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    rows: usize,
    level: u32,
    entries: usize,
    #[comptime] format: SumFormat,
) {
    let (col, node, first, whole) =
        node_task(order, targets, ABSOLUTE_POS, slice, units, rows, level);
    if !whole {
        terminate!();
    }
    let mut sum = zero_sum(format);
    let mut flags = 0u32;
    if level == 0u32 {
        let mut i = 0usize;
        while i < CHUNK_ROWS {
            let index = order[first + i] as usize * slice + col;
            flags = add_update(&mut sum, flags, updates, index, format);
            i += 1usize;
        }
    } else {
        let child = node_index(rows, level - 1u32, node * NODE_FAN) * slice + col;
        let mut j = 0usize;
        while j < NODE_FAN {
            flags = add_entry(
                &mut sum,
                flags,
                &*partials,
                child + j * slice,
                entries,
                format,
            );
            j += 1usize;
        }
    }
    let entry = node_index(rows, level, node) * slice + col;
    store_entry(partials, entry, entries, &sum, flags, format);
}

/// The join of the exact sums, one unit per sorted position and column (`units = rows *
/// slice`): the unit of each run's first position adds the run's nodes (see
/// [`scatter_nd_sorted_sum_nodes()`]) and updates and the target's value, rounds once and writes.
///
/// `order` and `targets` are final here: earlier launches on the stream wrote them.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_sum_join(
    output: &mut [Atomic<u32>],
    partials: &[u32],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    entries: usize,
    #[comptime] format: SumFormat,
) {
    let (position, col, key, rows, writes) =
        join_task(order, targets, ABSOLUTE_POS, slice, units, false);
    if !writes {
        terminate!();
    }
    let mut sum = zero_sum(format);
    let mut flags = 0u32;
    let mut at = position;
    while key_at(order, targets, at, rows) == key {
        let (node, index, width) = join_step(order, targets, at, key, rows, slice, col);
        if node {
            flags = add_entry(&mut sum, flags, partials, index, entries, format);
        } else {
            flags = add_update(&mut sum, flags, updates, index, format);
        }
        at += width;
    }
    // The target's value is the last term.
    let (word, shift, old) = read_field(&*output, key as usize * slice + col, format);
    let current = u32::reinterpret(widen(old, format));
    add_signed_term_at(&mut sum, 0usize, current, format);
    let bits = round_signed_sum(&sum, 0usize, observe(flags, current), format);
    write_field(output, word, shift, old, bits);
}
