//! The sampling kernel: one cube per row, every step of the row's filters and its draw in one
//! launch (see the module docs for the steps and their cost).
//!
//! Every barrier sits in the kernel's top-level control flow, so the browsers' uniformity
//! analysis accepts it: a step a row does not need runs its loops zero times.

use cubecl::prelude::*;

use super::math::{
    add_wide, exp_nonpositive, flushed, gumbel, is_infinite, is_nan, less_wide, ln_wide, mul_wide,
    order_key, reciprocal, row_key,
};
use crate::fence::unfused;

/// Units of the cube that samples one row (WebGPU's default limit).
pub const SAMPLE_UNITS: usize = 256;

/// Bins of an 8-bit digit.
const BINS: usize = 256;

/// `31 * ln(2)`: masses count units of `2^-31` of the largest token's weight.
const LN_2_31: f32 = 21.487_562;

/// The bits of `-inf` and of the canonical quiet NaN.
const NEG_INFINITY: u32 = 0xFF80_0000;
const NAN: u32 = 0x7FC0_0000;

/// Words of the row's shared state.
const STATE_WORDS: usize = 16;
/// The largest logit's key (0: none) and its index.
const BEST_KEY: usize = 0;
const BEST_AT: usize = 1;
/// Top-k: on (1) or off, the key prefix found, and how many of the `k` are still to find.
const K_ON: usize = 2;
const K_PREFIX: usize = 3;
const K_REMAINING: usize = 4;
/// Top-p: the target mass `P` (two words), the key prefix, the mass above it (two words) and
/// the count of its bin.
const P_HIGH: usize = 6;
const P_LOW: usize = 7;
const P_PREFIX: usize = 8;
const ABOVE_HIGH: usize = 9;
const ABOVE_LOW: usize = 10;
const TIES: usize = 11;
/// Ties of the cut key kept (the first ones by index), the index prefix found and how many are
/// still to find; the last kept index.
const TIES_KEPT: usize = 12;
const INDEX_PREFIX: usize = 13;
const INDEX_REMAINING: usize = 14;
const LAST_INDEX: usize = 15;

/// A row's options as every unit reads them.
#[derive(CubeType, Clone, Copy)]
struct RowOptions {
    greedy: bool,
    inv_t: f32,
    k: u32,
    p24: u32,
    p_on: bool,
    min_p: f32,
    key: u32,
}

#[cube]
fn row_options(
    temperature: &[f32],
    top_k: &[u32],
    top_p: &[f32],
    min_p: &[f32],
    seeds: &[u32],
    row: usize,
    step_low: u32,
    step_high: u32,
    opaque: u32,
) -> RowOptions {
    let t = temperature[row];
    let t_bits = u32::reinterpret(t);
    // NaN, negative, zero or subnormal: greedy.
    let greedy = is_nan(t) || (t_bits >> 31u32) == 1u32 || t_bits < 0x0080_0000u32;
    let mut inv_t = 0.0f32;
    if !greedy && !is_infinite(t) {
        inv_t = reciprocal(t, opaque);
    }
    let p = top_p[row];
    // NaN or at least 1: off; at most 0 keeps the first token only.
    let p_on = !is_nan(p) && p < 1.0f32;
    let mut p24 = 0u32;
    if p_on && p > 0.0f32 {
        p24 = u32::cast_from(p * 16_777_216.0f32);
    }
    let m = min_p[row];
    let mut min_p = select(is_nan(m), 0.0f32, m);
    min_p = select(min_p > 1.0f32, 1.0f32, min_p);
    RowOptions {
        greedy,
        inv_t,
        k: top_k[row],
        p24,
        p_on,
        min_p,
        key: row_key(seeds[2 * row], seeds[2 * row + 1], step_low, step_high),
    }
}

/// `z / T` as `z * (1 / T)`, infinities kept, subnormals flushed.
#[cube]
fn scaled(z: f32, inv_t: f32, opaque: u32) -> f32 {
    select(is_infinite(z), z, flushed(unfused(z * inv_t, opaque)))
}

/// `y - y_max`, where `y_max` is the row's largest scaled logit: with `y_max = +inf` the
/// infinite tokens share the mass (0) and the rest have none (`-inf`).
#[cube]
fn offset(y: f32, y_max: f32, opaque: u32) -> f32 {
    let mut d = y - y_max;
    if is_infinite(y_max) {
        d = select(
            is_infinite(y) && y > 0.0f32,
            0.0f32,
            f32::reinterpret(NEG_INFINITY),
        );
    }
    flushed(unfused(d, opaque))
}

/// A token's mass: its weight `e^d` in units of `2^-31` (the largest token's is `2^31`).
#[cube]
fn mass(d: f32, opaque: u32) -> u32 {
    mass_of_weight(exp_nonpositive(d, opaque))
}

/// [`mass`] of a weight `e^d` already computed.
#[cube]
fn mass_of_weight(weight: f32) -> u32 {
    u32::cast_from(weight * 2_147_483_648.0f32)
}

/// The float a key was made from (see [`order_key`]).
#[cube]
fn key_value(key: u32) -> f32 {
    f32::reinterpret(select((key >> 31u32) == 1u32, key & 0x7FFF_FFFFu32, !key))
}

/// Samples one token per row: row `CUBE_POS` of `logits` (`[rows, vocab]`, `f32`) with its
/// options, writing its token (`-1`: nothing drawable) to `results[row]` and the bits of its
/// log-probability to `results[logprobs_at + row]`: one output buffer, so that the kernel binds
/// no more than WebGPU's 8 storage buffers.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn sample_rows(
    logits: &[f32],
    temperature: &[f32],
    top_k: &[u32],
    top_p: &[f32],
    min_p: &[f32],
    seeds: &[u32],
    results: &mut [u32],
    rows: usize,
    logprobs_at: usize,
    vocab: usize,
    step_low: u32,
    step_high: u32,
    opaque: u32,
) {
    let row = CUBE_POS;
    if row >= rows {
        terminate!();
    }
    let unit = UNIT_POS as usize;
    let base = row * vocab;
    let options = row_options(
        temperature,
        top_k,
        top_p,
        min_p,
        seeds,
        row,
        step_low,
        step_high,
        opaque,
    );
    let mut state = Shared::<[u32]>::new_slice(STATE_WORDS);
    let mut keys = Shared::<[u32]>::new_slice(SAMPLE_UNITS);
    let mut places = Shared::<[u32]>::new_slice(SAMPLE_UNITS);
    let counts = Shared::<[Atomic<u32>]>::new_slice(BINS);
    let lows = Shared::<[Atomic<u32>]>::new_slice(BINS);
    let highs = Shared::<[Atomic<u32>]>::new_slice(BINS);

    // The largest logit and its lowest index; NaN never counts.
    let mut best = 0u32;
    let mut best_at = 0u32;
    let mut i = unit;
    while i < vocab {
        let z = logits[base + i];
        if !is_nan(z) {
            let key = order_key(z);
            if key > best {
                best = key;
                best_at = u32::cast_from(i);
            }
        }
        i += SAMPLE_UNITS;
    }
    keys[unit] = best;
    places[unit] = best_at;
    sync_cube();
    if unit == 0 {
        let (key, at) = cube_best(&keys, &places);
        state[BEST_KEY] = key;
        state[BEST_AT] = at;
        // Top-k is off at 0 and from the vocabulary's size (a negative `k` is above it).
        let k_on = !options.greedy && options.k != 0u32 && options.k < u32::cast_from(vocab);
        state[K_ON] = u32::cast_from(k_on);
        state[K_PREFIX] = 0u32;
        state[K_REMAINING] = options.k;
        state[P_PREFIX] = 0u32;
        state[ABOVE_HIGH] = 0u32;
        state[ABOVE_LOW] = 0u32;
        state[INDEX_PREFIX] = 0u32;
        state[LAST_INDEX] = 0xFFFF_FFFFu32;
    }
    sync_cube();
    let best_key = state[BEST_KEY];
    // Nothing to draw: no logit, or the largest is -inf (its key is 0x007F_FFFF).
    let drawable = best_key > 0x007F_FFFFu32;
    let sampling = drawable && !options.greedy;
    let y_max = scaled(key_value(best_key), options.inv_t, opaque);

    // Top-k: the k-th largest scaled key, 8 bits at a time from the top.
    #[unroll]
    for pass in 0..4u32 {
        let shift = comptime!(24u32 - 8u32 * pass);
        let mask = comptime!(if pass == 0 {
            0u32
        } else {
            u32::MAX << (32 - 8 * pass)
        });
        counts[unit].store(0u32);
        sync_cube();
        let on = sampling && state[K_ON] == 1u32;
        let prefix = state[K_PREFIX];
        let end = select(on, vocab, 0usize);
        let mut i = unit;
        while i < end {
            let z = logits[base + i];
            if !is_nan(z) {
                let key = order_key(scaled(z, options.inv_t, opaque));
                if (key & mask) == prefix {
                    counts[((key >> shift) & 255u32) as usize].fetch_add(1u32);
                }
            }
            i += SAMPLE_UNITS;
        }
        sync_cube();
        if unit == 0 && on {
            // The bin, from the top, where the count reaches the remaining `k`.
            let found = pick_digit(&counts, &mut state, K_PREFIX, K_REMAINING, shift, true);
            // Fewer than `k` logits that are not NaN: every one is kept.
            if !found {
                state[K_ON] = 0u32;
            }
        }
        sync_cube();
    }
    let k_on = sampling && state[K_ON] == 1u32;
    let kth = state[K_PREFIX];

    // Top-p: the cut key, where the mass of the keys above it first stops being below P.
    #[unroll]
    for pass in 0..4u32 {
        let shift = comptime!(24u32 - 8u32 * pass);
        let mask = comptime!(if pass == 0 {
            0u32
        } else {
            u32::MAX << (32 - 8 * pass)
        });
        counts[unit].store(0u32);
        lows[unit].store(0u32);
        highs[unit].store(0u32);
        sync_cube();
        let on = sampling && options.p_on;
        let prefix = state[P_PREFIX];
        let end = select(on, vocab, 0usize);
        let mut i = unit;
        while i < end {
            let z = logits[base + i];
            if !is_nan(z) {
                let y = scaled(z, options.inv_t, opaque);
                let key = order_key(y);
                if (key & mask) == prefix && (!k_on || key >= kth) {
                    let bin = ((key >> shift) & 255u32) as usize;
                    let q = mass(offset(y, y_max, opaque), opaque);
                    counts[bin].fetch_add(1u32);
                    let old = lows[bin].fetch_add(q);
                    if old > 0xFFFF_FFFFu32 - q {
                        highs[bin].fetch_add(1u32);
                    }
                }
            }
            i += SAMPLE_UNITS;
        }
        sync_cube();
        if unit == 0 && on {
            if comptime!(pass == 0) {
                // P = S * floor(p * 2^24) / 2^24, at least 1: the first token is always kept.
                let mut s_high = 0u32;
                let mut s_low = 0u32;
                for b in 0..BINS {
                    let (h, l) = add_wide(s_high, s_low, highs[b].load(), lows[b].load());
                    s_high = h;
                    s_low = l;
                }
                let (low_high, low_low) = mul_wide(s_low, options.p24);
                let (high_high, high_low) = mul_wide(s_high, options.p24);
                let (top, middle) = add_wide(high_high, high_low, 0u32, low_high);
                // (top, middle, low_low) >> 24.
                let p_high = (top << 8u32) | (middle >> 24u32);
                let mut p_low = (middle << 8u32) | (low_low >> 24u32);
                if p_high == 0u32 && p_low == 0u32 {
                    p_low = 1u32;
                }
                state[P_HIGH] = p_high;
                state[P_LOW] = p_low;
            }
            let p_high = state[P_HIGH];
            let p_low = state[P_LOW];
            let mut above_high = state[ABOVE_HIGH];
            let mut above_low = state[ABOVE_LOW];
            let mut going = true;
            for b in 0..BINS {
                let bin = BINS - 1 - b;
                let count = counts[bin].load();
                if going && count > 0u32 {
                    if less_wide(above_high, above_low, p_high, p_low) {
                        state[P_PREFIX] = prefix | (u32::cast_from(bin) << shift);
                        state[ABOVE_HIGH] = above_high;
                        state[ABOVE_LOW] = above_low;
                        state[TIES] = count;
                        let (h, l) =
                            add_wide(above_high, above_low, highs[bin].load(), lows[bin].load());
                        above_high = h;
                        above_low = l;
                    } else {
                        going = false;
                    }
                }
            }
        }
        sync_cube();
    }
    let p_on = sampling && options.p_on;
    let cut = state[P_PREFIX];

    // The cut key's ties: the first `c` by index are kept, where `c` counts the ties `t` with
    // `above + t * q < P`.
    if unit == 0 && p_on {
        let ties = state[TIES];
        let q = mass(offset(key_value(cut), y_max, opaque), opaque);
        let above_high = state[ABOVE_HIGH];
        let above_low = state[ABOVE_LOW];
        let p_high = state[P_HIGH];
        let p_low = state[P_LOW];
        // The largest t < ties with above + t * q < P, by bisection (t = 0 always is).
        let mut low = 0u32;
        let mut high = ties - 1u32;
        while low < high {
            let t = high - ((high - low) >> 1u32);
            let (m_high, m_low) = mul_wide(t, q);
            let (s_high, s_low) = add_wide(m_high, m_low, above_high, above_low);
            if less_wide(s_high, s_low, p_high, p_low) {
                low = t;
            } else {
                high = t - 1u32;
            }
        }
        state[TIES_KEPT] = low + 1u32;
        state[INDEX_REMAINING] = low + 1u32;
    }
    sync_cube();
    let cut_ties = p_on && state[TIES_KEPT] < state[TIES];
    #[unroll]
    for pass in 0..3u32 {
        let shift = comptime!(16u32 - 8u32 * pass);
        let mask = comptime!(if pass == 0 {
            0u32
        } else {
            u32::MAX << (24 - 8 * pass)
        });
        counts[unit].store(0u32);
        sync_cube();
        let prefix = state[INDEX_PREFIX];
        let end = select(cut_ties, vocab, 0usize);
        let mut i = unit;
        while i < end {
            let z = logits[base + i];
            let index = u32::cast_from(i);
            if !is_nan(z)
                && order_key(scaled(z, options.inv_t, opaque)) == cut
                && (index & mask) == prefix
            {
                counts[((index >> shift) & 255u32) as usize].fetch_add(1u32);
            }
            i += SAMPLE_UNITS;
        }
        sync_cube();
        if unit == 0 && cut_ties {
            // The bin, from the lowest index, where the count reaches the remaining ties.
            pick_digit(
                &counts,
                &mut state,
                INDEX_PREFIX,
                INDEX_REMAINING,
                shift,
                false,
            );
            if comptime!(pass == 2) {
                state[LAST_INDEX] = state[INDEX_PREFIX];
            }
        }
        sync_cube();
    }
    let last_index = state[LAST_INDEX];

    // The draw: the largest `d + g` over the kept tokens (Gumbel-max), lowest index on ties,
    // and the kept tokens' mass.
    let mut best = 0u32;
    let mut best_at = 0u32;
    let mut s_high = 0u32;
    let mut s_low = 0u32;
    let end = select(sampling, vocab, 0usize);
    let mut i = unit;
    while i < end {
        let z = logits[base + i];
        let index = u32::cast_from(i);
        if !is_nan(z) {
            let y = scaled(z, options.inv_t, opaque);
            let key = order_key(y);
            let mut kept = !k_on || key >= kth;
            kept = kept && (!p_on || key > cut || (key == cut && index <= last_index));
            let d = offset(y, y_max, opaque);
            let e = exp_nonpositive(d, opaque);
            kept = kept && e >= options.min_p;
            if kept {
                let (h, l) = add_wide(s_high, s_low, 0u32, mass_of_weight(e));
                s_high = h;
                s_low = l;
                // -inf is never drawn.
                if u32::reinterpret(d) != NEG_INFINITY {
                    let w = order_key(d + gumbel(options.key, index, opaque));
                    if w > best {
                        best = w;
                        best_at = index;
                    }
                }
            }
        }
        i += SAMPLE_UNITS;
    }
    keys[unit] = best;
    places[unit] = best_at;
    sync_cube();
    let mut draw_key = 0u32;
    let mut draw_at = 0u32;
    if unit == 0 {
        let (key, at) = cube_best(&keys, &places);
        draw_key = key;
        draw_at = at;
    }
    sync_cube();
    keys[unit] = s_high;
    places[unit] = s_low;
    sync_cube();
    if unit == 0 {
        let mut token = i32::new(-1);
        let mut logprob = f32::reinterpret(NAN);
        if drawable && options.greedy {
            token = i32::cast_from(state[BEST_AT]);
            logprob = 0.0f32;
        }
        if sampling && draw_key != 0u32 {
            let mut total_high = 0u32;
            let mut total_low = 0u32;
            for u in 0..SAMPLE_UNITS {
                let (h, l) = add_wide(total_high, total_low, keys[u], places[u]);
                total_high = h;
                total_low = l;
            }
            let z = logits[base + draw_at as usize];
            let d = offset(scaled(z, options.inv_t, opaque), y_max, opaque);
            token = i32::cast_from(draw_at);
            logprob = d - (ln_wide(total_high, total_low, opaque) - LN_2_31);
        }
        results[row] = u32::reinterpret(token);
        results[logprobs_at + row] = u32::reinterpret(logprob);
    }
}

/// The radix select's step: scanning `counts` from the top bin (`from_top`) or the bottom one,
/// the bin where the running count reaches `state[remaining]`. Appends its digit at `shift` to
/// `state[prefix]` and leaves in `state[remaining]` how many of that bin are still to find.
/// Returns whether the bins hold that many at all.
#[cube]
fn pick_digit(
    counts: &Shared<[Atomic<u32>]>,
    state: &mut Shared<[u32]>,
    #[comptime] prefix: usize,
    #[comptime] remaining: usize,
    shift: u32,
    #[comptime] from_top: bool,
) -> bool {
    let wanted = state[remaining];
    let mut seen = 0u32;
    let mut found = false;
    for b in 0..BINS {
        let bin = if comptime!(from_top) { BINS - 1 - b } else { b };
        let count = counts[bin].load();
        if !found && seen + count >= wanted {
            found = true;
            state[prefix] |= u32::cast_from(bin) << shift;
            state[remaining] = wanted - seen;
        }
        seen += count;
    }
    found
}

/// The largest of the cube's keys (0: none) and, among equal ones, the lowest place.
#[cube]
fn cube_best(keys: &Shared<[u32]>, places: &Shared<[u32]>) -> (u32, u32) {
    let mut key = 0u32;
    let mut at = 0u32;
    for u in 0..SAMPLE_UNITS {
        let k = keys[u];
        let p = places[u];
        if k > key || (k == key && k != 0u32 && p < at) {
            key = k;
            at = p;
        }
    }
    (key, at)
}
