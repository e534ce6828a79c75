//! Token sampling on host data. The arithmetic is the kernels' (`sample/math.rs` in the kernel
//! crate), step for step, so both give the same bits; the filters take another route: each
//! row's tokens sorted by decreasing scaled logit (ties by lower index) and visited in that
//! order, as the rules are written, where the kernel searches radix digits.

use core::f32::consts::{LN_2, LOG2_E};

use burn::tensor::TensorData;

use crate::host::reserve;

const OPERATOR: &str = "Sample";

/// `(2^f - 1) / f` and `ln(1 + r) / r`, lowest degree first: the kernels' polynomials.
const EXP2_POLY: [f32; 6] = [
    LN_2,
    0.240_227_22,
    0.055_495_936,
    0.009_652_44,
    0.001_268_935_2,
    0.000_208_291_95,
];
const LN1P_POLY: [f32; 10] = [
    1.0,
    -0.499_999_88,
    0.333_333_25,
    -0.250_015_85,
    0.200_020_72,
    -0.166_091_26,
    0.141_800_79,
    -0.132_408_43,
    0.129_141_7,
    -0.076_385_92,
];
/// `31 * ln(2)` as the kernels round it.
const LN_2_31: f32 = 21.487_562;

fn flushed(x: f32) -> f32 {
    if x.to_bits() & 0x7F80_0000 == 0 {
        0.0
    } else {
        x
    }
}

fn order_key(x: f32) -> u32 {
    let bits = if x.to_bits() & 0x7FFF_FFFF == 0 {
        0
    } else {
        x.to_bits()
    };
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

fn power_of_two(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

fn exp_nonpositive(d: f32) -> f32 {
    let t = d * LOG2_E;
    if t.is_nan() || t < -126.0 {
        return 0.0;
    }
    let truncated = t as i32;
    let n = truncated - i32::from(truncated as f32 > t);
    let f = t - n as f32;
    let mut acc = EXP2_POLY[5];
    for c in EXP2_POLY[..5].iter().rev() {
        acc = acc * f + c;
    }
    let out = (acc * f + 1.0) * power_of_two(n);
    if out > 1.0 { 1.0 } else { out }
}

fn ln_positive(x: f32) -> f32 {
    let bits = x.to_bits();
    let mut exponent = (bits >> 23) as i32 - 127;
    let mut m_bits = (bits & 0x007F_FFFF) | 0x3F80_0000;
    if m_bits > 0x3FB5_04F3 {
        m_bits = (bits & 0x007F_FFFF) | 0x3F00_0000;
        exponent += 1;
    }
    let r = f32::from_bits(m_bits) - 1.0;
    let mut acc = LN1P_POLY[9];
    for c in LN1P_POLY[..9].iter().rev() {
        acc = acc * r + c;
    }
    acc * r + exponent as f32 * LN_2
}

fn reciprocal(t: f32) -> f32 {
    let bits = t.to_bits();
    let exponent = (bits >> 23) as i32 - 126;
    let m = f32::from_bits((bits & 0x007F_FFFF) | 0x3F00_0000);
    let mut r = 2.823_529_5 - 1.882_353 * m;
    for _ in 0..3 {
        let e = 2.0 - m * r;
        r *= e;
    }
    if exponent <= 126 {
        flushed(r * power_of_two(-exponent))
    } else {
        0.0
    }
}

fn mix32(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

fn row_key(seed: u64, step: u64) -> u32 {
    let mut k = mix32((seed as u32).wrapping_add(0x9E37_79B9));
    k = mix32(k ^ (seed >> 32) as u32);
    k = mix32(k ^ step as u32);
    mix32(k ^ (step >> 32) as u32)
}

fn gumbel(key: u32, token: u32) -> f32 {
    let h = mix32(mix32(token.wrapping_mul(0x9E37_79B9) ^ key).wrapping_add(key));
    let u = (((h >> 9) << 1) | 1) as f32 * 5.960_464_5e-8;
    -ln_positive(-ln_positive(u))
}

/// `ln` of a non-zero mass from its top 24 bits, as the kernels compute it.
fn ln_wide(value: u64) -> f32 {
    let top = 63 - value.leading_zeros();
    let m = if top >= 23 {
        (value >> (top - 23)) as u32
    } else {
        (value << (23 - top)) as u32
    };
    let mantissa = f32::from_bits((m & 0x007F_FFFF) | 0x3F80_0000);
    ln_positive(mantissa) + top as f32 * LN_2
}

/// One row's options, clamped as the kernels clamp them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowOptions {
    pub temperature: f32,
    /// As the kernels read it: a negative `i32` is above every vocabulary.
    pub top_k: u32,
    pub top_p: f32,
    pub min_p: f32,
    pub seed: u64,
}

/// `z / T` as the kernels compute it.
fn scaled(z: f32, inv_t: f32) -> f32 {
    if z.is_infinite() {
        z
    } else {
        flushed(z * inv_t)
    }
}

fn offset(y: f32, y_max: f32) -> f32 {
    if y_max.is_infinite() {
        return if y == f32::INFINITY {
            0.0
        } else {
            f32::NEG_INFINITY
        };
    }
    flushed(y - y_max)
}

fn mass(d: f32) -> u64 {
    mass_of_weight(exp_nonpositive(d))
}

fn mass_of_weight(weight: f32) -> u64 {
    u64::from((weight * 2_147_483_648.0) as u32)
}

/// One row: its token (-1: nothing drawable) and the token's log-probability.
fn sample_row(logits: &[f32], options: RowOptions, step: u64) -> (i32, f32) {
    let t = options.temperature;
    let greedy = t.is_nan() || t.to_bits() >> 31 == 1 || t.to_bits() < 0x0080_0000;
    // The largest logit, lowest index first; NaN never counts.
    let best = logits
        .iter()
        .enumerate()
        .filter(|(_, z)| !z.is_nan())
        .map(|(i, &z)| (order_key(z), i))
        .min_by_key(|&(key, i)| (u32::MAX - key, i));
    let Some((_, best_at)) = best.filter(|&(_, i)| logits[i] != f32::NEG_INFINITY) else {
        return (-1, f32::NAN);
    };
    if greedy {
        return (best_at as i32, 0.0);
    }
    let inv_t = if t.is_infinite() { 0.0 } else { reciprocal(t) };
    let y_max = scaled(logits[best_at], inv_t);
    // The tokens by decreasing scaled logit, ties by lower index: (key, index, y). No two share
    // (key, index), so an unstable sort gives the one order.
    let mut order: Vec<(u32, usize, f32)> = reserve(OPERATOR, "the row's order", logits.len());
    order.extend(
        logits
            .iter()
            .enumerate()
            .filter(|(_, z)| !z.is_nan())
            .map(|(i, &z)| {
                let y = scaled(z, inv_t);
                (order_key(y), i, y)
            }),
    );
    order.sort_unstable_by_key(|&(key, i, _)| (u32::MAX - key, i));
    let vocab = logits.len() as u64;
    let k = u64::from(options.top_k);
    if k != 0 && k < vocab && (k as usize) <= order.len() {
        let kth = order[k as usize - 1].0;
        order.retain(|&(key, _, _)| key >= kth);
    }
    let p = options.top_p;
    if !p.is_nan() && p < 1.0 {
        let total: u64 = order.iter().map(|&(_, _, y)| mass(offset(y, y_max))).sum();
        let p24 = if p > 0.0 {
            u128::from((p * 16_777_216.0) as u32)
        } else {
            0
        };
        let target = ((u128::from(total) * p24) >> 24).max(1);
        let mut before = 0u128;
        let kept = order
            .iter()
            .take_while(|&&(_, _, y)| {
                let keep = before < target;
                before += u128::from(mass(offset(y, y_max)));
                keep
            })
            .count();
        order.truncate(kept);
    }
    let min_p = match options.min_p {
        m if m.is_nan() => 0.0,
        m if m > 1.0 => 1.0,
        m => m,
    };
    let key = row_key(options.seed, step);
    let mut total = 0u64;
    let mut drawn: Option<(u32, usize, f32)> = None;
    for &(_, i, y) in &order {
        let d = offset(y, y_max);
        let weight = exp_nonpositive(d);
        if weight < min_p {
            continue;
        }
        total += mass_of_weight(weight);
        if d == f32::NEG_INFINITY {
            continue;
        }
        let w = order_key(d + gumbel(key, i as u32));
        if drawn.is_none_or(|(best, at, _)| w > best || (w == best && i < at)) {
            drawn = Some((w, i, d));
        }
    }
    match drawn {
        Some((_, i, d)) => (i as i32, d - (ln_wide(total) - LN_2_31)),
        None => (-1, f32::NAN),
    }
}

/// Samples one token per row of `logits` (`[rows, vocab]`, any float dtype, computed in
/// `f32`) with each row's options: `(tokens, logprobs)`, `[rows]` `i32` and `f32`.
pub(crate) fn sample(
    logits: &TensorData,
    options: &[RowOptions],
    step: u64,
) -> (TensorData, TensorData) {
    let logits = logits.clone().convert::<f32>();
    let values = logits.as_slice::<f32>().expect("f32 logits");
    let rows = options.len();
    let vocab = values.len().checked_div(rows).unwrap_or(0);
    let mut tokens = reserve(OPERATOR, "the tokens", rows);
    let mut logprobs = reserve(OPERATOR, "the log-probabilities", rows);
    for (row, &row_options) in options.iter().enumerate() {
        let (token, logprob) = sample_row(&values[row * vocab..][..vocab], row_options, step);
        tokens.push(token);
        logprobs.push(logprob);
    }
    (
        TensorData::new(tokens, [rows]),
        TensorData::new(logprobs, [rows]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crate's `exp`, `ln` and reciprocal against the standard library's, over their
    /// ranges: the polynomials' accuracy, and no sign or scale slip.
    #[test]
    fn the_arithmetic_is_accurate() {
        for i in 0..=20_000 {
            let d = -(i as f32) * 0.0045;
            let (ours, std) = (exp_nonpositive(d), d.exp());
            // Rounding `d * log2(e)` costs up to half an ulp of it, relative; below 2^-126 the
            // result is 0.
            let bound = 1e-7 * (4.0 + d.abs()) * std;
            assert!(
                (ours - std).abs() <= bound + 1.2e-38,
                "exp({d}): {ours} vs {std}"
            );
        }
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        for i in 1..=20_000 {
            let x = (i as f32).powf(1.7) * 1e-6;
            let (ours, std) = (ln_positive(x), x.ln());
            assert!(
                (ours - std).abs() <= 2e-6 * std.abs().max(1.0),
                "ln({x}): {ours} vs {std}"
            );
            let (ours, std) = (reciprocal(x), 1.0 / x);
            assert!((ours - std).abs() <= 2e-7 * std, "1 / {x}: {ours} vs {std}");
        }
        for value in [1u64, 3 << 31, 5 << 31, 12_345_678_901, u64::MAX >> 9] {
            let (ours, std) = (ln_wide(value), (value as f64).ln() as f32);
            assert!(
                (ours - std).abs() <= 4e-6 * std.max(1.0),
                "ln({value}): {ours} vs {std}"
            );
        }
    }

    /// The Gumbel noise's mean is the Euler-Mascheroni constant and its variance `pi^2 / 6`.
    #[test]
    fn gumbel_noise_has_its_moments() {
        let n = 200_000;
        let noise: Vec<f64> = (0..n)
            .map(|i| f64::from(gumbel(row_key(7, 3), i)))
            .collect();
        let mean = noise.iter().sum::<f64>() / f64::from(n);
        let variance = noise.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / f64::from(n);
        assert!((mean - 0.577_215_66).abs() < 0.01, "mean {mean}");
        let expected = std::f64::consts::PI.powi(2) / 6.0;
        assert!((variance - expected).abs() < 0.02, "variance {variance}");
    }
}
