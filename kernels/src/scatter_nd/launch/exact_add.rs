//! Deterministic float `Add` by scratch and atomics (see `scatter_nd/exact_add.rs`): the three
//! steps, one unit per update element, over ranges of head positions whose scratch a binding
//! holds.

use crate::capture::launch_unchecked;
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::ListsLaunch;
use crate::launch::elementwise_geometry;
use crate::scatter_nd::{
    SumFormat, scatter_nd_exact_clear, scatter_nd_exact_finish, scatter_nd_exact_sum,
};

/// Scratch entries of a deterministic float `Add` over `units` update elements: one per
/// element, or as many as a magnitude buffer (`words` words an entry) that the runtime binds
/// holds, and at most 2^23; the steps then run once per range of head positions.
fn exact_entries(client: &Client, units: usize, words: usize) -> usize {
    let bytes = crate::capture::properties(client).memory.max_page_size;
    let fit = usize::try_from(bytes).unwrap_or(usize::MAX) / (words * 4);
    units.min(fit).clamp(1, 1 << 23)
}

/// The exact sum rounded to `format` of each target's value and updates, the data read and
/// written as 32-bit words (`f32` one to a word, 16-bit floats two), from the lists `heads`
/// and `next` (one per target, linked by `scatter_nd_link_rows`) and the rows' targets.
///
/// # Safety
///
/// As `launch_lists`: the buffers of `lists` hold what its sizes say; `heads` holds
/// `lists.targets` list heads, `next` and `row_targets` `lists.rows` links and targets, each
/// target below `lists.targets` or the skip marker.
pub(super) unsafe fn launch_exact_add(
    client: &Client,
    lists: &ListsLaunch,
    [heads, next, row_targets]: [&Handle; 3],
    format: SumFormat,
) {
    let ListsLaunch {
        output,
        updates,
        rows,
        targets,
        slice,
        output_len,
        units,
        address,
        ..
    } = lists;
    let (rows, slice, units, address) = (*rows, *slice, *units, *address);
    let words = format.sum_words();
    let entries = exact_entries(client, units, words);
    let sum_len = entries * words;
    let flags = client.empty(entries * size_of::<u32>());
    let sums = [(); 2].map(|_| client.empty(sum_len * size_of::<u32>()));
    let (data_len, update_len) = match format {
        SumFormat::F32 => (*output_len, units),
        _ => (output_len.div_ceil(2), units.div_ceil(2)),
    };
    let (cubes, dim) = elementwise_geometry(client, units);
    // SAFETY (every launch): the scratch holds `entries` flags and `sum_len` words per sign;
    // each unit guards itself against `units`, takes part only where its head position lies in
    // the range (its entry below `entries`), and writes target elements below `output_len`
    // (targets below `targets`, as the caller checked); lists, links and rows as the caller's.
    unsafe {
        let flags_arg = || BufferArg::from_raw_parts(flags.clone(), entries);
        let sum_arg = |sign: usize| BufferArg::from_raw_parts(sums[sign].clone(), sum_len);
        let heads_arg = || BufferArg::from_raw_parts(heads.clone(), (*targets).max(1));
        let next_arg = || BufferArg::from_raw_parts(next.clone(), rows);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        let output_arg = || BufferArg::from_raw_parts(output.clone(), data_len);
        let updates_arg = || BufferArg::from_raw_parts(updates.clone(), update_len);
        for first in (0..units).step_by(entries) {
            launch_unchecked!(scatter_nd_exact_clear(
                client,
                cubes.clone(),
                dim,
                address,
                flags_arg(),
                sum_arg(0),
                sum_arg(1),
                heads_arg(),
                next_arg(),
                targets_arg(),
                slice,
                units,
                first,
                entries,
                format,
            ));
            launch_unchecked!(scatter_nd_exact_sum(
                client,
                cubes.clone(),
                dim,
                address,
                flags_arg(),
                sum_arg(0),
                sum_arg(1),
                updates_arg(),
                heads_arg(),
                next_arg(),
                targets_arg(),
                slice,
                units,
                first,
                entries,
                format,
            ));
            launch_unchecked!(scatter_nd_exact_finish(
                client,
                cubes.clone(),
                dim,
                address,
                output_arg(),
                flags_arg(),
                sum_arg(0),
                sum_arg(1),
                updates_arg(),
                heads_arg(),
                next_arg(),
                targets_arg(),
                slice,
                units,
                first,
                entries,
                format,
            ));
        }
    }
}
