//! The general strategy, [`ScatterStrategy::Sorted`](crate::scatter_nd::ScatterStrategy), and
//! deterministic float `Add`'s exact sums and `Mul`'s products: the update rows sorted by
//! target with the crate's radix sort, a launch per level of the tree of nodes over them, then
//! the join (see `scatter_nd/sorted.rs`). The deterministic walks share the sorted rows.

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::indices::dims_arg;
use super::plan::{ScatterLaunch, zeroed_prefix};
use super::strategy::{DataBinding, selection_bits};
use crate::launch::elementwise_geometry;
use crate::scatter_nd::product_node::NODE_WORDS;
use crate::scatter_nd::{
    CHUNK_ROWS, NODE_FAN, ReduceOp, SumFormat, node_count, scatter_nd_row_targets,
    scatter_nd_sorted_join, scatter_nd_sorted_join_words, scatter_nd_sorted_nodes,
    scatter_nd_sorted_nodes_words, scatter_nd_sorted_product_join, scatter_nd_sorted_product_nodes,
    scatter_nd_sorted_sum_join, scatter_nd_sorted_sum_nodes,
};
use crate::sort::{SortOrder, SortPlan, sorted_positions};

/// Each update row's target slice (or the skip marker), in a new buffer of `scatter.rows` u32:
/// one launch.
///
/// # Safety
///
/// The buffers of `scatter` hold what its sizes say (the launcher checked them).
unsafe fn row_targets(client: &Client, scatter: &ScatterLaunch) -> Handle {
    let rows = scatter.rows;
    let targets = client.empty(rows * size_of::<u32>());
    let (cubes, dim) = elementwise_geometry(client, rows);
    // SAFETY: unit `row < rows` reads its row's indices (the caller's checks) and writes
    // `targets[row]`, which holds `rows` u32.
    unsafe {
        launch_unchecked!(scatter_nd_row_targets(
            client,
            cubes,
            dim,
            scatter.address,
            BufferArg::from_raw_parts(scatter.indices.handle.clone(), scatter.index_len),
            dims_arg(scatter.dims),
            BufferArg::from_raw_parts(targets.clone(), rows),
            rows,
            scatter.indices.read,
            scatter.indices.elem,
        ));
    }
    targets
}

/// The rows sorted by target, stably (`row_targets`: `rows` targets below `targets` or the skip
/// marker), in a new buffer of `rows` u32: the crate's radix sort of one sequence, over the low
/// bits that hold `targets`. The marker's low bits are all ones, above every target's, so its
/// rows still sort last.
fn sort_rows(client: &Client, row_targets: &Handle, rows: usize, targets: usize) -> Handle {
    let bits = u32::try_from(targets).map_or(32, |t| u32::BITS - t.leading_zeros());
    sorted_positions(
        client,
        (row_targets, ElemType::UInt(UIntKind::U32), bits),
        (1, rows),
        SortOrder::Ascending,
        SortPlan::for_client(client),
    )
}

/// The rows sorted by target: their targets and the sorted order (one launch besides the
/// sort's).
pub(super) struct SortedRows {
    targets: Handle,
    order: Handle,
    rows: usize,
}

impl SortedRows {
    /// # Safety
    ///
    /// As [`launch_sorted`].
    pub unsafe fn new(client: &Client, scatter: &ScatterLaunch) -> Self {
        // SAFETY: as the caller's.
        let targets = unsafe { row_targets(client, scatter) };
        let order = sort_rows(client, &targets, scatter.rows, scatter.targets);
        Self {
            targets,
            order,
            rows: scatter.rows,
        }
    }

    pub fn order(&self) -> BufferArg {
        // SAFETY: the order holds `rows` u32, allocated by the sort.
        unsafe { BufferArg::from_raw_parts(self.order.clone(), self.rows) }
    }

    pub fn targets(&self) -> BufferArg {
        // SAFETY: the targets hold `rows` u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.targets.clone(), self.rows) }
    }
}

/// The launches over the tree's nodes for `rows` sorted rows of `slice` columns: each level's
/// index, its units (a node and column each) and their geometry.
fn node_launches(
    client: &Client,
    rows: usize,
    slice: usize,
    levels: u32,
) -> impl Iterator<Item = (u32, usize, CubeCount, CubeDim)> {
    (0..levels).map(move |level| {
        let units = rows / (CHUNK_ROWS * NODE_FAN.pow(level)) * slice;
        let (cubes, dim) = elementwise_geometry(client, units);
        (level, units, cubes, dim)
    })
}

/// Applies the updates of `scatter` along the rows sorted by target: a launch per level of
/// nodes, then the join (see `scatter_nd/sorted.rs`). `op` is `None` for `Assign`;
/// `per_element` is 2 where 64-bit elements held as word pairs move as u32 rows of twice the
/// slice (`Assign`), 1 otherwise.
///
/// # Safety
///
/// The buffers of `scatter` hold what its sizes say (the launcher checked them), data held in
/// words as `binding` says.
pub(super) unsafe fn launch_sorted(
    client: &Client,
    scatter: &ScatterLaunch,
    binding: DataBinding,
    op: Option<ReduceOp>,
    per_element: usize,
) {
    let (rows, address) = (scatter.rows, scatter.address);
    let (slice, output_len, units) = (
        scatter.slice * per_element,
        scatter.output_len * per_element,
        scatter.units * per_element,
    );
    let (nodes, levels) = match op {
        Some(_) => node_count(rows),
        None => (0, 0),
    };
    let (value_bytes, per_value) = match binding {
        DataBinding::Typed(elem) => (elem.size(), 1),
        DataBinding::Words { bits, .. } => (size_of::<u32>(), bits.div_ceil(32) as usize),
    };
    let partials_len = (nodes * slice * per_value).max(1);
    let words_of = |len: usize, bytes: usize| (len * bytes).div_ceil(size_of::<u32>());
    // SAFETY (every launch): the targets and the order hold `rows` u32, the partials a value
    // per node and column (one, never read, without nodes); the kernels guard their units
    // against the launch's units, read sorted positions below `rows` and nodes of the levels
    // launched before, and write target elements below `output_len` (targets below `targets`,
    // as the caller checked).
    unsafe {
        let sorted = SortedRows::new(client, scatter);
        let partials = client.empty(partials_len * value_bytes);
        let partials_arg = || BufferArg::from_raw_parts(partials.clone(), partials_len);
        let reduce = op.unwrap_or(ReduceOp::Add);
        match binding {
            DataBinding::Typed(data_elem) => {
                let bits = selection_bits(client, data_elem);
                let selection = bits.unwrap_or(ElemType::UInt(UIntKind::U32));
                let float = matches!(data_elem, ElemType::Float(_)) && bits.is_some();
                let updates = || BufferArg::from_raw_parts(scatter.updates.clone(), units);
                for (level, level_units, cubes, dim) in node_launches(client, rows, slice, levels) {
                    launch_unchecked!(scatter_nd_sorted_nodes(
                        client,
                        cubes,
                        dim,
                        address,
                        partials_arg(),
                        updates(),
                        sorted.order(),
                        sorted.targets(),
                        slice,
                        level_units,
                        rows,
                        level,
                        reduce,
                        float,
                        [data_elem, selection],
                    ));
                }
                let (cubes, dim) = elementwise_geometry(client, units);
                launch_unchecked!(scatter_nd_sorted_join(
                    client,
                    cubes,
                    dim,
                    address,
                    BufferArg::from_raw_parts(scatter.output.clone(), output_len),
                    partials_arg(),
                    updates(),
                    sorted.order(),
                    sorted.targets(),
                    slice,
                    units,
                    op,
                    float,
                    [data_elem, selection],
                ));
            }
            DataBinding::Words { bits, kind } => {
                let bytes = bits as usize / 8;
                let updates =
                    || BufferArg::from_raw_parts(scatter.updates.clone(), words_of(units, bytes));
                for (level, level_units, cubes, dim) in node_launches(client, rows, slice, levels) {
                    launch_unchecked!(scatter_nd_sorted_nodes_words(
                        client,
                        cubes,
                        dim,
                        address,
                        partials_arg(),
                        updates(),
                        sorted.order(),
                        sorted.targets(),
                        slice,
                        level_units,
                        rows,
                        level,
                        bits,
                        reduce,
                        kind,
                    ));
                }
                let (cubes, dim) = elementwise_geometry(client, units);
                launch_unchecked!(scatter_nd_sorted_join_words(
                    client,
                    cubes,
                    dim,
                    address,
                    BufferArg::from_raw_parts(scatter.output.clone(), words_of(output_len, bytes)),
                    partials_arg(),
                    updates(),
                    sorted.order(),
                    sorted.targets(),
                    slice,
                    units,
                    bits,
                    op,
                    kind,
                ));
            }
        }
    }
}

/// Deterministic float `Add` or `Mul` (`op`) along the rows `sorted`, data and updates read
/// and written as 32-bit words of `format`: the exact sum of each target's value and updates
/// (`scatter_nd/sorted_sum.rs`), or their product by the tree (`scatter_nd/sorted_product.rs`),
/// rounded once. For `Mul`, returns the counted list of the units (a run's first sorted
/// position and a column) whose rounding is uncertain, with room for every unit, which the
/// index-order walk takes.
///
/// # Safety
///
/// As [`launch_sorted`]; `sorted` holds the rows of `scatter` sorted by target.
pub(super) unsafe fn launch_sorted_exact(
    client: &Client,
    scatter: &ScatterLaunch,
    sorted: &SortedRows,
    format: SumFormat,
    op: ReduceOp,
) -> Option<Handle> {
    let (rows, slice, units, address) =
        (scatter.rows, scatter.slice, scatter.units, scatter.address);
    let (nodes, levels) = node_count(rows);
    let entries = nodes * slice;
    // A sum's entry: a word of flags and its words; a product's: `NODE_WORDS`.
    let product = op == ReduceOp::Mul;
    let entry_words = if product {
        NODE_WORDS
    } else {
        1 + format.sum_words()
    };
    let partials_len = (entries * entry_words).max(1);
    let per_word = format.per_word();
    // SAFETY (every launch): as `launch_sorted`'s; the partials hold `entry_words` words per
    // node entry, the list its count and a slot per unit.
    unsafe {
        let uncertain = product.then(|| zeroed_prefix(client, units + 1, 1, address));
        let partials = client.empty(partials_len * size_of::<u32>());
        let partials_arg = || BufferArg::from_raw_parts(partials.clone(), partials_len);
        let updates =
            || BufferArg::from_raw_parts(scatter.updates.clone(), units.div_ceil(per_word));
        let output = || {
            BufferArg::from_raw_parts(
                scatter.output.clone(),
                scatter.output_len.div_ceil(per_word),
            )
        };
        for (level, level_units, cubes, dim) in node_launches(client, rows, slice, levels) {
            if product {
                launch_unchecked!(scatter_nd_sorted_product_nodes(
                    client,
                    cubes,
                    dim,
                    address,
                    partials_arg(),
                    updates(),
                    sorted.order(),
                    sorted.targets(),
                    slice,
                    level_units,
                    rows,
                    level,
                    format,
                ));
            } else {
                launch_unchecked!(scatter_nd_sorted_sum_nodes(
                    client,
                    cubes,
                    dim,
                    address,
                    partials_arg(),
                    updates(),
                    sorted.order(),
                    sorted.targets(),
                    slice,
                    level_units,
                    rows,
                    level,
                    entries,
                    format,
                ));
            }
        }
        let (cubes, dim) = elementwise_geometry(client, units);
        match &uncertain {
            Some(list) => launch_unchecked!(scatter_nd_sorted_product_join(
                client,
                cubes,
                dim,
                address,
                output(),
                BufferArg::from_raw_parts(list.clone(), units + 1),
                partials_arg(),
                updates(),
                sorted.order(),
                sorted.targets(),
                slice,
                units,
                format,
            )),
            None => launch_unchecked!(scatter_nd_sorted_sum_join(
                client,
                cubes,
                dim,
                address,
                output(),
                partials_arg(),
                updates(),
                sorted.order(),
                sorted.targets(),
                slice,
                units,
                entries,
                format,
            )),
        }
        uncertain
    }
}
