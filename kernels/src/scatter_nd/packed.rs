//! ScatterND on 8- and 16-bit data that the runtime cannot bind (or, for a reduction, compute
//! with): the buffers are read and written as 32-bit words, two or four elements to a word.
//!
//! Neighbouring elements share a word, so two units that write different elements of one word
//! would lose one write with plain stores. The scatter therefore always runs along the rows
//! sorted by target (`words.rs`): exactly one unit writes each target element, and it applies
//! its change to the word with one atomic XOR of the old and new bits of its own field, which
//! leaves every other field of the word as the other units set it. Arithmetic runs on the
//! 32-bit words: integers wrap to their width, and floats round to nearest even once per update,
//! which gives the correctly rounded result of each step. Products are formed in integer
//! arithmetic (`round_product`, as the deterministic kernels do). `f16` sums compute in `f32`
//! (which holds more than twice its precision plus two bits, and every `f16` as a normal
//! number). `bf16` shares `f32`'s exponent range, so its subnormals are `f32` subnormals, which
//! GPUs commonly flush to zero: its sums of two values below 2 are computed in `f32` scaled by
//! 2^64. `Min`/`Max` choose on raw
//! bits with the crate's rules, as the typed kernels do.

use cubecl::prelude::*;

use super::exact::{SumFormat, round_product, widen};
use super::indices::{IndexRead, update_target};
use super::kernel::ReduceOp;

/// How the kernels that hold data in 32-bit words (8- and 16-bit elements packed into words,
/// 64-bit ones split into word pairs) read an element's bits for arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WordKind {
    /// An unsigned integer (`u8`, `u16`, `u64`), and bools.
    Unsigned,
    /// A two's-complement integer (`i8`, `i16`, `i64`).
    Signed,
    /// IEEE binary16.
    F16,
    /// bfloat16: the upper half of an `f32`.
    BF16,
    /// IEEE binary64 (`Min`/`Max` only: its arithmetic needs the runtime's).
    F64,
}

/// The `bits`-bit field of element `index` in a buffer of 32-bit words (element 0 in the low
/// bits of word 0).
#[cube]
pub(super) fn field(words: &[u32], index: usize, #[comptime] bits: u32) -> u32 {
    let per_word = comptime!((32 / bits) as usize);
    let mask = comptime!(((1u64 << bits) - 1) as u32);
    let shift = ((index % per_word) as u32) * bits;
    (words[index / per_word] >> shift) & mask
}

/// The `f32` value of `f16` bits (exact: every f16 is an f32).
#[cube]
pub(super) fn f16_to_f32(half: u32) -> f32 {
    let sign = (half & 0x8000u32) << 16u32;
    let exponent = (half >> 10u32) & 0x1Fu32;
    let mantissa = half & 0x3FFu32;
    let mut bits = sign;
    if exponent == 0x1Fu32 {
        bits = sign | 0x7F80_0000u32 | (mantissa << 13u32);
    } else if exponent != 0u32 {
        bits = sign | ((exponent + 112u32) << 23u32) | (mantissa << 13u32);
    } else if mantissa != 0u32 {
        // Subnormal: mantissa * 2^-24, exact in f32.
        let magnitude = f32::cast_from(mantissa) * 5.960_464_5e-8f32;
        bits = sign | u32::reinterpret(magnitude);
    }
    f32::reinterpret(bits)
}

/// The `f16` bits nearest to `value` (ties to even; NaN stays a quiet NaN, overflow gives an
/// infinity, underflow a zero of the same sign).
#[cube]
fn f32_to_f16(value: f32) -> u32 {
    let x = u32::reinterpret(value);
    let sign = (x >> 16u32) & 0x8000u32;
    let exponent = (x >> 23u32) & 0xFFu32;
    let mantissa = x & 0x7F_FFFFu32;
    let mut half = sign;
    if exponent == 0xFFu32 {
        half = sign | 0x7C00u32;
        if mantissa != 0u32 {
            half = half | 0x200u32 | (mantissa >> 13u32);
        }
    } else if exponent > 142u32 {
        // 2^16 or more: beyond f16's largest finite value even before rounding.
        half = sign | 0x7C00u32;
    } else if exponent > 112u32 {
        // A normal f16: drop 13 mantissa bits, round half to even (a carry may reach the
        // exponent, up to infinity, which is the right rounding).
        let base = sign | ((exponent - 112u32) << 10u32) | (mantissa >> 13u32);
        let round = (mantissa & 0x1000u32) != 0u32 && (mantissa & 0x2FFFu32) != 0u32;
        half = base + u32::cast_from(round);
    } else if exponent >= 102u32 {
        // A subnormal f16: shift the full significand right by 14..=24 bits.
        let full = mantissa | 0x80_0000u32;
        let shift = 126u32 - exponent;
        let round_bit = 1u32 << (shift - 1u32);
        let round = (full & round_bit) != 0u32 && (full & (3u32 * round_bit - 1u32)) != 0u32;
        half = sign | ((full >> shift) + u32::cast_from(round));
    }
    half
}

/// The `bf16` bits nearest to `value` (ties to even; NaN stays a quiet NaN).
#[cube]
fn f32_to_bf16(value: f32) -> u32 {
    let x = u32::reinterpret(value);
    let mut half = (x + 0x7FFFu32 + ((x >> 16u32) & 1u32)) >> 16u32;
    if (x & 0x7FFF_FFFFu32) > 0x7F80_0000u32 {
        half = (x >> 16u32) | 0x40u32;
    }
    half
}

/// `x >> shift` rounded to nearest, ties to even (`shift` from 1 to 31).
#[cube]
fn shift_right_even(x: u32, shift: u32) -> u32 {
    let quotient = x >> shift;
    let half = 1u32 << (shift - 1u32);
    let rest = x & ((half << 1u32) - 1u32);
    let up = rest > half || (rest == half && (quotient & 1u32) == 1u32);
    quotient + u32::cast_from(up)
}

/// The `f32` value of `bf16` bits below 2 in magnitude, times 2^64: a normal `f32` (or a
/// zero), even for a subnormal `bf16`, so that no runtime that flushes subnormal `f32` to zero
/// (GPUs commonly do) loses it.
#[cube]
fn bf16_scaled_up(x: u32) -> f32 {
    // The exponent field is below 128, so adding 64 to it carries into nothing.
    let mut bits = (x + (64u32 << 7u32)) << 16u32;
    if (x & 0x7F80u32) == 0u32 {
        // Subnormal (or zero): mantissa * 2^-133, scaled to mantissa * 2^-69 (0x1D00_0000).
        let magnitude = f32::cast_from(x & 0x7Fu32) * f32::reinterpret(0x1D00_0000u32);
        bits = ((x & 0x8000u32) << 16u32) | u32::reinterpret(magnitude);
    }
    f32::reinterpret(bits)
}

/// `a + b` on `bf16` bits, rounded to nearest even, subnormals kept. Where either is 2 or more
/// in magnitude (or not finite) the `f32` sum decides, and a subnormal the runtime may flush
/// is below half an ulp of the result. Otherwise both are summed times 2^64, where every
/// operand is a normal `f32` and a subnormal result is exact, and the sum is scaled back and
/// rounded with integer arithmetic.
#[cube]
fn bf16_add(a: u32, b: u32) -> u32 {
    let mut out = f32_to_bf16(f32::reinterpret(a << 16u32) + f32::reinterpret(b << 16u32));
    if (a & 0x7FFFu32) < 0x4000u32 && (b & 0x7FFFu32) < 0x4000u32 {
        let sum = u32::reinterpret(bf16_scaled_up(a) + bf16_scaled_up(b));
        let sign = (sum >> 16u32) & 0x8000u32;
        let exponent = (sum >> 23u32) & 0xFFu32;
        if exponent > 64u32 {
            out = f32_to_bf16(f32::reinterpret(sum - (64u32 << 23u32)));
        } else {
            // A subnormal bf16 (a multiple of 2^-133): the 24-bit significand times
            // 2^(exponent - 81) units. A non-zero sum is at least 2^-69 (exponent 58), so the
            // shift is 17 to 23; anything else gives a zero of the sum's sign.
            out = sign;
            if exponent >= 58u32 {
                let full = (sum & 0x7F_FFFFu32) | 0x80_0000u32;
                out = sign | shift_right_even(full, 81u32 - exponent);
            }
        }
    }
    out
}

/// Whether `value` replaces `acc` under `Min` (`smaller`) or `Max`: it ranks strictly below
/// (above) it. For floats a NaN on either side never replaces and `-0.0` ranks below `+0.0`, as
/// in the typed kernels; the order is read from the raw bits with integer arithmetic.
#[cube]
fn replaces(
    acc: u32,
    value: u32,
    #[comptime] smaller: bool,
    #[comptime] kind: WordKind,
    #[comptime] bits: u32,
) -> bool {
    let sign = comptime!(1u32 << (bits - 1));
    let mut key_acc = acc;
    let mut key_value = value;
    let mut comparable = true;
    if comptime!(kind == WordKind::Signed) {
        // Flipping the sign bit maps two's-complement order onto unsigned order.
        key_acc = acc ^ sign;
        key_value = value ^ sign;
    } else if comptime!(kind == WordKind::F16 || kind == WordKind::BF16) {
        let magnitude_acc = acc & (sign - 1u32);
        let magnitude_value = value & (sign - 1u32);
        comparable = !is_nan_field(acc, kind, bits) && !is_nan_field(value, kind, bits);
        // Negative floats: larger magnitudes below smaller ones, all below the positives.
        key_acc = sign | magnitude_acc;
        if (acc & sign) != 0u32 {
            key_acc = (sign - 1u32) - magnitude_acc;
        }
        key_value = sign | magnitude_value;
        if (value & sign) != 0u32 {
            key_value = (sign - 1u32) - magnitude_value;
        }
    }
    let mut ordered = key_value > key_acc;
    if comptime!(smaller) {
        ordered = key_value < key_acc;
    }
    comparable && ordered
}

/// Whether the `bits`-bit field is a NaN of a float `kind` (never for integers).
#[cube]
pub(super) fn is_nan_field(field: u32, #[comptime] kind: WordKind, #[comptime] bits: u32) -> bool {
    let infinity = comptime!(match kind {
        WordKind::F16 => 0x7C00u32,
        WordKind::BF16 => 0x7F80u32,
        _ => u32::MAX,
    });
    (field & comptime!((1u32 << (bits - 1)) - 1)) > infinity
}

/// `op(acc, value)` on packed elements of `bits` bits, as bits.
#[cube]
pub(super) fn combine_packed(
    acc: u32,
    value: u32,
    #[comptime] op: ReduceOp,
    #[comptime] kind: WordKind,
    #[comptime] bits: u32,
) -> u32 {
    let mask = comptime!(((1u64 << bits) - 1) as u32);
    let float = comptime!(kind == WordKind::F16 || kind == WordKind::BF16);
    let mut out = acc;
    if comptime!(op == ReduceOp::Add || op == ReduceOp::Mul) {
        if comptime!(float && op == ReduceOp::Mul) {
            let format = comptime!(if kind == WordKind::BF16 {
                SumFormat::BF16
            } else {
                SumFormat::F16
            });
            let a = u32::reinterpret(widen(acc, format));
            out = round_product(a, u32::reinterpret(widen(value, format)), format);
        } else if comptime!(kind == WordKind::BF16) {
            out = bf16_add(acc, value);
        } else if comptime!(float) {
            out = f32_to_f16(f16_to_f32(acc) + f16_to_f32(value));
        } else if comptime!(op == ReduceOp::Add) {
            // The low bits of a sum and a product are the same for signed and unsigned.
            out = (acc + value) & mask;
        } else {
            out = (acc * value) & mask;
        }
    } else if replaces(acc, value, comptime!(op == ReduceOp::Min), kind, bits) {
        out = value;
    }
    out
}

/// ScatterND's adjoint for packed data: unit `w` writes output word `w`, packing the
/// `32 / bits` update-shaped elements it holds, each taken from the input element its index
/// tuple addresses (zero for a skipped tuple). The last word keeps its bytes past the output's
/// end.
#[cube(launch_unchecked, create_dummy_kernel, address_type = "dynamic")]
pub fn scatter_nd_gather_packed<I: Int>(
    output: &mut [u32],
    indices: &[I],
    input: &[u32],
    dims: Sequence<u32>,
    slice: usize,
    units: usize,
    words: usize,
    #[comptime] read: IndexRead,
    #[comptime] bits: u32,
    #[define(I)] _index_type: ElemType,
) {
    let word = ABSOLUTE_POS;
    if word >= words {
        terminate!();
    }
    let per_word = comptime!((32 / bits) as usize);
    let mut packed = 0u32;
    #[unroll]
    for s in 0..per_word {
        let position = word * per_word + s;
        if position < units {
            let (element, valid) = update_target::<I>(indices, &dims, position, slice, read);
            if valid {
                packed |= field(input, element, bits) << comptime!((s as u32) * bits);
            }
        }
    }
    let filled = units - word * per_word;
    if filled < per_word {
        // The last word: its bytes past the output's end keep their value.
        let kept = !((1u32 << (filled as u32 * bits)) - 1u32);
        packed |= output[word] & kept;
    }
    output[word] = packed;
}
