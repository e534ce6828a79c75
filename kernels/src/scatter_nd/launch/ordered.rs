//! The deterministic reductions along rows sorted by target, stably: float `Mul` by a fixed tree
//! (see `scatter_nd/product.rs`), then in index order where its rounding is uncertain, and
//! `f64` `Add`/`Mul` in index order (see `scatter_nd/ordered.rs`).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::{Listed, REGION_WORDS, ScatterLaunch, Walks, float_format, group_vector};
use super::sorted::sort_rows;
use super::strategy::DataBinding;
use crate::launch::elementwise_geometry;
use crate::scatter_nd::{
    GROUP_COLUMNS, PRODUCT_CHUNK, PRODUCT_FAN, ReduceOp, SumFormat, scatter_nd_ordered_f64,
    scatter_nd_ordered_product, scatter_nd_product_chunks, scatter_nd_product_leaves,
    scatter_nd_product_level, scatter_nd_segment_starts,
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

/// Sorts the rows of `scatter` by their targets (`row_targets`) and combines each target's
/// updates as `step` says: float `Mul` by the tree, then in index order where its rounding is
/// uncertain; `f64` in index order. The tree's launches over the units it lists are sized
/// `on_device` or take a fixed grid (see `Listed`).
///
/// # Safety
///
/// As `launch_general`: the buffers of `scatter` hold what its sizes say, and `row_targets` holds
/// `scatter.rows` targets, each below `scatter.targets` or the skip marker.
pub(super) unsafe fn launch_ordered(
    client: &Client,
    scatter: &ScatterLaunch,
    row_targets: &Handle,
    step: OrderedStep,
    on_device: bool,
) {
    let ScatterLaunch {
        output,
        updates,
        rows,
        slice,
        targets,
        output_len,
        units,
        address,
        ..
    } = scatter;
    let (rows, slice, units, address) = (*rows, *slice, *units, *address);
    // One unit per sorted position and group of columns.
    let groups = slice.div_ceil(GROUP_COLUMNS);
    let group_units = rows * groups;
    // SAFETY (every launch): `row_targets` holds `rows` u32 and the sorted order `rows`, the
    // tree's masks and list `group_units`; the kernels guard against `group_units` (or a
    // list's length and count), read sorted positions below `rows` and write target elements
    // below `output_len` (targets below `targets`, as the caller checked).
    unsafe {
        let sorted = sort_rows(client, row_targets, rows, *targets);
        let order = || BufferArg::from_raw_parts(sorted.clone(), rows);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        let uncertain = match step {
            OrderedStep::Product(format) => Some(launch_tree(
                client,
                scatter,
                [&sorted, row_targets],
                format,
                on_device,
            )),
            OrderedStep::Wide(_) => None,
        };
        let walks = Walks::new(client, rows, groups, CPU_SPAN, address);
        let span = walks.span;
        for first in (0..rows).step_by(span) {
            let resume = first > 0;
            let (cubes, dim) = match &uncertain {
                // The first launch runs the units the tree listed, as many as it listed.
                Some(uncertain) if !resume => uncertain.units.geometry(client),
                _ => walks.geometry(client, group_units, resume),
            };
            match (step, &uncertain) {
                (OrderedStep::Product(format), Some(uncertain)) => {
                    let (data_len, update_len) = words(scatter, format);
                    launch_unchecked!(scatter_nd_ordered_product(
                        client,
                        cubes.clone(),
                        dim,
                        address,
                        word_vector(client, format, slice),
                        BufferArg::from_raw_parts(output.clone(), data_len),
                        BufferArg::from_raw_parts(updates.clone(), update_len),
                        order(),
                        targets_arg(),
                        BufferArg::from_raw_parts(uncertain.masks.clone(), group_units),
                        uncertain.units.list_arg(),
                        walks.list_arg(),
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
                (OrderedStep::Wide(op), _) => {
                    launch_unchecked!(scatter_nd_ordered_f64(
                        client,
                        cubes.clone(),
                        dim,
                        address,
                        BufferArg::from_raw_parts(output.clone(), *output_len),
                        BufferArg::from_raw_parts(updates.clone(), units),
                        order(),
                        targets_arg(),
                        walks.list_arg(),
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
                (OrderedStep::Product(_), None) => unreachable!("the tree ran"),
            }
        }
    }
}

/// The words that hold the data and the updates of `scatter` in `format`.
fn words(scatter: &ScatterLaunch, format: SumFormat) -> (usize, usize) {
    let per_word = format.per_word();
    (
        scatter.output_len.div_ceil(per_word),
        scatter.units.div_ceil(per_word),
    )
}

/// The lanes of the vectors a group of columns of data in words of `format` moves in.
fn word_vector(client: &Client, format: SumFormat, slice: usize) -> usize {
    let elem = (format == SumFormat::F32).then_some(ElemType::Float(FloatKind::F32));
    group_vector(client, elem, slice)
}

/// What float `Mul`'s tree leaves to the index-order walk: the units (a target's first sorted
/// row and a group of columns) whose rounding is uncertain, listed, and their columns
/// (`masks`, at the unit).
struct Uncertain {
    masks: Handle,
    units: Listed,
}

/// Float `Mul`'s tree (see `scatter_nd/product.rs`) over the rows sorted by target: each
/// row's target's first sorted row, the leaves (sole updates, and the list of chunks), the
/// chunks (and the list of nodes of targets with several), then a level per factor of
/// `PRODUCT_FAN` in the most chunks a target can have; returns what it leaves to the walk.
///
/// # Safety
///
/// As [`launch_ordered`]; `sorted` holds the `scatter.rows` sorted rows.
unsafe fn launch_tree(
    client: &Client,
    scatter: &ScatterLaunch,
    [sorted, row_targets]: [&Handle; 2],
    format: SumFormat,
    on_device: bool,
) -> Uncertain {
    let (rows, slice, address) = (scatter.rows, scatter.slice, scatter.address);
    let groups = slice.div_ceil(GROUP_COLUMNS);
    let group_units = rows * groups;
    let (data_len, update_len) = words(scatter, format);
    let most_chunks = rows.div_ceil(PRODUCT_CHUNK);
    // Two slots per span of chunk positions; only targets with more than one chunk (more than
    // `PRODUCT_CHUNK` rows) use them.
    let nodes_len = if rows > PRODUCT_CHUNK {
        2 * most_chunks * groups * GROUP_COLUMNS * 4
    } else {
        1
    };
    // One buffer of scratch: the starts, the masks and the nodes; one of the three lists (the
    // chunks, the nodes and the uncertain units), each region padded to `REGION_WORDS` so
    // that it binds on its own (see `scatter_nd_product_chunks`).
    let padded = |n: usize| n.div_ceil(REGION_WORDS) * REGION_WORDS;
    let (masks_at, nodes_at) = (padded(rows), padded(rows) + padded(group_units));
    let tree_len = nodes_at + nodes_len;
    let tree = client.empty(tree_len * size_of::<u32>());
    let list_stride = padded(group_units + 1);
    let tree_lists = client.empty(3 * list_stride * size_of::<u32>());
    let vector = word_vector(client, format, slice);
    // SAFETY (every launch): the sorted order, the targets and the starts hold `rows` u32, the
    // masks and the lists `group_units` (a unit each at most), the counts one and the nodes
    // `nodes_len` (a node per slot, group and column, each slot below `2 * most_chunks`); the
    // kernels guard their units against `rows` or `group_units` (or a list's count and
    // length), and write target elements below `output_len` (targets below `targets`, as the
    // caller checked).
    unsafe {
        let [chunks, listed_nodes, uncertain] = [0, 1, 2].map(|k| {
            Listed::within(
                client,
                &tree_lists,
                k * list_stride,
                group_units,
                on_device,
                address,
            )
        });
        let order = || BufferArg::from_raw_parts(sorted.clone(), rows);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        // The starts lead the tree's scratch.
        let starts_arg = || BufferArg::from_raw_parts(tree.clone(), rows);
        let tree_arg = || BufferArg::from_raw_parts(tree.clone(), tree_len);
        let lists_arg = || BufferArg::from_raw_parts(tree_lists.clone(), 3 * list_stride);
        let output_arg = || BufferArg::from_raw_parts(scatter.output.clone(), data_len);
        let updates_arg = || BufferArg::from_raw_parts(scatter.updates.clone(), update_len);
        let (cubes, dim) = elementwise_geometry(client, rows);
        launch_unchecked!(scatter_nd_segment_starts(
            client,
            cubes,
            dim,
            address,
            starts_arg(),
            order(),
            targets_arg(),
            rows,
        ));
        let (cubes, dim) = elementwise_geometry(client, group_units);
        launch_unchecked!(scatter_nd_product_leaves(
            client,
            cubes,
            dim,
            address,
            vector,
            output_arg(),
            updates_arg(),
            order(),
            targets_arg(),
            starts_arg(),
            chunks.list_arg(),
            slice,
            groups,
            group_units,
            rows,
            format,
        ));
        chunks.size(client, address);
        let (cubes, dim) = chunks.geometry(client);
        launch_unchecked!(scatter_nd_product_chunks(
            client,
            cubes,
            dim,
            address,
            vector,
            output_arg(),
            updates_arg(),
            order(),
            targets_arg(),
            tree_arg(),
            lists_arg(),
            slice,
            groups,
            group_units,
            rows,
            masks_at,
            nodes_at,
            list_stride,
            format,
        ));
        listed_nodes.size(client, address);
        // Level `l` folds nodes of `PRODUCT_FAN^(l - 1)` chunks; a root it makes is a tree of
        // at most `PRODUCT_CHUNK * PRODUCT_FAN^l` multiplications.
        let (mut width, mut bound) = (1usize, PRODUCT_CHUNK);
        while width < most_chunks {
            bound = bound.saturating_mul(PRODUCT_FAN);
            let (cubes, dim) = listed_nodes.geometry(client);
            launch_unchecked!(scatter_nd_product_level(
                client,
                cubes,
                dim,
                address,
                output_arg(),
                order(),
                targets_arg(),
                tree_arg(),
                lists_arg(),
                slice,
                groups,
                group_units,
                rows,
                width,
                u32::try_from(bound).unwrap_or(u32::MAX),
                masks_at,
                nodes_at,
                list_stride,
                format,
            ));
            width *= PRODUCT_FAN;
        }
        uncertain.size(client, address);
        Uncertain {
            masks: tree.offset_start((masks_at * size_of::<u32>()) as u64),
            units: uncertain,
        }
    }
}
