//! The deterministic walks along rows sorted by target, stably: float `Mul` and `f64` `Add`
//! combine each target's updates in index order (see `scatter_nd/ordered.rs`).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::{ListsLaunch, Walks, float_format, group_vector};
use super::strategy::DataBinding;
use crate::launch::elementwise_geometry;
use crate::scatter_nd::{
    GROUP_COLUMNS, ReduceOp, SORT_RUN, SumFormat, scatter_nd_merge_runs, scatter_nd_ordered_f64,
    scatter_nd_ordered_packed, scatter_nd_ordered_product, scatter_nd_sort_runs,
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
    match (binding, op?) {
        (
            DataBinding::Typed(ElemType::Float(FloatKind::F64)),
            op @ (ReduceOp::Add | ReduceOp::Mul),
        ) => Some(OrderedStep::Wide(op)),
        (DataBinding::Typed(elem), ReduceOp::Mul) => {
            float_format(binding).map(|format| OrderedStep::Product { elem, format })
        }
        (_, ReduceOp::Mul) => float_format(binding).map(OrderedStep::PackedProduct),
        _ => None,
    }
}

/// The most rows one walk takes per launch on a runtime without plane operations (a CPU
/// driver, whose shader loops stop after 65,535 iterations in all); elsewhere one launch.
const CPU_SPAN: usize = 1 << 15;

/// The rows sorted by target, stably (`row_targets`: `rows` targets or the skip marker), in a
/// new buffer of `rows` u32.
///
/// # Safety
///
/// `row_targets` holds `rows` u32.
unsafe fn sort_rows(
    client: &Client,
    row_targets: &Handle,
    rows: usize,
    address: AddressType,
) -> Handle {
    let orders = [(); 2].map(|_| client.empty(rows * size_of::<u32>()));
    let mut sorted = 0;
    // SAFETY: the order buffers and `row_targets` hold `rows` u32; the sort kernels guard
    // their unit against `rows` and place each row below `rows` (a rank within its pair of
    // runs).
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
    }
    orders[sorted].clone()
}

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
    // One unit per sorted position and group of columns.
    let groups = slice.div_ceil(GROUP_COLUMNS);
    let group_units = rows * groups;
    let vector = match step {
        OrderedStep::Product { elem, .. } => group_vector(client, Some(elem), slice),
        OrderedStep::PackedProduct(_) => group_vector(client, None, slice),
        OrderedStep::Wide(_) => 1,
    };
    // SAFETY (every launch): `row_targets` holds `rows` u32 and the sorted order `rows`; the
    // walks guard against `group_units` (or the list's capacity, listing and reading it below
    // its length), read sorted positions below `rows` and write target elements below
    // `output_len` (targets below `targets`, as the caller checked).
    unsafe {
        let sorted = sort_rows(client, row_targets, rows, address);
        let walks = Walks::new(client, rows, groups, CPU_SPAN, address);
        let span = walks.span;
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        for first in (0..rows).step_by(span) {
            let resume = first > 0;
            let (cubes, dim) = walks.geometry(client, group_units, resume);
            let order = BufferArg::from_raw_parts(sorted.clone(), rows);
            let (pending_count, pending) = (walks.count_arg(), walks.list_arg());
            match step {
                OrderedStep::PackedProduct(format) => {
                    launch_unchecked!(scatter_nd_ordered_packed(
                        client,
                        cubes.clone(),
                        dim,
                        address,
                        vector,
                        BufferArg::from_raw_parts(output.clone(), output_len.div_ceil(2)),
                        BufferArg::from_raw_parts(updates.clone(), units.div_ceil(2)),
                        order,
                        targets_arg(),
                        pending_count,
                        pending,
                        slice,
                        groups,
                        group_units,
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
                        vector,
                        BufferArg::from_raw_parts(output.clone(), *output_len),
                        BufferArg::from_raw_parts(updates.clone(), units),
                        order,
                        targets_arg(),
                        pending_count,
                        pending,
                        slice,
                        groups,
                        group_units,
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
                        groups,
                        group_units,
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
