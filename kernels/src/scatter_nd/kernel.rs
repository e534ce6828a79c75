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
fn combine<T: Numeric, B: Int>(
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

/// Folds `value` into a segment's partial result `acc`, which holds updates only: where `acc`
/// is a NaN update, which must never win, `value` takes its place.
#[cube]
fn fold_segment<T: Numeric, B: Int>(
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

/// How `scatter_nd_link_rows` links each row besides recording its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowLink {
    /// Onto its list, in arrival order.
    Push,
    /// Only the latest row in index order stays: the list's head.
    Latest,
}

/// Sets the first `len` elements of `buffer` to zero (the list heads: empty lists).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_clear(buffer: &mut [u32], len: usize) {
    if ABSOLUTE_POS >= len {
        terminate!();
    }
    buffer[ABSOLUTE_POS] = 0u32;
}

/// Lists, step 1, one unit per update row: `targets[row]` = its target slice (or the skip
/// marker), and the row pushes itself onto list `target * buckets + row % buckets` (each target
/// has `buckets` lists): `next[row]` = the previous head, `heads[list]` = `row + 1` (0 ends a
/// list), as `link` says: with [`RowLink::Latest`] (deterministic `Assign`) the list keeps only
/// its latest row in index order, `heads[list]` = the largest `row + 1`, and `next` is left
/// unwritten. The walks along sorted rows, which need no lists, take
/// [`scatter_nd_row_targets`](fn@scatter_nd_row_targets).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_link_rows<I: Int>(
    indices: &[I],
    dims: Sequence<u32>,
    heads: &mut [Atomic<u32>],
    next: &mut [u32],
    targets: &mut [u32],
    rows: usize,
    buckets: u32,
    #[comptime] read: IndexRead,
    #[comptime] link: RowLink,
    #[define(I)] _index_type: ElemType,
) {
    let row = ABSOLUTE_POS;
    if row >= rows {
        terminate!();
    }
    let target = target_slice::<I>(indices, &dims, row, read);
    targets[row] = target;
    if target != SKIPPED {
        let list = target as usize * buckets as usize + row % buckets as usize;
        if comptime!(link == RowLink::Latest) {
            heads[list].fetch_max(row as u32 + 1);
        } else {
            next[row] = heads[list].exchange(row as u32 + 1);
        }
    }
}

/// Step 1 of the walks along rows sorted by target, one unit per update row: `targets[row]` =
/// its target slice (or the skip marker), and no list. A kernel apart from
/// [`scatter_nd_link_rows`](fn@scatter_nd_link_rows), whose list heads are atomic: WebGPU
/// forbids an atomic buffer that a kernel never writes.
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

/// For update element `position` of the lists' step 2: the output element it targets, the list
/// its row is on (of `buckets` per target), and whether its row heads that list (a skipped row
/// heads none), which makes its unit the one that reduces the list for that column.
#[cube]
pub(super) fn list_head(
    heads: &[u32],
    targets: &[u32],
    position: usize,
    slice: usize,
    buckets: u32,
) -> (usize, usize, bool) {
    let row = position / slice;
    let target = targets[row];
    let mut element = 0;
    let mut list = 0;
    let mut heads_list = false;
    if target != SKIPPED {
        element = target as usize * slice + position % slice;
        list = target as usize * buckets as usize + row % buckets as usize;
        heads_list = heads[list] == row as u32 + 1;
    }
    (element, list, heads_list)
}

/// Whether update row `row` starts a segment of its list: about one row in `2^segment_bits`,
/// picked by a multiplicative hash of the row so that no pattern of indices lines the starts up
/// with the lists. 32 bits never start one (no segments).
#[cube]
pub(super) fn starts_segment(row: usize, segment_bits: u32) -> bool {
    let hashed = u32::cast_from(row) * 0x9E37_79B1u32;
    // Two shifts, so that 0 bits (every row a start) shifts by 32 without an out-of-range shift.
    let kept = select(segment_bits < 31u32, segment_bits, 31u32);
    segment_bits < 32u32 && (hashed >> (31u32 - kept)) >> 1u32 == 0u32
}

/// Whether the unit at `position` (one per update element, `units` of them, rows of `slice`)
/// reduces a segment: its row is on a list (not skipped, so its `next` was written) and starts
/// a segment ([`starts_segment`]). The segment kernels, typed and packed, run only these units.
#[cube]
pub(super) fn reduces_segment(
    targets: &[u32],
    position: usize,
    units: usize,
    slice: usize,
    segment_bits: u32,
) -> bool {
    let mut reduces = false;
    if position < units {
        let row = position / slice;
        reduces = targets[row] != SKIPPED && starts_segment(row, segment_bits);
    }
    reduces
}

/// Lists, step 2 where lists may be long, one unit per update element whose row starts a
/// segment (about one row in `2^segment_bits`, picked by a hash of the row): it reduces its own
/// update and those of the rows after it on its list, up to the next start or the list's end,
/// into `segments[position]`, and its column 0 unit stores where the walk stopped (the next
/// start's link, or 0) in `segment_next[row]`. The list's walk in `scatter_nd_reduce_lists`
/// then takes each segment in one step: a start walks about `2^segment_bits` links, and a
/// list's head about `length / 2^segment_bits` segments, so with `2^segment_bits` near
/// `sqrt(rows)` (the launcher's choice) no chain of dependent loads is much longer than
/// `2 * sqrt(rows)`, whatever the duplication.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_segment_lists<T: Numeric, B: Int>(
    segments: &mut [T],
    segment_next: &mut [u32],
    updates: &[T],
    next: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    segment_bits: u32,
    #[comptime] op: ReduceOp,
    #[comptime] float: bool,
    #[define(T, B)] _types: [ElemType; 2],
) {
    let position = ABSOLUTE_POS;
    if !reduces_segment(targets, position, units, slice, segment_bits) {
        terminate!();
    }
    let row = position / slice;
    let col = position % slice;
    let mut acc = updates[position];
    let mut link = next[row];
    // Every link points to a row pushed earlier, so the walk ends.
    while link != 0 {
        let member = (link - 1) as usize;
        if starts_segment(member, segment_bits) {
            break;
        }
        acc = fold_segment::<T, B>(acc, updates[member * slice + col], op, float);
        link = next[member];
    }
    segments[position] = acc;
    if col == 0 {
        segment_next[row] = link;
    }
}

/// Lists, step 2, one unit per update element: the unit whose row heads a list walks it. With
/// one list per target (`partial` false) it writes `op` of the current value and every update
/// on the list, once (with no `op`, `Assign`: the head's own update, one of the candidates).
/// With several (`partial`), it writes the list's partial result to `values[list * slice +
/// col]` and `scatter_nd_combine_buckets` folds those partials into the output: for `Min`/`Max`
/// the partial starts from the current value (both are idempotent, so every list may), for
/// `Add`/`Mul` from the head's update. The other units return at once.
///
/// With `segment_bits` below 32 (never with `partial`: the launcher cuts long lists one way or
/// the other), a row that starts a segment stands for its whole segment in the walk: its
/// `values` entry and its `segment_next` link (`scatter_nd_segment_lists`). One buffer holds the
/// partials or the segments, so that the kernel binds 8 storage buffers with CubeCL's own
/// (WebGPU's default limit).
///
/// `heads`, `next` and `targets` are read without atomics: step 1 wrote them in an earlier
/// launch, and launches on one stream run in order with their writes visible to the next, so
/// they are final here and nothing writes them during this launch.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_reduce_lists<T: Numeric, B: Int>(
    output: &mut [T],
    values: &mut [T],
    updates: &[T],
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    segment_next: &[u32],
    slice: usize,
    units: usize,
    buckets: u32,
    segment_bits: u32,
    #[comptime] op: Option<ReduceOp>,
    #[comptime] partial: bool,
    #[comptime] float: bool,
    #[define(T, B)] _types: [ElemType; 2],
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let (element, list, heads_list) = list_head(heads, targets, position, slice, buckets);
    if !heads_list {
        terminate!();
    }
    let row = position / slice;
    let col = position % slice;
    let reduce = comptime!(op.unwrap_or(ReduceOp::Add));
    // A walk starts from the current value, except a partial sum or product (several lists per
    // target), which starts from the head's own update and walks on from the next row.
    let from_value =
        comptime!(op.is_some() && (!partial || reduce == ReduceOp::Min || reduce == ReduceOp::Max));
    let mut acc = if comptime!(from_value) {
        output[element]
    } else {
        updates[position]
    };
    if comptime!(op.is_some()) {
        let mut link = row as u32 + 1;
        if comptime!(!from_value) {
            link = next[row];
        }
        // Every link points to a row pushed earlier, so the walk ends. A row that starts a
        // segment stands for the whole segment (`scatter_nd_segment_lists`).
        while link != 0 {
            let member = (link - 1) as usize;
            if starts_segment(member, segment_bits) {
                acc = combine::<T, B>(acc, values[member * slice + col], reduce, float);
                link = segment_next[member];
            } else {
                acc = combine::<T, B>(acc, updates[member * slice + col], reduce, float);
                link = next[member];
            }
        }
    }
    if comptime!(partial) {
        values[list * slice + col] = acc;
    } else {
        output[element] = acc;
    }
}

/// Lists, step 3 where each target has `buckets` lists: one unit per output element folds the
/// partial result of each non-empty list of its target into it with `op`, and writes it when
/// any list was non-empty.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_combine_buckets<T: Numeric, B: Int>(
    output: &mut [T],
    partials: &[T],
    heads: &[u32],
    slice: usize,
    len: usize,
    buckets: u32,
    #[comptime] op: ReduceOp,
    #[comptime] float: bool,
    #[define(T, B)] _types: [ElemType; 2],
) {
    let element = ABSOLUTE_POS;
    if element >= len {
        terminate!();
    }
    let first = (element / slice) * buckets as usize;
    let col = element % slice;
    let mut acc = output[element];
    let mut touched = false;
    for bucket in 0..buckets as usize {
        let list = first + bucket;
        if heads[list] != 0 {
            acc = combine::<T, B>(acc, partials[list * slice + col], op, float);
            touched = true;
        }
    }
    if touched {
        output[element] = acc;
    }
}

/// Lists `position` (a unit whose walk goes on past this launch, or whose work a later launch
/// takes) in the counted list `pending`: its count in word 0, the listed units after it, one
/// buffer so that a kernel binds one storage buffer per list. Returns its slot in the list.
#[cube]
pub(super) fn list_pending(pending: &mut [Atomic<u32>], position: usize) -> usize {
    let room = pending.len() - 1usize;
    list_at(pending, 0usize, room, position)
}

/// Lists `position` in the counted list at word `at` of `lists` (its count there, then room
/// for `room` units), where several lists share a buffer; returns its slot in the list.
#[cube]
pub(super) fn list_at(lists: &mut [Atomic<u32>], at: usize, room: usize, position: usize) -> usize {
    let slot = lists[at].fetch_add(1u32) as usize;
    // The launcher sizes each list for every unit that can be listed, so the guard never drops
    // one.
    if slot < room {
        lists[at + 1usize + slot].store(position as u32);
    }
    slot
}
