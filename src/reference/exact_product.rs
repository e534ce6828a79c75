//! The float product of deterministic ScatterND `Mul` on the host, bit for bit what the kernels
//! compute (`product.rs` in the kernel crate): an element's terms, its value then its updates
//! in index order, multiply in a tree fixed by their count, each product keeping the top 64
//! bits of its exact significand and an exponent of its own, and the root is rounded once to
//! nearest even. Where the tree's error bound leaves that rounding uncertain, the terms
//! multiply in index order instead, each step rounded (`exact_sum::round_product`). Either
//! way the result is never less accurate than index order: otherwise it is the exact product
//! rounded once.

use super::exact_sum::Format;

/// Sorted positions a node of the lowest level spans (the kernels' `CHUNK_ROWS`).
pub(crate) const CHUNK: usize = 32;
/// Nodes one node of the next level folds (the kernels' `NODE_FAN`).
pub(crate) const FAN: usize = 8;
/// The largest exponent magnitude a node carries; beyond it, index order decides.
const EXPONENT_LIMIT: i32 = 1 << 29;

/// A node of the tree: `significand` (bit 63 set) times `2^(exponent - 63)`, or a special
/// value by its flags (then the significand is one and the exponent zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    significand: u64,
    exponent: i32,
    nan: bool,
    infinity: bool,
    zero: bool,
    negative: bool,
    inexact: bool,
    out_of_range: bool,
}

const ONE: Node = Node {
    significand: 1 << 63,
    exponent: 0,
    nan: false,
    infinity: false,
    zero: false,
    negative: false,
    inexact: false,
    out_of_range: false,
};

impl Node {
    /// The node of a term given as `f32` bits (exact).
    fn leaf(term: u32) -> Self {
        let field = (term >> 23) & 0xFF;
        let fraction = term & 0x7F_FFFF;
        let significand = fraction | if field != 0 { 0x80_0000 } else { 0 };
        let negative = term >> 31 != 0;
        if field == 0xFF || significand == 0 {
            return Node {
                nan: field == 0xFF && fraction != 0,
                infinity: field == 0xFF && fraction == 0,
                zero: field != 0xFF,
                negative,
                ..ONE
            };
        }
        // The term is `significand * 2^(max(field, 1) - 150)`.
        let shift = significand.leading_zeros();
        Node {
            significand: u64::from(significand << shift) << 32,
            exponent: field.max(1) as i32 - 119 - shift as i32,
            negative,
            ..ONE
        }
    }

    /// `self * other`: the top 64 bits of the exact product, the rest dropped.
    fn times(self, other: Self) -> Self {
        let product = u128::from(self.significand) * u128::from(other.significand);
        let top = product >> 127 != 0;
        let kept = if top { product >> 64 } else { product >> 63 };
        let dropped = if top {
            product as u64
        } else {
            (product as u64) << 1
        };
        let exponent = self.exponent + other.exponent + i32::from(top);
        let out_of_range = !(-EXPONENT_LIMIT..=EXPONENT_LIMIT).contains(&exponent);
        Node {
            significand: kept as u64,
            exponent: if out_of_range { 0 } else { exponent },
            nan: self.nan || other.nan,
            infinity: self.infinity || other.infinity,
            zero: self.zero || other.zero,
            negative: self.negative != other.negative,
            inexact: self.inexact || other.inexact || dropped != 0,
            out_of_range: self.out_of_range || other.out_of_range || out_of_range,
        }
    }

    /// The node rounded to nearest even in `format`, as its bits, for a tree of at most
    /// `bound` multiplications; `None` where the rounding is uncertain: a midpoint lies within
    /// the error bound above the computed significand (four of its last units per
    /// multiplication).
    fn round(self, bound: u32, format: Format) -> Option<u32> {
        let Format {
            exponent_bits,
            mantissa_bits,
            ..
        } = format;
        let infinity = ((1u32 << exponent_bits) - 1) << mantissa_bits;
        let sign = u32::from(self.negative) << (exponent_bits + mantissa_bits);
        if self.nan || (self.infinity && self.zero) {
            return Some(infinity | (1 << (mantissa_bits - 1)));
        }
        if self.infinity {
            return Some(sign | infinity);
        }
        if self.zero {
            return Some(sign);
        }
        if self.out_of_range {
            return None;
        }
        let min_exponent = 2 - (1i32 << (exponent_bits - 1));
        let max_exponent = (1i32 << (exponent_bits - 1)) - 1;
        if self.exponent > max_exponent {
            return Some(sign | infinity);
        }
        let error = 4 * u64::from(bound);
        let significand = self.significand;
        // The significand's bits below the result's last one.
        let dropped = 63 - mantissa_bits as i32 + (min_exponent - self.exponent).max(0);
        if dropped > 65 {
            return Some(sign);
        }
        if dropped == 65 {
            // Below half the smallest subnormal: zero, unless the error reaches the half.
            let rest = significand.wrapping_neg();
            return (!(self.inexact && rest < error)).then_some(sign);
        }
        let dropped = dropped as u32;
        let kept = (u128::from(significand) >> dropped) as u32;
        let rest = u128::from(significand) & ((1u128 << dropped) - 1);
        let half = 1u128 << (dropped - 1);
        if self.inexact && rest < half && half - rest < u128::from(error) {
            return None;
        }
        // Inexact, the exact product lies above the computed one: a tie rounds up.
        let round_up = rest > half || (rest == half && (self.inexact || kept & 1 == 1));
        let field = (self.exponent - min_exponent).max(0) as u32;
        let rounded = (field << mantissa_bits) + kept + u32::from(round_up);
        Some(sign | rounded.min(infinity))
    }
}

/// The tree's product of `terms` (`f32` bits of values of `format`: the element's value, then
/// its updates in index order, the first of them at sorted position `start` among every
/// target's rows) as `format`'s bits; `None` where its rounding is uncertain, for the caller to
/// multiply in index order. The value multiplies, left to right, the largest aligned node at
/// each position that lies inside the updates (`CHUNK * FAN^l` positions from a multiple of
/// that), or else the single update, as the kernels' join does.
pub(crate) fn tree_product(terms: &[u32], start: usize, format: Format) -> Option<u32> {
    let (&value, updates) = terms.split_first()?;
    let end = start + updates.len();
    let mut acc = Node::leaf(value);
    let mut at = start;
    while at < end {
        let mut width = 1;
        let mut next = CHUNK;
        while at.is_multiple_of(next) && at + next <= end {
            width = next;
            next *= FAN;
        }
        acc = acc.times(node(&updates[at - start..at - start + width]));
        at += width;
    }
    let bound = if terms.len() < 1 << 31 {
        terms.len().next_multiple_of(CHUNK) as u32
    } else {
        u32::MAX
    };
    acc.round(bound, format)
}

/// The node over `terms` (one, `CHUNK`, or `CHUNK * FAN^l` of them): a leaf, or its leaves or
/// `FAN` nodes multiplied left to right.
fn node(terms: &[u32]) -> Node {
    let part = match terms.len() {
        1 => return Node::leaf(terms[0]),
        CHUNK => 1,
        len => len / FAN,
    };
    terms
        .chunks(part)
        .map(node)
        .reduce(Node::times)
        .expect("a node has terms")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::exact_sum::{self, BF16, F16, F32};

    /// The exact product of finite non-zero `f32` terms rounded once to nearest even in `f32`,
    /// as bits: the significands multiplied in 128 bits (five terms at most), then rounded with
    /// the bits below the result's last one.
    fn rounded_once(terms: &[f32]) -> u32 {
        assert!(terms.len() <= 5 && terms.iter().all(|t| t.is_normal() || t.is_subnormal()));
        let mut significand = 1u128;
        // The value is `significand * 2^exponent`.
        let mut exponent = 0i32;
        for term in terms {
            let bits = term.to_bits();
            let field = ((bits >> 23) & 0xFF) as i32;
            let fraction = u128::from(bits & 0x7F_FFFF);
            significand *= fraction | if field != 0 { 1 << 23 } else { 0 };
            exponent += field.max(1) - 150;
        }
        let top = 127 - significand.leading_zeros() as i32;
        // The result's last bit: 23 below the top, or the smallest subnormal's (2^-149).
        let last = (top - 23).max(-149 - exponent);
        let sign = terms.iter().filter(|t| t.is_sign_negative()).count() as u32 % 2;
        let magnitude = if last >= 127 {
            0
        } else if last <= 0 {
            (significand << -last) as u64
        } else {
            let kept = (significand >> last) as u64;
            let rest = significand & ((1u128 << last) - 1);
            let half = 1u128 << (last - 1);
            kept + u64::from(rest > half || (rest == half && kept & 1 == 1))
        };
        // `magnitude` units of 2^(last + exponent): below 2^-126 it is the subnormal encoding.
        let scale = last + exponent;
        let value = if magnitude == 0 {
            0
        } else {
            let exact = magnitude as f64 * 2f64.powi(scale);
            (exact as f32).to_bits()
        };
        sign << 31 | value
    }

    fn index_order(terms: &[u32], format: Format) -> u32 {
        terms[1..].iter().fold(terms[0], |acc, &term| {
            let bits = exact_sum::round_product(acc, term, format);
            if format.mantissa_bits == 23 {
                bits
            } else {
                // Back to `f32` bits: the 16-bit formats widen exactly.
                let value = if format.mantissa_bits == 10 {
                    half::f16::from_bits(bits as u16).to_f32()
                } else {
                    half::bf16::from_bits(bits as u16).to_f32()
                };
                value.to_bits()
            }
        })
    }

    /// A xorshift stream.
    fn stream(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn the_tree_rounds_the_exact_product_once() {
        let mut next = stream(0x9E37_79B9);
        let mut differs_from_index_order = 0;
        for _ in 0..20_000 {
            let count = 2 + (next() % 4) as usize;
            let terms: Vec<f32> = (0..count)
                .map(|_| {
                    let significand = 1.0 + (next() % (1 << 23)) as f32 / (1 << 23) as f32;
                    let sign = if next().is_multiple_of(2) { 1.0 } else { -1.0 };
                    sign * significand * 2f32.powi((next() % 61) as i32 - 30)
                })
                .collect();
            let bits: Vec<u32> = terms.iter().map(|t| t.to_bits()).collect();
            let expected = rounded_once(&terms);
            assert_eq!(tree_product(&bits, 0, F32), Some(expected), "{terms:?}");
            differs_from_index_order += usize::from(index_order(&bits, F32) != expected);
        }
        assert!(
            differs_from_index_order > 500,
            "index order gives the same bits too often to tell the two apart"
        );
    }

    #[test]
    fn the_edges_of_the_range_round_once() {
        let tiny = f32::from_bits(1);
        let cases: [(&[f32], f32); 8] = [
            // Overflow on the way back into range: index order gives infinity.
            (&[f32::MAX, 2.0, 0.25], f32::MAX / 2.0),
            (&[f32::MAX, 2.0, 2.0], f32::INFINITY),
            // Underflow on the way back: index order gives zero.
            (&[tiny, 0.5, 4.0], 2.0 * tiny),
            // Half the smallest subnormal ties to zero; a bit above it rounds up.
            (&[tiny, 0.5], 0.0),
            (&[tiny, 0.5, 1.0 + f32::EPSILON], tiny),
            (&[-tiny, 0.75], -tiny),
            (&[1e-30, 1e30, 0.0], 0.0),
            (&[3.0 * tiny, 0.5], 2.0 * tiny),
        ];
        for (terms, expected) in cases {
            let bits: Vec<u32> = terms.iter().map(|t| t.to_bits()).collect();
            assert_eq!(
                tree_product(&bits, 0, F32),
                Some(expected.to_bits()),
                "{terms:?}"
            );
        }
    }

    #[test]
    fn special_values_keep_their_rules() {
        let (nan, infinity) = (f32::NAN.to_bits(), f32::INFINITY.to_bits());
        let bits = |terms: &[f32]| terms.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            tree_product(&bits(&[f32::INFINITY, 0.0, 2.0]), 0, F32),
            Some(nan)
        );
        assert_eq!(
            tree_product(&[0xFFC0_0001, 0x3F80_0000], 0, F32),
            Some(nan),
            "any NaN gives the canonical quiet NaN"
        );
        assert_eq!(
            tree_product(&bits(&[f32::NEG_INFINITY, 2.0]), 0, F32),
            Some(infinity | 1 << 31)
        );
        assert_eq!(tree_product(&bits(&[-0.0, 2.0, -3.0]), 0, F32), Some(0));
        assert_eq!(
            tree_product(&bits(&[1e30, 0.0, -1e30]), 0, F32),
            Some(1 << 31)
        );
        // The 16-bit formats: f16's largest value doubled, bf16's smallest subnormal halved.
        assert_eq!(tree_product(&bits(&[65504.0, 2.0]), 0, F16), Some(0x7C00));
        let bf16_tiny = half::bf16::from_bits(1).to_f32();
        assert_eq!(
            tree_product(&bits(&[bf16_tiny, -0.5]), 0, BF16),
            Some(0x8000)
        );
    }

    #[test]
    fn long_products_fold_every_level_from_any_start() {
        // Powers of two and a few of 1.5 and 1.25: exact in f64, so the oracle is one rounding.
        let mut next = stream(7);
        for count in [33usize, 257, 2049, 40_000] {
            let terms: Vec<f32> = (0..count)
                .map(|i| {
                    let scale = 2f32.powi((next() % 3) as i32 - 1);
                    let factor = match i % 97 {
                        5 => 1.5,
                        50 => 1.25,
                        _ => 1.0,
                    };
                    let sign = if next().is_multiple_of(2) { 1.0 } else { -1.0 };
                    sign * scale * factor
                })
                .collect();
            let exact = terms.iter().fold(1f64, |acc, &t| acc * f64::from(t));
            let bits: Vec<u32> = terms.iter().map(|t| t.to_bits()).collect();
            // Wherever the updates lie among the sorted rows, the nodes cut them differently.
            for start in [0, 31, 256 + 7, 5000] {
                assert_eq!(
                    tree_product(&bits, start, F32),
                    Some((exact as f32).to_bits()),
                    "{count} terms from {start}"
                );
            }
        }
    }

    #[test]
    fn uncertain_rounding_takes_index_order() {
        // The exact product lies 3990 * 2^-69 below a midpoint, within the tree's bound: index
        // order (which rounds the first product up, and so the last) decides.
        let terms = [0x3F80_25D5u32, 0x3FA3_E702, 0x3FA1_1561];
        assert_eq!(tree_product(&terms, 0, F32), None);
        let values = terms.map(f32::from_bits);
        assert_eq!(rounded_once(&values), 0x3FCE_80E7);
        assert_eq!(index_order(&terms, F32), 0x3FCE_80E8);
    }

    #[cfg(feature = "cube")]
    #[test]
    fn the_tree_is_the_kernels_tree() {
        use burn_dml_ops_kernels::scatter_nd::{CHUNK_ROWS, NODE_FAN};
        assert_eq!((CHUNK, FAN), (CHUNK_ROWS, NODE_FAN));
    }
}
