//! Which method applies a scatter past plain stores and native atomics, and deterministic
//! `Assign`'s latest rows (see the [module docs](crate::scatter_nd)).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;

use super::indices::dims_arg;
use super::ordered::{launch_ordered, ordered_step};
use super::plan::{ScatterLaunch, exact_sum_format, group_vector, zeroed_prefix};
use super::sorted::{SortedRows, launch_sorted, launch_sorted_exact};
use super::strategy::DataBinding;
use crate::launch::elementwise_geometry;
use crate::scatter_nd::{
    GROUP_COLUMNS, ReduceOp, ScatterStrategy, scatter_nd_assign_latest, scatter_nd_link_rows,
};

/// The strategies past plain stores and native atomics: the deterministic methods where they
/// apply (float `Mul` and `f64` walks, float `Add`'s exact sums, `Assign`'s latest rows), and
/// otherwise the general design along rows sorted by target (`launch_sorted`). `strategy` is
/// [`ScatterStrategy::Sorted`] or a deterministic one.
///
/// # Safety
///
/// The buffers of `scatter` hold what its sizes say (the launcher checked them), data held in
/// words as `binding` says; `op` is `None` only for `Assign`.
pub(super) unsafe fn launch_general(
    client: &Client,
    scatter: &ScatterLaunch,
    binding: DataBinding,
    op: Option<ReduceOp>,
    strategy: ScatterStrategy,
) {
    let deterministic = strategy.is_deterministic();
    // `Assign` only moves bits: 64-bit elements held as word pairs take the typed kernels as u32
    // rows of twice the slice. One unit per target element writes all its words, so duplicates
    // never tear an element.
    let (binding, per_element) = match (binding, op) {
        (DataBinding::Words { bits: 64, .. }, None) => {
            (DataBinding::Typed(ElemType::UInt(UIntKind::U32)), 2)
        }
        _ => (binding, 1),
    };
    let exact_sum = exact_sum_format(binding, op).filter(|_| deterministic);
    let latest = match (deterministic, op, binding) {
        (true, None, DataBinding::Typed(data_elem)) => Some(data_elem),
        _ => None,
    };
    // SAFETY (every launch): as the caller's; the walks' own buffers as they say.
    unsafe {
        if let Some(step) = ordered_step(binding, op).filter(|_| deterministic) {
            launch_ordered(client, scatter, step);
        } else if let Some(format) = exact_sum {
            let sorted = SortedRows::new(client, scatter);
            launch_sorted_exact(client, scatter, &sorted, format, ReduceOp::Add);
        } else if let Some(data_elem) = latest {
            launch_latest(client, scatter, data_elem, per_element);
        } else {
            launch_sorted(client, scatter, binding, op, per_element);
        }
    }
}

/// Deterministic `Assign`: each target's latest row in index order (an atomic maximum per
/// target), whose groups of columns move in vectors of `data_elem`: 3 launches, no sort.
///
/// # Safety
///
/// As [`launch_general`], with data moved `per_element` words of `data_elem` to an element.
unsafe fn launch_latest(
    client: &Client,
    scatter: &ScatterLaunch,
    data_elem: ElemType,
    per_element: usize,
) {
    let ScatterLaunch {
        output,
        updates,
        indices,
        dims,
        rows,
        targets,
        index_len,
        address,
        ..
    } = scatter;
    let (rows, targets, address) = (*rows, *targets, *address);
    let (slice, output_len, units) = (
        scatter.slice * per_element,
        scatter.output_len * per_element,
        scatter.units * per_element,
    );
    let row_targets = client.empty(rows * size_of::<u32>());
    // SAFETY (every launch): the heads hold `targets` u32 and the rows' targets `rows`; the
    // kernels guard their units against `targets`, `rows` or `rows * groups`, and index heads
    // below `targets`, rows below `rows` and elements below `output_len` (the caller's checks
    // for the rest).
    unsafe {
        let heads = zeroed_prefix(client, targets, targets, address);
        let (cubes, dim) = elementwise_geometry(client, rows);
        launch_unchecked!(scatter_nd_link_rows(
            client,
            cubes,
            dim,
            address,
            BufferArg::from_raw_parts(indices.handle.clone(), *index_len),
            dims_arg(dims),
            BufferArg::from_raw_parts(heads.clone(), targets),
            BufferArg::from_raw_parts(row_targets.clone(), rows),
            rows,
            indices.read,
            indices.elem,
        ));
        // The latest rows' groups of columns, in vectors that tile the slice.
        let vector = group_vector(client, data_elem, slice);
        let groups = slice.div_ceil(GROUP_COLUMNS);
        let (cubes, dim) = elementwise_geometry(client, rows * groups);
        launch_unchecked!(scatter_nd_assign_latest(
            client,
            cubes,
            dim,
            address,
            vector,
            BufferArg::from_raw_parts(output.clone(), output_len),
            BufferArg::from_raw_parts(updates.clone(), units),
            BufferArg::from_raw_parts(heads.clone(), targets),
            BufferArg::from_raw_parts(row_targets.clone(), rows),
            slice,
            groups,
            rows * groups,
            data_elem,
        ));
    }
}
