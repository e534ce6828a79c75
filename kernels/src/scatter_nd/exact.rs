//! Float sums whose bits do not depend on the order of their terms: every term is turned into a
//! 128-bit fixed-point integer on a grid set by the largest term, the integers are added (integer
//! addition is associative, so any order gives the same total), and the total is rounded once to
//! the result's type, to nearest even.
//!
//! A first pass over the terms finds the largest exponent ([`observe`]), a second adds them
//! ([`term_parts`], [`add_term`], or as one two's-complement sum [`add_signed_term_at`]) and
//! [`round_sum`] rounds. [`round_product`] rounds the exact product of two values the same way
//! (deterministic `Mul`, which combines in index order). Terms are `f32` bit patterns (every
//! `f16` and `bf16` is an `f32`), read with integer arithmetic only, so no runtime's flushing
//! of subnormals changes them. The grid keeps 72 bits below the largest term's lowest bit: the sum is exact,
//! and so correctly rounded, whenever the terms lie within 72 binades of the largest (every
//! `f16` sum); a smaller term loses the bits below the grid (towards zero). 32 bits of headroom
//! hold up to 2^32 terms. The host reference (`exact_sum` in the main crate) computes the same.

use cubecl::prelude::*;

/// The binary format a sum is rounded to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SumFormat {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE binary32.
    F32,
}

impl SumFormat {
    /// Bits of the exponent field.
    pub fn exponent_bits(self) -> u32 {
        match self {
            Self::F16 => 5,
            Self::BF16 | Self::F32 => 8,
        }
    }

    /// Bits of the mantissa field.
    pub fn mantissa_bits(self) -> u32 {
        match self {
            Self::F16 => 10,
            Self::BF16 => 7,
            Self::F32 => 23,
        }
    }
}

/// Bits of the fixed-point grid below a term of the largest exponent (see the module docs).
pub const GUARD_BITS: i32 = 72;

/// `observe`'s flags: a NaN term.
const NAN: u32 = 1;
/// A `+inf` term.
const POSITIVE_INFINITY: u32 = 2;
/// A `-inf` term.
const NEGATIVE_INFINITY: u32 = 4;
/// A term other than `-0.0` (a sum of `-0.0` alone is `-0.0`, any other zero sum `+0.0`).
const NOT_NEGATIVE_ZERO: u32 = 8;

/// The first walk's state after one more term of `f32` bits `term`: the largest exponent
/// field of a finite term (at least 1: subnormals share the smallest normal's grid) and the
/// flags of the special terms.
#[cube]
pub fn observe(scale: u32, flags: u32, term: u32) -> (u32, u32) {
    // Selects, not branches: CPU drivers run both sides of a branch anyway.
    let exponent = (term >> 23u32) & 0xFFu32;
    let special = exponent == 0xFFu32;
    let infinity = select(
        (term >> 31u32) != 0u32,
        NEGATIVE_INFINITY,
        POSITIVE_INFINITY,
    );
    let kind = select((term & 0x7F_FFFFu32) != 0u32, NAN, infinity);
    let zero_sign = select(term != 0x8000_0000u32, NOT_NEGATIVE_ZERO, 0u32);
    let scaled = select(exponent > 1u32, exponent, 1u32);
    let larger = select(scaled > scale, scaled, scale);
    (
        select(special, scale, larger),
        flags | select(special, kind, 0u32) | zero_sign,
    )
}

/// Adds `w0` at word `k` and `w1` at word `k + 1`, every word XORed with `flip`, plus `carry`,
/// to the 4-word little-endian integer at `acc[base..]`, carrying into the words above.
#[cube]
fn add_words(acc: &mut Array<u32>, base: usize, parts: (u32, u32, u32), flip: u32, carry: u32) {
    let (k, w0, w1) = parts;
    let mut carry = carry;
    #[unroll]
    for i in 0..4u32 {
        let piece = select(k == i, w0, select(k + 1u32 == i, w1, 0u32)) ^ flip;
        let partial = acc[base + i as usize] + piece;
        let sum = partial + carry;
        carry = u32::cast_from(partial < piece || sum < carry);
        acc[base + i as usize] = sum;
    }
}

/// The term of `f32` bits `term` on the grid of `scale` (the largest exponent field, see
/// [`observe`]): whether it is negative, and its magnitude as `w0` at word `k` and `w1` at word
/// `k + 1` (both zero for a zero, an infinity, a NaN or a term below the grid).
#[cube]
pub fn term_parts(scale: u32, term: u32) -> (u32, u32, u32, u32) {
    let exponent = (term >> 23u32) & 0xFFu32;
    let mut significand = term & 0x7F_FFFFu32;
    if exponent != 0u32 {
        significand |= 0x80_0000u32;
    }
    if exponent == 0xFFu32 {
        significand = 0u32;
    }
    // The term's lowest bit sits `shift` bits above the grid's (negative: below it). Selects,
    // not branches: CPU drivers run both sides of a branch anyway.
    let scaled = select(exponent > 1u32, exponent, 1u32);
    let shift = i32::cast_from(scaled) + GUARD_BITS - i32::cast_from(scale);
    let up = u32::cast_from(select(shift > 0i32, shift, 0i32));
    let down = u32::cast_from(select(shift < 0i32, -shift, 0i32));
    let offset = up % 32u32;
    let above = shift >= 0i32;
    // Two shifts, so that an offset of 0 never shifts by 32, nor a term far below the grid.
    let below =
        (significand >> select(down < 31u32, down, 31u32)) >> select(down < 31u32, 0u32, 1u32);
    let w0 = select(above, significand << offset, below);
    let w1 = select(above, (significand >> (31u32 - offset)) >> 1u32, 0u32);
    (term >> 31u32, up / 32u32, w0, w1)
}

/// Adds the finite term of `f32` bits `term` on the grid of `scale` to `positive` or
/// `negative` (4-word magnitudes); see [`term_parts`].
#[cube]
pub fn add_term(positive: &mut Array<u32>, negative: &mut Array<u32>, scale: u32, term: u32) {
    let (sign, k, w0, w1) = term_parts(scale, term);
    let negative_term = sign != 0u32;
    let positive_parts = (
        k,
        select(negative_term, 0u32, w0),
        select(negative_term, 0u32, w1),
    );
    let negative_parts = (
        k,
        select(negative_term, w0, 0u32),
        select(negative_term, w1, 0u32),
    );
    add_words(positive, 0usize, positive_parts, 0u32, 0u32);
    add_words(negative, 0usize, negative_parts, 0u32, 0u32);
}

/// Adds the finite term of `f32` bits `term` on the grid of `scale` to the 4-word
/// two's-complement sum at `sum[base..]`: one add with carries where [`add_term`] keeps two
/// magnitudes. Exact while the sum's magnitude stays below 2^127: fewer than 2^31 terms (each
/// below 2^96 on the grid).
#[cube]
pub fn add_signed_term_at(sum: &mut Array<u32>, base: usize, scale: u32, term: u32) {
    let (sign, k, w0, w1) = term_parts(scale, term);
    // A negative term adds the complement of its magnitude, plus one.
    add_words(sum, base, (k, w0, w1), 0u32 - sign, sign);
}

/// [`round_sum`] of the 4-word two's-complement sum at `sum[base..]` (see
/// [`add_signed_term_at`]).
#[cube]
pub fn round_signed_sum(
    sum: &Array<u32>,
    base: usize,
    scale: u32,
    flags: u32,
    #[comptime] format: SumFormat,
) -> u32 {
    // The magnitudes `round_sum` takes: the sum itself, or its negation from zero.
    let negative = (sum[base + 3] >> 31u32) != 0u32;
    let mut positive_words = Array::<u32>::new(4usize);
    let mut negative_words = Array::<u32>::new(4usize);
    let mut carry = 1u32;
    #[unroll]
    for i in 0..4usize {
        let word = sum[base + i];
        let negated = !word + carry;
        carry = u32::cast_from(carry != 0u32 && word == 0u32);
        positive_words[i] = select(negative, 0u32, word);
        negative_words[i] = select(negative, negated, 0u32);
    }
    round_sum(&positive_words, &negative_words, scale, flags, format)
}

/// The 32 bits of the 4-word integer `value` from bit `start` (0 to 127) up; bits past the top
/// are zeros.
#[cube]
fn bits_from(value: &Array<u32>, start: u32) -> u32 {
    let k = start / 32u32;
    let offset = start % 32u32;
    let mut low = 0u32;
    let mut high = 0u32;
    #[unroll]
    for i in 0..4u32 {
        if k == i {
            low = value[i as usize];
        }
        if k + 1u32 == i {
            high = value[i as usize];
        }
    }
    (low >> offset) | ((high << (31u32 - offset)) << 1u32)
}

/// Whether any of the bits of the 4-word integer `value` below bit `end` (0 to 128) is set.
#[cube]
fn any_below(value: &Array<u32>, end: u32) -> bool {
    let mut any = false;
    #[unroll]
    for i in 0..4u32 {
        let base = i * 32u32;
        let word = value[i as usize];
        if end >= base + 32u32 {
            any = any || word != 0u32;
        } else if end > base {
            any = any || (word & ((1u32 << (end - base)) - 1u32)) != 0u32;
        }
    }
    any
}

/// The sum of the walked terms, rounded to nearest even in `format`, as that format's bits: NaN
/// (a quiet one) when a term is NaN or both infinities occur, an infinity when one does,
/// otherwise `positive - negative` on the grid of `scale`, with overflow to an infinity.
#[cube]
pub fn round_sum(
    positive: &Array<u32>,
    negative: &Array<u32>,
    scale: u32,
    flags: u32,
    #[comptime] format: SumFormat,
) -> u32 {
    let mantissa_bits = comptime!(format.mantissa_bits());
    let exponent_bits = comptime!(format.exponent_bits());
    let infinity = comptime!(((1u32 << exponent_bits) - 1) << mantissa_bits);
    let sign_bit = comptime!(1u32 << (exponent_bits + mantissa_bits));
    let mut out = 0u32;
    if (flags & NAN) != 0u32
        || (flags & (POSITIVE_INFINITY | NEGATIVE_INFINITY))
            == (POSITIVE_INFINITY | NEGATIVE_INFINITY)
    {
        out = infinity | comptime!(1u32 << (mantissa_bits - 1));
    } else if (flags & POSITIVE_INFINITY) != 0u32 {
        out = infinity;
    } else if (flags & NEGATIVE_INFINITY) != 0u32 {
        out = sign_bit | infinity;
    } else {
        // The difference of the magnitudes, as a sign and a magnitude.
        let mut total = Array::<u32>::new(4usize);
        let mut borrow = 0u32;
        #[unroll]
        for i in 0..4usize {
            let a = positive[i];
            let b = negative[i];
            let partial = a - b;
            total[i] = partial - borrow;
            borrow = u32::cast_from(a < b || partial < borrow);
        }
        let mut sign = 0u32;
        if borrow != 0u32 {
            sign = sign_bit;
            let mut carry = 1u32;
            #[unroll]
            for i in 0..4usize {
                let flipped = !total[i];
                total[i] = flipped + carry;
                carry = u32::cast_from(carry != 0u32 && flipped == u32::MAX);
            }
        }
        let top = top_bit(&total);
        if top < 0i32 {
            if (flags & NOT_NEGATIVE_ZERO) == 0u32 {
                out = sign_bit;
            }
        } else {
            // Grid bit 0 is worth 2^(scale - 150 - GUARD_BITS).
            let grid = i32::cast_from(scale) - 150i32 - GUARD_BITS;
            out = sign | round_magnitude(&total, top, grid, format);
        }
    }
    out
}

/// The highest set bit of the 4-word integer `value` (-1 when it is zero).
#[cube]
fn top_bit(value: &Array<u32>) -> i32 {
    let mut top = i32::new(-1);
    #[unroll]
    for i in 0..4u32 {
        let word = value[i as usize];
        if word != 0u32 {
            top = i32::cast_from(i * 32u32 + 31u32 - word.leading_zeros());
        }
    }
    top
}

/// The magnitude `total * 2^grid` (a non-zero 4-word integer whose highest set bit is `top`)
/// rounded to nearest even in `format`, as that format's bits without the sign: an infinity
/// on overflow, a subnormal or zero below the normal range.
#[cube]
fn round_magnitude(total: &Array<u32>, top: i32, grid: i32, #[comptime] format: SumFormat) -> u32 {
    let mantissa_bits = comptime!(format.mantissa_bits());
    let exponent_bits = comptime!(format.exponent_bits());
    let infinity = comptime!(((1u32 << exponent_bits) - 1) << mantissa_bits);
    let min_exponent = comptime!(2i32 - (1i32 << (exponent_bits - 1)));
    // The exponent of grid bit 0 minus the exponent of the format's smallest subnormal.
    let offset = grid - min_exponent + comptime!(mantissa_bits as i32);
    // The grid bit of the result's lowest mantissa bit: `mantissa_bits` below the top, or the
    // smallest subnormal's.
    let below_top = top - comptime!(mantissa_bits as i32);
    let low = select(below_top > -offset, below_top, -offset);
    let mut significand = total[0usize];
    let mut round_up = 0u32;
    if low <= 0i32 {
        // Exact: every bit fits (the top is then below the mantissa's width).
        significand <<= u32::cast_from(-low);
    } else {
        let low = u32::cast_from(low);
        significand = bits_from(total, low) & comptime!((1u32 << (mantissa_bits + 1)) - 1);
        let half = (bits_from(total, low - 1u32) & 1u32) != 0u32;
        let sticky = any_below(total, low - 1u32);
        round_up = u32::cast_from(half && (sticky || (significand & 1u32) != 0u32));
    }
    // The field of the lowest bit's exponent above the smallest subnormal's, shifted over the
    // mantissa, plus the significand with its leading one, is the encoding; a carry of the
    // rounding moves into the exponent, up to infinity.
    let field = u32::cast_from(low + offset);
    let rounded = (field << mantissa_bits) + significand + round_up;
    select(rounded < infinity, rounded, infinity)
}

/// The product of the `f32` bits `a` and `b` (values of `format`, widened exactly), rounded
/// once to nearest even in `format`, as that format's bits: the exact product of the two
/// 24-bit significands is formed with 16-bit limbs, so no runtime's flushing of subnormals
/// changes it. A NaN operand, or an infinity times a zero, gives the format's positive quiet
/// NaN.
#[cube]
pub fn round_product(a: u32, b: u32, #[comptime] format: SumFormat) -> u32 {
    let mantissa_bits = comptime!(format.mantissa_bits());
    let exponent_bits = comptime!(format.exponent_bits());
    let infinity = comptime!(((1u32 << exponent_bits) - 1) << mantissa_bits);
    let sign = ((a ^ b) >> 31u32) << comptime!(exponent_bits + mantissa_bits);
    let (a_exponent, b_exponent) = ((a >> 23u32) & 0xFFu32, (b >> 23u32) & 0xFFu32);
    let (a_zero, b_zero) = ((a << 1u32) == 0u32, (b << 1u32) == 0u32);
    let a_special = a_exponent == 0xFFu32;
    let b_special = b_exponent == 0xFFu32;
    let a_nan = a_special && (a & 0x7F_FFFFu32) != 0u32;
    let b_nan = b_special && (b & 0x7F_FFFFu32) != 0u32;
    let mut out = sign;
    if a_nan || b_nan || (a_special && b_zero) || (b_special && a_zero) {
        out = infinity | comptime!(1u32 << (mantissa_bits - 1));
    } else if a_special || b_special {
        out = sign | infinity;
    } else if !a_zero && !b_zero {
        let a_significand = (a & 0x7F_FFFFu32) | select(a_exponent != 0u32, 0x80_0000u32, 0u32);
        let b_significand = (b & 0x7F_FFFFu32) | select(b_exponent != 0u32, 0x80_0000u32, 0u32);
        let (a_high, a_low) = (a_significand >> 16u32, a_significand & 0xFFFFu32);
        let (b_high, b_low) = (b_significand >> 16u32, b_significand & 0xFFFFu32);
        // a * b = high * 2^32 + middle * 2^16 + low; `middle` fits 25 bits.
        let low = a_low * b_low;
        let middle = a_high * b_low + a_low * b_high;
        let shifted = middle << 16u32;
        let word0 = low + shifted;
        let carry = u32::cast_from(word0 < low);
        let mut total = Array::<u32>::new(4usize);
        total[0usize] = word0;
        total[1usize] = a_high * b_high + (middle >> 16u32) + carry;
        total[2usize] = 0u32;
        total[3usize] = 0u32;
        // Each operand is its significand times 2^(max(exponent, 1) - 150).
        let a_scale = select(a_exponent > 1u32, a_exponent, 1u32);
        let b_scale = select(b_exponent > 1u32, b_exponent, 1u32);
        let grid = i32::cast_from(a_scale + b_scale) - 300i32;
        out = sign | round_magnitude(&total, top_bit(&total), grid, format);
    }
    out
}
