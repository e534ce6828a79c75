//! The lists strategy: per-target linked lists of update rows, reduced by one unit per target
//! element (see the [module docs](crate::scatter_nd)).

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::exact_add::launch_exact_add;
use super::indices::dims_arg;
use super::listed_sum::launch_listed_sum;
use super::ordered::{launch_ordered, ordered_step};
use super::plan::{ListsLaunch, exact_sum_format, group_vector};
use super::strategy::{DataBinding, selection_bits};
use crate::launch::elementwise_geometry;
use crate::scatter_nd::{
    GROUP_COLUMNS, ReduceOp, RowLink, ScatterStrategy, scatter_nd_assign_latest, scatter_nd_clear,
    scatter_nd_combine_buckets, scatter_nd_link_rows, scatter_nd_reduce_lists,
    scatter_nd_reduce_lists_packed, scatter_nd_reduce_lists_split, scatter_nd_row_targets,
    scatter_nd_segment_lists, scatter_nd_segment_lists_packed, scatter_nd_segment_lists_split,
};

/// Lists per target for `rows` update rows onto `targets` target slices, in the plain lists
/// strategy (the segmented one keeps one list per target): 1, unless the rows average 16 or more
/// per target; then about the square root of that average (4 to 1024), so that no list is much
/// longer than the number of lists its target has. The average is over every target, so a few hot
/// targets in a large tensor keep one list each:
/// [`SegmentedLists`](crate::scatter_nd::ScatterStrategy::SegmentedLists) bounds those walks too.
pub fn list_buckets(rows: usize, targets: usize) -> usize {
    let per_target = rows / targets.max(1);
    if per_target < 16 {
        1
    } else {
        (per_target as f64).sqrt().ceil().clamp(4.0, 1024.0) as usize
    }
}

/// The most rows for which the lists may walk without segments: no list is then longer than a
/// loop of a CPU driver may run (llvmpipe stops a loop after 65,535 iterations, silently).
const MAX_PLAIN_WALK: usize = 1 << 15;

/// `segment_bits` that turns segments off (see [`list_segment_bits`]).
const NO_SEGMENTS: u32 = 32;

/// Segments for the lists' reduction of `rows` update rows: about one row in `2^bits` starts
/// one (see `scatter_nd_segment_lists`), with `2^bits` about `sqrt(rows)` (16 to 4096), so that
/// neither a segment nor the chain of segments on one list is much longer than `sqrt(rows)`
/// even when every row has the same target, which [`list_buckets`] cannot tell from the sizes.
/// None ([`NO_SEGMENTS`]) below 256 rows, where no list can be long.
fn list_segment_bits(rows: usize) -> u32 {
    if rows < 256 {
        NO_SEGMENTS
    } else {
        (rows.ilog2() / 2).clamp(4, 12)
    }
}

/// The segment buffers of a lists reduction (see `scatter_nd_segment_lists`): a reduced value
/// per update element and a link per row, or one of each, never read, with segments off.
struct Segments {
    /// About one row in `2^bits` starts a segment; [`NO_SEGMENTS`]: none.
    bits: u32,
    values: Handle,
    values_len: usize,
    links: Handle,
    links_len: usize,
}

impl Segments {
    /// Allocates them for `units` update elements (values of `value_bytes`) in `rows` rows
    /// under `bits` ([`list_segment_bits`] or [`NO_SEGMENTS`]).
    fn new(client: &Client, bits: u32, units: usize, rows: usize, value_bytes: usize) -> Self {
        let (values_len, links_len) = if bits == NO_SEGMENTS {
            (1, 1)
        } else {
            (units, rows)
        };
        Self {
            bits,
            values: client.empty(values_len * value_bytes),
            values_len,
            links: client.empty(links_len * size_of::<u32>()),
            links_len,
        }
    }

    /// Whether rows start segments at all.
    fn on(&self) -> bool {
        self.bits != NO_SEGMENTS
    }

    fn values(&self) -> BufferArg {
        // SAFETY: `values` holds `values_len` values, allocated above.
        unsafe { BufferArg::from_raw_parts(self.values.clone(), self.values_len) }
    }

    fn links(&self) -> BufferArg {
        // SAFETY: `links` holds `links_len` u32, allocated above.
        unsafe { BufferArg::from_raw_parts(self.links.clone(), self.links_len) }
    }
}

/// The lists strategy: clear the heads, link the rows, reduce each list (and, with several
/// lists per target, fold their partial results into the output). `strategy` is one of the
/// lists strategies.
///
/// # Safety
///
/// The buffers of `lists` hold what its sizes say (the launcher checked them), data held in
/// words as `binding` says; `op` is `None` only for `Assign`.
pub(super) unsafe fn launch_lists(
    client: &Client,
    lists: &ListsLaunch,
    binding: DataBinding,
    op: Option<ReduceOp>,
    strategy: ScatterStrategy,
) {
    // CPU drivers (llvmpipe) end a shader loop after 65,535 iterations: where one list could
    // be longer, every strategy cuts its lists into segments, which bound every walk.
    let segmented = strategy == ScatterStrategy::SegmentedLists || lists.rows > MAX_PLAIN_WALK;
    let deterministic = strategy.is_deterministic();
    let ListsLaunch {
        output,
        updates,
        indices,
        dims,
        rows,
        slice,
        targets,
        output_len,
        units,
        index_len,
        address,
    } = lists;
    // `Assign` only moves bits: 64-bit elements held as word pairs take the typed kernel as u32
    // rows of twice the slice. The units of each target's head row write all its words, so
    // duplicates never tear an element.
    let (binding, per_element) = match (binding, op) {
        (DataBinding::Split { .. }, None) => (DataBinding::Typed(ElemType::UInt(UIntKind::U32)), 2),
        _ => (binding, 1),
    };
    let (rows, targets) = (*rows, *targets);
    let (slice, output_len, units) = (
        *slice * per_element,
        *output_len * per_element,
        *units * per_element,
    );
    // Long lists are cut into segments (the segmented lists: GPUs), or else split into several
    // lists per target, for typed reductions only (words keep one writer per element). One
    // mechanism per strategy: segments bound every walk whatever the duplication.
    let segment_bits = match op {
        Some(_) if segmented => list_segment_bits(rows),
        _ => NO_SEGMENTS,
    };
    let buckets = match (binding, op) {
        (DataBinding::Typed(_), Some(_)) if strategy == ScatterStrategy::Lists && !segmented => {
            list_buckets(rows, targets)
        }
        _ => 1,
    };
    // The walks along rows sorted by target need the rows' targets only: no lists.
    let ordered = ordered_step(binding, op).filter(|_| deterministic);
    let listed_sum =
        exact_sum_format(binding, op).filter(|_| strategy == ScatterStrategy::ListedDeterministic);
    let row_targets = client.empty(rows * size_of::<u32>());
    let (row_cubes, row_dim) = elementwise_geometry(client, rows);
    if let Some(step) = ordered {
        // SAFETY: unit `row < rows` reads its row's indices (the caller's checks) and writes
        // `row_targets[row]`, which holds `rows` u32; the walks as `launch_lists` (below).
        unsafe {
            launch_unchecked!(scatter_nd_row_targets(
                client,
                row_cubes,
                row_dim,
                *address,
                BufferArg::from_raw_parts(indices.handle.clone(), *index_len),
                dims_arg(dims),
                BufferArg::from_raw_parts(row_targets.clone(), rows),
                rows,
                indices.read,
                indices.elem,
            ));
            // The listed strategy sizes the tree's launches on the device (CPU drivers).
            let on_device = strategy == ScatterStrategy::ListedDeterministic;
            launch_ordered(client, lists, &row_targets, step, on_device);
        }
        return;
    }
    let link = if deterministic && op.is_none() {
        RowLink::Latest
    } else {
        RowLink::Push
    };
    let lists_len = targets * buckets;
    let heads = client.empty(lists_len * size_of::<u32>());
    let next = client.empty(rows * size_of::<u32>());
    let (element_cubes, element_dim) = elementwise_geometry(client, units);
    // SAFETY (every launch): the scratch buffers hold `lists_len`, `rows` and `rows` u32; the
    // kernels guard their units against `lists_len`, `rows`, `units` or `output_len`, and index
    // lists below `targets * buckets`, rows below `rows`, elements below `output_len` and
    // partials below `lists_len * slice` (the caller's checks for the rest). With segments, the
    // segment buffers hold `units` values and `rows` links, indexed by update element and row;
    // without, they hold one each and no kernel reads them (no row starts a segment).
    unsafe {
        let (cubes, dim) = elementwise_geometry(client, lists_len);
        launch_unchecked!(scatter_nd_clear(
            client,
            cubes,
            dim,
            *address,
            BufferArg::from_raw_parts(heads.clone(), lists_len),
            lists_len,
        ));
        launch_unchecked!(scatter_nd_link_rows(
            client,
            row_cubes,
            row_dim,
            *address,
            BufferArg::from_raw_parts(indices.handle.clone(), *index_len),
            dims_arg(dims),
            BufferArg::from_raw_parts(heads.clone(), lists_len),
            BufferArg::from_raw_parts(next.clone(), rows),
            BufferArg::from_raw_parts(row_targets.clone(), rows),
            rows,
            buckets as u32,
            indices.read,
            link,
            indices.elem,
        ));
        if let Some(format) = listed_sum {
            let typed = match binding {
                DataBinding::Typed(elem) => Some(elem),
                _ => None,
            };
            launch_listed_sum(client, lists, [&heads, &next, &row_targets], format, typed);
            return;
        }
        let heads_arg = || BufferArg::from_raw_parts(heads.clone(), lists_len);
        let next_arg = || BufferArg::from_raw_parts(next.clone(), rows);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        if let (true, None, DataBinding::Typed(data_elem)) = (deterministic, op, binding) {
            // The latest rows' groups of columns, in vectors that tile the slice.
            let vector = group_vector(client, Some(data_elem), slice);
            let groups = slice.div_ceil(GROUP_COLUMNS);
            let (cubes, dim) = elementwise_geometry(client, rows * groups);
            launch_unchecked!(scatter_nd_assign_latest(
                client,
                cubes,
                dim,
                *address,
                vector,
                BufferArg::from_raw_parts(output.clone(), output_len),
                BufferArg::from_raw_parts(updates.clone(), units),
                heads_arg(),
                targets_arg(),
                slice,
                groups,
                rows * groups,
                data_elem,
            ));
            return;
        }
        if let Some(format) = exact_sum_format(binding, op).filter(|_| deterministic) {
            launch_exact_add(client, lists, [&heads, &next, &row_targets], format);
            return;
        }
        match binding {
            DataBinding::Typed(data_elem) => {
                let bits = selection_bits(client, data_elem);
                let selection = bits.unwrap_or(ElemType::UInt(UIntKind::U32));
                let float = matches!(data_elem, ElemType::Float(_)) && bits.is_some();
                let partial = buckets > 1;
                let segments = Segments::new(client, segment_bits, units, rows, data_elem.size());
                // Several lists per target and segments never go together (see `buckets`):
                // the reduction's one value buffer holds the partials or the segments.
                debug_assert!(!(partial && segments.on()));
                let (values, values_len) = if partial {
                    let len = lists_len * slice;
                    (client.empty(len * data_elem.size()), len)
                } else {
                    (segments.values.clone(), segments.values_len)
                };
                if let (true, Some(op)) = (segments.on(), op) {
                    launch_unchecked!(scatter_nd_segment_lists(
                        client,
                        element_cubes.clone(),
                        element_dim,
                        *address,
                        segments.values(),
                        segments.links(),
                        BufferArg::from_raw_parts(updates.clone(), units),
                        next_arg(),
                        targets_arg(),
                        slice,
                        units,
                        segments.bits,
                        op,
                        float,
                        [data_elem, selection],
                    ));
                }
                launch_unchecked!(scatter_nd_reduce_lists(
                    client,
                    element_cubes,
                    element_dim,
                    *address,
                    BufferArg::from_raw_parts(output.clone(), output_len),
                    BufferArg::from_raw_parts(values.clone(), values_len),
                    BufferArg::from_raw_parts(updates.clone(), units),
                    heads_arg(),
                    next_arg(),
                    targets_arg(),
                    segments.links(),
                    slice,
                    units,
                    buckets as u32,
                    segments.bits,
                    op,
                    partial,
                    float,
                    [data_elem, selection],
                ));
                if let (true, Some(op)) = (partial, op) {
                    let (cubes, dim) = elementwise_geometry(client, output_len);
                    launch_unchecked!(scatter_nd_combine_buckets(
                        client,
                        cubes,
                        dim,
                        *address,
                        BufferArg::from_raw_parts(output.clone(), output_len),
                        BufferArg::from_raw_parts(values, values_len),
                        heads_arg(),
                        slice,
                        output_len,
                        buckets as u32,
                        op,
                        float,
                        [data_elem, selection],
                    ));
                }
            }
            DataBinding::Split { kind } => {
                let op = op.expect("Assign on word pairs took the typed kernel above");
                // A segment holds an element's two words.
                let segments = Segments::new(client, segment_bits, 2 * units, rows, 4);
                if segments.on() {
                    launch_unchecked!(scatter_nd_segment_lists_split(
                        client,
                        element_cubes.clone(),
                        element_dim,
                        *address,
                        segments.values(),
                        segments.links(),
                        BufferArg::from_raw_parts(updates.clone(), 2 * units),
                        next_arg(),
                        targets_arg(),
                        slice,
                        units,
                        segments.bits,
                        op,
                        kind,
                    ));
                }
                launch_unchecked!(scatter_nd_reduce_lists_split(
                    client,
                    element_cubes,
                    element_dim,
                    *address,
                    BufferArg::from_raw_parts(output.clone(), 2 * output_len),
                    BufferArg::from_raw_parts(updates.clone(), 2 * units),
                    heads_arg(),
                    next_arg(),
                    targets_arg(),
                    segments.values(),
                    segments.links(),
                    slice,
                    units,
                    segments.bits,
                    op,
                    kind,
                ));
            }
            DataBinding::Packed { bits, kind } => {
                let bytes = bits as usize / 8;
                let update_words = (units * bytes).div_ceil(4);
                // A segment holds one element's bits per word.
                let segments = Segments::new(client, segment_bits, units, rows, size_of::<u32>());
                if let (true, Some(op)) = (segments.on(), op) {
                    launch_unchecked!(scatter_nd_segment_lists_packed(
                        client,
                        element_cubes.clone(),
                        element_dim,
                        *address,
                        segments.values(),
                        segments.links(),
                        BufferArg::from_raw_parts(updates.clone(), update_words),
                        next_arg(),
                        targets_arg(),
                        slice,
                        units,
                        segments.bits,
                        bits,
                        op,
                        kind,
                    ));
                }
                launch_unchecked!(scatter_nd_reduce_lists_packed(
                    client,
                    element_cubes,
                    element_dim,
                    *address,
                    BufferArg::from_raw_parts(output.clone(), (output_len * bytes).div_ceil(4)),
                    BufferArg::from_raw_parts(updates.clone(), update_words),
                    heads_arg(),
                    next_arg(),
                    targets_arg(),
                    segments.values(),
                    segments.links(),
                    slice,
                    units,
                    segments.bits,
                    bits,
                    op,
                    kind,
                ));
            }
        }
    }
}
