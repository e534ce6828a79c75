//! The sampler's arithmetic, the same bits on every runtime: `exp`, `ln` and the reciprocal from
//! IEEE `+` and `*` only (each product fenced, so no compiler fuses it into a multiply-add),
//! subnormals flushed on the bits, a counter hash for the draw, and 64-bit masses as two words.
//! The host reference (`burn-dml-ops`'s `reference/sample.rs`) computes the same steps.

use cubecl::prelude::*;

use crate::fence::unfused;

/// `log2(e)` and `ln(2)` as `f32`.
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;
pub const LN_2: f32 = core::f32::consts::LN_2;

/// `(2^f - 1) / f` on `[0, 1)`, lowest degree first (a least-squares fit; the polynomial is
/// what the contract fixes, not its accuracy, which is about `1.5e-8` relative).
pub const EXP2_POLY: [f32; 6] = [
    LN_2,
    0.240_227_22,
    0.055_495_936,
    0.009_652_44,
    0.001_268_935_2,
    0.000_208_291_95,
];

/// `ln(1 + r) / r` on `[sqrt(1/2) - 1, sqrt(2) - 1]`, lowest degree first (about `2.5e-9`
/// absolute on `ln(1 + r)`).
pub const LN1P_POLY: [f32; 10] = [
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

/// `x`, or `+0.0` where `x` is zero or subnormal: devices that flush subnormals and devices that
/// keep them then agree.
#[cube]
pub fn flushed(x: f32) -> f32 {
    let bits = u32::reinterpret(x);
    select((bits & 0x7F80_0000u32) == 0u32, 0.0f32, x)
}

/// An order-preserving key of a non-NaN `x`: larger floats, larger keys; both zeros one key.
#[cube]
pub fn order_key(x: f32) -> u32 {
    let mut bits = u32::reinterpret(x);
    if (bits & 0x7FFF_FFFFu32) == 0u32 {
        bits = 0u32;
    }
    select((bits >> 31u32) == 1u32, !bits, bits | 0x8000_0000u32)
}

/// Whether the bits are a NaN's.
#[cube]
pub fn is_nan(x: f32) -> bool {
    (u32::reinterpret(x) & 0x7FFF_FFFFu32) > 0x7F80_0000u32
}

/// Whether the bits are an infinity's (either sign).
#[cube]
pub fn is_infinite(x: f32) -> bool {
    (u32::reinterpret(x) & 0x7FFF_FFFFu32) == 0x7F80_0000u32
}

/// `2^n` for `-126 <= n <= 127`, built from bits.
#[cube]
fn power_of_two(n: i32) -> f32 {
    f32::reinterpret(u32::cast_from(n + 127i32) << 23u32)
}

/// `e^d` for `d <= 0` (`-inf` included), at most 1: `2^t` with `t = d * log2(e)` split into
/// `n = floor(t)` and `f = t - n`, `2^f` from [`EXP2_POLY`], scaled by `2^n` on the bits.
/// Below `2^-126` it is 0.
#[cube]
pub fn exp_nonpositive(d: f32, opaque: u32) -> f32 {
    let t = unfused(d * LOG2_E, opaque);
    let mut out = 0.0f32;
    // Also false for -inf and NaN.
    if t >= -126.0f32 {
        let truncated = i32::cast_from(t);
        let n = truncated - i32::cast_from(f32::cast_from(truncated) > t);
        let f = t - f32::cast_from(n);
        let mut acc = f32::new(EXP2_POLY[5]);
        #[unroll]
        for i in 0..5 {
            acc = unfused(acc * f, opaque) + EXP2_POLY[4 - i];
        }
        let two_f = unfused(acc * f, opaque) + 1.0f32;
        out = unfused(two_f * power_of_two(n), opaque);
        out = select(out > 1.0f32, 1.0f32, out);
    }
    out
}

/// `ln(x)` for a positive normal `x`: `x = m * 2^e` with `m` in `[sqrt(1/2), sqrt(2))`, then
/// `ln(1 + r)` from [`LN1P_POLY`] with `r = m - 1` (exact), plus `e * ln(2)`.
#[cube]
pub fn ln_positive(x: f32, opaque: u32) -> f32 {
    let bits = u32::reinterpret(x);
    let mut exponent = i32::cast_from(bits >> 23u32) - 127i32;
    let mut m_bits = (bits & 0x007F_FFFFu32) | 0x3F80_0000u32;
    // Above sqrt(2): halve m (exponent field 126) and count it in the exponent.
    if m_bits > 0x3FB5_04F3u32 {
        m_bits = (bits & 0x007F_FFFFu32) | 0x3F00_0000u32;
        exponent += 1i32;
    }
    let r = f32::reinterpret(m_bits) - 1.0f32;
    let mut acc = f32::new(LN1P_POLY[9]);
    #[unroll]
    for i in 0..9 {
        acc = unfused(acc * r, opaque) + LN1P_POLY[8 - i];
    }
    let ln_m = unfused(acc * r, opaque);
    ln_m + unfused(f32::cast_from(exponent) * LN_2, opaque)
}

/// `1 / t` for a positive normal finite `t`, or 0 where it would be subnormal: `t = m * 2^e`
/// with `m` in `[1/2, 1)`, three Newton steps on `1 / m` from the linear start
/// `48/17 - 32/17 m`, scaled by `2^-e` on the bits.
#[cube]
pub fn reciprocal(t: f32, opaque: u32) -> f32 {
    let bits = u32::reinterpret(t);
    let exponent = i32::cast_from(bits >> 23u32) - 126i32;
    let m = f32::reinterpret((bits & 0x007F_FFFFu32) | 0x3F00_0000u32);
    let mut r = 2.823_529_5f32 - unfused(1.882_353f32 * m, opaque);
    #[unroll]
    for _ in 0..3 {
        let e = 2.0f32 - unfused(m * r, opaque);
        r = unfused(r * e, opaque);
    }
    let mut out = 0.0f32;
    // 2^-e is normal for e <= 126.
    if exponent <= 126i32 {
        out = flushed(unfused(r * power_of_two(-exponent), opaque));
    }
    out
}

/// MurmurHash3's 32-bit finaliser: every input bit flips each output bit with probability
/// about one half.
#[cube]
pub fn mix32(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16u32;
    h *= 0x85EB_CA6Bu32;
    h ^= h >> 13u32;
    h *= 0xC2B2_AE35u32;
    h ^= h >> 16u32;
    h
}

/// The key of a row's draw: its seed and the step, mixed.
#[cube]
pub fn row_key(seed_low: u32, seed_high: u32, step_low: u32, step_high: u32) -> u32 {
    let mut k = mix32(seed_low + 0x9E37_79B9u32);
    k = mix32(k ^ seed_high);
    k = mix32(k ^ step_low);
    mix32(k ^ step_high)
}

/// Token `token`'s Gumbel noise under the row's `key`: `-ln(-ln(u))` with `u` from the top 23
/// bits of the token's hash, `(2j + 1) / 2^24`, never 0 or 1.
#[cube]
pub fn gumbel(key: u32, token: u32, opaque: u32) -> f32 {
    let h = mix32(mix32((token * 0x9E37_79B9u32) ^ key) + key);
    let odd = ((h >> 9u32) << 1u32) | 1u32;
    let u = f32::cast_from(odd) * 5.960_464_5e-8f32;
    let a = -ln_positive(u, opaque);
    -ln_positive(a, opaque)
}

/// `(high, low) + value` as two 32-bit words.
#[cube]
pub fn add_wide(high: u32, low: u32, value_high: u32, value_low: u32) -> (u32, u32) {
    let sum = low + value_low;
    (high + value_high + u32::cast_from(sum < low), sum)
}

/// Whether `(a_high, a_low) < (b_high, b_low)`.
#[cube]
pub fn less_wide(a_high: u32, a_low: u32, b_high: u32, b_low: u32) -> bool {
    a_high < b_high || (a_high == b_high && a_low < b_low)
}

/// `a * b` as two 32-bit words, from 16-bit halves.
#[cube]
pub fn mul_wide(a: u32, b: u32) -> (u32, u32) {
    let a0 = a & 0xFFFFu32;
    let a1 = a >> 16u32;
    let b0 = b & 0xFFFFu32;
    let b1 = b >> 16u32;
    let low = a0 * b0;
    let (mid_high, mid_low) = add_wide(0u32, a0 * b1, 0u32, a1 * b0);
    let (high, low) = add_wide(
        a1 * b1,
        low,
        (mid_high << 16u32) | (mid_low >> 16u32),
        mid_low << 16u32,
    );
    (high, low)
}

/// The index of the highest set bit of a non-zero `x`.
#[cube]
pub fn top_bit(x: u32) -> u32 {
    let mut v = x;
    let mut n = 0u32;
    #[unroll]
    for i in 0..5 {
        let shift = comptime!(16u32 >> i);
        if v >= (1u32 << shift) {
            v >>= shift;
            n += shift;
        }
    }
    n
}

/// `ln` of the non-zero 64-bit integer `(high, low)`, from its top 24 bits.
#[cube]
pub fn ln_wide(high: u32, low: u32, opaque: u32) -> f32 {
    let wide = high != 0u32;
    let value = select(wide, high, low);
    let below = select(wide, low, 0u32);
    let top = top_bit(value);
    let exponent = top + select(wide, 32u32, 0u32);
    // The 24 bits from bit `exponent` down.
    let mut m = value >> (top - select(top >= 23u32, 23u32, top));
    if top < 23u32 {
        m = (value << (23u32 - top)) | (below >> (top + 9u32));
    }
    let mantissa = f32::reinterpret((m & 0x007F_FFFFu32) | 0x3F80_0000u32);
    ln_positive(mantissa, opaque) + unfused(f32::cast_from(exponent) * LN_2, opaque)
}
