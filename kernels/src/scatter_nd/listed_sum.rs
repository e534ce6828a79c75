//! Deterministic float `Add` along each target's list of rows
//! ([`ScatterStrategy::ListedDeterministic`](super::ScatterStrategy)): the same exact sum as
//! `exact_add.rs` ([`super::exact`]), which no order of the terms changes, so the rows need no
//! sort. Each update row pushes itself onto its target's list (`scatter_nd_link_rows`); the
//! unit of each list's head, per group of [`GROUP_COLUMNS`] columns, walks the list once,
//! adding the terms on their format's fixed grid, and rounds, with no scratch per update
//! element.
//!
//! Built for CPU drivers, which run every instruction of a kernel for every group of lanes
//! whichever way its branches go (llvmpipe masks both sides), so that each unit pays for the
//! kernel's longest path. [`scatter_nd_listed_sum_heads()`] therefore runs over every row with
//! short code: the head of a list of one row adds its `f32` update with the hardware, where
//! that is the exact sum rounded (no value subnormal, infinite or NaN), and every other head
//! unit is listed for [`scatter_nd_listed_sum()`], which runs over the listed units only (a
//! launch sized on the device by [`scatter_nd_listed_dispatch()`]) and reads and writes the
//! data as 32-bit words whatever the format.
//!
//! A walk takes at most `span` rows per launch (CPU drivers end a shader's loops after 65,535
//! iterations in all): a longer one lists its unit in the first launch, keeping its state (the
//! sums, the flags and where the walk stands) in the list's slot, and further launches
//! (`resume`) run only the listed units, each the next `span` rows; a walk that ends rounds and
//! writes.

use cubecl::prelude::*;

use super::columns::{
    Columns, GROUP_COLUMNS, columns, load_columns, load_fields, store_columns, store_fields,
};
use super::exact::{SumFormat, add_signed_term_at, hardware_sum, observe, round_signed_sum, widen};
use super::indices::SKIPPED;
use super::kernel::list_pending;
use super::ordered::{read_listed_count, read_listed_unit};

/// Units per cube of the walks' launches: few, so that the walks of a few hot targets spread
/// over the cores of a CPU driver, which runs each cube on one thread.
pub const WALK_CUBE: u32 = 8;

/// Listed sums, step 1, one unit per update row and group of columns: the unit of a list's head
/// adds a sole row's `f32` update with the hardware (`fast`, typed `f32` data) where its operands
/// are zero or normal and the sum normal: then the hardware's sum is the exact sum rounded to
/// nearest even. Every other head unit is listed in the counted list `work` (see
/// `list_pending`) for [`scatter_nd_listed_sum()`].
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_listed_sum_heads<T: Numeric, N: Size>(
    output: &mut [Vector<T, N>],
    updates: &[Vector<T, N>],
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    work: &mut [Atomic<u32>],
    slice: usize,
    groups: usize,
    units: usize,
    #[comptime] fast: bool,
    #[define(T)] _data: ElemType,
) {
    let unit = ABSOLUTE_POS;
    if unit >= units {
        terminate!();
    }
    let cols = columns(unit, slice, groups);
    let target = targets[cols.row];
    let mut heads_list = target != SKIPPED;
    if heads_list {
        heads_list = heads[target as usize] == cols.row as u32 + 1;
    }
    if !heads_list {
        terminate!();
    }
    let mut done = false;
    let mut sole = false;
    if comptime!(fast) {
        sole = next[cols.row] == 0u32;
    }
    if sole {
        let base = target as usize * slice + cols.first;
        let currents =
            load_columns::<T, N>(&*output, base, cols.count, comptime!(None::<SumFormat>));
        let terms = load_columns::<T, N>(
            updates,
            cols.row * slice + cols.first,
            cols.count,
            comptime!(None::<SumFormat>),
        );
        let mut sums = Array::<f32>::new(GROUP_COLUMNS);
        done = true;
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            let (exact, sum) = hardware_sum(currents[j], terms[j]);
            done = done && (exact || j >= cols.count);
            sums[j] = f32::reinterpret(sum);
        }
        if done {
            store_columns::<T, N>(output, base, cols.count, &sums);
        }
    }
    if !done {
        list_pending(work, unit);
    }
}

/// Listed sums, step 2, one unit: the launch of [`scatter_nd_listed_sum()`]'s first step over
/// the `work_count` listed units, as `[x, y, 1]` cubes of [`WALK_CUBE`] units in `args` (at
/// most 65,535 cubes a dimension).
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

/// The row a list cursor names (a row + 1; 0 ends the list) and whether it names one below
/// `rows`.
#[cube]
fn cursor_row(cursor: u32, rows: usize) -> (usize, bool) {
    let valid = cursor != 0u32 && (cursor as usize) <= rows;
    ((select(valid, cursor, 1u32) - 1u32) as usize, valid)
}

/// One pass of a walk over at most `span` rows of a list, from `cursor` on: adds the updates
/// (in words of `format`) to `sums` ([`SumFormat::sum_words`] words per column) and folds their
/// special values into `flags` (one word per column). Returns the cursor past them.
#[cube]
fn walk_list<N: Size>(
    flags: &mut Array<u32>,
    sums: &mut Array<u32>,
    updates: &[Vector<u32, N>],
    next: &[u32],
    window: (u32, usize),
    slice: usize,
    cols: &Columns,
    #[comptime] format: SumFormat,
) -> u32 {
    let words = comptime!(format.sum_words());
    let (mut cursor, span) = window;
    let rows = next.len();
    let mut taken = 0usize;
    let (mut row, mut valid) = cursor_row(cursor, rows);
    while valid && taken < span {
        let terms = load_columns::<u32, N>(
            updates,
            row * slice + cols.first,
            cols.count,
            comptime!(Some(format)),
        );
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            if j < cols.count {
                add_signed_term_at(sums, j * words, terms[j], format);
                flags[j] = observe(flags[j], terms[j]);
            }
        }
        cursor = next[row];
        taken += 1usize;
        let (next_row, next_valid) = cursor_row(cursor, rows);
        row = next_row;
        valid = next_valid;
    }
    cursor
}

/// Where the parts of the walks' state start, for `capacity` walks: a cursor per walk (at 0),
/// then [`GROUP_COLUMNS`] words of flags and `sum_len` words of sums per walk. One buffer holds
/// them, so that [`scatter_nd_listed_sum()`] binds at most 8 storage buffers with CubeCL's own
/// (WebGPU's default limit).
#[cube]
fn state_parts(capacity: usize) -> (usize, usize) {
    let flags_at = capacity;
    (flags_at, flags_at + capacity * GROUP_COLUMNS)
}

/// This launch's part of the sums of a list's head unit, whose target elements hold `current`
/// (`f32` bits, one per column): writes the rounded sums, in `format`'s bits, to `bits` and
/// returns whether they are final (to be written). A walk that goes on keeps its state in
/// `state` (see `state_parts`, room for `capacity` walks) at its place in the list of those
/// walks (when they resume, the launch's position `at`).
#[cube]
fn sum_step<N: Size>(
    updates: &[Vector<u32, N>],
    next: &[u32],
    pending: &mut [Atomic<u32>],
    state: &mut [u32],
    capacity: usize,
    at: (usize, usize),
    span: usize,
    slice: usize,
    cols: &Columns,
    current: &Array<u32>,
    bits: &mut Array<u32>,
    #[comptime] resume: bool,
    #[comptime] format: SumFormat,
) -> bool {
    let words = comptime!(format.sum_words());
    let sum_len = comptime!(GROUP_COLUMNS * format.sum_words());
    let mut flags = Array::<u32>::new(GROUP_COLUMNS);
    let mut sums = Array::<u32>::new(sum_len);
    #[unroll]
    for i in 0..sum_len {
        sums[i] = 0u32;
    }
    let (unit, mut slot) = at;
    let (flags_at, sums_at) = state_parts(capacity);
    let mut cursor = 0u32;
    if comptime!(!resume) {
        cursor = cols.row as u32 + 1u32;
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            flags[j] = observe(0u32, current[j]);
            add_signed_term_at(&mut sums, j * words, current[j], format);
        }
    } else if slot < capacity {
        // A walk that ended in an earlier launch left a cursor of 0.
        cursor = state[slot];
        #[unroll]
        for j in 0..GROUP_COLUMNS {
            flags[j] = state[flags_at + slot * GROUP_COLUMNS + j];
        }
        #[unroll]
        for i in 0..sum_len {
            sums[i] = state[sums_at + slot * sum_len + i];
        }
    }
    let mut write = false;
    if cursor != 0u32 {
        cursor = walk_list::<N>(
            &mut flags,
            &mut sums,
            updates,
            next,
            (cursor, span),
            slice,
            cols,
            format,
        );
        // A first walk that goes on takes a slot; a resumed one keeps its own, where an ended
        // walk leaves a cursor of 0.
        let mut keep = true;
        if comptime!(!resume) {
            keep = cursor != 0u32;
            if keep {
                slot = list_pending(pending, unit);
            }
        }
        if keep && slot < capacity {
            #[unroll]
            for j in 0..GROUP_COLUMNS {
                state[flags_at + slot * GROUP_COLUMNS + j] = flags[j];
            }
            #[unroll]
            for i in 0..sum_len {
                state[sums_at + slot * sum_len + i] = sums[i];
            }
            state[slot] = cursor;
        }
        write = cursor == 0u32;
        if write {
            #[unroll]
            for j in 0..GROUP_COLUMNS {
                bits[j] = round_signed_sum(&sums, j * words, flags[j], format);
            }
        }
    }
    write
}

/// The listed `unit`'s columns, the first target element they address and whether it works.
#[cube]
fn listed_unit(
    targets: &[u32],
    unit: usize,
    sizes: (usize, usize, usize),
) -> (Columns, usize, bool) {
    let (slice, groups, units) = sizes;
    let mut works = unit < units;
    // Arithmetic only: any unit's columns lie in the slice.
    let cols = columns(unit, slice, groups);
    let mut base = 0usize;
    if works {
        let target = targets[cols.row];
        works = target != SKIPPED;
        if works {
            base = target as usize * slice + cols.first;
        }
    }
    (cols, base, works)
}

/// Listed sums, step 3 on: a launch of the walks (see the module docs) over data in 32-bit
/// words of `format` (`f32` one to a word, `f16`/`bf16` two); `groups` groups of columns per
/// row, `units = rows * groups`. The launch runs the units on `listed` (in the first launch
/// those [`scatter_nd_listed_sum_heads()`] listed, with `resume` those listed in `pending`);
/// `pending` is where the first launch lists the walks that go on, and `state` holds their
/// state by slot (see `state_parts`, room for `capacity` walks). Both lists are counted
/// lists (see `list_pending`). A unit XORs the change of each of its fields into its word, which
/// leaves a word's other field as its own unit sets it.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_listed_sum<N: Size>(
    output: &mut [Atomic<u32>],
    updates: &[Vector<u32, N>],
    next: &[u32],
    targets: &[u32],
    listed: &[u32],
    pending: &mut [Atomic<u32>],
    state: &mut [u32],
    slice: usize,
    groups: usize,
    units: usize,
    span: usize,
    capacity: usize,
    #[comptime] resume: bool,
    #[comptime] format: SumFormat,
) {
    // Its launches have a unit per listed unit (sized on the device, or over the walks').
    let at = ABSOLUTE_POS;
    if at >= read_listed_count(listed) {
        terminate!();
    }
    let unit = read_listed_unit(listed, at);
    let (cols, base, works) = listed_unit(targets, unit, (slice, groups, units));
    if !works {
        terminate!();
    }
    let old = load_fields(&*output, base, cols.count, format);
    let mut current = Array::<u32>::new(GROUP_COLUMNS);
    let mut bits = Array::<u32>::new(GROUP_COLUMNS);
    #[unroll]
    for j in 0..GROUP_COLUMNS {
        current[j] = u32::reinterpret(widen(old[j], format));
    }
    let write = sum_step::<N>(
        updates,
        next,
        pending,
        state,
        capacity,
        (unit, at),
        span,
        slice,
        &cols,
        &current,
        &mut bits,
        resume,
        format,
    );
    if write {
        store_fields(output, base, cols.count, &old, &bits, format);
    }
}
