//! The nodes of deterministic float `Mul`'s tree (see `sorted_product.rs`): a product carried
//! as a 64-bit significand (two words), an exponent of its own and flags for the special
//! values; a term's leaf, the product of two nodes (the top 64 bits of the exact one,
//! truncated) and the root's rounding with its error bound, in integer arithmetic only. The
//! host reference (`exact_product` in the main crate) computes the same.

use cubecl::prelude::*;

use super::exact::SumFormat;

/// A node's flags: a NaN term.
const NAN: u32 = 1;
/// An infinite term.
const INFINITY: u32 = 2;
/// A zero term.
const ZERO: u32 = 4;
/// The product is negative.
const NEGATIVE: u32 = 8;
/// A product dropped bits.
const INEXACT: u32 = 16;
/// An exponent left `±EXPONENT_LIMIT`, beyond every rounding the node could reach: index order
/// decides.
const OUT_OF_RANGE: u32 = 32;
/// The largest exponent magnitude a node carries.
const EXPONENT_LIMIT: i32 = 1 << 29;
/// Words of a node in the tree's scratch: significand high and low, exponent, flags.
pub(super) const NODE_WORDS: usize = 4;

/// A product in the tree: `hi:lo` (bit 63 set) times `2^(exponent - 63)`, or a special value
/// by its flags (then `hi:lo` is one and the exponent zero, so every product stays exact).
#[derive(CubeType, Clone)]
pub(super) struct Node {
    hi: u32,
    lo: u32,
    exponent: i32,
    flags: u32,
}

/// A running product: a [`Node`]'s four words (see [`store_node`]) in an array, which a loop
/// may update.
#[cube]
pub(super) fn product_of(node: Node) -> Array<u32> {
    let mut acc = Array::<u32>::new(NODE_WORDS);
    set_product(&mut acc, node);
    acc
}

/// Sets the running product `acc` to `node`.
#[cube]
pub(super) fn set_product(acc: &mut Array<u32>, node: Node) {
    acc[0] = node.hi;
    acc[1] = node.lo;
    acc[2] = u32::reinterpret(node.exponent);
    acc[3] = node.flags;
}

/// The node a running product holds.
#[cube]
pub(super) fn node_in(acc: &Array<u32>) -> Node {
    Node {
        hi: acc[0],
        lo: acc[1],
        exponent: i32::reinterpret(acc[2]),
        flags: acc[3],
    }
}

/// Multiplies the running product `acc` by `factor`.
#[cube]
pub(super) fn multiply_into(acc: &mut Array<u32>, factor: Node) {
    let product = multiply(node_in(&*acc), factor);
    set_product(acc, product);
}

/// The node of one term of `f32` bits (every `f16` and `bf16` is one): exact.
#[cube]
pub(super) fn leaf(term: u32) -> Node {
    let field = (term >> 23u32) & 0xFFu32;
    let fraction = term & 0x7F_FFFFu32;
    let significand = fraction | select(field != 0u32, 0x80_0000u32, 0u32);
    let special = field == 0xFFu32;
    let kind = select(
        special,
        select(fraction != 0u32, NAN, INFINITY),
        select(significand == 0u32, ZERO, 0u32),
    );
    let ordinary = kind == 0u32;
    // The significand's leading one moves to bit 31 (8 or more places); the term is
    // `significand * 2^(max(field, 1) - 150)`.
    let shift = select(ordinary, significand.leading_zeros(), 8u32);
    let scale = select(field > 1u32, field, 1u32);
    Node {
        hi: select(ordinary, significand << shift, 0x8000_0000u32),
        lo: 0u32,
        exponent: select(
            ordinary,
            i32::cast_from(scale) - 119i32 - i32::cast_from(shift),
            0i32,
        ),
        flags: kind | select((term >> 31u32) != 0u32, NEGATIVE, 0u32),
    }
}

/// `a + b + carry` and its carry out (0 or 1).
#[cube]
fn add_carry(a: u32, b: u32, carry: u32) -> (u32, u32) {
    let sum = a + b;
    let total = sum + carry;
    (total, u32::cast_from(sum < a) + u32::cast_from(total < sum))
}

/// `a * b`: the top 64 bits of the exact product of the significands, the rest dropped
/// (flagged `INEXACT` when not zero), the exponents added, the flags combined.
#[cube]
fn multiply(a: Node, b: Node) -> Node {
    // The 128-bit product from four 32 x 32 -> 64 products, in words r0..r3.
    let (ll, lh) = (a.lo * b.lo, a.lo.mul_hi(b.lo));
    let (cl, ch) = (a.lo * b.hi, a.lo.mul_hi(b.hi));
    let (dl, dh) = (a.hi * b.lo, a.hi.mul_hi(b.lo));
    let (hl, hh) = (a.hi * b.hi, a.hi.mul_hi(b.hi));
    let (r1, c1) = add_carry(lh, cl, 0u32);
    let (r1, c2) = add_carry(r1, dl, 0u32);
    let (r2, c3) = add_carry(ch, dh, c1);
    let (r2, c4) = add_carry(r2, hl, c2);
    let r3 = hh + c3 + c4;
    // Both significands are at least 2^63, so the product's top bit is 127 or 126.
    let top = (r3 >> 31u32) != 0u32;
    let hi = select(top, r3, (r3 << 1u32) | (r2 >> 31u32));
    let lo = select(top, r2, (r2 << 1u32) | (r1 >> 31u32));
    let dropped = select(top, r1, r1 << 1u32) | ll;
    let exponent = a.exponent + b.exponent + select(top, 1i32, 0i32);
    let magnitude = select(exponent < 0i32, 0i32 - exponent, exponent);
    let out = magnitude > EXPONENT_LIMIT;
    let flags = ((a.flags | b.flags) & !NEGATIVE)
        | ((a.flags ^ b.flags) & NEGATIVE)
        | select(dropped != 0u32, INEXACT, 0u32)
        | select(out, OUT_OF_RANGE, 0u32);
    Node {
        hi,
        lo,
        exponent: select(out, 0i32, exponent),
        flags,
    }
}

/// Whether the 64-bit `a_hi:a_lo` is below `b_hi:b_lo`.
#[cube]
fn below(a_hi: u32, a_lo: u32, b_hi: u32, b_lo: u32) -> bool {
    a_hi < b_hi || (a_hi == b_hi && a_lo < b_lo)
}

/// The root `node` of a tree of at most `bound` multiplications rounded to nearest even in
/// `format`, as that format's bits, and whether the rounding is uncertain (then the bits are
/// meaningless and index order decides): a NaN term, or an infinity with a zero, gives the
/// positive quiet NaN; an infinity or a zero a value of the product's sign.
#[cube]
pub(super) fn round_node(node: Node, bound: u32, #[comptime] format: SumFormat) -> (u32, bool) {
    let mantissa_bits = comptime!(format.mantissa_bits());
    let exponent_bits = comptime!(format.exponent_bits());
    let infinity = comptime!(((1u32 << exponent_bits) - 1) << mantissa_bits);
    let min_exponent = comptime!(2i32 - (1i32 << (exponent_bits - 1)));
    let max_exponent = comptime!((1i32 << (exponent_bits - 1)) - 1);
    let flags = node.flags;
    let sign = select(
        (flags & NEGATIVE) != 0u32,
        comptime!(1u32 << (exponent_bits + mantissa_bits)),
        0u32,
    );
    let nan = (flags & NAN) != 0u32 || (flags & (INFINITY | ZERO)) == (INFINITY | ZERO);
    let mut bits = sign;
    let mut uncertain = false;
    if nan {
        bits = infinity | comptime!(1u32 << (mantissa_bits - 1));
    } else if (flags & INFINITY) != 0u32 {
        bits = sign | infinity;
    } else if (flags & ZERO) != 0u32 {
        // A zero of the product's sign.
    } else if (flags & OUT_OF_RANGE) != 0u32 {
        uncertain = true;
    } else {
        if node.exponent > max_exponent {
            bits = sign | infinity;
        } else {
            let inexact = (flags & INEXACT) != 0u32;
            // Four units of the significand's last bit per multiplication bound how far below
            // the exact product the computed one lies.
            let (bound_hi, bound_lo) = (bound >> 30u32, bound << 2u32);
            // The bits below the result's last one: 63 - mantissa_bits for a normal result,
            // one more per binade below the normal range; the high word keeps `dropped - 32`.
            let subnormal = select(
                node.exponent < min_exponent,
                min_exponent - node.exponent,
                0i32,
            );
            let dropped = comptime!(31i32 - mantissa_bits as i32) + subnormal;
            if dropped > 33i32 {
                // Below a quarter of the smallest subnormal, and its error with it: zero.
            } else if dropped == 33i32 {
                // Below half the smallest subnormal: zero, unless the error reaches the half.
                let (rest_lo, carry) = add_carry(!node.lo, 1u32, 0u32);
                let rest_hi = !node.hi + carry;
                uncertain = inexact && below(rest_hi, rest_lo, bound_hi, bound_lo);
            } else {
                let shift = u32::cast_from(dropped);
                // `shift` is 8..=32: two shifts, so that 32 never shifts a word by 32.
                let kept = (node.hi >> (shift - 1u32)) >> 1u32;
                let rest_hi = node.hi & (((1u32 << (shift - 1u32)) << 1u32) - 1u32);
                let half_hi = 1u32 << (shift - 1u32);
                let above = below(half_hi, 0u32, rest_hi, node.lo);
                let tie = rest_hi == half_hi && node.lo == 0u32;
                // Under the half: uncertain if the error can reach it (`gap` is half - rest).
                let gap_lo = 0u32 - node.lo;
                let gap_hi = half_hi - rest_hi - u32::cast_from(node.lo != 0u32);
                let under = !above && !tie;
                uncertain = inexact && under && below(gap_hi, gap_lo, bound_hi, bound_lo);
                let odd = (kept & 1u32) != 0u32;
                // Inexact, the exact product is above the computed one: a tie rounds up.
                let round_up = above || (tie && (inexact || odd));
                let field = select(
                    node.exponent > min_exponent,
                    u32::cast_from(node.exponent - min_exponent),
                    0u32,
                );
                let rounded = (field << mantissa_bits) + kept + u32::cast_from(round_up);
                bits = sign | select(rounded < infinity, rounded, infinity);
            }
        }
    }
    (bits, uncertain)
}

/// The node at entry `entry` of `nodes`: its high and low significand words, exponent and
/// flags, [`NODE_WORDS`] words from `entry * NODE_WORDS` on.
#[cube]
pub(super) fn load_node(nodes: &[u32], entry: usize) -> Node {
    let at = entry * NODE_WORDS;
    Node {
        hi: nodes[at],
        lo: nodes[at + 1usize],
        exponent: i32::reinterpret(nodes[at + 2usize]),
        flags: nodes[at + 3usize],
    }
}

#[cube]
pub(super) fn store_node(nodes: &mut [u32], entry: usize, value: Node) {
    let at = entry * NODE_WORDS;
    nodes[at] = value.hi;
    nodes[at + 1usize] = value.lo;
    nodes[at + 2usize] = u32::reinterpret(value.exponent);
    nodes[at + 3usize] = value.flags;
}
