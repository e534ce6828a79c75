//! The passes along the sorted rows (`sorted.rs`) for data held in 32-bit words: 8- and 16-bit
//! elements packed two or four to a word (arithmetic in `packed.rs`) and 64-bit ones as word
//! pairs (`split.rs`). A value travels as `(lo, hi)`: a packed element's bits and zero, or a
//! pair's low and high words. A node's partial result takes a word per value, two for pairs.

use cubecl::prelude::*;

use super::kernel::ReduceOp;
use super::packed::{WordKind, combine_packed, field, is_nan_field};
use super::sorted::{CHUNK_ROWS, NODE_FAN, join_step, join_task, key_at, node_index, node_task};
use super::split::{combine_split, is_nan};

/// Element `index` of `words`, `bits` wide (8, 16 or 64).
#[cube]
fn load_value(words: &[u32], index: usize, #[comptime] bits: u32) -> (u32, u32) {
    if comptime!(bits == 64) {
        (words[2 * index], words[2 * index + 1])
    } else {
        (field(words, index, bits), 0u32)
    }
}

/// Node entry `entry` of `partials` (see [`load_value`]).
#[cube]
fn load_entry(partials: &[u32], entry: usize, #[comptime] bits: u32) -> (u32, u32) {
    if comptime!(bits == 64) {
        (partials[2 * entry], partials[2 * entry + 1])
    } else {
        (partials[entry], 0u32)
    }
}

/// `op(acc, value)` on values `(lo, hi)`.
#[cube]
fn combine_value(
    acc_lo: u32,
    acc_hi: u32,
    lo: u32,
    hi: u32,
    #[comptime] op: ReduceOp,
    #[comptime] kind: WordKind,
    #[comptime] bits: u32,
) -> (u32, u32) {
    if comptime!(bits == 64) {
        combine_split(acc_lo, acc_hi, lo, hi, op, kind)
    } else {
        (combine_packed(acc_lo, lo, op, kind, bits), 0u32)
    }
}

/// [`combine_value`] for a node's partial result `acc`, which holds updates only: under a
/// float `Min`/`Max`, where `acc` is a NaN update, which must never win, `value` takes its
/// place. (A sum or product keeps its NaN.)
#[cube]
fn fold_value(
    acc_lo: u32,
    acc_hi: u32,
    lo: u32,
    hi: u32,
    #[comptime] op: ReduceOp,
    #[comptime] kind: WordKind,
    #[comptime] bits: u32,
) -> (u32, u32) {
    let (out_lo, out_hi) = combine_value(acc_lo, acc_hi, lo, hi, op, kind, bits);
    let float = comptime!(kind != WordKind::Unsigned && kind != WordKind::Signed);
    let nan = if comptime!(bits == 64) {
        is_nan(acc_lo, acc_hi)
    } else {
        is_nan_field(acc_lo, kind, bits)
    };
    if comptime!(float && (op == ReduceOp::Min || op == ReduceOp::Max)) && nan {
        (lo, hi)
    } else {
        (out_lo, out_hi)
    }
}

/// Stores the value `(lo, hi)` at node entry `entry` of `partials`.
#[cube]
fn store_entry(partials: &mut [u32], entry: usize, lo: u32, hi: u32, #[comptime] bits: u32) {
    if comptime!(bits == 64) {
        partials[2 * entry] = lo;
        partials[2 * entry + 1] = hi;
    } else {
        partials[entry] = lo;
    }
}

/// `scatter_nd_sorted_nodes` for data held in words of `bits`-bit elements.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_nodes_words(
    partials: &mut [u32],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    rows: usize,
    level: u32,
    #[comptime] bits: u32,
    #[comptime] op: ReduceOp,
    #[comptime] kind: WordKind,
) {
    let (col, node, first, whole) =
        node_task(order, targets, ABSOLUTE_POS, slice, units, rows, level);
    if !whole {
        terminate!();
    }
    let entry = node_index(rows, level, node) * slice + col;
    if level == 0u32 {
        let (first_lo, first_hi) = load_value(updates, order[first] as usize * slice + col, bits);
        let mut lo = first_lo;
        let mut hi = first_hi;
        let mut i = 1usize;
        while i < CHUNK_ROWS {
            let index = order[first + i] as usize * slice + col;
            let (value_lo, value_hi) = load_value(updates, index, bits);
            let (new_lo, new_hi) = fold_value(lo, hi, value_lo, value_hi, op, kind, bits);
            lo = new_lo;
            hi = new_hi;
            i += 1usize;
        }
        store_entry(partials, entry, lo, hi, bits);
    } else {
        let child = node_index(rows, level - 1u32, node * NODE_FAN) * slice + col;
        let (first_lo, first_hi) = load_entry(&*partials, child, bits);
        let mut lo = first_lo;
        let mut hi = first_hi;
        let mut j = 1usize;
        while j < NODE_FAN {
            let (value_lo, value_hi) = load_entry(&*partials, child + j * slice, bits);
            let (new_lo, new_hi) = fold_value(lo, hi, value_lo, value_hi, op, kind, bits);
            lo = new_lo;
            hi = new_hi;
            j += 1usize;
        }
        store_entry(partials, entry, lo, hi, bits);
    }
}

/// An output element's value: a pair's two words, or a packed element's field (with its word
/// and shift).
#[cube]
fn read_output(
    output: &[Atomic<u32>],
    element: usize,
    #[comptime] bits: u32,
) -> (u32, u32, usize, u32) {
    if comptime!(bits == 64) {
        let (lo, hi) = (output[2 * element].load(), output[2 * element + 1].load());
        (lo, hi, 0usize, 0u32)
    } else {
        let per_word = comptime!((32 / bits) as usize);
        let mask = comptime!(((1u64 << bits) - 1) as u32);
        let shift = ((element % per_word) as u32) * bits;
        let word = element / per_word;
        ((output[word].load() >> shift) & mask, 0u32, word, shift)
    }
}

/// `scatter_nd_sorted_join` for data held in words of `bits`-bit elements. A packed element's
/// unit XORs the change of its bits into its field of the word, atomically, which leaves the
/// word's other fields as their own units set them; a pair's unit stores both words.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_join_words(
    output: &mut [Atomic<u32>],
    partials: &[u32],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    #[comptime] bits: u32,
    #[comptime] op: Option<ReduceOp>,
    #[comptime] kind: WordKind,
) {
    let (position, col, key, rows, writes) = join_task(
        order,
        targets,
        ABSOLUTE_POS,
        slice,
        units,
        comptime!(op.is_none()),
    );
    if !writes {
        terminate!();
    }
    let element = key as usize * slice + col;
    // Only this unit writes this element, so the loads see its input bits.
    let (old_lo, old_hi, word, shift) = read_output(&*output, element, bits);
    let mut lo = old_lo;
    let mut hi = old_hi;
    if comptime!(op.is_none()) {
        let (value_lo, value_hi) =
            load_value(updates, order[position] as usize * slice + col, bits);
        lo = value_lo;
        hi = value_hi;
    } else {
        let reduce = comptime!(op.unwrap_or(ReduceOp::Add));
        let mut at = position;
        while key_at(order, targets, at, rows) == key {
            let (node, index, width) = join_step(order, targets, at, key, rows, slice, col);
            let (value_lo, value_hi) = if node {
                load_entry(partials, index, bits)
            } else {
                load_value(updates, index, bits)
            };
            let (new_lo, new_hi) = combine_value(lo, hi, value_lo, value_hi, reduce, kind, bits);
            lo = new_lo;
            hi = new_hi;
            at += width;
        }
    }
    if comptime!(bits == 64) {
        output[2 * element].store(lo);
        output[2 * element + 1].store(hi);
    } else if lo != old_lo {
        output[word].fetch_xor((lo ^ old_lo) << shift);
    }
}
