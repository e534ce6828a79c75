//! `fl(i / u) > t` decided in exact integer arithmetic: the IoU test as ONNX Runtime rounds its
//! `f32` quotient, whatever division (or fast-math rewrite) the runtime's compiler uses.
//!
//! The correctly rounded quotient exceeds `t` exactly when it reaches `t`'s successor `t⁺`,
//! which it does exactly when `i / u` lies above the midpoint `m = (t + t⁺) / 2`, or on it when
//! `t⁺` is the even one (round half to even). With `t = T * 2^E` (`T` its integer significand),
//! `m = (2T + 1) * 2^(E - 1)` and `t⁺` is even when `T` is odd, so the test is the comparison
//! of `I * 2^Ei` with `(2T + 1) * U * 2^(E - 1 + Eu)`: a product of 25 by 24 bits, compared in
//! two 32-bit words, no float operation and no 64-bit type involved.

use cubecl::prelude::*;

/// How [`quotient_exceeds`](fn@quotient_exceeds) decides for one threshold `t`: the midpoint's
/// significand and exponent, and which way a tie goes, or a fixed answer. Made on the host
/// ([`Self::new`]) and passed as launch arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotientThreshold {
    /// `2T + 1`, below `2^25`.
    pub midpoint: u32,
    /// `E - 1`.
    pub exponent: i32,
    /// [`Self::TIE_DOWN`], [`Self::TIE_UP`], [`Self::ALWAYS`] or [`Self::NEVER`].
    pub rule: u32,
}

impl QuotientThreshold {
    /// A quotient equal to the midpoint rounds down to `t`: it must lie above.
    pub const TIE_DOWN: u32 = 0;
    /// A quotient equal to the midpoint rounds up to `t⁺`: on it is enough.
    pub const TIE_UP: u32 = 1;
    /// Every quotient of positive numbers exceeds `t` (`t < 0`).
    pub const ALWAYS: u32 = 2;
    /// No quotient exceeds `t` (`t` is `+inf` or NaN).
    pub const NEVER: u32 = 3;

    /// The decision of `fl(i / u) > threshold` for positive `i` and `u`.
    pub fn new(threshold: f32) -> Self {
        let fixed = |rule| Self {
            midpoint: 1,
            exponent: 0,
            rule,
        };
        if threshold.is_nan() || threshold == f32::INFINITY {
            return fixed(Self::NEVER);
        }
        if threshold < 0.0 {
            return fixed(Self::ALWAYS);
        }
        // `-0.0` decides as `+0.0`: the successor of both is the smallest subnormal.
        let bits = threshold.to_bits() & 0x7FFF_FFFF;
        let (significand, exponent) = significand_exponent(bits);
        Self {
            midpoint: 2 * significand + 1,
            exponent: exponent - 1,
            rule: if significand % 2 == 1 {
                Self::TIE_UP
            } else {
                Self::TIE_DOWN
            },
        }
    }
}

/// The integer significand and exponent of a finite non-negative `f32`'s bits: the value is
/// `significand * 2^exponent`.
fn significand_exponent(bits: u32) -> (u32, i32) {
    let biased = (bits >> 23) as i32;
    let fraction = bits & 0x7F_FFFF;
    if biased == 0 {
        (fraction, -149)
    } else {
        (fraction | 0x80_0000, biased - 150)
    }
}

/// [`significand_exponent`] on the device.
#[cube]
fn significand_exponent_of(bits: u32) -> (u32, i32) {
    let biased = (bits >> 23u32) & 0xFFu32;
    let fraction = bits & 0x7F_FFFFu32;
    let normal = biased != 0u32;
    (
        select(normal, fraction | 0x80_0000u32, fraction),
        select(normal, i32::cast_from(biased) - 150i32, -149i32),
    )
}

/// `a * b` for `a < 2^25` and `b < 2^24` as (high, low) 32-bit words, from 16-bit halves.
#[cube]
fn wide_product(a: u32, b: u32) -> (u32, u32) {
    let a_low = a & 0xFFFFu32;
    let a_high = a >> 16u32;
    let b_low = b & 0xFFFFu32;
    let b_high = b >> 16u32;
    let low = a_low * b_low;
    let middle = a_high * b_low + a_low * b_high;
    let word = low + (middle << 16u32);
    let carry = select(word < low, 1u32, 0u32);
    (a_high * b_high + (middle >> 16u32) + carry, word)
}

/// Bits of a nonzero two-word integer.
#[cube]
fn wide_bit_length(high: u32, low: u32) -> u32 {
    select(
        high != 0u32,
        64u32 - high.leading_zeros(),
        32u32 - low.leading_zeros(),
    )
}

/// `value << shift` for `value < 2^32` and `shift < 64`, as two words (WGSL takes a shift count
/// modulo 32, so each word's shift stays below 32).
#[cube]
fn wide_shift(value: u32, shift: u32) -> (u32, u32) {
    let small = shift % 32u32;
    let spill = select(small == 0u32, 0u32, value >> ((32u32 - small) % 32u32));
    let wide = shift >= 32u32;
    (
        select(wide, value << small, spill),
        select(wide, 0u32, value << small),
    )
}

/// Whether `fl(i / u) > t` for the `f32` bits of a positive finite `i` and a positive `u`
/// (`+inf` included: the quotient is then 0), with `t` given as its [`QuotientThreshold`]
/// fields: exact, with integer operations only.
#[cube]
pub fn quotient_exceeds(i_bits: u32, u_bits: u32, midpoint: u32, exponent: i32, rule: u32) -> bool {
    let (i_significand, i_exponent) = significand_exponent_of(i_bits);
    let (u_significand, u_exponent) = significand_exponent_of(u_bits);
    // `i * 2^ie` against `(midpoint * u) * 2^(exponent + ue)`.
    let (high, low) = wide_product(midpoint, u_significand);
    let i_length = 32u32 - i_significand.leading_zeros();
    let p_length = wide_bit_length(high, low);
    let i_top = i32::cast_from(i_length) + i_exponent;
    let p_top = i32::cast_from(p_length) + exponent + u_exponent;
    // Equal bit lengths: align the shorter significand under the longer one.
    let i_shift = select(p_length > i_length, p_length - i_length, 0u32);
    let p_shift = select(i_length > p_length, i_length - p_length, 0u32);
    let (a_high, a_low) = wide_shift(i_significand, i_shift);
    let (b_shift_high, b_low) = wide_shift(low, p_shift);
    let b_high = high | b_shift_high;
    let above = a_high > b_high || (a_high == b_high && a_low > b_low);
    let equal = a_high == b_high && a_low == b_low;
    let aligned = above || (equal && rule == QuotientThreshold::TIE_UP);
    let decided = select(i_top == p_top, aligned, i_top > p_top);
    let infinite_u = (u_bits & 0x7FFF_FFFFu32) == 0x7F80_0000u32;
    let finite = select(infinite_u, false, decided);
    select(
        rule >= QuotientThreshold::ALWAYS,
        rule == QuotientThreshold::ALWAYS,
        finite,
    )
}
