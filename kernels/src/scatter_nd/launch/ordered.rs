//! The deterministic walks along rows sorted by target, stably: float `Mul` and `f64` `Add`
//! combine each target's updates in index order (see `scatter_nd/ordered.rs`); and the bounds
//! of walks on CPU drivers ([`Walks`]), which the listed sums share.

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::lists::{ListsLaunch, float_format};
use super::strategy::DataBinding;
use crate::launch::{elementwise_geometry, has_planes, vector_size_for};
use crate::scatter_nd::{
    GROUP_COLUMNS, ReduceOp, SORT_RUN, SumFormat, WALK_CUBE, scatter_nd_clear,
    scatter_nd_merge_runs, scatter_nd_ordered_f64, scatter_nd_ordered_packed,
    scatter_nd_ordered_product, scatter_nd_sort_runs,
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

/// The lanes of the vectors a group of columns moves in (see `scatter_nd/columns.rs`) for data
/// of `data_elem` (`None`: 16-bit floats packed two to a 32-bit lane), `slice` elements a row:
/// the most, up to four, that the runtime favours and whose vectors tile the slice.
pub(super) fn group_vector(client: &Client, data_elem: Option<ElemType>, slice: usize) -> usize {
    let (bytes, per_lane) = match data_elem {
        Some(elem) => (elem.size(), 1),
        None => (4, 2),
    };
    let widest = vector_size_for(client, &[bytes]).min(4);
    [4, 2, 1]
        .into_iter()
        .find(|&lanes| lanes <= widest && slice.is_multiple_of(lanes * per_lane))
        .unwrap_or(1)
}

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

/// The walks' bounds: at most `span` rows per launch (all of them on runtimes with plane
/// operations; CPU drivers stop a shader's loops after 65,535 iterations in all, so there
/// `cpu_span`), and the list of walks that go on past the first launch: a walk longer than
/// `span` has more than `span` rows, so at most `rows / span` targets have one, each with
/// `per_row` units (columns, or groups of them): `capacity` of them. Their count starts at
/// zero wherever one can go on.
pub(super) struct Walks {
    pub span: usize,
    pub capacity: usize,
    count: Handle,
    list: Handle,
}

impl Walks {
    /// # Safety
    ///
    /// `address` fits the launch.
    pub unsafe fn new(
        client: &Client,
        rows: usize,
        per_row: usize,
        cpu_span: usize,
        address: AddressType,
    ) -> Self {
        let span = if has_planes(client) { rows } else { cpu_span };
        let capacity = (rows / span * per_row).max(1);
        let walks = Self {
            span,
            capacity,
            count: client.empty(size_of::<u32>()),
            list: client.empty(capacity * size_of::<u32>()),
        };
        if span < rows {
            let (cubes, dim) = elementwise_geometry(client, 1);
            // SAFETY: `count` holds one u32; the unit guards itself against 1.
            unsafe {
                launch_unchecked!(scatter_nd_clear(
                    client,
                    cubes,
                    dim,
                    address,
                    BufferArg::from_raw_parts(walks.count.clone(), 1),
                    1,
                ));
            }
        }
        walks
    }

    /// The geometry of a launch over every unit, or with `resume` over the listed ones, in
    /// small cubes ([`WALK_CUBE`] units) so that a few long walks spread over a CPU driver's
    /// threads (one per cube).
    pub fn geometry(&self, client: &Client, units: usize, resume: bool) -> (CubeCount, CubeDim) {
        if resume {
            let dim = CubeDim::new_1d(WALK_CUBE);
            (
                cubecl::calculate_cube_count_elemwise(client, self.capacity, dim),
                dim,
            )
        } else {
            elementwise_geometry(client, units)
        }
    }

    pub fn count_arg(&self) -> BufferArg {
        // SAFETY: `count` holds one u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.count.clone(), 1) }
    }

    pub fn list_arg(&self) -> BufferArg {
        // SAFETY: `list` holds `capacity` u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.list.clone(), self.capacity) }
    }
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
