//! Reductions along the update rows sorted by target (stably, so each target's rows form a run
//! in index order): the general design, for every reduction and dtype without a native atomic.
//!
//! Over the sorted positions lies a fixed tree of aligned nodes: level 0 holds chunks of
//! [`CHUNK_ROWS`] positions, each level above nodes of [`NODE_FAN`] nodes below. A node whose
//! positions all share one target (its first and last do) is reduced once into `partials`,
//! level by level ([`scatter_nd_sorted_nodes()`], one launch a level, each unit reading at most
//! `max(CHUNK_ROWS, NODE_FAN)` values). Then the join ([`scatter_nd_sorted_join()`]): the unit
//! of each run's first position folds its target's value with the run, in order, taking at each
//! position the largest node that starts there and lies inside the run, else the update: at
//! most about `2 * CHUNK_ROWS + 2 * NODE_FAN` steps a level, however long the run. The cut
//! depends on the number of rows alone, never on the launch geometry. `Assign` stores each run's
//! last row: the latest in index order. Two kernels, not one with a pass argument: WebGPU
//! refuses an atomic output a kernel never writes, and the nodes never write the output.
//!
//! One pair of kernels per way the data is held: typed here, in 32-bit words in `words.rs`,
//! deterministic float `Add`'s exact sums in `sorted_sum.rs` and `Mul`'s products in
//! `sorted_product.rs`; the helpers here place the nodes.

use cubecl::prelude::*;

use super::indices::SKIPPED;
use super::kernel::{ReduceOp, combine, fold_node};

/// Sorted positions a node of level 0 (a chunk) reduces.
pub const CHUNK_ROWS: usize = 32;

/// Nodes of one level that a node of the next one reduces.
pub const NODE_FAN: usize = 8;

/// The target of sorted position `position`, or [`SKIPPED`] past the rows.
#[cube]
pub(super) fn key_at(order: &[u32], targets: &[u32], position: usize, rows: usize) -> u32 {
    let mut key = u32::new(SKIPPED as i64);
    if position < rows {
        key = targets[order[position] as usize];
    }
    key
}

/// The positions a node of `level` spans: `CHUNK_ROWS * NODE_FAN^level`.
#[cube]
fn node_width(level: u32) -> usize {
    let mut width = usize::new(CHUNK_ROWS as i64);
    let mut step = 0u32;
    while step < level {
        width *= NODE_FAN;
        step += 1u32;
    }
    width
}

/// The index of node `node` of `level` among every level's nodes for `rows` sorted positions:
/// each level holds the nodes that fit whole, `rows / node_width(level)`.
#[cube]
pub(super) fn node_index(rows: usize, level: u32, node: usize) -> usize {
    let mut at = node;
    let mut width = usize::new(CHUNK_ROWS as i64);
    let mut step = 0u32;
    while step < level {
        at += rows / width;
        width *= NODE_FAN;
        step += 1u32;
    }
    at
}

/// The nodes of every level for `rows` sorted positions (the length of a buffer of partial
/// results, per column), and the levels that have any.
pub fn node_count(rows: usize) -> (usize, u32) {
    let (mut nodes, mut levels, mut width) = (0, 0, CHUNK_ROWS);
    while width <= rows {
        nodes += rows / width;
        levels += 1;
        width = width.saturating_mul(NODE_FAN);
    }
    (nodes, levels)
}

/// The first position of node `node` of `level`, and whether every position of it holds one
/// target's rows (its first and last hold the same key, not skipped): only such a node is
/// reduced, and it lies inside its target's run.
#[cube]
fn whole_node(
    order: &[u32],
    targets: &[u32],
    node: usize,
    level: u32,
    rows: usize,
) -> (usize, bool) {
    let width = node_width(level);
    let first = node * width;
    let key = key_at(order, targets, first, rows);
    let whole = key != u32::new(SKIPPED as i64)
        && key_at(order, targets, first + width - 1usize, rows) == key;
    (first, whole)
}

/// How many levels have a node that starts at sorted position `position` and lies inside the
/// run of `key`: the largest such node is of the level below that count (none where it is 0,
/// the position's own update then). A node's width divides the next level's, so the search
/// stops at the first level that does not fit; past the rows every key is the skip marker, so
/// it ends.
#[cube]
fn fitting_levels(order: &[u32], targets: &[u32], position: usize, key: u32, rows: usize) -> u32 {
    let mut levels = 0u32;
    let mut width = usize::new(CHUNK_ROWS as i64);
    // Widths are powers of two: a node of `width` starts where the low bits are zero. The keys
    // are read only there, so a step over a single update costs no load.
    loop {
        if (position & (width - 1usize)) != 0usize {
            break;
        }
        if key_at(order, targets, position + width - 1usize, rows) != key {
            break;
        }
        levels += 1u32;
        width *= NODE_FAN;
    }
    levels
}

/// The next step of a join at sorted position `at` of the run of `key`: the largest node that
/// starts there and lies inside the run (see [`fitting_levels`]), else the position's own
/// update. Returns whether it is a node, the index of its value (a node's entry among every
/// level's, `node_index(..) * slice + col`, or the update element `order[at] * slice + col`)
/// and how many positions it covers.
#[cube]
pub(super) fn join_step(
    order: &[u32],
    targets: &[u32],
    at: usize,
    key: u32,
    rows: usize,
    slice: usize,
    col: usize,
) -> (bool, usize, usize) {
    let levels = fitting_levels(order, targets, at, key, rows);
    let node = levels > 0u32;
    let (index, width) = if node {
        let width = node_width(levels - 1u32);
        (
            node_index(rows, levels - 1u32, at / width) * slice + col,
            width,
        )
    } else {
        (order[at] as usize * slice + col, 1usize)
    };
    (node, index, width)
}

/// The column and node of unit `unit` of a launch over the nodes of `level` (`units` of them,
/// a node and column each), the node's first sorted position, and whether the unit reduces it:
/// it lies in the launch and its node holds one target's rows (see [`whole_node`]).
#[cube]
pub(super) fn node_task(
    order: &[u32],
    targets: &[u32],
    unit: usize,
    slice: usize,
    units: usize,
    rows: usize,
    level: u32,
) -> (usize, usize, usize, bool) {
    let col = unit % slice;
    let node = unit / slice;
    let (first, whole) = whole_node(order, targets, node, level, rows);
    (col, node, first, unit < units && whole)
}

/// The sorted position, column and target of unit `unit` of a join (`units = rows * slice`,
/// a sorted position and column each), the rows, and whether the unit writes its target (see
/// [`joins`]; past the units, never).
#[cube]
pub(super) fn join_task(
    order: &[u32],
    targets: &[u32],
    unit: usize,
    slice: usize,
    units: usize,
    #[comptime] assign: bool,
) -> (usize, usize, u32, usize, bool) {
    let rows = units / slice;
    let col = unit % slice;
    let position = unit / slice;
    let key = key_at(order, targets, position, rows);
    let writes = joins(order, targets, position, key, rows, assign);
    (position, col, key, rows, unit < units && writes)
}

/// Whether the unit at sorted position `position` (target `key`) writes its target in the
/// join: for a reduction, the unit at its run's first position; for `Assign`, at its last.
#[cube]
pub(super) fn joins(
    order: &[u32],
    targets: &[u32],
    position: usize,
    key: u32,
    rows: usize,
    #[comptime] assign: bool,
) -> bool {
    let mut joins = key != u32::new(SKIPPED as i64);
    if comptime!(assign) {
        joins = joins && key_at(order, targets, position + 1usize, rows) != key;
    } else if position > 0usize {
        joins = joins && key_at(order, targets, position - 1usize, rows) != key;
    }
    joins
}

/// The nodes of `level` of the reduction `op` along the rows sorted by target (`order`, the
/// rows' targets `targets`, `rows` of them), with `float` and `B` as `combine` takes them: one
/// unit per node and column (`units`). A node of one target reduces its updates (level 0) or
/// its nodes of the level below into `partials`, which holds a value per node of every level
/// and column, at `node_index(..) * slice + col`.
///
/// `order` and `targets` are final here: earlier launches on the stream wrote them.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_nodes<T: Numeric, B: Int>(
    partials: &mut [T],
    updates: &[T],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    rows: usize,
    level: u32,
    #[comptime] op: ReduceOp,
    #[comptime] float: bool,
    #[define(T, B)] _types: [ElemType; 2],
) {
    let (col, node, first, whole) =
        node_task(order, targets, ABSOLUTE_POS, slice, units, rows, level);
    if !whole {
        terminate!();
    }
    let at = node_index(rows, level, node) * slice + col;
    if level == 0u32 {
        let mut acc = updates[order[first] as usize * slice + col];
        let mut i = 1usize;
        while i < CHUNK_ROWS {
            let value = updates[order[first + i] as usize * slice + col];
            acc = fold_node::<T, B>(acc, value, op, float);
            i += 1usize;
        }
        partials[at] = acc;
    } else {
        let child = node_index(rows, level - 1u32, node * NODE_FAN) * slice + col;
        let mut acc = partials[child];
        let mut j = 1usize;
        while j < NODE_FAN {
            acc = fold_node::<T, B>(acc, partials[child + j * slice], op, float);
            j += 1usize;
        }
        partials[at] = acc;
    }
}

/// The join of the reduction `op` (`None`: `Assign`) along the rows sorted by target, one unit
/// per sorted position and column (`units = rows * slice`): the unit of each run's first
/// position folds its target's value with the run's nodes (in `partials`, see
/// [`scatter_nd_sorted_nodes()`]) and updates, in order, and writes it; for `Assign`, the unit
/// of each run's last position stores its update.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_sorted_join<T: Numeric, B: Int>(
    output: &mut [T],
    partials: &[T],
    updates: &[T],
    order: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    #[comptime] op: Option<ReduceOp>,
    #[comptime] float: bool,
    #[define(T, B)] _types: [ElemType; 2],
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
    if comptime!(op.is_none()) {
        output[element] = updates[order[position] as usize * slice + col];
    } else {
        let reduce = comptime!(op.unwrap_or(ReduceOp::Add));
        let mut acc = output[element];
        let mut at = position;
        while key_at(order, targets, at, rows) == key {
            let (node, index, width) = join_step(order, targets, at, key, rows, slice, col);
            let value = if node {
                partials[index]
            } else {
                updates[index]
            };
            acc = combine::<T, B>(acc, value, reduce, float);
            at += width;
        }
        output[element] = acc;
    }
}
