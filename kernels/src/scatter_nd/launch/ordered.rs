//! Deterministic float `Mul` and `f64` `Add`: the rows sorted by target, stably, and each
//! target's updates combined in index order (see `scatter_nd/ordered.rs`).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::lists::ListsLaunch;
use super::strategy::DataBinding;
use crate::launch::{elementwise_geometry, has_planes};
use crate::scatter_nd::{
    ReduceOp, SORT_RUN, SumFormat, WordKind, scatter_nd_clear, scatter_nd_merge_runs,
    scatter_nd_ordered_f64, scatter_nd_ordered_packed, scatter_nd_ordered_product,
    scatter_nd_sort_runs,
};

/// Which walk a deterministic reduction takes to combine in index order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OrderedStep {
    /// Typed 16- or 32-bit floats of `elem`: `Mul`, rounded to `format` each step with integer
    /// arithmetic.
    Product { elem: ElemType, format: SumFormat },
    /// `f16`/`bf16` packed two to a word: `Mul`, rounded to this format each step.
    PackedProduct(SumFormat),
    /// `f64`: `Add` or `Mul` in the runtime's `f64` arithmetic.
    Wide(ReduceOp),
}

/// The walk a deterministic `op` on data held as `binding` takes: float `Mul`, and `f64` `Add`
/// (`None`: not one of those).
pub(super) fn ordered_step(binding: DataBinding, op: Option<ReduceOp>) -> Option<OrderedStep> {
    let op = op?;
    let format = match binding {
        DataBinding::Typed(ElemType::Float(FloatKind::F64)) => {
            return matches!(op, ReduceOp::Add | ReduceOp::Mul).then_some(OrderedStep::Wide(op));
        }
        _ if op != ReduceOp::Mul => return None,
        DataBinding::Typed(ElemType::Float(FloatKind::F32)) => SumFormat::F32,
        DataBinding::Typed(ElemType::Float(FloatKind::F16))
        | DataBinding::Packed {
            kind: WordKind::F16,
            ..
        } => SumFormat::F16,
        DataBinding::Typed(ElemType::Float(FloatKind::BF16))
        | DataBinding::Packed {
            kind: WordKind::BF16,
            ..
        } => SumFormat::BF16,
        _ => return None,
    };
    Some(match binding {
        DataBinding::Typed(elem) => OrderedStep::Product { elem, format },
        _ => OrderedStep::PackedProduct(format),
    })
}

/// The most rows one walk takes per launch on a runtime without plane operations (a CPU
/// driver, whose shader loops stop after 65,535 iterations in all); elsewhere one launch.
const CPU_SPAN: usize = 1 << 15;

/// Sorts the rows of `lists` by their targets (`row_targets`, written by the link step) and
/// combines each target's updates in index order, as `step` says.
///
/// # Safety
///
/// As `launch_lists`: the buffers of `lists` hold what its sizes say, and `row_targets` holds
/// `lists.rows` targets, each below `lists.targets` or the skip marker.
pub(super) unsafe fn launch_ordered(
    client: &Client,
    lists: &ListsLaunch,
    row_targets: &Handle,
    step: OrderedStep,
) {
    let ListsLaunch {
        output,
        updates,
        rows,
        slice,
        output_len,
        units,
        address,
        ..
    } = lists;
    let (rows, slice, units, address) = (*rows, *slice, *units, *address);
    let orders = [(); 2].map(|_| client.empty(rows * size_of::<u32>()));
    // SAFETY (every launch): the order buffers and `row_targets` hold `rows` u32; the sort
    // kernels guard their unit against `rows` and place each row below `rows` (a rank within
    // its pair of runs); the walks guard against `units` (or `capacity`, listing and reading
    // `pending` below its length), read sorted positions below `rows` and write target
    // elements below `output_len` (targets below `targets`, as the caller checked).
    unsafe {
        let order_arg = |k: usize| BufferArg::from_raw_parts(orders[k].clone(), rows);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        let (cubes, dim) = elementwise_geometry(client, rows);
        launch_unchecked!(scatter_nd_sort_runs(
            client,
            cubes.clone(),
            dim,
            address,
            order_arg(0),
            targets_arg(),
            rows,
        ));
        let mut sorted = 0;
        let mut width = SORT_RUN;
        while width < rows {
            launch_unchecked!(scatter_nd_merge_runs(
                client,
                cubes.clone(),
                dim,
                address,
                order_arg(1 - sorted),
                order_arg(sorted),
                targets_arg(),
                rows,
                width,
            ));
            sorted = 1 - sorted;
            width *= 2;
        }
        let span = if has_planes(client) { rows } else { CPU_SPAN };
        // Walks longer than `span` have more than `span` rows each: at most `units / span`
        // units list one. Their count starts at zero where any can.
        let capacity = (units / span).max(1);
        let pending_count = client.empty(size_of::<u32>());
        let pending = client.empty(capacity * size_of::<u32>());
        if span < rows {
            let (cubes, dim) = elementwise_geometry(client, 1);
            launch_unchecked!(scatter_nd_clear(
                client,
                cubes,
                dim,
                address,
                BufferArg::from_raw_parts(pending_count.clone(), 1),
                1,
            ));
        }
        for first in (0..rows).step_by(span) {
            let resume = first > 0;
            let (cubes, dim) = elementwise_geometry(client, if resume { capacity } else { units });
            let order = order_arg(sorted);
            let pending_count = BufferArg::from_raw_parts(pending_count.clone(), 1);
            let pending = BufferArg::from_raw_parts(pending.clone(), capacity);
            match step {
                OrderedStep::PackedProduct(format) => {
                    launch_unchecked!(scatter_nd_ordered_packed(
                        client,
                        cubes.clone(),
                        dim,
                        address,
                        BufferArg::from_raw_parts(output.clone(), output_len.div_ceil(2)),
                        BufferArg::from_raw_parts(updates.clone(), units.div_ceil(2)),
                        order,
                        targets_arg(),
                        pending_count,
                        pending,
                        slice,
                        units,
                        rows,
                        first,
                        span,
                        resume,
                        format,
                    ));
                }
                OrderedStep::Product { elem, format } => {
                    launch_unchecked!(scatter_nd_ordered_product(
                        client,
                        cubes.clone(),
                        dim,
                        address,
                        BufferArg::from_raw_parts(output.clone(), *output_len),
                        BufferArg::from_raw_parts(updates.clone(), units),
                        order,
                        targets_arg(),
                        pending_count,
                        pending,
                        slice,
                        units,
                        rows,
                        first,
                        span,
                        resume,
                        format,
                        elem,
                    ));
                }
                OrderedStep::Wide(op) => {
                    launch_unchecked!(scatter_nd_ordered_f64(
                        client,
                        cubes.clone(),
                        dim,
                        address,
                        BufferArg::from_raw_parts(output.clone(), *output_len),
                        BufferArg::from_raw_parts(updates.clone(), units),
                        order,
                        targets_arg(),
                        pending_count,
                        pending,
                        slice,
                        units,
                        rows,
                        first,
                        span,
                        resume,
                        op,
                    ));
                }
            }
        }
    }
}
