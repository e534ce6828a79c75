//! Deterministic float `Add` on GPUs ([`ScatterStrategy::Deterministic`](super::ScatterStrategy)):
//! each target element becomes the exact sum of its value and its updates, rounded once
//! ([`super::exact`]). The rows are linked into per-target lists first, and each list is cut
//! into segments: about one row in `2^bits` starts one, picked by a hash of the row that also
//! names the start's slot ([`segment_slot`]). Then:
//!
//! 1. [`scatter_nd_exact_segments`], one unit per update element: the unit of each row that
//!    heads its list or starts a segment walks the segment (to the next start or the list's
//!    end), adding its terms exactly. A start stores its sum in its slot, with a link to the
//!    next start. A head whose walk reached the list's end (a target with fewer rows than a
//!    segment, most of them) adds the current value, rounds and writes at once, with the
//!    hardware's `f32` add for a sole row where that is the exact sum rounded; any other head
//!    keeps its sum at the slot of the start it stopped at and lists that start.
//! 2. [`scatter_nd_exact_jump`], `log4(starts)` rounds, one unit per slot and column: pointer
//!    jumping along the links, four segments joined a round, after which each start's sum is
//!    its whole chain's.
//! 3. [`scatter_nd_exact_finish`], over the listed starts: the head's sum and its chain's, with
//!    the current value, rounded and written.
//!
//! Integer sums are order-free, so where segments start changes no bit. No walk is much longer
//! than a segment and no chain is walked whatever the duplication, no atomic touches the sums,
//! and the slots take `words` words for each start row and column (about `1 / 2^bits` of the
//! update elements).

use cubecl::prelude::*;

use super::columns::{field_in, field_of, write_field};
use super::exact::{
    SumFormat, add_signed_term_at, add_signed_words, hardware_sum, observe, round_signed_sum, widen,
};
use super::indices::SKIPPED;

/// The segment slot of `row` under `mask` (`2^k - 1` with `2^k` at least the rows): a
/// multiplicative hash, one to one on `0..2^k`. A row starts a segment where its slot is below
/// the launch's `starts`, so slots below `starts` name the starts alone.
#[cube]
fn segment_slot(row: u32, mask: u32) -> u32 {
    (row * 0x9E37_79B1u32) & mask
}

/// A zeroed two's-complement sum of `format`'s words.
#[cube]
fn zero_sum(#[comptime] format: SumFormat) -> Array<u32> {
    let words = comptime!(format.sum_words());
    let mut sum = Array::<u32>::new(words);
    #[unroll]
    for i in 0..words {
        sum[i] = 0u32;
    }
    sum
}

/// One step of [`walk_segment`] at row `member`, whose term's word `word` and link `link` are
/// loaded: loads the word and link of the row it links to (where the segment stops there, of
/// `member` again, whose link is then the stop's) and adds `member`'s term to `sum`. Returns
/// whether the segment stops after `member`, the next step's row, word and link, and
/// `member`'s term.
#[cube]
fn walk_step(
    sum: &mut Array<u32>,
    updates: &[u32],
    next: &[u32],
    at: (usize, u32, u32),
    place: (usize, usize),
    cut: (u32, u32),
    #[comptime] format: SumFormat,
) -> (bool, (usize, u32, u32), u32) {
    let (member, word, link) = at;
    let (col, slice) = place;
    let (mask, starts) = cut;
    let stop = link == 0u32 || segment_slot(link - 1u32, mask) < starts;
    let following = select(stop, member, (link - 1u32) as usize);
    let (following_at, _, _) = field_of(following * slice + col, format);
    let loaded = (following, updates[following_at], next[following]);
    let term = u32::reinterpret(widen(field_in(word, member * slice + col, format), format));
    add_signed_term_at(sum, 0usize, term, format);
    (stop, loaded, term)
}

/// Adds to `sum` column `col` of the rows of the segment that row `first` starts, following
/// `next` to the list's end or the next row whose slot is below `starts`; returns the terms'
/// special values and the link where the walk stopped (0 at the list's end). Every link points
/// to a row pushed earlier, so the walk ends. Each step loads the next row's word and link
/// before adding its own term, so that a step waits for one link's load, not for a link's and
/// then a term's; two steps a turn let the compiler keep each loaded word where it lands.
#[cube]
fn walk_segment(
    sum: &mut Array<u32>,
    updates: &[u32],
    next: &[u32],
    first: usize,
    place: (usize, usize),
    cut: (u32, u32),
    #[comptime] format: SumFormat,
) -> (u32, u32) {
    let (col, slice) = place;
    let (first_at, _, _) = field_of(first * slice + col, format);
    // The row a step adds, its word and its link; after the stop, the stop's link.
    let mut at = (first, updates[first_at], next[first]);
    let mut flags = 0u32;
    loop {
        let (stop, loaded, term) = walk_step(sum, updates, next, at, place, cut, format);
        flags = observe(flags, term);
        at = loaded;
        if stop {
            break;
        }
        let (stop, loaded, term) = walk_step(sum, updates, next, at, place, cut, format);
        flags = observe(flags, term);
        at = loaded;
        if stop {
            break;
        }
    }
    let (_, _, stopped) = at;
    (flags, stopped)
}

/// Where output element `element` lies (see [`field_of`]) and its current bits.
#[cube]
fn current_bits(
    output: &mut [Atomic<u32>],
    element: usize,
    #[comptime] format: SumFormat,
) -> (usize, u32, u32) {
    let (word, shift, mask) = field_of(element, format);
    // Only this unit writes this field, so the load sees its final input bits.
    (word, shift, (output[word].load() >> shift) & mask)
}

/// Writes output element `element` as the exact sum `sum` (terms' special values `flags`)
/// plus its current value, rounded to `format`.
#[cube]
fn write_sum(
    output: &mut [Atomic<u32>],
    element: usize,
    sum: &Array<u32>,
    flags: u32,
    #[comptime] format: SumFormat,
) {
    let words = comptime!(format.sum_words());
    let (word, shift, old) = current_bits(output, element, format);
    let current = u32::reinterpret(widen(old, format));
    let mut total = Array::<u32>::new(words);
    #[unroll]
    for i in 0..words {
        total[i] = sum[i];
    }
    add_signed_term_at(&mut total, 0usize, current, format);
    let bits = round_signed_sum(&total, 0usize, observe(flags, current), format);
    write_field(output, word, shift, old, bits);
}

/// A start's link that says its segment's sum in this buffer is its whole chain's (see
/// [`scatter_nd_exact_jump`]); 0 says both buffers hold it, or no start holds the slot.
const FINAL: u32 = u32::MAX;

/// Where the parts of a buffer of chains start: a link per slot (at 0), then a word of flags
/// and `words` words of sum per entry (slot and column), `entries` of them in slots of `slice`.
/// One buffer holds all three, so that each kernel of the sum binds at most 8 storage buffers
/// with CubeCL's own (WebGPU's default limit).
#[cube]
fn chain_parts(entries: usize, slice: usize) -> (usize, usize) {
    let flags_at = entries / slice;
    (flags_at, flags_at + entries)
}

/// Where the parts of the heads' buffer start: the count of listed starts (at 0), the listed
/// starts (a word per row, `rows` of them), then a word of flags and `words` words of sum per
/// entry, as in `chain_parts`.
#[cube]
fn waiting_parts(rows: usize, entries: usize) -> (usize, usize, usize) {
    let work_at = 1usize;
    let flags_at = work_at + rows;
    (work_at, flags_at, flags_at + entries)
}

/// Step 1: the unit of each update element whose row heads its list or starts a segment walks
/// the segment. A start (not a head) stores the segment's sum and flags in its slot of
/// `chains` (see `chain_parts`), and its column 0 unit the next start's link (or `u32::MAX`
/// at the chain's end) as the slot's link; a head whose walk reached the list's end writes the
/// target element's result; any other head stores its sum and flags at the slot of the start
/// it stopped at in `waiting` (see `waiting_parts`), and its column 0 unit lists that start
/// there for [`scatter_nd_exact_finish()`].
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_exact_segments(
    output: &mut [Atomic<u32>],
    chains: &mut [u32],
    waiting: &mut [Atomic<u32>],
    updates: &[u32],
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    entries: usize,
    mask: u32,
    starts: u32,
    #[comptime] format: SumFormat,
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let row = position / slice;
    let col = position % slice;
    let target = targets[row];
    if target == SKIPPED {
        terminate!();
    }
    let head = (heads[target as usize] - 1u32) as usize == row;
    let slot = segment_slot(row as u32, mask);
    if !head && slot >= starts {
        terminate!();
    }
    let element = target as usize * slice + col;
    if comptime!(format == SumFormat::F32) {
        // A sole row (the head was pushed last: its link is the rest of the list).
        if head && next[row] == 0u32 {
            let (word, shift, old) = current_bits(output, element, format);
            let (exact, bits) = hardware_sum(old, updates[position]);
            if exact {
                write_field(output, word, shift, old, bits);
                terminate!();
            }
        }
    }
    let words = comptime!(format.sum_words());
    let mut sum = zero_sum(format);
    let (flags, stop) = walk_segment(
        &mut sum,
        updates,
        next,
        row,
        (col, slice),
        (mask, starts),
        format,
    );
    if !head {
        let entry = slot as usize * slice + col;
        let (flags_at, sums_at) = chain_parts(entries, slice);
        chains[flags_at + entry] = flags;
        #[unroll]
        for i in 0..words {
            chains[sums_at + entry * words + i] = sum[i];
        }
        if col == 0usize {
            chains[slot as usize] = select(stop != 0u32, stop, FINAL);
        }
    } else if stop == 0u32 {
        write_sum(output, element, &sum, flags, format);
    } else {
        // The head's segment waits, at the slot of the start it stopped at.
        let first = stop - 1u32;
        let entry = segment_slot(first, mask) as usize * slice + col;
        let (work_at, flags_at, sums_at) = waiting_parts(units / slice, entries);
        waiting[flags_at + entry].store(flags);
        #[unroll]
        for i in 0..words {
            waiting[sums_at + entry * words + i].store(sum[i]);
        }
        if col == 0usize {
            let listed = waiting[0usize].fetch_add(1u32) as usize;
            // Each head lists one start, so the count stays below the rows.
            if listed < units / slice {
                waiting[work_at + listed].store(first);
            }
        }
    }
}

/// How many segments a round of [`scatter_nd_exact_jump()`] joins into one: a start adds the
/// sums of the next `JUMP_FAN - 1` starts of its chain. Four moves the fewest bytes over the
/// rounds (`(fan + 1) / log2(fan)` sums per start and doubling of the span: 2.5, against 3 for
/// pairs) in half the launches of pairs.
pub const JUMP_FAN: usize = 4;

/// Step 2, one round of pointer jumping, one unit per slot below `starts` and column: each
/// start with a link adds the sums of the next [`JUMP_FAN`]` - 1` starts along the links and
/// takes the link of the last, so that after `r` rounds a start's sum holds `JUMP_FAN^r`
/// segments of its chain (or the whole chain, `u32::MAX`); reads one buffer of chains (see
/// `chain_parts`) and writes the other. A sum that is final in the buffer read is copied (its
/// link 0 then), and a slot no start holds (link 0) is left alone.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_exact_jump(
    chains: &[u32],
    chains_out: &mut [u32],
    slice: usize,
    entries: usize,
    mask: u32,
    #[comptime] format: SumFormat,
) {
    let entry = ABSOLUTE_POS;
    if entry >= entries {
        terminate!();
    }
    let slot = entry / slice;
    let col = entry % slice;
    let link = chains[slot];
    if link == 0u32 {
        terminate!();
    }
    let (flags_at, sums_at) = chain_parts(entries, slice);
    let words = comptime!(format.sum_words());
    let mut sum = Array::<u32>::new(words);
    #[unroll]
    for i in 0..words {
        sum[i] = chains[sums_at + entry * words + i];
    }
    let mut flags = chains[flags_at + entry];
    let mut joined = 0u32;
    if link != FINAL {
        let mut hop = link;
        #[unroll]
        for _ in 1..JUMP_FAN {
            if hop != FINAL {
                let other = segment_slot(hop - 1u32, mask) as usize;
                let other_entry = other * slice + col;
                add_signed_words(&mut sum, chains, sums_at + other_entry * words, format);
                flags |= chains[flags_at + other_entry];
                // A start whose link is 0 holds its whole chain in both buffers.
                let after = chains[other];
                hop = select(after == 0u32, FINAL, after);
            }
        }
        joined = hop;
    }
    #[unroll]
    for i in 0..words {
        chains_out[sums_at + entry * words + i] = sum[i];
    }
    chains_out[flags_at + entry] = flags;
    if col == 0usize {
        chains_out[slot] = joined;
    }
}

/// Step 3, over the starts that step 1 listed in `waiting` (each the first start after a head
/// whose list has several segments) and each column, a grid-stride loop: the head's segment
/// (in `waiting`, see `waiting_parts`) and the whole chain's sum (in `chains`), both at the
/// start's slot, with the current value, rounded and written.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_exact_finish(
    output: &mut [Atomic<u32>],
    chains: &[u32],
    waiting: &[u32],
    targets: &[u32],
    slice: usize,
    rows: usize,
    entries: usize,
    mask: u32,
    #[comptime] format: SumFormat,
) {
    let words = comptime!(format.sum_words());
    let (flags_at, sums_at) = chain_parts(entries, slice);
    let (work_at, head_flags_at, head_sums_at) = waiting_parts(rows, entries);
    let listed = waiting[0usize] as usize;
    let total = select(listed < rows, listed, rows) * slice;
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut unit = ABSOLUTE_POS;
    while unit < total {
        let first = waiting[work_at + unit / slice];
        let col = unit % slice;
        let entry = segment_slot(first, mask) as usize * slice + col;
        let mut sum = Array::<u32>::new(words);
        #[unroll]
        for i in 0..words {
            sum[i] = waiting[head_sums_at + entry * words + i];
        }
        add_signed_words(&mut sum, chains, sums_at + entry * words, format);
        let flags = waiting[head_flags_at + entry] | chains[flags_at + entry];
        let element = targets[first as usize] as usize * slice + col;
        write_sum(output, element, &sum, flags, format);
        unit += stride;
    }
}
