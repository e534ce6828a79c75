//! Deterministic float `Add` by segments of the lists (see `scatter_nd/exact_add.rs`): how the
//! lists are cut, the walks, the rounds of jumps and the finish.

use crate::capture::launch_unchecked;
use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::{LISTED_GRID, ListsLaunch, zeroed_prefix};
use crate::launch::elementwise_geometry;
use crate::scatter_nd::{
    JUMP_FAN, SumFormat, scatter_nd_exact_finish, scatter_nd_exact_jump, scatter_nd_exact_segments,
};

/// How the lists of `rows` rows are cut into segments for the exact sums: the hash's `mask`
/// (`2^k - 1`, with `2^k` the smallest power of two of at least `rows`) and `starts`, the slots
/// that start a segment (`2^(k - bits)`, so that about one row in `2^bits` starts one). A walk
/// takes about `2^bits` rows and each of the `(k - bits) / 2` rounds of jumps reads the sums of
/// every slot: `bits` about `k / 3` (4 to 8) balances the two. None below 256 rows, where no
/// walk is long; fewer where the starts' chains (see `chain_parts`) would not fit one binding.
fn segments(client: &Client, rows: usize, slice: usize, words: usize) -> (u32, u32) {
    let k = usize::BITS - rows.saturating_sub(1).leading_zeros();
    let mask = u32::try_from((1u64 << k) - 1).expect("rows below 2^32");
    if rows < 256 {
        return (mask, 0);
    }
    let bits = k.div_ceil(3).clamp(4, 8);
    let binding = usize::try_from(crate::capture::properties(client).memory.max_page_size)
        .unwrap_or(usize::MAX);
    let mut starts = 1usize << (k - bits);
    // A start takes a link, and a word of flags and `words` of sum per column.
    let per_start = slice
        .saturating_mul(words + 1)
        .saturating_add(1)
        .saturating_mul(4);
    while starts > 0 && starts.saturating_mul(per_start) > binding {
        starts /= 2;
    }
    (mask, starts as u32)
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
    let (mask, starts) = segments(client, rows, slice, words);
    let slots = (starts as usize).max(1);
    let entries = slots * slice;
    // Two buffers of chains for the jumps' rounds, each a link per slot (zeroed: no start
    // holds the slot yet), then flags and sums per entry; and one for the heads' segments: the
    // count of listed starts (zeroed), the list, flags and sums per entry.
    let chains_len = slots + entries * (1 + words);
    let waiting_len = 1 + rows.max(1) + entries * (1 + words);
    // SAFETY: launches over `slots` and one unit, which `address` (the scatter's) covers.
    let chains = [(); 2].map(|_| unsafe { zeroed_prefix(client, chains_len, slots, address) });
    let waiting = unsafe { zeroed_prefix(client, waiting_len, 1, address) };
    let per_word = format.per_word();
    let (data_len, update_len) = (output_len.div_ceil(per_word), units.div_ceil(per_word));
    // A chain holds at most `starts` segments (a power of two): `log4(starts)` rounds, rounded
    // up, join each whole.
    let rounds = slots.ilog2().div_ceil(JUMP_FAN.ilog2()) as usize;
    // SAFETY (every launch): each unit guards itself against `units`, `entries` or the listed
    // heads' units; rows are below `rows` (the list holds as many), slots of starts below
    // `starts` (the chains hold a link per slot, one flag and `words` words for each of their
    // `slice` columns, as `waiting` does), target elements below `output_len` (targets below
    // `targets`, as the caller checked); lists, links and rows as the caller's, every link to
    // a row pushed earlier, so every walk and chain ends.
    unsafe {
        let output_arg = || BufferArg::from_raw_parts(output.clone(), data_len);
        let chains_arg = |k: usize| BufferArg::from_raw_parts(chains[k].clone(), chains_len);
        let waiting_arg = || BufferArg::from_raw_parts(waiting.clone(), waiting_len);
        let targets_arg = || BufferArg::from_raw_parts(row_targets.clone(), rows);
        let (cubes, dim) = elementwise_geometry(client, units);
        launch_unchecked!(scatter_nd_exact_segments(
            client,
            cubes,
            dim,
            address,
            output_arg(),
            chains_arg(0),
            waiting_arg(),
            BufferArg::from_raw_parts(updates.clone(), update_len),
            BufferArg::from_raw_parts(heads.clone(), (*targets).max(1)),
            BufferArg::from_raw_parts(next.clone(), rows),
            targets_arg(),
            slice,
            units,
            entries,
            mask,
            starts,
            format,
        ));
        let (cubes, dim) = elementwise_geometry(client, entries);
        for round in 0..rounds {
            let (from, to) = (round % 2, 1 - round % 2);
            launch_unchecked!(scatter_nd_exact_jump(
                client,
                cubes.clone(),
                dim,
                address,
                chains_arg(from),
                chains_arg(to),
                slice,
                entries,
                mask,
                format,
            ));
        }
        // The listed starts are few: a grid of at most `LISTED_GRID` units loops over them.
        let (cubes, dim) = elementwise_geometry(client, units.clamp(1, LISTED_GRID));
        launch_unchecked!(scatter_nd_exact_finish(
            client,
            cubes,
            dim,
            address,
            output_arg(),
            chains_arg(rounds % 2),
            waiting_arg(),
            targets_arg(),
            slice,
            rows.max(1),
            entries,
            mask,
            format,
        ));
    }
}
