//! The deterministic reductions that combine in index order where nothing order-free applies
//! (see `scatter_nd/ordered.rs`): float `Mul` (16- and 32-bit floats) by its tree along the
//! sorted rows, then in index order where the tree's rounding is uncertain, and `f64`
//! `Add`/`Mul` in index order.

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;

use super::plan::{ScatterLaunch, float_format, zeroed_prefix};
use super::sorted::{SortedRows, launch_sorted_exact};
use super::strategy::DataBinding;
use crate::launch::{cube_count_for, elementwise_geometry, has_planes};
use crate::scatter_nd::{
    ReduceOp, SumFormat, WALK_CUBE, scatter_nd_ordered_f64, scatter_nd_ordered_product,
};

/// Which walk a deterministic reduction takes to combine in a fixed order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OrderedStep {
    /// 16- and 32-bit floats held in 32-bit words of `format`: `Mul`, by the tree, and in index
    /// order (rounded to `format` each step) where the tree's rounding is uncertain.
    Product(SumFormat),
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
        (_, ReduceOp::Mul) => float_format(binding).map(OrderedStep::Product),
        _ => None,
    }
}

/// The most rows one walk takes per launch on a runtime without plane operations (a CPU
/// driver, whose shader loops stop after 65,535 iterations in all); elsewhere one launch.
const CPU_SPAN: usize = 1 << 15;

/// Sorts the rows of `scatter` by target and combines each target's updates as `step` says:
/// float `Mul` by the tree, then in index order where its rounding is uncertain; `f64` in index
/// order. A launch per `span` rows of the longest run: one where the runtime has plane
/// operations; on CPU drivers the later launches run only the walks the first one listed.
///
/// # Safety
///
/// As `launch_general`: the buffers of `scatter` hold what its sizes say.
pub(super) unsafe fn launch_ordered(client: &Client, scatter: &ScatterLaunch, step: OrderedStep) {
    let (rows, slice, units, address) =
        (scatter.rows, scatter.slice, scatter.units, scatter.address);
    let span = if has_planes(client) { rows } else { CPU_SPAN };
    // A walk that goes on has more than `span` rows: at most `rows / span` targets do, with a
    // unit per column each.
    let capacity = (rows / span * slice).max(1);
    // SAFETY (every launch): the sorted rows and their targets hold `rows` u32, the tree's list
    // of uncertain units its count and `units` units, the walks' list its count and `capacity`
    // units (at most `units`); the kernels guard their units against `units` (or a list's
    // count and room), read sorted positions below `rows` and write target elements below
    // `output_len` (targets below `targets`, as the caller checked).
    unsafe {
        let sorted = SortedRows::new(client, scatter);
        let uncertain = match step {
            OrderedStep::Product(format) => {
                launch_sorted_exact(client, scatter, &sorted, format, ReduceOp::Mul)
            }
            OrderedStep::Wide(_) => None,
        };
        // Its count is only read where walks resume.
        let pending = zeroed_prefix(client, capacity + 1, usize::from(span < rows), address);
        let pending_arg = || BufferArg::from_raw_parts(pending.clone(), capacity + 1);
        for first in (0..rows).step_by(span) {
            let resume = first > 0;
            let (cubes, dim) = if resume {
                let dim = CubeDim::new_1d(WALK_CUBE);
                (cube_count_for(client, capacity, dim), dim)
            } else {
                elementwise_geometry(client, units)
            };
            match (step, &uncertain) {
                (OrderedStep::Product(format), Some(uncertain)) => {
                    let per_word = format.per_word();
                    launch_unchecked!(scatter_nd_ordered_product(
                        client,
                        cubes,
                        dim,
                        address,
                        BufferArg::from_raw_parts(
                            scatter.output.clone(),
                            scatter.output_len.div_ceil(per_word)
                        ),
                        BufferArg::from_raw_parts(
                            scatter.updates.clone(),
                            units.div_ceil(per_word)
                        ),
                        sorted.order(),
                        sorted.targets(),
                        BufferArg::from_raw_parts(uncertain.clone(), units + 1),
                        pending_arg(),
                        slice,
                        units,
                        first,
                        span,
                        resume,
                        format,
                    ));
                }
                (OrderedStep::Wide(op), _) => {
                    launch_unchecked!(scatter_nd_ordered_f64(
                        client,
                        cubes,
                        dim,
                        address,
                        BufferArg::from_raw_parts(scatter.output.clone(), scatter.output_len),
                        BufferArg::from_raw_parts(scatter.updates.clone(), units),
                        sorted.order(),
                        sorted.targets(),
                        pending_arg(),
                        slice,
                        units,
                        first,
                        span,
                        resume,
                        op,
                    ));
                }
                (OrderedStep::Product(_), None) => unreachable!("the tree ran"),
            }
        }
    }
}
