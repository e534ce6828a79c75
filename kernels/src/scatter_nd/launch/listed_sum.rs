//! Deterministic float `Add` along each target's list of rows (see `scatter_nd/listed_sum.rs`):
//! the short pass over every row, the walks of the listed heads (a launch sized on the device),
//! and the further launches of the walks longer than a CPU driver's span.

use crate::capture::launch_unchecked;
use cubecl::ir::{ElemType, FloatKind, UIntKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::{Listed, ListsLaunch, Walks, group_vector};
use crate::launch::elementwise_geometry;
use crate::scatter_nd::{
    GROUP_COLUMNS, SumFormat, scatter_nd_listed_sum, scatter_nd_listed_sum_heads,
};

/// The most rows a listed sum's walk takes per launch on a CPU driver (the columns of a group
/// share each step), below the 65,535 iterations its loops may run.
const CPU_SUM_SPAN: usize = 1 << 15;

/// The exact sum rounded to `format` of each target's value and updates, from the lists
/// `heads` and `next` (one per target, linked by `scatter_nd_link_rows`) and the rows'
/// targets. The heads' pass reads data typed as `data_elem` (`f32`) or 16-bit floats packed
/// two to a word (`None`); the walks read and write 32-bit words of either.
///
/// # Safety
///
/// As `launch_lists`: the buffers of `lists` hold what its sizes say; `heads` holds
/// `lists.targets` list heads, `next` and `row_targets` `lists.rows` links and targets, each
/// target below `lists.targets` or the skip marker.
pub(super) unsafe fn launch_listed_sum(
    client: &Client,
    lists: &ListsLaunch,
    [heads, next, row_targets]: [&Handle; 3],
    format: SumFormat,
    data_elem: Option<ElemType>,
) {
    let ListsLaunch {
        output,
        updates,
        rows,
        slice,
        targets,
        output_len,
        units,
        address,
        ..
    } = lists;
    let (rows, slice, units, address) = (*rows, *slice, *units, *address);
    // One unit per update row and group of `GROUP_COLUMNS` columns.
    let groups = slice.div_ceil(GROUP_COLUMNS);
    let group_units = rows * groups;
    // The words that hold the data (for the typed `f32` heads' pass, its elements).
    let per_word = format.per_word();
    let (data_len, update_len) = (output_len.div_ceil(per_word), units.div_ceil(per_word));
    let vector = group_vector(client, data_elem, slice);
    let heads_vector = if data_elem.is_some() { vector } else { 1 };
    // SAFETY (every launch): the lists hold `targets`, `rows` and `rows` u32, `work` a slot for
    // every unit (see `Listed`); the kernels guard their units against
    // `group_units` (or a list's length and count), columns against `slice`, list cursors
    // against `rows`, and write target elements below `output_len` (targets below `targets`,
    // as the caller checked); the walk state holds `capacity` entries, indexed by list slots
    // below it.
    unsafe {
        let walks = Walks::new(client, rows, groups, CPU_SUM_SPAN, address);
        let span = walks.span;
        let work = Listed::new(client, group_units, true, address);
        let heads_arg = BufferArg::from_raw_parts(heads.clone(), (*targets).max(1));
        let next_arg = || BufferArg::from_raw_parts(next.clone(), rows);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        let fast = data_elem == Some(ElemType::Float(FloatKind::F32));
        let (cubes, dim) = elementwise_geometry(client, group_units);
        launch_unchecked!(scatter_nd_listed_sum_heads(
            client,
            cubes,
            dim,
            address,
            heads_vector,
            BufferArg::from_raw_parts(output.clone(), data_len),
            BufferArg::from_raw_parts(updates.clone(), update_len),
            heads_arg,
            next_arg(),
            targets_arg(),
            work.list_arg(),
            slice,
            groups,
            group_units,
            fast,
            data_elem.unwrap_or(ElemType::UInt(UIntKind::U32)),
        ));
        work.size(client, address);
        // A cursor, and the flags and sums of each group's columns, per walk that goes on.
        let state_len = walks.capacity * (1 + GROUP_COLUMNS * (1 + format.sum_words()));
        let state = client.empty(state_len * size_of::<u32>());
        // The first launch, then one per further span of rows that a walk may go on for.
        let launches = rows.div_ceil(span).max(1);
        for launch in 0..launches {
            // The first launch runs the units the heads pass listed and lists the walks that go
            // on; the later ones run those (the work list is then a spare pair of arguments).
            let start = launch == 0;
            let (cubes, dim) = if start {
                work.geometry(client)
            } else {
                walks.geometry(client, group_units, true)
            };
            let [listed, pending] = if start {
                [work.list_arg(), walks.list_arg()]
            } else {
                [walks.list_arg(), work.list_arg()]
            };
            launch_unchecked!(scatter_nd_listed_sum(
                client,
                cubes,
                dim,
                address,
                vector,
                BufferArg::from_raw_parts(output.clone(), data_len),
                BufferArg::from_raw_parts(updates.clone(), update_len),
                next_arg(),
                targets_arg(),
                listed,
                pending,
                BufferArg::from_raw_parts(state.clone(), state_len),
                slice,
                groups,
                group_units,
                span,
                walks.capacity,
                !start,
                format,
            ));
        }
    }
}
