//! Non-maximum suppression on host data, with ONNX Runtime's `f32` arithmetic.

use burn::tensor::{DType, IntDType, TensorData};

use crate::host::reserve;
use crate::nms_rules::BoxFormat;

/// A box as its extent on each axis and its area.
#[derive(Clone, Copy)]
struct Extent {
    x: (f32, f32),
    y: (f32, f32),
    area: f32,
}

/// The smaller and the larger of a corner pair, as ONNX Runtime orders them.
fn ordered(a: f32, b: f32) -> (f32, f32) {
    if a >= b { (b, a) } else { (a, b) }
}

fn extent(coordinates: &[f32], format: BoxFormat) -> Extent {
    let [a, b, c, d] = [
        coordinates[0],
        coordinates[1],
        coordinates[2],
        coordinates[3],
    ];
    let (x, y) = match format {
        BoxFormat::Corners => (ordered(b, d), ordered(a, c)),
        BoxFormat::Center => ((a - c / 2.0, a + c / 2.0), (b - d / 2.0, b + d / 2.0)),
    };
    Extent {
        x,
        y,
        area: (x.1 - x.0) * (y.1 - y.0),
    }
}

/// Whether `kept` suppresses `candidate`: IoU strictly greater than `threshold`, IoU 0 where
/// the intersection or either area is not positive (so NaN coordinates never suppress).
fn suppresses(candidate: &Extent, kept: &Extent, threshold: f32) -> bool {
    let overlap = |a: (f32, f32), b: (f32, f32)| {
        let low = if a.0 < b.0 { b.0 } else { a.0 };
        let high = if b.1 < a.1 { b.1 } else { a.1 };
        (low, high)
    };
    let (left, right) = overlap(candidate.x, kept.x);
    let (bottom, top) = overlap(candidate.y, kept.y);
    if !(right > left && top > bottom && candidate.area > 0.0 && kept.area > 0.0) {
        return false;
    }
    let intersection = (right - left) * (top - bottom);
    let union = candidate.area + kept.area - intersection;
    intersection > 0.0 && union > 0.0 && intersection / union > threshold
}

/// The kept box indices of one (batch, class): candidates in decreasing score, ties by lower
/// index, each kept unless a kept box suppresses it, at most `cap`.
fn sweep(
    extents: &[Extent],
    scores: &[f32],
    iou_threshold: f32,
    score_threshold: Option<f32>,
    cap: usize,
) -> Vec<usize> {
    let mut candidates: Vec<usize> = (0..scores.len())
        .filter(|&i| !scores[i].is_nan() && score_threshold.is_none_or(|t| scores[i] > t))
        .collect();
    // Stable: equal scores keep increasing index. `-0.0` and `+0.0` compare equal.
    candidates.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).expect("no NaN is left"));
    let mut kept: Vec<usize> = Vec::new();
    for i in candidates {
        if kept.len() == cap {
            break;
        }
        if !kept
            .iter()
            .any(|&k| suppresses(&extents[i], &extents[k], iou_threshold))
        {
            kept.push(i);
        }
    }
    kept
}

/// `(count, selected)` of ONNX NonMaxSuppression on `boxes` `[B, N, 4]` and `scores`
/// `[B, C, N]` (both `f32`): rows `(batch, class, box)` by batch, class and keeping order, then
/// rows of -1 up to `B * C * min(N, max_per_class)`, in `out_dtype`.
pub(crate) fn non_max_suppression(
    boxes: &TensorData,
    scores: &TensorData,
    (iou_threshold, score_threshold, max_per_class): (f32, Option<f32>, usize),
    format: BoxFormat,
    out_dtype: IntDType,
) -> (TensorData, TensorData) {
    let [batches, classes, n] = [scores.shape()[0], scores.shape()[1], scores.shape()[2]];
    let boxes = boxes.try_to_vec::<f32>().expect("NMS: f32 boxes");
    let scores = scores.try_to_vec::<f32>().expect("NMS: f32 scores");
    let cap = n.min(max_per_class);
    let capacity = batches * classes * cap;
    let mut rows: Vec<i64> = reserve(
        "NonMaxSuppression",
        &format!("the output of {capacity} rows"),
        capacity * 3,
    );
    for b in 0..batches {
        let extents: Vec<Extent> = boxes[b * n * 4..(b + 1) * n * 4]
            .chunks_exact(4)
            .map(|coordinates| extent(coordinates, format))
            .collect();
        for c in 0..classes {
            let row = &scores[(b * classes + c) * n..(b * classes + c + 1) * n];
            for kept in sweep(&extents, row, iou_threshold, score_threshold, cap) {
                rows.extend([b as i64, c as i64, kept as i64]);
            }
        }
    }
    let count = rows.len() / 3;
    rows.resize(capacity * 3, -1);
    let out = DType::from(out_dtype);
    (
        TensorData::new(vec![count as i64], [1]).convert_dtype(out),
        TensorData::new(rows, [capacity, 3]).convert_dtype(out),
    )
}
