//! Float sums whose bits do not depend on the order of their terms: every term is an integer
//! on a fixed-point grid that holds every value of its format exactly (bit 0 is worth the
//! format's smallest subnormal, or less), the integers are added (integer addition is
//! associative, so any order gives the same total), and the total is rounded once to the
//! result's type, to nearest even. So the sum is exact for every input, in one pass, with no
//! scale to find first: [`SumFormat::sum_words`] words hold the largest term of the format and
//! 2^32 of them with a sign (`f16`: 4; `bf16` and `f32`, whose terms span 277 bits: 10).
//!
//! [`observe`] folds a term's special values into flags, [`term_parts`] places it on the grid
//! (added with [`add_signed_term_at`] to a two's-complement sum, sums added with
//! [`add_signed_words`]), and [`round_signed_sum`] rounds. [`round_product`]
//! rounds the exact product of two values the same way (deterministic `Mul`'s step where it
//! multiplies in index order). Terms are `f32` bit patterns (every `f16` and `bf16` is an `f32`), read with
//! integer arithmetic only, so no runtime's flushing of subnormals changes them. The host
//! reference (`exact_sum` in the main crate) computes the same.

use cubecl::prelude::*;

use super::packed::f16_to_f32;

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

    /// Elements of this format per 32-bit word of data held in words: one `f32`, two 16-bit
    /// fields (the low one first).
    pub fn per_word(self) -> usize {
        match self {
            Self::F16 | Self::BF16 => 2,
            Self::F32 => 1,
        }
    }

    /// 32-bit words of an exact sum of this format's values: the largest term on the grid
    /// (below 2^63 for `f16`, 2^277 for `bf16` and `f32`) with more than 32 bits and a sign to
    /// spare, so that no sum of 2^32 terms overflows, in two's complement too.
    pub fn sum_words(self) -> usize {
        match self {
            Self::F16 => 4,
            Self::BF16 | Self::F32 => 10,
        }
    }

    /// The `f32` exponent field of the grid's bit 0 (a term of field `e` is its significand
    /// times `2^(max(e, origin) - origin)` on the grid): 1 for `bf16` and `f32`, whose smallest
    /// subnormals are `f32`'s (bit 0 is worth 2^-149); for `f16`, the field of its smallest
    /// subnormal, 2^-24 (bit 0 is worth 2^-47).
    pub fn grid_origin(self) -> u32 {
        match self {
            Self::F16 => 103,
            Self::BF16 | Self::F32 => 1,
        }
    }
}

/// The `f32` value of `format` bits (exact).
#[cube]
pub fn widen(bits: u32, #[comptime] format: SumFormat) -> f32 {
    let mut value = f32::reinterpret(bits);
    if comptime!(format == SumFormat::F16) {
        value = f16_to_f32(bits);
    } else if comptime!(format == SumFormat::BF16) {
        value = f32::reinterpret(bits << 16u32);
    }
    value
}

/// `observe`'s flags: a NaN term.
const NAN: u32 = 1;
/// A `+inf` term.
const POSITIVE_INFINITY: u32 = 2;
/// A `-inf` term.
const NEGATIVE_INFINITY: u32 = 4;
/// A term other than `-0.0` (a sum of `-0.0` alone is `-0.0`, any other zero sum `+0.0`).
const NOT_NEGATIVE_ZERO: u32 = 8;

/// `flags` with the special values of one more term of `f32` bits `term`.
#[cube]
pub fn observe(flags: u32, term: u32) -> u32 {
    // Selects, not branches: CPU drivers run both sides of a branch anyway.
    let special = ((term >> 23u32) & 0xFFu32) == 0xFFu32;
    let infinity = select(
        (term >> 31u32) != 0u32,
        NEGATIVE_INFINITY,
        POSITIVE_INFINITY,
    );
    let kind = select((term & 0x7F_FFFFu32) != 0u32, NAN, infinity);
    let zero_sign = select(term != 0x8000_0000u32, NOT_NEGATIVE_ZERO, 0u32);
    flags | select(special, kind, 0u32) | zero_sign
}

/// The term of `f32` bits `term` on `format`'s grid: whether it is negative, and its magnitude
/// as `w0` at word `k` and `w1` at word `k + 1` (both zero for a zero, an infinity or a NaN).
#[cube]
pub fn term_parts(term: u32, #[comptime] format: SumFormat) -> (u32, u32, u32, u32) {
    let origin = comptime!(format.grid_origin());
    let exponent = (term >> 23u32) & 0xFFu32;
    let implicit = select(exponent != 0u32, 0x80_0000u32, 0u32);
    let significand = select(exponent == 0xFFu32, 0u32, (term & 0x7F_FFFFu32) | implicit);
    // Selects, not branches: CPU drivers run both sides of a branch anyway. A field at or
    // below the origin (a zero, an `f32` subnormal) sits at bit 0.
    let shift = select(exponent > origin, exponent - origin, 0u32);
    let offset = shift % 32u32;
    // Two shifts, so that an offset of 0 never shifts by 32.
    let w1 = (significand >> (31u32 - offset)) >> 1u32;
    (term >> 31u32, shift / 32u32, significand << offset, w1)
}

/// Adds `w0` at word `k` and `w1` at word `k + 1`, every word XORed with `flip`, plus `carry`,
/// to the `words`-word little-endian integer at `acc[base..]`, carrying into the words above.
#[cube]
fn add_words(
    acc: &mut Array<u32>,
    base: usize,
    parts: (u32, u32, u32),
    flip: u32,
    carry: u32,
    #[comptime] words: usize,
) {
    let (k, w0, w1) = parts;
    let mut carry = carry;
    let n = comptime!(words as u32);
    #[unroll]
    for i in 0..n {
        let piece = select(k == i, w0, select(k + 1u32 == i, w1, 0u32)) ^ flip;
        let partial = acc[base + i as usize] + piece;
        let sum = partial + carry;
        carry = u32::cast_from(partial < piece || sum < carry);
        acc[base + i as usize] = sum;
    }
}

/// Adds the two's-complement sum of [`SumFormat::sum_words`] words at `other[base..]` to
/// `sum`.
#[cube]
pub fn add_signed_words(
    sum: &mut Array<u32>,
    other: &[u32],
    base: usize,
    #[comptime] format: SumFormat,
) {
    let words = comptime!(format.sum_words());
    let mut carry = 0u32;
    #[unroll]
    for i in 0..words {
        let piece = other[base + i];
        let partial = sum[i] + piece;
        let total = partial + carry;
        carry = u32::cast_from(partial < piece || total < carry);
        sum[i] = total;
    }
}

/// Adds the term of `f32` bits `term` to the two's-complement sum of
/// [`SumFormat::sum_words`] words at `sum[base..]`, with carries. Exact for 2^32 terms.
#[cube]
pub fn add_signed_term_at(
    sum: &mut Array<u32>,
    base: usize,
    term: u32,
    #[comptime] format: SumFormat,
) {
    let (sign, k, w0, w1) = term_parts(term, format);
    // A negative term adds the complement of its magnitude, plus one.
    add_words(
        sum,
        base,
        (k, w0, w1),
        0u32 - sign,
        sign,
        comptime!(format.sum_words()),
    );
}

/// The two's-complement sum at `sum[base..]` (see [`add_signed_term_at`]) with the special
/// values `flags`, rounded to nearest even in `format`, as that format's bits: NaN (a quiet
/// one) when a term is NaN or both infinities occur, an infinity when one does, otherwise the
/// exact sum rounded, with overflow to an infinity.
#[cube]
pub fn round_signed_sum(
    sum: &Array<u32>,
    base: usize,
    flags: u32,
    #[comptime] format: SumFormat,
) -> u32 {
    let words = comptime!(format.sum_words());
    let negative = (sum[base + words - 1usize] >> 31u32) != 0u32;
    // The magnitude: the sum itself, or its negation from zero.
    let mut magnitude = Array::<u32>::new(words);
    let mut carry = 1u32;
    #[unroll]
    for i in 0..words {
        let word = sum[base + i];
        let negated = !word + carry;
        carry = u32::cast_from(carry != 0u32 && word == 0u32);
        magnitude[i] = select(negative, negated, word);
    }
    round_total(&magnitude, negative, flags, format)
}

/// The sum of magnitude `total` (on `format`'s grid) and sign `negative`, with the special
/// values `flags`, rounded to `format`'s bits (see [`round_signed_sum`]).
#[cube]
fn round_total(
    total: &Array<u32>,
    negative: bool,
    flags: u32,
    #[comptime] format: SumFormat,
) -> u32 {
    let words = comptime!(format.sum_words());
    let mantissa_bits = comptime!(format.mantissa_bits());
    let exponent_bits = comptime!(format.exponent_bits());
    let infinity = comptime!(((1u32 << exponent_bits) - 1) << mantissa_bits);
    let sign_bit = comptime!(1u32 << (exponent_bits + mantissa_bits));
    let top = top_bit(total, words);
    // A zero sum is `-0.0` only when every term is.
    let mut out = select((flags & NOT_NEGATIVE_ZERO) == 0u32, sign_bit, 0u32);
    if (flags & NAN) != 0u32
        || (flags & (POSITIVE_INFINITY | NEGATIVE_INFINITY))
            == (POSITIVE_INFINITY | NEGATIVE_INFINITY)
    {
        out = infinity | comptime!(1u32 << (mantissa_bits - 1));
    } else if (flags & POSITIVE_INFINITY) != 0u32 {
        out = infinity;
    } else if (flags & NEGATIVE_INFINITY) != 0u32 {
        out = sign_bit | infinity;
    } else if top >= 0i32 {
        // Grid bit 0 is worth 2^(origin - 150).
        let grid = comptime!(format.grid_origin() as i32 - 150);
        let sign = select(negative, sign_bit, 0u32);
        out = sign | round_magnitude(total, top, grid, format, words);
    }
    out
}

/// The 32 bits of the `words`-word integer `value` from bit `start` up; bits past the top are
/// zeros.
#[cube]
fn bits_from(value: &Array<u32>, start: u32, #[comptime] words: usize) -> u32 {
    let k = start / 32u32;
    let offset = start % 32u32;
    let mut low = 0u32;
    let mut high = 0u32;
    let n = comptime!(words as u32);
    #[unroll]
    for i in 0..n {
        low = select(k == i, value[i as usize], low);
        high = select(k + 1u32 == i, value[i as usize], high);
    }
    (low >> offset) | ((high << (31u32 - offset)) << 1u32)
}

/// Whether any of the bits of the `words`-word integer `value` below bit `end` is set.
#[cube]
fn any_below(value: &Array<u32>, end: u32, #[comptime] words: usize) -> bool {
    let mut any = false;
    let n = comptime!(words as u32);
    #[unroll]
    for i in 0..n {
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

/// The highest set bit of the `words`-word integer `value` (-1 when it is zero).
#[cube]
fn top_bit(value: &Array<u32>, #[comptime] words: usize) -> i32 {
    let mut top = i32::new(-1);
    let n = comptime!(words as u32);
    #[unroll]
    for i in 0..n {
        let word = value[i as usize];
        if word != 0u32 {
            top = i32::cast_from(i * 32u32 + 31u32 - word.leading_zeros());
        }
    }
    top
}

/// The magnitude `total * 2^grid` (a non-zero `words`-word integer whose highest set bit is
/// `top`) rounded to nearest even in `format`, as that format's bits without the sign: an
/// infinity on overflow, a subnormal or zero below the normal range.
#[cube]
fn round_magnitude(
    total: &Array<u32>,
    top: i32,
    grid: i32,
    #[comptime] format: SumFormat,
    #[comptime] words: usize,
) -> u32 {
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
        significand = bits_from(total, low, words) & comptime!((1u32 << (mantissa_bits + 1)) - 1);
        let half = (bits_from(total, low - 1u32, words) & 1u32) != 0u32;
        let sticky = any_below(total, low - 1u32, words);
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
        let mut total = Array::<u32>::new(2usize);
        total[0usize] = word0;
        total[1usize] = a_high * b_high + (middle >> 16u32) + carry;
        // Each operand is its significand times 2^(max(exponent, 1) - 150).
        let a_scale = select(a_exponent > 1u32, a_exponent, 1u32);
        let b_scale = select(b_exponent > 1u32, b_exponent, 1u32);
        let grid = i32::cast_from(a_scale + b_scale) - 300i32;
        out = sign | round_magnitude(&total, top_bit(&total, 2usize), grid, format, 2usize);
    }
    out
}
