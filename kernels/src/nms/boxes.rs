//! A box's geometry and the IoU test: the geometry in `f32` as ONNX Runtime computes it, every
//! decision on integer bits.

use cubecl::prelude::*;

use super::quotient::quotient_exceeds;
use crate::fence::unfused;

/// A box normalised to its extent on each axis, with its area.
#[derive(CubeType, Clone, Copy)]
pub(crate) struct NmsBox {
    pub x_min: f32,
    pub x_max: f32,
    pub y_min: f32,
    pub y_max: f32,
    pub area: f32,
}

/// The smaller and the larger of two coordinates, as ONNX Runtime orders a corner pair.
#[cube]
fn ordered(a: f32, b: f32) -> (f32, f32) {
    let swap = a >= b;
    (select(swap, b, a), select(swap, a, b))
}

/// Box `index` of `boxes` (four `f32` from `4 * index`): corners `[y1, x1, y2, x2]` of either
/// diagonal, or with `center` `[x_center, y_center, width, height]`.
#[cube]
pub(crate) fn load_box(
    boxes: &[f32],
    index: usize,
    opaque: u32,
    #[comptime] center: bool,
) -> NmsBox {
    let first = 4 * index;
    let a = boxes[first];
    let b = boxes[first + 1];
    let c = boxes[first + 2];
    let d = boxes[first + 3];
    let (low_x, high_x) = ordered(b, d);
    let (low_y, high_y) = ordered(a, c);
    let mut x_min = low_x;
    let mut x_max = high_x;
    let mut y_min = low_y;
    let mut y_max = high_y;
    if comptime!(center) {
        // Halving is exact: a product by 0.5 is what `c / 2` rounds to on every runtime. Each
        // edge is fenced, so that no compiler folds `(a + h) - (a - h)` into `h + h` (fast math
        // does) or fuses the halving into the edge.
        let half_width = unfused(c * 0.5, opaque);
        let half_height = unfused(d * 0.5, opaque);
        x_min = unfused(a - half_width, opaque);
        x_max = unfused(a + half_width, opaque);
        y_min = unfused(b - half_height, opaque);
        y_max = unfused(b + half_height, opaque);
    }
    let width = unfused(x_max - x_min, opaque);
    let height = unfused(y_max - y_min, opaque);
    let area = unfused(width * height, opaque);
    NmsBox {
        x_min,
        x_max,
        y_min,
        y_max,
        area,
    }
}

/// The IoU threshold as [`quotient_exceeds`](fn@quotient_exceeds) takes it (see
/// [`QuotientThreshold`](super::QuotientThreshold)).
#[derive(CubeType, Clone, Copy)]
pub(crate) struct IouThreshold {
    pub midpoint: u32,
    pub exponent: i32,
    pub rule: u32,
}

/// Whether the bits of an `f32` are those of a positive number, `+inf` included: NaNs, zeros
/// and negatives are not, whatever the compiler assumes about floats.
#[cube]
fn positive(bits: u32) -> bool {
    bits != 0u32 && bits <= 0x7F80_0000u32
}

/// Whether a kept box suppresses a candidate: `fl(intersection / union)` strictly greater than
/// the threshold, decided exactly ([`quotient_exceeds`](fn@quotient_exceeds)). IoU is 0 (never
/// suppresses) where the intersection or either area is not positive, decided on their bits, so
/// a box with a NaN coordinate (a NaN area) suppresses nothing and is suppressed by nothing, as
/// in ONNX Runtime.
/// For coordinates that are not NaN, `right > left` exactly when `right - left` is positive.
#[cube]
pub(crate) fn suppresses(a: &NmsBox, b: &NmsBox, threshold: &IouThreshold, opaque: u32) -> bool {
    let left = select(a.x_min < b.x_min, b.x_min, a.x_min);
    let right = select(b.x_max < a.x_max, b.x_max, a.x_max);
    let bottom = select(a.y_min < b.y_min, b.y_min, a.y_min);
    let top = select(b.y_max < a.y_max, b.y_max, a.y_max);
    let width = unfused(right - left, opaque);
    let height = unfused(top - bottom, opaque);
    let mut result = false;
    if positive(u32::reinterpret(width))
        && positive(u32::reinterpret(height))
        && positive(u32::reinterpret(a.area))
        && positive(u32::reinterpret(b.area))
    {
        let intersection = unfused(width * height, opaque);
        // The sum passes through the XOR too, so no compiler reassociates the union.
        let union = unfused(a.area + b.area, opaque) - intersection;
        let i_bits = u32::reinterpret(intersection);
        let u_bits = u32::reinterpret(union);
        if positive(i_bits) && i_bits < 0x7F80_0000u32 && positive(u_bits) {
            result = quotient_exceeds(
                i_bits,
                u_bits,
                threshold.midpoint,
                threshold.exponent,
                threshold.rule,
            );
        }
    }
    result
}

/// The order key of an `f32`'s bits for the score test: larger floats have larger keys, `-0.0`
/// and `+0.0` the same one. A NaN has no key: it never passes.
#[cube]
pub(crate) fn passes_score(bits: u32, min_key: u32) -> bool {
    let nan = (bits & 0x7FFF_FFFFu32) > 0x7F80_0000u32;
    let canonical = select((bits & 0x7FFF_FFFFu32) == 0, 0u32, bits);
    let key = select(
        (canonical >> 31) == 1,
        !canonical,
        canonical | 0x8000_0000u32,
    );
    !nan && key >= min_key
}
