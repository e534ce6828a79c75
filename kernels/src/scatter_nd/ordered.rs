//! Deterministic `f64` `Add`/`Mul`, and float `Mul` where its tree cannot round (see
//! `sorted_product.rs`) ([`ScatterStrategy::Deterministic`](super::ScatterStrategy)): duplicates
//! combine in index order, as the host loop applies them.
//!
//! Along the rows sorted by target (stably, so each target's rows stay in index order), one
//! unit per sorted position and column, the one at each target's first sorted row, walks the
//! target's rows in order ([`scatter_nd_ordered_product()`] for the elements the tree listed,
//! [`scatter_nd_ordered_f64()`]), at most `span` rows per launch, since CPU drivers (llvmpipe)
//! end a shader's loops after 65,535 iterations in all. In the first launch a walk that goes
//! on past its span lists its unit in `pending`; the launcher's further launches (`resume`)
//! run only the listed units, each taking the next `span` rows from the element's current
//! value.
//!
//! 16- and 32-bit floats multiply with integer arithmetic (`round_product`), rounding each
//! step once to nearest even, so no runtime's flushing of subnormals changes the bits; `f64`
//! uses the runtime's own arithmetic, and any NaN result becomes the canonical quiet NaN.

use cubecl::prelude::*;

use super::exact::{SumFormat, round_product, widen};
use super::fields::{read_field, term_at, write_field};
use super::kernel::{ReduceOp, list_unit};
use super::sorted::{joins, key_at};

/// Units per cube of the resumed walks' launches: few, so that the walks of a few hot targets
/// spread over the cores of a CPU driver, which runs each cube on one thread.
pub const WALK_CUBE: u32 = 8;

/// Whether a counted list (see `list_unit`) of `count` units, with room for `room`, lists a
/// unit at `at`.
#[cube]
fn listed(count: u32, room: usize, at: usize) -> bool {
    let count = count as usize;
    at < select(count < room, count, room)
}

/// Where the walk of the unit at sorted position `position` runs in this launch: its target,
/// the first and one past the last sorted position to take, whether it walks at all (only the
/// unit at its target's first sorted row does, and only while the target has rows from
/// `first` on, past those earlier launches took) and whether rows remain past this `span`.
#[cube]
fn walk_range(
    order: &[u32],
    targets: &[u32],
    position: usize,
    rows: usize,
    first: usize,
    span: usize,
) -> (u32, usize, usize, bool, bool) {
    let key = key_at(order, targets, position, rows);
    let start = position + first;
    let active = joins(order, targets, position, key, rows, false)
        && key_at(order, targets, start, rows) == key;
    let mut end = start;
    let mut more = false;
    if active {
        // The run ends where a larger key starts: at once for a row its target does not follow
        // (no duplicates left), else by binary search over the keys.
        let mut low = start + 1usize;
        let mut high = rows;
        if key_at(order, targets, low, rows) != key {
            high = low;
        }
        while low < high {
            let middle = low + (high - low) / 2usize;
            if key_at(order, targets, middle, rows) == key {
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

/// Walks, `f64` (`Add` or `Mul`), one unit per sorted position and column (`units = rows *
/// slice`; with `resume`, the units `pending` lists): the unit at each target's first row
/// combines the element with the updates of its sorted rows `first..first + span` in order, in
/// the runtime's `f64` arithmetic; a NaN result is written as the canonical quiet NaN.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_ordered_f64(
    output: &mut [f64],
    updates: &[f64],
    order: &[u32],
    targets: &[u32],
    pending: &mut [Atomic<u32>],
    slice: usize,
    units: usize,
    first: usize,
    span: usize,
    #[comptime] resume: bool,
    #[comptime] op: ReduceOp,
) {
    let at = ABSOLUTE_POS;
    let mut runs = at < units;
    if comptime!(resume) {
        runs = listed(pending[0usize].load(), pending.len() - 1usize, at);
    }
    if !runs {
        terminate!();
    }
    let mut unit = at;
    if comptime!(resume) {
        unit = pending[at + 1usize].load() as usize;
    }
    let rows = units / slice;
    let col = unit % slice;
    let (key, start, end, walks, more) =
        walk_range(order, targets, unit / slice, rows, first, span);
    if more && comptime!(!resume) {
        list_unit(pending, unit);
    }
    if walks {
        let element = key as usize * slice + col;
        let mut acc = output[element];
        let mut sorted = start;
        while sorted < end {
            let value = updates[order[sorted] as usize * slice + col];
            if comptime!(op == ReduceOp::Mul) {
                acc *= value;
            } else {
                acc += value;
            }
            sorted += 1usize;
        }
        if acc.is_nan() {
            acc = f64::reinterpret(0x7FF8_0000_0000_0000u64);
        }
        output[element] = acc;
    }
}

/// Walks, float `Mul` where the tree's rounding is uncertain, on data held in words of
/// `format`: as [`scatter_nd_ordered_f64()`], each step rounded once to `format`
/// (`round_product`), over the units the tree's join listed in the counted list `uncertain`
/// (each at its target's first sorted row) in the first launch.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_ordered_product(
    output: &mut [Atomic<u32>],
    updates: &[u32],
    order: &[u32],
    targets: &[u32],
    uncertain: &[u32],
    pending: &mut [Atomic<u32>],
    slice: usize,
    units: usize,
    first: usize,
    span: usize,
    #[comptime] resume: bool,
    #[comptime] format: SumFormat,
) {
    let at = ABSOLUTE_POS;
    // Plain reads of the join's list; in a resumed launch `at` is below the walks' room, which
    // is below the units, so its slot lies in the list too.
    let mut runs = listed(uncertain[0usize], uncertain.len() - 1usize, at);
    if comptime!(resume) {
        runs = listed(pending[0usize].load(), pending.len() - 1usize, at);
    }
    if !runs {
        terminate!();
    }
    let mut unit = uncertain[at + 1usize] as usize;
    if comptime!(resume) {
        unit = pending[at + 1usize].load() as usize;
    }
    let rows = units / slice;
    let col = unit % slice;
    let (key, start, end, walks, more) =
        walk_range(order, targets, unit / slice, rows, first, span);
    if walks && more && comptime!(!resume) {
        list_unit(pending, unit);
    }
    if walks {
        let (word, shift, old) = read_field(&*output, key as usize * slice + col, format);
        let mut bits = old;
        let mut sorted = start;
        while sorted < end {
            let term = term_at(updates, order[sorted] as usize * slice + col, format);
            bits = round_product(u32::reinterpret(widen(bits, format)), term, format);
            sorted += 1usize;
        }
        write_field(output, word, shift, old, bits);
    }
}
