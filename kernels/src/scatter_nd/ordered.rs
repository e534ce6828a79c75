//! Deterministic `f64` `Add`/`Mul`, and float `Mul` where its tree cannot round (see
//! `product.rs`) ([`ScatterStrategy::Deterministic`](super::ScatterStrategy)): duplicates
//! combine in index order, as the host loop applies them.
//!
//! The rows are sorted by target, stably, so that each target's rows stay in index order (the
//! crate's radix sort, `crate::sort`). Then one unit per
//! sorted position and group of columns (`columns.rs`), the one at each target's first sorted
//! row, walks the target's rows in order ([`scatter_nd_ordered_product()`], for the columns the
//! tree left, or [`scatter_nd_ordered_f64()`]), at most `span` rows per launch, since CPU drivers (llvmpipe) end
//! a shader's loops after 65,535 iterations in all. In the first launch a walk that goes on past
//! its span lists its unit in `pending`; the launcher's further launches (`resume`) run only the
//! listed units, each taking the next `span` rows. Every other loop is bounded by a constant.
//!
//! 16- and 32-bit floats multiply with integer arithmetic (`round_product`), rounding each
//! step once to nearest even, so no runtime's flushing of subnormals changes the bits; `f64`
//! uses the runtime's own arithmetic, and any NaN result becomes the canonical quiet NaN.

use cubecl::prelude::*;

use super::columns::{Columns, GROUP_COLUMNS, columns, load_columns, load_fields, store_fields};
use super::exact::{SumFormat, round_product, widen};
use super::indices::SKIPPED;
use super::kernel::{ReduceOp, list_pending};

/// Units per cube of the walks' launches: few, so that the walks of a few hot targets spread
/// over the cores of a CPU driver, which runs each cube on one thread.
pub const WALK_CUBE: u32 = 8;

/// One unit: a launch over the `work_count` listed units of a counted list (the tree's chunks,
/// nodes and uncertain units, sized on the device), as `[x, y, 1]` cubes of [`WALK_CUBE`] units
/// in `args` (at most 65,535 cubes a dimension).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_listed_dispatch(work_count: &[u32], args: &mut [u32]) {
    if ABSOLUTE_POS > 0usize {
        terminate!();
    }
    let count = work_count[0usize];
    let whole = count / WALK_CUBE;
    let cubes = whole + select(count - whole * WALK_CUBE != 0u32, 1u32, 0u32);
    let x = select(cubes < 65_535u32, cubes, 65_535u32);
    let divisor = select(x > 0u32, x, 1u32);
    let rows = cubes / divisor;
    let y = rows + select(cubes - rows * divisor != 0u32, 1u32, 0u32);
    args[0usize] = x;
    args[1usize] = y;
    args[2usize] = 1u32;
}

/// Where the walk of a unit at sorted position `sorted` runs in this launch: its target, the
/// first and one past the last sorted position to take, whether it walks at all (only a unit
/// at its target's first sorted row does, and only while the target has rows from `first`,
/// past those earlier launches took) and whether rows remain past this launch's `span`.
#[cube]
fn walk_range(
    order: &[u32],
    targets: &[u32],
    sorted: usize,
    rows: usize,
    first: usize,
    span: usize,
) -> (u32, usize, usize, bool, bool) {
    let key = targets[order[sorted] as usize];
    let mut active = key != SKIPPED;
    if sorted > 0usize {
        active = active && targets[order[sorted - 1usize] as usize] != key;
    }
    let start = sorted + first;
    active = active && start < rows;
    let mut end = start;
    let mut more = false;
    if active {
        active = targets[order[start] as usize] == key;
    }
    if active {
        // The target's rows end where a larger key starts: at once for a row that is not
        // followed by its target (no duplicates left), else by binary search over the keys.
        let mut low = start + 1usize;
        let mut high = rows;
        if low < rows && targets[order[low] as usize] != key {
            high = low;
        }
        while low < high {
            let middle = low + (high - low) / 2usize;
            if targets[order[middle] as usize] == key {
                low = middle + 1usize;
            } else {
                high = middle;
            }
        }
        end = select(low - start < span, low, start + span);
        more = low > end;
    }
    (key, start, end, active, more)
}

/// How many positions a launch takes: one per unit below `units` or, with `listed`, one per
/// unit listed in the counted `list` (see `list_pending`; at most its room).
#[cube]
pub(super) fn positions(list: &[Atomic<u32>], units: usize, #[comptime] listed: bool) -> usize {
    let mut end = units;
    if comptime!(listed) {
        end = listed_count(list, 0usize, list.len() - 1usize);
    }
    end
}

/// The unit at a launch's `position`: the position itself or, with `listed`, the unit listed
/// there in the counted `list`.
#[cube]
pub(super) fn unit_at(list: &[Atomic<u32>], position: usize, #[comptime] listed: bool) -> usize {
    let mut unit = position;
    if comptime!(listed) {
        unit = listed_unit(list, 0usize, position);
    }
    unit
}

/// How many units the counted list at word `at` of `lists` holds (see `list_at`), at most its
/// `room`.
#[cube]
pub(super) fn listed_count(lists: &[Atomic<u32>], at: usize, room: usize) -> usize {
    let listed = lists[at].load() as usize;
    select(listed < room, listed, room)
}

/// The unit at `position` of the counted list at word `at` of `lists`.
#[cube]
pub(super) fn listed_unit(lists: &[Atomic<u32>], at: usize, position: usize) -> usize {
    lists[at + 1usize + position].load() as usize
}

/// How many units the counted `list` holds (at most its room), read with plain loads: for a
/// list that an earlier launch wrote and this one only reads, since WebGPU forbids an atomic
/// buffer that a kernel never writes.
#[cube]
pub(super) fn read_listed_count(list: &[u32]) -> usize {
    let listed = list[0] as usize;
    let room = list.len() - 1usize;
    select(listed < room, listed, room)
}

/// The unit at `position` of the counted `list`, read as [`read_listed_count`] reads it.
#[cube]
pub(super) fn read_listed_unit(list: &[u32], position: usize) -> usize {
    list[1usize + position] as usize
}

/// How far apart the positions one unit takes lie: the launch's units. A launch with a unit
/// per position takes one each; a fixed grid over listed units (GPUs, see the launchers'
/// `Listed`) takes every position a grid apart, so that no launch waits for the count.
#[cube]
pub(super) fn position_stride() -> usize {
    CUBE_COUNT * CUBE_DIM as usize
}

/// This launch's walk for `unit` (none where not `listed`), by [`walk_range`]: its group of columns
/// (`Columns::row` its sorted position), the first target element they address, the sorted rows to
/// take and whether it walks. Launch 0 lists every walk that goes on past its span; that list
/// serves every later launch (`resume`), whose walks end (inactive) once their target has no rows
/// left.
#[cube]
fn ordered_walk(
    order: &[u32],
    targets: &[u32],
    pending: &mut [Atomic<u32>],
    at: (usize, bool),
    sizes: (usize, usize, usize),
    window: (usize, usize),
    #[comptime] resume: bool,
) -> (Columns, usize, usize, usize, bool) {
    let (unit, listed) = at;
    let (slice, groups, rows) = sizes;
    let (first, span) = window;
    // Arithmetic only: any unit's columns lie in the slice.
    let cols = columns(unit, slice, groups);
    let mut base = 0usize;
    let mut start = 0usize;
    let mut end = 0usize;
    let mut active = false;
    if listed {
        let (key, walk_start, walk_end, walks, more) =
            walk_range(order, targets, cols.row, rows, first, span);
        if more && comptime!(!resume) {
            list_pending(pending, unit);
        }
        if walks {
            base = key as usize * slice + cols.first;
        }
        start = walk_start;
        end = walk_end;
        active = walks;
    }
    (cols, base, start, end, active)
}

/// Multiplies each column's `acc` (`f32` bits) by the updates of sorted rows `start..end`, in
/// order, each step rounded to `format` (`round_product`); `bits` holds each column's last
/// product in `format`'s bits (unchanged where no row was walked).
#[cube]
pub(super) fn multiply_rows<N: Size>(
    acc: &mut Array<u32>,
    bits: &mut Array<u32>,
    updates: &[Vector<u32, N>],
    order: &[u32],
    range: (usize, usize),
    slice: usize,
    cols: &Columns,
    #[comptime] format: SumFormat,
) {
    let (start, end) = range;
    let packed = comptime!(Some(format));
    let mut sorted = start;
    while sorted < end {
        let row = order[sorted] as usize;
        let terms = load_columns::<u32, N>(updates, row * slice + cols.first, cols.count, packed);
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            bits[j] = round_product(acc[j], terms[j], format);
            acc[j] = u32::reinterpret(widen(bits[j], format));
        }
        sorted += 1usize;
    }
}

/// Walks, `f64` (`Add` or `Mul`): as [`scatter_nd_ordered_product()`], element by element in
/// the runtime's `f64` arithmetic; a NaN result is written as the canonical quiet NaN.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_ordered_f64(
    output: &mut [f64],
    updates: &[f64],
    order: &[u32],
    targets: &[u32],
    pending: &mut [Atomic<u32>],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    first: usize,
    span: usize,
    #[comptime] resume: bool,
    #[comptime] op: ReduceOp,
) {
    // Its launches have a unit per position (over every unit, or over the walks' capacity).
    let at = ABSOLUTE_POS;
    if at >= positions(&*pending, units, resume) {
        terminate!();
    }
    let unit = unit_at(&*pending, at, resume);
    let (cols, base, start, end, active) = ordered_walk(
        order,
        targets,
        pending,
        (unit, true),
        (slice, groups, rows),
        (first, span),
        resume,
    );
    if active {
        walk_f64(output, updates, order, &cols, base, (start, end), slice, op);
    }
}

/// Combines the target elements of `cols` from `base` on with the updates of sorted rows
/// `start..end`, in order, in the runtime's `f64` arithmetic; a NaN result is written as the
/// canonical quiet NaN.
#[cube]
fn walk_f64(
    output: &mut [f64],
    updates: &[f64],
    order: &[u32],
    cols: &Columns,
    base: usize,
    range: (usize, usize),
    slice: usize,
    #[comptime] op: ReduceOp,
) {
    let (start, end) = range;
    let mut acc = Array::<f64>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        acc[j] = 0.0f64;
        if j < cols.count {
            acc[j] = output[base + j];
        }
    }
    let mut sorted = start;
    while sorted < end {
        let update_base = order[sorted] as usize * slice + cols.first;
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            if j < cols.count {
                let value = updates[update_base + j];
                if comptime!(op == ReduceOp::Mul) {
                    acc[j] *= value;
                } else {
                    acc[j] += value;
                }
            }
        }
        sorted += 1usize;
    }
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        if j < cols.count {
            let mut value = acc[j];
            if value.is_nan() {
                value = f64::reinterpret(0x7FF8_0000_0000_0000u64);
            }
            output[base + j] = value;
        }
    }
}

/// Walks, 16- and 32-bit floats held in 32-bit words (`Mul`, where the tree's rounding is
/// uncertain, see `product.rs`): for each target's first sorted row and group of columns that the
/// tree left (listed in `uncertain`, its columns in `masks`), a unit multiplies those columns by
/// the updates of rows `start..end` of the target's sorted rows, in order, as `f32` bits rounded to
/// `format` each step (`round_product`); `groups` groups per row, `units = rows * groups`, updates
/// read in vectors of `N` lanes (see `columns.rs`). The unit XORs the change of each of its fields
/// into its word, which leaves another field of the word as its own unit sets it.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_ordered_product<N: Size>(
    output: &mut [Atomic<u32>],
    updates: &[Vector<u32, N>],
    order: &[u32],
    targets: &[u32],
    masks: &[u32],
    uncertain: &[u32],
    pending: &mut [Atomic<u32>],
    slice: usize,
    groups: usize,
    units: usize,
    rows: usize,
    first: usize,
    span: usize,
    #[comptime] resume: bool,
    #[comptime] format: SumFormat,
) {
    // Launch 0 runs the units the tree listed; the later ones those whose walks go on.
    let stop = if comptime!(resume) {
        positions(&*pending, units, true)
    } else {
        read_listed_count(uncertain)
    };
    let mut at = ABSOLUTE_POS;
    while at < stop {
        let unit = if comptime!(resume) {
            unit_at(&*pending, at, true)
        } else {
            read_listed_unit(uncertain, at)
        };
        let mask = masks[unit];
        let (cols, base, start, end, active) = ordered_walk(
            order,
            targets,
            pending,
            (unit, mask != 0u32),
            (slice, groups, rows),
            (first, span),
            resume,
        );
        if active {
            walk_product::<N>(
                output,
                updates,
                order,
                &cols,
                base,
                (start, end),
                mask,
                slice,
                format,
            );
        }
        at += position_stride();
    }
}

/// Multiplies the columns of `mask` among the target elements of `cols` from `base` on (words
/// of `format`) by the updates of sorted rows `start..end`, in order (`multiply_rows`).
#[cube]
fn walk_product<N: Size>(
    output: &mut [Atomic<u32>],
    updates: &[Vector<u32, N>],
    order: &[u32],
    cols: &Columns,
    base: usize,
    range: (usize, usize),
    mask: u32,
    slice: usize,
    #[comptime] format: SumFormat,
) {
    let old = load_fields(&*output, base, cols.count, format);
    let mut acc = Array::<u32>::new(GROUP_COLUMNS);
    let mut bits = Array::<u32>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        acc[j] = u32::reinterpret(widen(old[j], format));
        bits[j] = old[j];
    }
    multiply_rows::<N>(
        &mut acc, &mut bits, updates, order, range, slice, cols, format,
    );
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        bits[j] = select((mask & comptime!(1u32 << j)) != 0u32, bits[j], old[j]);
    }
    store_fields(output, base, cols.count, &old, &bits, format);
}
