//! The `#[cube]` kernels. Every kernel runs one unit per work item in one dimension and guards
//! every read and write: a target slice is only ever computed from coordinates that were
//! checked against their dimension.

use cubecl::prelude::*;

use super::indices::{IndexRead, SKIPPED, target_slice, update_target};

/// The binary operation a reduction applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `a + b` (wrapping on integers).
    Add,
    /// `a * b` (wrapping on integers).
    Mul,
    /// `b` when `b < a`, else `a`.
    Min,
    /// `b` when `b > a`, else `a`.
    Max,
}

/// `op(acc, value)`.
///
/// `Min` and `Max` replace `acc` only when `value` ranks strictly below (above) it. For floats
/// (`float`, with `B` the unsigned integer type of `T`'s width) `-0.0` ranks below `+0.0` and a
/// NaN ranks nowhere: a NaN update never replaces a value and a NaN value is never replaced, so
/// the result does not depend on the order of the updates. The float choice is decided and
/// applied on the raw bits with integer arithmetic, so no shader compiler can turn it into a
/// `min`/`max` instruction with its own NaN and signed-zero rules, or change it under fast math.
#[cube]
pub(super) fn combine<T: Numeric, B: Int>(
    acc: T,
    value: T,
    #[comptime] op: ReduceOp,
    #[comptime] float: bool,
) -> T {
    let mut out = acc;
    if comptime!(op == ReduceOp::Add) {
        out = acc + value;
    } else if comptime!(op == ReduceOp::Mul) {
        out = acc * value;
    } else if comptime!(float) {
        let kept = B::reinterpret(acc);
        let bits = B::reinterpret(value);
        // The order read from the bits: negative floats' keys fall as their magnitude grows,
        // all below the positives' (so `-0.0` ranks below `+0.0`); NaNs are compared with
        // nothing. No float comparison, so fast math cannot change the choice.
        let magnitude = B::max_value() >> B::new(1);
        let sign = B::max_value() ^ magnitude;
        let infinity = B::reinterpret(T::max_value()) + B::new(1);
        let comparable = (kept & magnitude) <= infinity && (bits & magnitude) <= infinity;
        let key_kept = select(
            (kept & sign) != B::new(0),
            magnitude - (kept & magnitude),
            kept | sign,
        );
        let key_value = select(
            (bits & sign) != B::new(0),
            magnitude - (bits & magnitude),
            bits | sign,
        );
        let ordered = if comptime!(op == ReduceOp::Min) {
            key_value < key_kept
        } else {
            key_value > key_kept
        };
        let replace = comparable && ordered;
        let mask = B::new(0) - B::cast_from(replace);
        out = T::reinterpret(kept ^ ((bits ^ kept) & mask));
    } else {
        let replace = if comptime!(op == ReduceOp::Min) {
            value < acc
        } else {
            value > acc
        };
        if replace {
            out = value;
        }
    }
    out
}

/// Folds `value` into a node's partial result `acc`, which holds updates only: where `acc`
/// is a NaN update, which must never win, `value` takes its place.
#[cube]
pub(super) fn fold_node<T: Numeric, B: Int>(
    acc: T,
    value: T,
    #[comptime] op: ReduceOp,
    #[comptime] float: bool,
) -> T {
    let mut out = combine::<T, B>(acc, value, op, float);
    if comptime!(float && (op == ReduceOp::Min || op == ReduceOp::Max)) {
        // A float is NaN when its magnitude's bits exceed infinity's (the largest finite
        // value's bits plus one).
        let magnitude = B::reinterpret(acc) & (B::max_value() >> B::new(1));
        if magnitude > B::reinterpret(T::max_value()) + B::new(1) {
            out = value;
        }
    }
    out
}

/// `Assign`: `output[target(row) * slice + col] = updates[row * slice + col]` for each of the
/// `units` update elements. `T` may be any type of the data's width: only bits move.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_assign<T: Numeric, I: Int>(
    output: &mut [T],
    indices: &[I],
    updates: &[T],
    dims: Sequence<u32>,
    slice: usize,
    units: usize,
    #[comptime] read: IndexRead,
    #[define(T, I)] _types: [ElemType; 2],
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let (element, valid) = update_target::<I>(indices, &dims, position, slice, read);
    if valid {
        output[element] = updates[position];
    }
}

/// The adjoint of `Assign`/`Add` for the updates (ScatterND's backward pass):
/// `output[row * slice + col] = input[target(row) * slice + col]`, or zero for a skipped row,
/// for each of the `units` output elements. Only bits move, as in `scatter_nd_assign`.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_gather<T: Numeric, I: Int>(
    output: &mut [T],
    indices: &[I],
    input: &[T],
    dims: Sequence<u32>,
    slice: usize,
    units: usize,
    #[comptime] read: IndexRead,
    #[define(T, I)] _types: [ElemType; 2],
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let (element, valid) = update_target::<I>(indices, &dims, position, slice, read);
    let mut value = T::from_int(0);
    if valid {
        value = input[element];
    }
    output[position] = value;
}

/// A reduction through native atomics: `output[target] = op(output[target], update)` for each
/// update element. Only for the operations the runtime reports for `Atomic<T>`.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_atomic<T: Numeric, I: Int>(
    output: &mut [Atomic<T>],
    indices: &[I],
    updates: &[T],
    dims: Sequence<u32>,
    slice: usize,
    units: usize,
    #[comptime] read: IndexRead,
    #[comptime] op: ReduceOp,
    #[define(T, I)] _types: [ElemType; 2],
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let (element, valid) = update_target::<I>(indices, &dims, position, slice, read);
    if valid {
        let value = updates[position];
        // The launcher never picks atomics for Mul: no runtime has an atomic multiply.
        if comptime!(op == ReduceOp::Add) {
            output[element].fetch_add(value);
        } else if comptime!(op == ReduceOp::Min) {
            output[element].fetch_min(value);
        } else if comptime!(op == ReduceOp::Max) {
            output[element].fetch_max(value);
        }
    }
}

/// Sets the first `len` elements of `buffer` to zero (deterministic `Assign`'s heads, the
/// count of the walks' list).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_clear(buffer: &mut [u32], len: usize) {
    if ABSOLUTE_POS >= len {
        terminate!();
    }
    buffer[ABSOLUTE_POS] = 0u32;
}

/// Deterministic `Assign`, step 1, one unit per update row: `targets[row]` = its target slice
/// (or the skip marker), and `heads[target]` = the largest `row + 1` of the target's rows (0: no
/// row), by an atomic maximum: each target's latest row in index order.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_link_rows<I: Int>(
    indices: &[I],
    dims: Sequence<u32>,
    heads: &mut [Atomic<u32>],
    targets: &mut [u32],
    rows: usize,
    #[comptime] read: IndexRead,
    #[define(I)] _index_type: ElemType,
) {
    let row = ABSOLUTE_POS;
    if row >= rows {
        terminate!();
    }
    let target = target_slice::<I>(indices, &dims, row, read);
    targets[row] = target;
    if target != SKIPPED {
        heads[target as usize].fetch_max(row as u32 + 1);
    }
}

/// Step 1 of the passes along rows sorted by target, one unit per update row: `targets[row]` =
/// its target slice (or the skip marker). A kernel apart from
/// [`scatter_nd_link_rows`](fn@scatter_nd_link_rows), whose heads are atomic: WebGPU forbids an
/// atomic buffer that a kernel never writes.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_row_targets<I: Int>(
    indices: &[I],
    dims: Sequence<u32>,
    targets: &mut [u32],
    rows: usize,
    #[comptime] read: IndexRead,
    #[define(I)] _index_type: ElemType,
) {
    let row = ABSOLUTE_POS;
    if row >= rows {
        terminate!();
    }
    targets[row] = target_slice::<I>(indices, &dims, row, read);
}

/// Lists `unit` in the counted list `list`: its count in word 0, the listed units after it.
/// The launchers give each list room for every unit that can be listed, so the guard never
/// drops one.
#[cube]
pub(super) fn list_unit(list: &mut [Atomic<u32>], unit: usize) {
    let slot = list[0usize].fetch_add(1u32) as usize;
    if slot < list.len() - 1usize {
        list[slot + 1usize].store(unit as u32);
    }
}
