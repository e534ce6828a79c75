//! ScatterND on 8- and 16-bit data that the runtime cannot bind (or, for a reduction, compute
//! with): the buffers are read and written as 32-bit words, two or four elements to a word.
//!
//! Neighbouring elements share a word, so two units that write different elements of one word
//! would lose one write with plain stores. The scatter therefore always runs on the per-target
//! lists (see the [module docs](super)): exactly one unit writes each target element, and it
//! applies its change to the word with one atomic XOR of the old and new bits of its own field,
//! which leaves every other field of the word as the other units set it. Arithmetic runs on the
//! 32-bit words: integers wrap to their width, `f16` and `bf16` compute in `f32` and round to
//! nearest even once per update, which gives the correctly rounded result of each step (`f32`
//! holds more than twice their precision plus two bits). `Min`/`Max` choose on raw bits with the
//! crate's rules, as the typed kernels do.

use cubecl::prelude::*;

use super::kernel::{ReduceOp, list_head, update_target};

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
fn field(words: &[u32], index: usize, #[comptime] bits: u32) -> u32 {
    let per_word = comptime!((32 / bits) as usize);
    let mask = comptime!(((1u64 << bits) - 1) as u32);
    let shift = ((index % per_word) as u32) * bits;
    (words[index / per_word] >> shift) & mask
}

/// The `f32` value of `f16` bits (exact: every f16 is an f32).
#[cube]
fn f16_to_f32(half: u32) -> f32 {
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

/// The `f32` value of the packed float `bits`.
#[cube]
fn float_of(bits: u32, #[comptime] kind: WordKind) -> f32 {
    if comptime!(kind == WordKind::F16) {
        f16_to_f32(bits)
    } else {
        f32::reinterpret(bits << 16u32)
    }
}

/// The packed float bits nearest to `value`.
#[cube]
fn float_bits(value: f32, #[comptime] kind: WordKind) -> u32 {
    if comptime!(kind == WordKind::F16) {
        f32_to_f16(value)
    } else {
        f32_to_bf16(value)
    }
}

/// Whether `value` replaces `acc` under `Min` (`smaller`) or `Max`: it compares strictly
/// smaller (larger). For floats a NaN on either side never replaces and `-0.0` and `+0.0` never
/// replace each other; the order is read from the raw bits with integer arithmetic.
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
        let infinity = comptime!(if kind == WordKind::F16 {
            0x7C00u32
        } else {
            0x7F80u32
        });
        let magnitude_acc = acc & (sign - 1u32);
        let magnitude_value = value & (sign - 1u32);
        comparable = magnitude_acc <= infinity
            && magnitude_value <= infinity
            && (magnitude_acc | magnitude_value) != 0u32;
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

/// `op(acc, value)` on packed elements of `bits` bits, as bits.
#[cube]
fn combine_packed(
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
        if comptime!(float) {
            let a = float_of(acc, kind);
            let b = float_of(value, kind);
            let mut exact = a * b;
            if comptime!(op == ReduceOp::Add) {
                exact = a + b;
            }
            out = float_bits(exact, kind);
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

/// Lists, step 2, for packed data: the unit whose row heads its target's list computes the
/// target element's new bits (the head's update for `Assign`, `op` over the whole list
/// otherwise) and XORs the change into the element's field of its output word, atomically; the
/// other units return at once. Each element has exactly one such unit, and the XOR touches no
/// other field, so units sharing a word never undo each other's writes.
///
/// `heads`, `next` and `targets` are final here, as in `scatter_nd_reduce_lists`.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn scatter_nd_reduce_lists_packed(
    output: &mut [Atomic<u32>],
    updates: &[u32],
    heads: &[u32],
    next: &[u32],
    targets: &[u32],
    slice: usize,
    units: usize,
    #[comptime] bits: u32,
    #[comptime] op: Option<ReduceOp>,
    #[comptime] kind: WordKind,
) {
    let position = ABSOLUTE_POS;
    if position >= units {
        terminate!();
    }
    let (element, _, heads_list) = list_head(heads, targets, position, slice, 1u32);
    if !heads_list {
        terminate!();
    }
    let row = position / slice;
    let col = position % slice;
    let per_word = comptime!((32 / bits) as usize);
    let mask = comptime!(((1u64 << bits) - 1) as u32);
    let word = element / per_word;
    let shift = ((element % per_word) as u32) * bits;
    // Only this unit writes this field, so the load sees its final input bits.
    let old = (output[word].load() >> shift) & mask;
    // `Assign` takes the head's own update; a reduction starts from the current value.
    let mut acc = if comptime!(op.is_some()) {
        old
    } else {
        field(updates, position, bits)
    };
    if comptime!(op.is_some()) {
        let reduce = comptime!(op.unwrap_or(ReduceOp::Add));
        let mut link = row as u32 + 1;
        // Every link points to a row pushed earlier, so the walk ends.
        while link != 0 {
            let member = (link - 1) as usize;
            acc = combine_packed(
                acc,
                field(updates, member * slice + col, bits),
                reduce,
                kind,
                bits,
            );
            link = next[member];
        }
    }
    if acc != old {
        output[word].fetch_xor((acc ^ old) << shift);
    }
}

/// ScatterND's adjoint for packed data: unit `w` writes output word `w`, packing the
/// `32 / bits` update-shaped elements it holds, each taken from the input element its index
/// tuple addresses (zero for a skipped tuple). The last word keeps its bytes past the output's
/// end.
#[cube(launch_unchecked, address_type = "dynamic")]
pub fn scatter_nd_gather_packed<I: Int>(
    output: &mut [u32],
    indices: &[I],
    input: &[u32],
    dims: &[u32],
    slice: usize,
    units: usize,
    words: usize,
    #[comptime] k: usize,
    #[comptime] signed: bool,
    #[comptime] wide: bool,
    #[comptime] clamp: bool,
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
            let (element, valid) =
                update_target::<I>(indices, dims, position, slice, k, signed, wide, clamp);
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
