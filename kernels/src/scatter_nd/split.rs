//! ScatterND on 64-bit data where the runtime binds no 64-bit type (OpenGL): each element is two
//! 32-bit words, low word first, and all arithmetic runs on those words.
//!
//! Two plain stores could tear an element between two duplicate updates, so the scatter always
//! runs along the rows sorted by target (`words.rs`): one unit per target element writes both
//! its words. `Assign` moves bits only and takes the typed kernel as u32 rows of twice the
//! slice. Integers wrap (`Add` with a carry, `Mul` from 16-bit partial products);
//! `Min`/`Max` choose on the raw bits with the crate's rules (a NaN never replaces and is never
//! replaced, zeros keep their sign). `f64` `Add`/`Mul` need float arithmetic the runtime does not
//! have, and the launcher refuses them.

use cubecl::prelude::*;

use super::kernel::ReduceOp;
use super::packed::WordKind;

/// The high 32 bits of the 64-bit product of `a` and `b`.
#[cube]
fn mul_high(a: u32, b: u32) -> u32 {
    let a0 = a & 0xFFFFu32;
    let a1 = a >> 16u32;
    let b0 = b & 0xFFFFu32;
    let b1 = b >> 16u32;
    let low = a0 * b0;
    let cross_a = a0 * b1;
    let cross_b = a1 * b0;
    let middle = (low >> 16u32) + (cross_a & 0xFFFFu32) + (cross_b & 0xFFFFu32);
    a1 * b1 + (cross_a >> 16u32) + (cross_b >> 16u32) + (middle >> 16u32)
}

/// `(hi, lo)` of a 64-bit value as a key whose unsigned order (high word first) is the value's
/// order under `kind`: the sign bit flipped for integers, the IEEE order for floats (negative
/// values mirrored below the positive ones).
#[cube]
fn order_key(lo: u32, hi: u32, #[comptime] kind: WordKind) -> (u32, u32) {
    let sign = 0x8000_0000u32;
    let mut key_hi = hi;
    let mut key_lo = lo;
    if comptime!(kind == WordKind::Signed) {
        key_hi = hi ^ sign;
    } else if comptime!(kind != WordKind::Unsigned) {
        if (hi & sign) != 0u32 {
            // (2^63 - 1) - magnitude: every bit of the magnitude flipped.
            key_hi = (hi & 0x7FFF_FFFFu32) ^ 0x7FFF_FFFFu32;
            key_lo = !lo;
        } else {
            key_hi = hi | sign;
        }
    }
    (key_hi, key_lo)
}

/// Whether the `f64` bits are a NaN.
#[cube]
pub(super) fn is_nan(lo: u32, hi: u32) -> bool {
    let magnitude = hi & 0x7FFF_FFFFu32;
    magnitude > 0x7FF0_0000u32 || (magnitude == 0x7FF0_0000u32 && lo != 0u32)
}

/// `op((acc_lo, acc_hi), (lo, hi))` on 64-bit values held as word pairs: `(lo, hi)` of the
/// result. `kind` is `Unsigned`, `Signed`, or any float kind for `f64` (`Min`/`Max` only).
#[cube]
pub(super) fn combine_split(
    acc_lo: u32,
    acc_hi: u32,
    lo: u32,
    hi: u32,
    #[comptime] op: ReduceOp,
    #[comptime] kind: WordKind,
) -> (u32, u32) {
    let mut out_lo = acc_lo;
    let mut out_hi = acc_hi;
    if comptime!(op == ReduceOp::Add) {
        out_lo = acc_lo + lo;
        out_hi = acc_hi + hi + u32::cast_from(out_lo < acc_lo);
    } else if comptime!(op == ReduceOp::Mul) {
        out_lo = acc_lo * lo;
        out_hi = mul_high(acc_lo, lo) + acc_hi * lo + acc_lo * hi;
    } else {
        let (key_acc_hi, key_acc_lo) = order_key(acc_lo, acc_hi, kind);
        let (key_hi, key_lo) = order_key(lo, hi, kind);
        let mut replace = key_hi > key_acc_hi || (key_hi == key_acc_hi && key_lo > key_acc_lo);
        if comptime!(op == ReduceOp::Min) {
            replace = key_hi < key_acc_hi || (key_hi == key_acc_hi && key_lo < key_acc_lo);
        }
        // The key order ranks -0.0 below +0.0; a NaN ranks nowhere.
        if comptime!(kind != WordKind::Unsigned && kind != WordKind::Signed) {
            replace = replace && !is_nan(acc_lo, acc_hi) && !is_nan(lo, hi);
        }
        if replace {
            out_lo = lo;
            out_hi = hi;
        }
    }
    (out_lo, out_hi)
}
