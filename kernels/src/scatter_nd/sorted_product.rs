//! Deterministic float `Mul` along the rows sorted by target: the passes of `sorted.rs` with
//! products carried as nodes of `product_node.rs` (a 64-bit significand, truncated at each
//! product, and an exponent of its own). A node of one target multiplies its updates (level 0)
//! or its nodes, left to right; the join multiplies the target's value by the run's nodes and
//! updates in order and rounds once. The truncations leave the computed product below the
//! exact one by less than two of its last units per multiplication; where a midpoint of the
//! result's format lies within [`product_bound`] of them the rounding is uncertain, and the
//! element is listed for the index-order walk (`ordered.rs`) instead, so the result is never
//! less accurate than index order. Either way the bits depend on the operands alone: the cut is
//! fixed by the sorted positions. The host reference (`exact_product` in the main crate)
//! computes the same.

use cubecl::prelude::*;

use super::exact::{SumFormat, widen};
use super::fields::{read_field, term_at, write_field};
use super::kernel::list_unit;
use super::product_node::{
    leaf, load_node, multiply_into, node_in, product_of, round_node, set_product, store_node,
};
use super::sorted::{CHUNK_ROWS, NODE_FAN, join_step, join_task, key_at, node_index, node_task};

/// The error bound [`round_node`] takes for a product of `terms` terms: their count rounded up
/// to a multiple of [`CHUNK_ROWS`] (at least the multiplications, which each truncate once).
#[cube]
fn product_bound(terms: usize) -> u32 {
    let limit = usize::new(1i64 << 31);
    let rounded = terms.div_ceil(CHUNK_ROWS) * CHUNK_ROWS;
    select(terms < limit, u32::cast_from(rounded), u32::MAX)
}

/// The products of the nodes of `level`, one unit per node and column (`units`): a node of one
/// target multiplies its updates' leaves (level 0) or its nodes, left to right, and stores the
/// product at its entry of `partials` (`node_index(..) * slice + col`, four words each). Data
/// in words of `format`.
///
/// `order` and `targets` are final here: earlier launches on the stream wrote them.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_product_nodes(
    partials: &mut [u32],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    rows: usize,
    level: u32,
    #[comptime] format: SumFormat,
) {
    let (col, node, first, whole) =
        node_task(order, targets, ABSOLUTE_POS, slice, units, rows, level);
    if !whole {
        terminate!();
    }
    let mut acc = product_of(leaf(0u32));
    if level == 0u32 {
        let term = term_at(updates, order[first] as usize * slice + col, format);
        set_product(&mut acc, leaf(term));
        let mut i = 1usize;
        while i < CHUNK_ROWS {
            let index = order[first + i] as usize * slice + col;
            multiply_into(&mut acc, leaf(term_at(updates, index, format)));
            i += 1usize;
        }
    } else {
        let child = node_index(rows, level - 1u32, node * NODE_FAN) * slice + col;
        set_product(&mut acc, load_node(&*partials, child));
        let mut j = 1usize;
        while j < NODE_FAN {
            multiply_into(&mut acc, load_node(&*partials, child + j * slice));
            j += 1usize;
        }
    }
    let entry = node_index(rows, level, node) * slice + col;
    store_node(partials, entry, node_in(&acc));
}

/// The join of the products, one unit per sorted position and column (`units = rows *
/// slice`): the unit of each run's first position multiplies its target's value by the run's
/// nodes (see [`scatter_nd_sorted_product_nodes()`]) and updates, in order, and rounds once;
/// where that rounding is uncertain it leaves the element as it was and lists itself in the
/// counted list `uncertain` for the index-order walk.
///
/// `order` and `targets` are final here: earlier launches on the stream wrote them.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_product_join(
    output: &mut [Atomic<u32>],
    uncertain: &mut [Atomic<u32>],
    partials: &[u32],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    #[comptime] format: SumFormat,
) {
    let (position, col, key, rows, writes) =
        join_task(order, targets, ABSOLUTE_POS, slice, units, false);
    if !writes {
        terminate!();
    }
    let (word, shift, old) = read_field(&*output, key as usize * slice + col, format);
    let mut acc = product_of(leaf(u32::reinterpret(widen(old, format))));
    let mut at = position;
    while key_at(order, targets, at, rows) == key {
        let (node, index, width) = join_step(order, targets, at, key, rows, slice, col);
        if node {
            multiply_into(&mut acc, load_node(partials, index));
        } else {
            multiply_into(&mut acc, leaf(term_at(updates, index, format)));
        }
        at += width;
    }
    let bound = product_bound(at - position + 1usize);
    let (bits, unsure) = round_node(node_in(&acc), bound, format);
    if unsure {
        list_unit(uncertain, ABSOLUTE_POS);
    } else {
        write_field(output, word, shift, old, bits);
    }
}
