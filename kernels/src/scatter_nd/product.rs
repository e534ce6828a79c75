//! Deterministic float `Mul` of 16- and 32-bit floats by a fixed tree
//! ([`ScatterStrategy::Deterministic`](super::ScatterStrategy)): each target element's terms,
//! its value then its updates in index order, multiply in a tree fixed by their count alone,
//! carried with a 64-bit significand and an exponent of their own, and the root is rounded once.
//! Where that rounding cannot be told from the tree's error bound (the exact product lies that
//! close to a midpoint), the element takes the index-order walk of `ordered.rs`, so the result
//! is never less accurate than index order, and the same on every runtime.
//!
//! The tree, on the rows sorted by target: chunks of [`PRODUCT_CHUNK`] rows, each folded left
//! to right by one unit (the first chunk after the target's value), then levels that fold
//! [`PRODUCT_FAN`] consecutive nodes left to right, until one node is left. Each product keeps
//! the top 64 bits of the exact one (truncated, flagged when bits fall off), so the computed
//! root is below the exact product by less than `2 * n` of its last units for `n`
//! multiplications; with the bound `4 * n` (`n` the tree's capacity) the rounding is certain
//! unless a midpoint lies in between (the nodes: `product_node.rs`). Integer arithmetic only, so
//! no runtime's flushing of subnormals changes a bit; the host reference (`exact_product` in the
//! main crate) computes the same.
//!
//! The launches: [`scatter_nd_segment_starts()`] finds each sorted row's target's first row;
//! [`scatter_nd_product_leaves()`], over every row and group of columns, multiplies sole
//! updates and lists the chunks; [`scatter_nd_product_chunks()`] and
//! [`scatter_nd_product_level()`] run over what the previous launch listed (a launch sized on
//! the device, or a fixed grid whose units take listed positions a grid apart), so that unique
//! rows cost one light pass and the tree's work scales with the chunks.

use cubecl::prelude::*;

use super::columns::{Columns, GROUP_COLUMNS, columns, load_columns, load_fields, store_fields};
use super::exact::{SumFormat, widen};
use super::indices::SKIPPED;
use super::kernel::{list_at, list_pending};
use super::ordered::{listed_count, listed_unit, multiply_rows, position_stride};
use super::product_node::{
    Nodes, leaf, load_node, multiply_into, node_of, ones, round_node, set_node, store_node,
};
use super::sorted::key_at;

/// Rows one unit folds into a leaf node of the tree.
pub const PRODUCT_CHUNK: usize = 32;

/// Nodes of one level that a node of the next one folds.
pub const PRODUCT_FAN: usize = 8;

/// The scratch slot of the chunk at sorted position `position` of the target whose rows start
/// at `start`: two per span of [`PRODUCT_CHUNK`] positions, since a chunk starts there for at
/// most two targets with more than one chunk (one that starts at or before the span, one that
/// starts inside it).
#[cube]
fn slot(position: usize, start: usize) -> usize {
    let offset = start % PRODUCT_CHUNK;
    let inside = position == start && offset != 0usize;
    2usize * (position / PRODUCT_CHUNK) + select(inside, 1usize, 0usize)
}

/// Rounds the group's root nodes `acc` (a tree of at most `bound` multiplications) into the
/// target elements from `base` on, except where the rounding is uncertain, whose columns the
/// returned mask lists and whose elements keep their value for the index-order walk.
#[cube]
fn finish(
    output: &mut [Atomic<u32>],
    acc: &Nodes,
    cols: &Columns,
    base: usize,
    bound: u32,
    #[comptime] format: SumFormat,
) -> u32 {
    let old = load_fields(&*output, base, cols.count, format);
    let mut bits = Array::<u32>::new(GROUP_COLUMNS);
    let mut mask = 0u32;
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        let (rounded, uncertain) = round_node(node_of(acc, j), bound, format);
        bits[j] = select(uncertain, old[j], rounded);
        mask |= select(uncertain && j < cols.count, comptime!(1u32 << j), 0u32);
    }
    store_fields(output, base, cols.count, &old, &bits, format);
    mask
}

/// Leaves the columns of `mask` to the index-order walk: their mask at `unit` (the unit of the
/// target's first sorted row and the group) and the unit in the list the walk's launch reads.
#[cube]
fn leave_uncertain(
    tree: &mut [u32],
    lists: &mut [Atomic<u32>],
    parts: (usize, usize, usize),
    unit: usize,
    mask: u32,
) {
    let (masks_at, uncertain_at, room) = parts;
    if mask != 0u32 {
        tree[masks_at + unit] = mask;
        list_at(lists, uncertain_at, room, unit);
    }
}

/// Where the listed `unit` works: its columns (`Columns::row` its sorted position), its target
/// and the target's first sorted position.
#[cube]
fn chunk_at(
    order: &[u32],
    targets: &[u32],
    starts: &[u32],
    unit: usize,
    slice: usize,
    groups: usize,
) -> (Columns, u32, usize) {
    let cols = columns(unit, slice, groups);
    let key = targets[order[cols.row] as usize];
    let start = starts[cols.row] as usize;
    (cols, key, start)
}

/// One unit per sorted position: the first sorted position of its target's rows (its target
/// by `targets[order[position]]`), by binary search over the sorted keys.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_segment_starts(starts: &mut [u32], order: &[u32], targets: &[u32], rows: usize) {
    let position = ABSOLUTE_POS;
    if position >= rows {
        terminate!();
    }
    let key = targets[order[position] as usize];
    let mut low = 0usize;
    let mut high = position;
    if position > 0usize && targets[order[position - 1usize] as usize] != key {
        low = position;
    }
    while low < high {
        let middle = low + (high - low) / 2usize;
        if targets[order[middle] as usize] < key {
            low = middle + 1usize;
        } else {
            high = middle;
        }
    }
    starts[position] = low as u32;
}

/// Leaves, one unit per sorted position and group of columns (`units = rows * groups`): a target's
/// sole update multiplies its value here (the index-order walk's `multiply_rows`: the exact product
/// of two values rounded once, as the tree gives it); the unit at the first row of each chunk of a
/// target with more rows is listed (`chunk_count`, `chunks`) for [`scatter_nd_product_chunks()`].
/// So on CPU drivers, which run every instruction of a kernel for each group of lanes whichever way
/// its branches go, the tree's kernels run only for the chunks. Data and updates are 32-bit words
/// of `format` (see `columns.rs`), updates read in vectors of `N` lanes.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_product_leaves<N: Size>(
    output: &mut [Atomic<u32>],
    updates: &[Vector<u32, N>],
    order: &[u32],
    targets: &[u32],
    starts: &[u32],
    chunks: &mut [Atomic<u32>],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    #[comptime] format: SumFormat,
) {
    let unit = ABSOLUTE_POS;
    if unit >= units {
        terminate!();
    }
    let cols = columns(unit, slice, groups);
    let position = cols.row;
    let key = targets[order[position] as usize];
    let start = starts[position] as usize;
    let offset = (position - start) % PRODUCT_CHUNK;
    if key == SKIPPED || offset != 0usize {
        terminate!();
    }
    if position != start || key_at(order, targets, position + 1usize, rows) == key {
        list_pending(chunks, unit);
        terminate!();
    }
    // The index-order walk over the one row: its product is the exact one rounded once.
    let base = key as usize * slice + cols.first;
    let data = load_fields(&*output, base, cols.count, format);
    let mut acc = Array::<u32>::new(GROUP_COLUMNS);
    let mut bits = Array::<u32>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        acc[j] = u32::reinterpret(widen(data[j], format));
        bits[j] = data[j];
    }
    let range = (position, position + 1usize);
    multiply_rows::<N>(
        &mut acc, &mut bits, updates, order, range, slice, &cols, format,
    );
    store_fields(output, base, cols.count, &data, &bits, format);
}

/// Chunks, for each chunk and group of columns listed by [`scatter_nd_product_leaves()`]: a unit
/// folds the chunk's updates (after the target's value, for the first chunk), in order. A target
/// with one chunk is rounded here (the uncertain columns go to the masks and the uncertain
/// list, see `leave_uncertain`); the other targets' chunks go to the nodes and are listed for
/// [`scatter_nd_product_level()`].
///
/// Two buffers hold the tree's scratch, so that each launch binds at most 8 storage buffers
/// with CubeCL's own (WebGPU's default limit): `tree` each row's target's first sorted position
/// (from 0), the uncertain columns' masks (a word per unit, from `masks_at`) and the nodes (from
/// `nodes_at`); `lists` the counted lists (see `list_at`) of the chunks (at 0), the nodes (at
/// `list_stride`) and the uncertain units (at `2 * list_stride`), each with room for `units`.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_product_chunks<N: Size>(
    output: &mut [Atomic<u32>],
    updates: &[Vector<u32, N>],
    order: &[u32],
    targets: &[u32],
    tree: &mut [u32],
    lists: &mut [Atomic<u32>],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    masks_at: usize,
    nodes_at: usize,
    list_stride: usize,
    #[comptime] format: SumFormat,
) {
    let (node_list_at, uncertain_at) = (list_stride, 2usize * list_stride);
    let stop = listed_count(&*lists, 0usize, units);
    let packed = comptime!(Some(format));
    let mut at = ABSOLUTE_POS;
    while at < stop {
        let unit = listed_unit(&*lists, 0usize, at);
        let (cols, key, start) = chunk_at(order, targets, &*tree, unit, slice, groups);
        let position = cols.row;
        let base = key as usize * slice + cols.first;
        let mut acc = ones();
        if position == start {
            let data = load_fields(&*output, base, cols.count, format);
            #[unroll]
            for j in 0..GROUP_COLUMNS {
                // One times the leaf is the leaf, bit for bit.
                set_node(&mut acc, j, leaf(u32::reinterpret(widen(data[j], format))));
            }
        }
        let end = position + PRODUCT_CHUNK;
        let mut sorted = position;
        let mut row = order[sorted] as usize;
        let mut key_here = key;
        while sorted < end && key_here == key {
            let terms =
                load_columns::<u32, N>(updates, row * slice + cols.first, cols.count, packed);
            #[unroll]
            for j in 0..GROUP_COLUMNS {
                multiply_into(&mut acc, j, leaf(terms[j]));
            }
            // The next row and its target, each sorted position's order read once.
            sorted += 1usize;
            key_here = u32::new(SKIPPED as i64);
            if sorted < rows {
                row = order[sorted] as usize;
                key_here = targets[row];
            }
        }
        if position == start && key_here != key {
            let mask = finish(output, &acc, &cols, base, PRODUCT_CHUNK as u32, format);
            leave_uncertain(tree, lists, (masks_at, uncertain_at, units), unit, mask);
        } else {
            let node = slot(position, start) * groups + unit % groups;
            #[unroll]
            for j in 0..GROUP_COLUMNS {
                store_node(tree, nodes_at, node, j, node_of(&acc, j));
            }
            list_at(lists, node_list_at, units, unit);
        }
        at += position_stride();
    }
}

/// One level of the tree, over the nodes listed by [`scatter_nd_product_chunks()`] (a chunk of a
/// target with several, and a group of columns): the node of each `width * PRODUCT_FAN` chunks
/// folds the next `PRODUCT_FAN - 1` nodes of `width` chunks, left to right. A target's root is
/// rounded at the level that makes it (a tree of at most `bound` multiplications), as
/// [`scatter_nd_product_chunks()`] rounds a single chunk; `tree` and `lists` as there.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_product_level(
    output: &mut [Atomic<u32>],
    order: &[u32],
    targets: &[u32],
    tree: &mut [u32],
    lists: &mut [Atomic<u32>],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    width: usize,
    bound: u32,
    masks_at: usize,
    nodes_at: usize,
    list_stride: usize,
    #[comptime] format: SumFormat,
) {
    let (node_list_at, uncertain_at) = (list_stride, 2usize * list_stride);
    let stop = listed_count(&*lists, node_list_at, units);
    let mut at = ABSOLUTE_POS;
    while at < stop {
        let unit = listed_unit(&*lists, node_list_at, at);
        let (cols, key, start) = chunk_at(order, targets, &*tree, unit, slice, groups);
        let position = cols.row;
        let chunk = (position - start) / PRODUCT_CHUNK;
        let reach = width * PRODUCT_FAN;
        let next = position + width * PRODUCT_CHUNK;
        let offset = chunk % reach;
        // This level's nodes: the first of each `reach` chunks, where a node follows.
        if offset == 0usize && key_at(order, targets, next, rows) == key {
            let group = unit % groups;
            let node = slot(position, start) * groups + group;
            let mut acc = ones();
            #[unroll]
            for j in 0..GROUP_COLUMNS {
                set_node(&mut acc, j, load_node(&*tree, nodes_at, node, j));
            }
            let mut child = next;
            let mut k = 1usize;
            while k < PRODUCT_FAN && key_at(order, targets, child, rows) == key {
                let other = slot(child, start) * groups + group;
                #[unroll]
                for j in 0..GROUP_COLUMNS {
                    multiply_into(&mut acc, j, load_node(&*tree, nodes_at, other, j));
                }
                child += width * PRODUCT_CHUNK;
                k += 1usize;
            }
            let end = position + reach * PRODUCT_CHUNK;
            if chunk == 0usize && key_at(order, targets, end, rows) != key {
                let base = key as usize * slice + cols.first;
                let mask = finish(output, &acc, &cols, base, bound, format);
                leave_uncertain(tree, lists, (masks_at, uncertain_at, units), unit, mask);
            } else {
                #[unroll]
                for j in 0..GROUP_COLUMNS {
                    store_node(tree, nodes_at, node, j, node_of(&acc, j));
                }
            }
        }
        at += position_stride();
    }
}
