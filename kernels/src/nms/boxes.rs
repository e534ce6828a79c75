//! A box's geometry and the IoU test, computed in `f32` as ONNX Runtime computes them.

use cubecl::prelude::*;

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

/// `value` through an integer XOR with `opaque`, which is always zero: the same bits, but a value
/// the compiler cannot see is a product, so it cannot fuse it into a later addition. A fused
/// multiply-add rounds once where ONNX Runtime rounds twice, and that flips results at the
/// threshold.
#[cube]
pub(crate) fn unfused(value: f32, opaque: u32) -> f32 {
    f32::reinterpret(u32::reinterpret(value) ^ opaque)
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
        let half_width = c / 2.0;
        let half_height = d / 2.0;
        x_min = a - half_width;
        x_max = a + half_width;
        y_min = b - half_height;
        y_max = b + half_height;
    }
    let area = unfused((x_max - x_min) * (y_max - y_min), opaque);
    NmsBox {
        x_min,
        x_max,
        y_min,
        y_max,
        area,
    }
}

/// Whether a kept box suppresses a candidate: their IoU is strictly greater than `threshold`.
/// IoU is 0 (never suppresses) where the intersection or either area is not positive. Every
/// test is a comparison that a NaN fails, so a box with a NaN coordinate suppresses nothing and
/// is suppressed by nothing, as in ONNX Runtime.
#[cube]
pub(crate) fn suppresses(a: &NmsBox, b: &NmsBox, threshold: f32, opaque: u32) -> bool {
    let left = select(a.x_min < b.x_min, b.x_min, a.x_min);
    let right = select(b.x_max < a.x_max, b.x_max, a.x_max);
    let bottom = select(a.y_min < b.y_min, b.y_min, a.y_min);
    let top = select(b.y_max < a.y_max, b.y_max, a.y_max);
    let mut result = false;
    if right > left && top > bottom && a.area > 0.0 && b.area > 0.0 {
        let intersection = unfused((right - left) * (top - bottom), opaque);
        let union = a.area + b.area - intersection;
        if intersection > 0.0 && union > 0.0 {
            result = intersection / union > threshold;
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
