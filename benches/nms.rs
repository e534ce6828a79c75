//! Non-maximum suppression against what a Burn user has without this crate, on
//! `Device::default()`.
//!
//! Rows: detector-like boxes `[B, N, 4]` (each a jittered copy of one of 40 objects' boxes) and
//! scores `[B, C, N]` (cubes of uniform numbers, so most are low), IoU threshold 0.45, with no
//! score threshold and with YOLO's 0.25, each labelled with the launches the kernel crate's NMS
//! takes on this device (counted by its capture). `non_max_suppression` runs every (batch,
//! class) on the device with one fixed-size result, against
//! - `burn-vision nms`: burn-vision's `nms`, one call per (batch, class) as burn-onnx imports
//!   ONNX NonMaxSuppression, each a host round trip that reads the boxes and scores back;
//! - `copy`: `scores.add_scalar(1.0)`, an elementwise pass over the scores (the memory's pace).
//!
//! Each measurement queues `QUEUED` calls between two syncs, each on its own scores. Before
//! anything is timed, the first input's rows are checked against burn-vision's, class by class.
//!
//! `cargo bench --bench nms --features bench-vision` (burn-vision is the baseline) measures `N`
//! of 1,000 and 8,400 (lavapipe); `NMS_BENCH_BOXES=1000,8400,20000` and `NMS_BENCH_BATCHES=8`
//! add the rest on a GPU.

mod common;

use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::capture::Capture;
use burn_dml_ops_kernels::nms::{
    NmsBoxFormat, NmsInput, NmsLimits, NmsOutput, NmsShape, launch_non_max_suppression,
};
use burn_dml_ops_kernels::sort::SortPlan;
use burn_vision::{Nms, NmsOptions as VisionOptions};
use criterion::Criterion;
use cubecl::ir::{ElemType, IntKind};

const GROUP: &str = "nms";
const NAMES: [&str; 3] = ["non_max_suppression", "burn-vision nms", "copy"];
/// Calls queued between two syncs, each on its own scores.
const QUEUED: usize = 4;
const IOU: f32 = 0.45;

/// A SplitMix64 stream of numbers in `0..1`.
fn uniform(seed: u64) -> impl FnMut() -> f32 {
    let mut state = seed;
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// `[batches, n, 4]` corner boxes, each a jittered copy of one of 40 objects' boxes.
fn boxes(batches: usize, n: usize, device: &Device) -> Tensor<3> {
    let mut next = uniform(7);
    let mut out = Vec::with_capacity(batches * n * 4);
    for _ in 0..batches {
        let objects: Vec<[f32; 4]> = (0..40)
            .map(|_| {
                let corner = [next() * 600.0, next() * 600.0];
                [
                    corner[0],
                    corner[1],
                    20.0 + next() * 100.0,
                    20.0 + next() * 100.0,
                ]
            })
            .collect();
        for _ in 0..n {
            let [y, x, h, w] = objects[(next() * 40.0) as usize % 40];
            let (y, x) = (y + (next() - 0.5) * 0.2 * h, x + (next() - 0.5) * 0.2 * w);
            out.extend([y, x, y + h, x + w]);
        }
    }
    Tensor::from_data(TensorData::new(out, [batches, n, 4]), device)
}

/// `QUEUED` score tensors `[batches, classes, n]`.
fn scores(shape: [usize; 3], device: &Device) -> Vec<Tensor<3>> {
    (0..QUEUED as u64)
        .map(|seed| {
            let mut next = uniform(seed + 100);
            let values: Vec<f32> = (0..shape.iter().product())
                .map(|_| {
                    let u = next();
                    u * u * u
                })
                .collect();
            Tensor::from_data(TensorData::new(values, shape), device)
        })
        .collect()
}

fn options(score_threshold: Option<f32>) -> NmsOptions {
    NmsOptions {
        iou_threshold: IOU,
        score_threshold,
        max_per_class: None,
        box_format: BoxFormat::Corners,
        indices_dtype: None,
    }
}

/// Launches per call of the kernel crate's NMS of `boxes` and `scores` (no score threshold,
/// every box allowed to be kept), counted by a capture of the device's own properties: nothing
/// runs.
fn launches(boxes: &Tensor<3>, scores: &Tensor<3>, device: &Device) -> usize {
    let [batches, classes, n] = scores.dims();
    let boxes = common::cube_float(boxes, device);
    let scores = common::cube_float(scores, device);
    let client = &scores.client;
    let elem = ElemType::Int(IntKind::I32);
    let capture = Capture::open(client.properties().clone(), Default::default());
    launch_non_max_suppression(
        client,
        &NmsInput {
            boxes: boxes.handle.clone(),
            scores: scores.handle.clone(),
        },
        &NmsOutput {
            count: client.empty(4),
            selected: client.empty(batches * classes * n * 3 * 4),
            elem,
        },
        NmsShape {
            batches,
            classes,
            boxes: n,
        },
        &NmsLimits {
            iou_threshold: IOU,
            score_threshold: None,
            max_per_class: n,
            format: NmsBoxFormat::Corners,
        },
        SortPlan::for_client(client),
    )
    .expect("a valid NMS");
    capture.take().len()
}

/// burn-vision's `nms` of every (batch, class), one after another, as burn-onnx runs them: the
/// kept box indices of each.
fn vision(boxes: &Tensor<3>, scores: &Tensor<3>, threshold: Option<f32>) -> Vec<Tensor<1, Int>> {
    let [batches, classes, _] = scores.dims();
    let options = VisionOptions {
        iou_threshold: IOU,
        // burn-vision keeps scores at or above its threshold: the next float up is ONNX's rule.
        score_threshold: threshold.map_or(f32::NEG_INFINITY, f32::next_up),
        max_output_boxes: 0,
    };
    let mut kept = Vec::with_capacity(batches * classes);
    for b in 0..batches {
        let batch_boxes: Tensor<2> = boxes.clone().slice_dim(0, b..b + 1).squeeze_dim(0);
        for c in 0..classes {
            let class_scores: Tensor<1> = scores.clone().slice([b..b + 1, c..c + 1]).flatten(0, 2);
            kept.push(batch_boxes.clone().nms(class_scores, options));
        }
    }
    kept
}

/// Checks our rows against burn-vision's kept indices, (batch, class) by (batch, class).
fn check(boxes: &Tensor<3>, scores: &Tensor<3>, threshold: Option<f32>) {
    let [_, classes, _] = scores.dims();
    let rows = boxes
        .clone()
        .non_max_suppression(scores.clone(), options(threshold))
        .unwrap()
        .into_exact()
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap();
    for (pair, kept) in vision(boxes, scores, threshold).into_iter().enumerate() {
        let kept = kept
            .into_data()
            .convert::<i64>()
            .try_to_vec::<i64>()
            .unwrap();
        let ours: Vec<i64> = rows
            .chunks_exact(3)
            .filter(|row| row[0] as usize * classes + row[1] as usize == pair)
            .map(|row| row[2])
            .collect();
        assert_eq!(
            ours, kept,
            "(batch, class) {pair}: rows differ from burn-vision's"
        );
    }
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    common::configure(&mut group);
    let mut rows = Vec::new();
    let boxes_list = common::sizes("NMS_BENCH_BOXES", &[1000, 8400]);
    let mut shapes: Vec<[usize; 3]> = boxes_list
        .iter()
        .flat_map(|&n| [[1, 1, n as usize], [1, 80, n as usize]])
        .collect();
    if let Ok(batches) = std::env::var("NMS_BENCH_BATCHES") {
        let batches = batches.trim().parse().expect("NMS_BENCH_BATCHES: a count");
        shapes.push([batches, 80, 8400]);
    }
    for shape in shapes {
        let [batches, classes, n] = shape;
        let boxes = boxes(batches, n, &device);
        let inputs = scores(shape, &device);
        let launches = launches(&boxes, &inputs[0], &device);
        for threshold in [None, Some(0.25)] {
            let parameter = format!(
                "[{batches}, {n}, 4] x {classes} score {} ({launches} launches)",
                threshold.map_or("none".into(), |t| t.to_string())
            );
            check(&boxes, &inputs[0], threshold);
            let run = |scores: &Tensor<3>| {
                boxes
                    .clone()
                    .non_max_suppression(scores.clone(), options(threshold))
                    .unwrap()
            };
            common::bench(&mut group, &device, NAMES[0], &parameter, &inputs, run);
            let burn = |scores: &Tensor<3>| vision(&boxes, scores, threshold);
            common::bench(&mut group, &device, NAMES[1], &parameter, &inputs, burn);
            let copy = |scores: &Tensor<3>| scores.clone().add_scalar(1.0);
            common::bench(&mut group, &device, NAMES[2], &parameter, &inputs, copy);
            let len = (batches * classes * n) as f64;
            rows.push((
                parameter,
                vec![len * 4.0 + (batches * n * 16) as f64, 0.0, len * 8.0],
            ));
        }
    }
    group.finish();
    criterion.final_summary();
    common::print_throughput(
        &format!(
            "Non-maximum suppression (IoU {IOU}) on {device:?}: time per call, {QUEUED} queued \
             per sync; GB/s of the boxes and scores read"
        ),
        GROUP,
        &NAMES,
        &rows,
    );
}
