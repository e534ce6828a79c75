//! Boolean masking as model code uses it, with no host round trip until the end.
//!
//! 1. Detection post-processing, `boxes[scores > t]`: the boxes whose score passes a threshold,
//!    their mean area and mean score, computed on the zero-padded selection (the padding adds
//!    nothing to a sum) and divided by the count, a tensor; only the final print reads back.
//! 2. A detector's post-processing, as a YOLO head's outputs need it: 8,400 centre-format boxes
//!    and 80 classes' logits, scores from a sigmoid, then non-maximum suppression of every class
//!    at once on the device (score threshold 0.25, IoU 0.45, at most 100 per class) and the
//!    kept boxes gathered by index; one read of the count sizes the result.
//! 3. A loss over the valid positions only, `x[mask]`, on an Autodiff device: the gradient
//!    reaches the selected predictions and is zero everywhere else.
//!
//! Each is checked against the same computation on the host. `cargo run --example box_filter`
//! (on `Device::default()`: wgpu when a GPU driver, or lavapipe, is installed); pass `flex` to run
//! on the CPU backend instead.

mod common;

use burn::tensor::{Device, Tensor, TensorData};
use burn_dml_ops::prelude::*;

const BOXES: usize = 10_000;
const THRESHOLD: f32 = 0.9;

/// `len` pseudo-random values in `[0, 1)` from `seed` (xorshift).
fn uniform(len: usize, seed: u64) -> Vec<f32> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ seed;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn main() {
    let device = match std::env::args().nth(1).as_deref() {
        Some("flex") => Device::flex(),
        _ => common::device(),
    };
    println!("box_filter on {device:?}\n");
    filter_boxes(&device);
    detections(&device);
    masked_loss(&device.autodiff());
}

/// `boxes[scores > THRESHOLD]`: boxes are `[x1, y1, x2, y2]` rows.
fn filter_boxes(device: &Device) {
    let scores_host = uniform(BOXES, 1);
    let corners = uniform(BOXES * 2, 2);
    let sizes = uniform(BOXES * 2, 3);
    let boxes_host: Vec<f32> = (0..BOXES)
        .flat_map(|i| {
            let (x, y) = (corners[2 * i], corners[2 * i + 1]);
            [x, y, x + sizes[2 * i], y + sizes[2 * i + 1]]
        })
        .collect();
    let scores = Tensor::<1>::from_data(TensorData::new(scores_host.clone(), [BOXES]), device);
    let boxes = Tensor::<2>::from_data(TensorData::new(boxes_host.clone(), [BOXES, 4]), device);

    // Lazy: the selection's shape is known without running anything, so nothing waits here.
    let keep = scores.clone().greater_elem(THRESHOLD);
    let kept = boxes.compress_axis(0, keep.clone());
    let kept_scores = scores.compress(keep);
    let count = kept.count.clone().float();
    let corners = kept.values.clone();
    let width = corners.clone().narrow(1, 2, 1) - corners.clone().narrow(1, 0, 1);
    let height = corners.clone().narrow(1, 3, 1) - corners.narrow(1, 1, 1);
    let mean_area = (width * height).sum() / count.clone();
    let mean_score = kept_scores.values.sum() / count;

    // The host's answer, to check against.
    let selected: Vec<usize> = (0..BOXES).filter(|&i| scores_host[i] > THRESHOLD).collect();
    let n = selected.len() as f32;
    let area: f32 = selected
        .iter()
        .map(|&i| {
            let b = &boxes_host[4 * i..4 * i + 4];
            (b[2] - b[0]) * (b[3] - b[1])
        })
        .sum();
    let score: f32 = selected.iter().map(|&i| scores_host[i]).sum();

    // The first reads back to the host.
    let (mean_area, mean_score): (f32, f32) = (mean_area.into_scalar(), mean_score.into_scalar());
    let exact = kept.into_exact();
    println!(
        "boxes with a score above {THRESHOLD}: {} of {BOXES}",
        exact.dims()[0]
    );
    println!("  mean area {mean_area:.5} (host {:.5})", area / n);
    println!("  mean score {mean_score:.5} (host {:.5})", score / n);
    assert_eq!(exact.dims(), [selected.len(), 4]);
    let exact = exact.into_data().try_to_vec::<f32>().expect("f32 boxes");
    let expected: Vec<f32> = selected
        .iter()
        .flat_map(|&i| boxes_host[4 * i..4 * i + 4].to_vec())
        .collect();
    assert_eq!(exact, expected, "the kept boxes, in order");
    assert!((mean_area - area / n).abs() <= 1e-4 * (area / n).abs());
    assert!((mean_score - score / n).abs() <= 1e-4);
    println!("  kept boxes, in order, equal the host's\n");
}

/// Whether centre-format box `a` suppresses `b` at IoU `threshold`, as ONNX Runtime decides.
fn overlaps(a: &[f32], b: &[f32], threshold: f32) -> bool {
    let extent = |c: f32, size: f32| (c - size / 2.0, c + size / 2.0);
    let ((ax0, ax1), (ay0, ay1)) = (extent(a[0], a[2]), extent(a[1], a[3]));
    let ((bx0, bx1), (by0, by1)) = (extent(b[0], b[2]), extent(b[1], b[3]));
    let (w, h) = (ax1.min(bx1) - ax0.max(bx0), ay1.min(by1) - ay0.max(by0));
    if w <= 0.0 || h <= 0.0 {
        return false;
    }
    let intersection = w * h;
    let union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - intersection;
    intersection / union > threshold
}

/// Scores, NMS and the kept boxes of a YOLO-sized head, on the device until the end.
fn detections(device: &Device) {
    const N: usize = 8400;
    const CLASSES: usize = 80;
    let (centres, sizes) = (uniform(N * 2, 4), uniform(N * 2, 5));
    let boxes_host: Vec<f32> = (0..N)
        .flat_map(|i| {
            let (x, y) = (centres[2 * i] * 640.0, centres[2 * i + 1] * 640.0);
            [
                x,
                y,
                48.0 + sizes[2 * i] * 192.0,
                48.0 + sizes[2 * i + 1] * 192.0,
            ]
        })
        .collect();
    let logits: Vec<f32> = uniform(N * CLASSES, 6)
        .iter()
        .map(|u| 8.0 * u - 9.0)
        .collect();
    let boxes = Tensor::<3>::from_data(TensorData::new(boxes_host.clone(), [1, N, 4]), device);
    let logits = Tensor::<3>::from_data(TensorData::new(logits, [1, CLASSES, N]), device);

    let scores = burn::tensor::activation::sigmoid(logits);
    let options = NmsOptions {
        iou_threshold: 0.45,
        score_threshold: Some(0.25),
        max_per_class: Some(100),
        box_format: BoxFormat::Center,
        indices_dtype: None,
    };
    let selected = boxes
        .clone()
        .non_max_suppression(scores.clone(), options)
        .expect("valid shapes and options");
    let rows = selected.into_exact(); // the one read: the count
    let [count, _] = rows.dims();
    let indices = rows.clone().narrow(1, 2, 1).reshape([count]);
    let kept = boxes.reshape([N, 4]).select(0, indices);

    // The host's answer, on the scores the device computed.
    let scores_host = scores.into_data().try_to_vec::<f32>().expect("f32 scores");
    let mut expected = Vec::new();
    for class in 0..CLASSES {
        let row = &scores_host[class * N..(class + 1) * N];
        let mut order: Vec<usize> = (0..N).filter(|&i| row[i] > 0.25).collect();
        order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        let mut kept_here: Vec<usize> = Vec::new();
        for i in order {
            let candidate = &boxes_host[4 * i..4 * i + 4];
            if kept_here.len() < 100
                && !kept_here
                    .iter()
                    .any(|&k| overlaps(&boxes_host[4 * k..4 * k + 4], candidate, 0.45))
            {
                kept_here.push(i);
            }
        }
        expected.extend(kept_here.iter().flat_map(|&i| [0, class as i64, i as i64]));
    }
    let rows = rows
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap();
    println!("detections of {N} boxes x {CLASSES} classes (score > 0.25, IoU 0.45): {count}");
    assert_eq!(rows, expected, "the (batch, class, box) rows");
    let kept = kept.into_data().try_to_vec::<f32>().expect("f32 boxes");
    println!("  first kept box (class {}): {:?}", expected[1], &kept[..4]);
    let expected_boxes: Vec<f32> = expected
        .chunks_exact(3)
        .flat_map(|row| boxes_host[4 * row[2] as usize..][..4].to_vec())
        .collect();
    assert_eq!(kept, expected_boxes, "the kept boxes");
    println!("  rows and kept boxes equal the host's\n");
}

/// A squared error over the positions `valid` marks, as `x[mask]` gives it.
fn masked_loss(device: &Device) {
    const LEN: usize = 12;
    let valid_host: Vec<bool> = (0..LEN).map(|i| i % 3 != 1).collect();
    let target_host: Vec<f32> = (0..LEN).map(|i| i as f32 * 0.5).collect();
    let predictions = Tensor::<1>::zeros([LEN], device).require_grad();
    let target = Tensor::<1>::from_data(TensorData::new(target_host.clone(), [LEN]), device);
    let valid = Tensor::<1, _>::from_data(TensorData::new(valid_host.clone(), [LEN]), device);

    let picked = predictions.clone().compress(valid.clone()).values;
    let wanted = target.compress(valid).values;
    // The padding is zero in both, so it adds nothing to the sum.
    let loss = (picked - wanted).powi_scalar(2).sum();
    let grads = loss.backward();
    let grad = predictions
        .grad(&grads)
        .expect("the predictions are tracked");
    let grad = grad.into_data().try_to_vec::<f32>().expect("f32 gradient");

    // d/dp of sum((p - y)^2) over the valid positions: 2 (p - y) = -2 y there, 0 elsewhere.
    let expected: Vec<f32> = (0..LEN)
        .map(|i| {
            if valid_host[i] {
                -2.0 * target_host[i]
            } else {
                0.0
            }
        })
        .collect();
    println!("gradient of a loss over the valid positions of {LEN} predictions:");
    println!("  {grad:?}");
    assert_eq!(grad, expected, "zero where the mask is false");
    println!("  equals the host's (zero where the mask is false)");
}
