//! Deterministic `Assign` ([`ScatterStrategy::Deterministic`](super::ScatterStrategy), typed
//! data): each target keeps the update latest in index order, the row its head names
//! (`scatter_nd_link_rows`). One unit per update row and group of [`GROUP_COLUMNS`] columns
//! tests its row once and moves the group in vectors: on GPUs, coalesced loads of whole
//! vectors.

use cubecl::prelude::*;

use super::indices::SKIPPED;

/// Columns one unit of deterministic `Assign` moves.
pub const GROUP_COLUMNS: usize = 8;

/// `Assign` of the latest rows: the unit of row `row` and group `g` (`units = rows * groups`)
/// copies the group's columns of its update row onto its target's slice when `heads` names
/// the row (`row + 1`) for that target. Vectors of `N` lanes: the caller keeps the slice a
/// multiple of `N`. Only bits move: `T` may be any type of the data's width.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_assign_latest<T: Numeric, N: Size>(
    output: &mut [Vector<T, N>],
    updates: &[Vector<T, N>],
    heads: &[u32],
    targets: &[u32],
    slice: usize,
    groups: usize,
    units: usize,
    #[define(T)] _data: ElemType,
) {
    let unit = ABSOLUTE_POS;
    if unit >= units {
        terminate!();
    }
    let row = unit / groups;
    let first = (unit - row * groups) * GROUP_COLUMNS;
    let target = targets[row];
    let mut latest = target != SKIPPED;
    if latest {
        latest = heads[target as usize] == row as u32 + 1;
    }
    if !latest {
        terminate!();
    }
    let lanes = output.vector_size();
    let left = slice - first;
    let (to, from) = (
        (target as usize * slice + first) / lanes,
        (row * slice + first) / lanes,
    );
    #[unroll]
    for v in 0..comptime!(GROUP_COLUMNS.div_ceil(lanes)) {
        if comptime!(v * lanes) < left {
            output[to + v] = updates[from + v];
        }
    }
}
