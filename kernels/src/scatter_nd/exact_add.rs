//! Deterministic float `Add` ([`ScatterStrategy::Deterministic`](super::ScatterStrategy)): each
//! target element becomes the exact sum of its value and its updates, rounded once
//! ([`super::exact`]). The rows are linked into per-target lists first (for the head row of
//! each target and whether it is the only row); then, one unit per update element:
//!
//! 1. [`scatter_nd_exact_clear`]: the scratch of each target with several rows is zeroed (it
//!    lives at the target's head row, so scratch grows with the updates, not the output, and
//!    the launcher runs the steps over ranges of head positions, `entries` at a time, so that
//!    no scratch buffer is larger than the runtime binds);
//! 2. [`scatter_nd_exact_sum`]: every update on its format's fixed grid, added to a magnitude
//!    with 32-bit atomic adds whose carries are added to the word above, and its special values
//!    ORed into the entry's flags (integer sums and ORs are order-free);
//! 3. [`scatter_nd_exact_finish`]: each head adds the current value and
//!    rounds. A target with one row skips the scratch: its head sums the two terms alone.
//!
//! No unit walks a list, so no chain of dependent loads grows with the duplication, and every
//! loop is bounded by a constant (CPU drivers such as llvmpipe cut long loops short).

use cubecl::prelude::*;

use super::exact::{SumFormat, add_term, observe, round_sum, term_parts};
use super::indices::SKIPPED;
use super::packed::f16_to_f32;

/// Where an update element stands in its target's list: the output element it targets, its
/// scratch entry (the target's head position, `first` subtracted), whether it is the head,
/// whether the head is the list's only row, and whether the unit takes part in this range of
/// head positions (`first` to `first + entries`; a skipped row never does).
#[derive(CubeType)]
struct Role {
    element: usize,
    entry: usize,
    head: bool,
    sole: bool,
    active: bool,
}

#[cube]
fn role(
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    position: usize,
    slice: usize,
    first: usize,
    entries: usize,
) -> Role {
    let row = position / slice;
    let col = position % slice;
    let target = targets[row];
    let mut role = Role {
        element: 0usize,
        entry: 0usize,
        head: false,
        sole: false,
        active: false,
    };
    if target != SKIPPED {
        let head_row = (heads[target as usize] - 1u32) as usize;
        let head_position = head_row * slice + col;
        role.element = target as usize * slice + col;
        role.head = head_row == row;
        // The head was pushed last, so its link is the rest of the list: none for a sole row.
        role.sole = next[head_row] == 0u32;
        role.active = head_position >= first && head_position < first + entries;
        if role.active {
            role.entry = head_position - first;
        }
    }
    role
}

/// Where element `index` of `format` lies in 32-bit words: its word, the shift of its field and
/// the field's mask (`f32`: the whole word; `f16`/`bf16`: two fields to a word).
#[cube]
fn field_of(index: usize, #[comptime] format: SumFormat) -> (usize, u32, u32) {
    let per_word = comptime!(if format == SumFormat::F32 {
        1usize
    } else {
        2usize
    });
    let mask = comptime!(if format == SumFormat::F32 {
        0xFFFF_FFFFi64
    } else {
        0xFFFFi64
    });
    (
        index / per_word,
        ((index % per_word) as u32) * 16u32,
        u32::new(mask),
    )
}

/// The `f32` bits of element `index` of `format` in `words` (see [`field_of`]).
#[cube]
fn term_at(words: &[u32], index: usize, #[comptime] format: SumFormat) -> u32 {
    let (word, shift, mask) = field_of(index, format);
    u32::reinterpret(widen((words[word] >> shift) & mask, format))
}

/// The `f32` bits of a typed element (`f16` and `bf16` widen exactly).
#[cube]
pub(super) fn typed_term<T: Numeric>(value: T) -> u32 {
    u32::reinterpret(f32::cast_from(value))
}

/// The `f32` value of `format` bits (exact).
#[cube]
pub(super) fn widen(bits: u32, #[comptime] format: SumFormat) -> f32 {
    let mut value = f32::reinterpret(bits);
    if comptime!(format == SumFormat::F16) {
        value = f16_to_f32(bits);
    } else if comptime!(format == SumFormat::BF16) {
        value = f32::reinterpret(bits << 16u32);
    }
    value
}

/// Step 1: zeroes the scratch entry of each head row's element whose list has several rows.
/// Scratch per entry lies in three buffers, so that none is larger than a binding allows:
/// `flags` holds one word (the special values seen, see `exact.rs`), `positive` and `negative`
/// the magnitudes ([`SumFormat::sum_words`] words each, least significant first).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_exact_clear(
    flags: &mut [u32],
    positive: &mut [u32],
    negative: &mut [u32],
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    first: usize,
    entries: usize,
    #[comptime] format: SumFormat,
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let words = comptime!(format.sum_words());
    let role = role(heads, next, targets, position, slice, first, entries);
    if role.active && role.head && !role.sole {
        flags[role.entry] = 0u32;
        #[unroll]
        for i in 0..words {
            positive[role.entry * words + i] = 0u32;
            negative[role.entry * words + i] = 0u32;
        }
    }
}

/// Adds `w0` at word `k` and `w1` at word `k + 1` of the `words`-word integer at
/// `acc[base..]` with atomic adds; each add that wraps carries one into the word above.
#[cube]
fn atomic_add_words(
    acc: &mut [Atomic<u32>],
    base: usize,
    parts: (u32, u32, u32),
    #[comptime] words: usize,
) {
    let (k, w0, w1) = parts;
    let mut carry = 0u32;
    let n = comptime!(words as u32);
    #[unroll]
    for i in 0..n {
        let mut piece = carry;
        if k == i {
            piece += w0;
        }
        if k + 1u32 == i {
            // `w1` is below 2^24, so adding a carry never wraps.
            piece += w1;
        }
        carry = 0u32;
        if piece != 0u32 {
            let old = acc[base + i as usize].fetch_add(piece);
            let new = old + piece;
            carry = u32::cast_from(new < piece);
        }
    }
}

/// Step 2: adds the update to its entry (targets with several rows).
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_exact_sum(
    flags: &mut [Atomic<u32>],
    positive: &mut [Atomic<u32>],
    negative: &mut [Atomic<u32>],
    updates: &[u32],
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    first: usize,
    entries: usize,
    #[comptime] format: SumFormat,
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let role = role(heads, next, targets, position, slice, first, entries);
    if !role.active || role.sole {
        terminate!();
    }
    let term = term_at(updates, position, format);
    let seen = observe(0u32, term);
    // Most terms bring no flag the entry lacks: a load, not an atomic.
    if (flags[role.entry].load() & seen) != seen {
        flags[role.entry].fetch_or(seen);
    }
    let (sign, k, w0, w1) = term_parts(term, format);
    let words = comptime!(format.sum_words());
    let base = role.entry * words;
    if sign != 0u32 {
        atomic_add_words(negative, base, (k, w0, w1), words);
    } else {
        atomic_add_words(positive, base, (k, w0, w1), words);
    }
}

/// The rounded sum of a head's target element, in `format`'s bits: the current value `current`
/// plus, for a sole row, its update, or else the entry's scratch (`flags` and the sums).
#[cube]
fn finished_bits(
    flags: &[u32],
    positive_sums: &[u32],
    negative_sums: &[u32],
    entry: usize,
    sole: bool,
    current: u32,
    update: u32,
    #[comptime] format: SumFormat,
) -> u32 {
    // A sole row starts from nothing and adds its update; otherwise the entry's sums.
    let words = comptime!(format.sum_words());
    let mut positive = Array::<u32>::new(words);
    let mut negative = Array::<u32>::new(words);
    #[unroll]
    for i in 0..words {
        positive[i] = 0u32;
        negative[i] = 0u32;
    }
    let mut seen = 0u32;
    if sole {
        seen = observe(seen, update);
        add_term(&mut positive, &mut negative, update, format);
    } else {
        seen = flags[entry];
        #[unroll]
        for i in 0..words {
            positive[i] = positive_sums[entry * words + i];
            negative[i] = negative_sums[entry * words + i];
        }
    }
    seen = observe(seen, current);
    add_term(&mut positive, &mut negative, current, format);
    round_sum(&positive, &negative, seen, format)
}

/// Step 3: each head row's unit writes its target element's rounded sum, as bits: for
/// `f16`/`bf16` two to a word it XORs the change of its field into the word, which leaves the
/// other field as its own unit sets it.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_exact_finish(
    output: &mut [Atomic<u32>],
    flags: &[u32],
    positive: &[u32],
    negative: &[u32],
    updates: &[u32],
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    first: usize,
    entries: usize,
    #[comptime] format: SumFormat,
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let role = role(heads, next, targets, position, slice, first, entries);
    if !role.active || !role.head {
        terminate!();
    }
    let (word, shift, mask) = field_of(role.element, format);
    // Only this unit writes this field, so the load sees its final input bits.
    let old = (output[word].load() >> shift) & mask;
    let current = u32::reinterpret(widen(old, format));
    let update = term_at(updates, position, format);
    let bits = finished_bits(
        flags, positive, negative, role.entry, role.sole, current, update, format,
    );
    if bits != old {
        output[word].fetch_xor((bits ^ old) << shift);
    }
}
