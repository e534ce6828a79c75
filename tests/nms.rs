//! Non-maximum suppression (`NmsExt`) against an independent oracle written after ONNX Runtime's
//! CPU kernel, on Flex (the reference bodies) and wgpu (the sort, sweep and row kernels), Fusion
//! included: ONNX's examples, both box formats, ties and duplicates, NaN scores and degenerate
//! boxes, thresholds at their ends, every `max_per_class` case, `B` and `C` from 0 to 3 and `N`
//! around the sweep's block, a detector-sized input, operands made on the device, Autodiff
//! devices, every indices dtype, and every error.

mod common;

use burn::tensor::{DType, Device, Distribution, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::nms::*;
use common::*;
use proptest::prelude::*;

/// `(rows, padded row count)` of the device's NMS of `case`, after checking the padding.
fn run(device: &Device, case: &NmsCase, dtype: Option<IntDType>) -> (Vec<[i64; 3]>, usize) {
    let boxes = Tensor::<3>::from_data(
        TensorData::new(case.boxes.clone(), [case.batches, case.n, 4]),
        device,
    );
    let scores = Tensor::<3>::from_data(
        TensorData::new(case.scores.clone(), [case.batches, case.classes, case.n]),
        device,
    );
    select(boxes, scores, case, dtype)
}

/// NMS of tensors already on a device, checked for shape, dtype and -1 padding.
fn select(
    boxes: Tensor<3>,
    scores: Tensor<3>,
    case: &NmsCase,
    dtype: Option<IntDType>,
) -> (Vec<[i64; 3]>, usize) {
    let device = boxes.device();
    let result = boxes
        .non_max_suppression(scores, options(case, dtype))
        .unwrap_or_else(|err| panic!("{case:?} on {device:?}: {err}"));
    let want_dtype = dtype.unwrap_or_else(|| device.settings().int_dtype);
    assert_eq!(result.selected.dtype(), DType::from(want_dtype));
    assert_eq!(result.count.dtype(), DType::from(want_dtype));
    let count = result.count_sync();
    let [rows, width] = result.selected.dims();
    assert_eq!(width, 3);
    let values = to_i64(&result.selected.into_data());
    assert!(
        values[count * 3..].iter().all(|&v| v == -1),
        "padding rows of {case:?} on {device:?}: {:?}",
        &values[count * 3..]
    );
    let selected = values[..count * 3]
        .chunks_exact(3)
        .map(|row| [row[0], row[1], row[2]])
        .collect();
    (selected, rows)
}

fn options(case: &NmsCase, indices_dtype: Option<IntDType>) -> NmsOptions {
    NmsOptions {
        iou_threshold: case.iou_threshold,
        score_threshold: case.score_threshold,
        max_per_class: case.max_per_class,
        box_format: if case.center {
            BoxFormat::Center
        } else {
            BoxFormat::Corners
        },
        indices_dtype,
    }
}

/// Checks `case` on every device against the oracle.
fn check(case: &NmsCase) {
    let want = expected_nms(case);
    for device in devices_and_default() {
        assert_eq!(run(&device, case, None), want, "{case:?} on {device:?}");
    }
}

/// ONNX's six boxes: two clusters of three overlapping boxes, and one apart.
fn onnx_case() -> NmsCase {
    NmsCase {
        boxes: vec![
            0.0, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, -0.1, 1.0, 0.9, 0.0, 10.0, 1.0, 11.0, 0.0,
            10.1, 1.0, 11.1, 0.0, 100.0, 1.0, 101.0,
        ],
        scores: vec![0.9, 0.75, 0.6, 0.95, 0.5, 0.3],
        batches: 1,
        classes: 1,
        n: 6,
        iou_threshold: 0.5,
        score_threshold: Some(0.0),
        max_per_class: Some(3),
        center: false,
    }
}

#[test]
fn onnx_examples() {
    let case = onnx_case();
    assert_eq!(expected_nms(&case).0, vec![[0, 0, 3], [0, 0, 0], [0, 0, 5]]);
    check(&case);
    // Flipped corners select the same boxes.
    let mut flipped = case.clone();
    for b in flipped.boxes.chunks_exact_mut(4) {
        b.swap(0, 2);
        b.swap(1, 3);
    }
    assert_eq!(
        expected_nms(&flipped).0,
        vec![[0, 0, 3], [0, 0, 0], [0, 0, 5]]
    );
    check(&flipped);
    // The centre format of the same boxes.
    let mut center = case.clone();
    center.boxes = vec![
        0.5, 0.5, 1.0, 1.0, 0.5, 0.6, 1.0, 1.0, 0.5, 0.4, 1.0, 1.0, 0.5, 10.5, 1.0, 1.0, 0.5, 10.6,
        1.0, 1.0, 0.5, 100.5, 1.0, 1.0,
    ];
    center.center = true;
    assert_eq!(
        expected_nms(&center).0,
        vec![[0, 0, 3], [0, 0, 0], [0, 0, 5]]
    );
    check(&center);
    // A score threshold, a limit of 2, and two classes.
    let mut limited = case.clone();
    limited.score_threshold = Some(0.4);
    limited.max_per_class = Some(2);
    assert_eq!(expected_nms(&limited).0, vec![[0, 0, 3], [0, 0, 0]]);
    check(&limited);
    let mut classes = case;
    classes.classes = 2;
    classes.scores = [classes.scores.clone(), classes.scores.clone()].concat();
    classes.max_per_class = Some(2);
    check(&classes);
}

/// Centre boxes whose IoU (ONNX Runtime's 0.91005462) lies just above 0.91: each edge is
/// rounded on its own, and a compiler that folded `(a + h) - (a - h)` into `h + h` (Metal's
/// fast math) would give 0.90986264 and keep both.
#[test]
fn centre_edges_round_one_by_one() {
    let mut case = NmsCase {
        boxes: vec![1000.3, 500.1, 0.7, 0.3, 1000.31, 500.11, 0.7, 0.3],
        scores: vec![0.9, 0.8],
        batches: 1,
        classes: 1,
        n: 2,
        iou_threshold: 0.91,
        score_threshold: None,
        max_per_class: None,
        center: true,
    };
    assert_eq!(expected_nms(&case), (vec![[0, 0, 0]], 2));
    check(&case);
    case.iou_threshold = 0.9101;
    assert_eq!(expected_nms(&case), (vec![[0, 0, 0], [0, 0, 1]], 2));
    check(&case);
}

#[test]
fn identical_boxes_with_identical_scores_keep_the_first() {
    let case = NmsCase {
        boxes: [0.0, 0.0, 1.0, 1.0].repeat(10),
        scores: vec![0.9; 10],
        batches: 1,
        classes: 1,
        n: 10,
        iou_threshold: 0.5,
        score_threshold: None,
        max_per_class: None,
        center: false,
    };
    assert_eq!(expected_nms(&case), (vec![[0, 0, 0]], 10));
    check(&case);
}

#[test]
fn degenerate_boxes_and_nan_scores() {
    // Zero-area and inverted centre boxes suppress nothing and are suppressed by nothing; NaN
    // scores never take part; an IoU threshold of 0 suppresses any overlap, 1 none.
    let case = |iou_threshold: f32| NmsCase {
        boxes: vec![
            0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0, 0.2,
            0.2, 0.8, 0.8, 0.0, 0.5, 1.0, 1.5, 5.0, 5.0, 6.0, 6.0,
        ],
        scores: vec![0.5, f32::NAN, 0.9, 0.8, 0.7, 0.6, f32::NAN],
        batches: 1,
        classes: 1,
        n: 7,
        iou_threshold,
        score_threshold: None,
        max_per_class: None,
        center: false,
    };
    for iou in [0.0, 0.3, 1.0] {
        check(&case(iou));
    }
    let mut center = case(0.0);
    center.center = true;
    center.boxes[8..12].copy_from_slice(&[0.5, 0.5, -1.0, 1.0]);
    check(&center);
}

#[test]
fn limits_and_empty_shapes() {
    let case = onnx_case();
    for max_per_class in [Some(0), Some(1), Some(6), Some(100), None] {
        check(&NmsCase {
            max_per_class,
            ..case.clone()
        });
    }
    for (batches, classes, n) in [(0, 2, 3), (2, 0, 3), (2, 3, 0)] {
        let empty = NmsCase {
            boxes: vec![0.5; batches * n * 4],
            scores: vec![0.5; batches * classes * n],
            batches,
            classes,
            n,
            ..case.clone()
        };
        for device in devices_and_default() {
            assert_eq!(run(&device, &empty, None), (vec![], 0), "{empty:?}");
        }
    }
}

#[test]
fn every_indices_dtype_and_fused_operands() {
    let case = onnx_case();
    let want = expected_nms(&case);
    for device in devices() {
        // Every signed dtype, those the runtime cannot bind too: the rows are written as words.
        for dtype in [IntDType::I8, IntDType::I16, IntDType::I32, IntDType::I64] {
            assert_eq!(
                run(&device, &case, Some(dtype)),
                want,
                "{dtype:?} on {device:?}"
            );
        }
        // Operands made on the device: scores from a sigmoid of logits, boxes from a view.
        let logits: Vec<f32> = case.scores.iter().map(|s| (s / (1.0 - s)).ln()).collect();
        let logits = Tensor::<3>::from_data(TensorData::new(logits, [1, 1, 6]), &device);
        let scores = burn::tensor::activation::sigmoid(logits);
        let wide = Tensor::<3>::from_data(
            TensorData::new(
                case.boxes
                    .chunks_exact(4)
                    .flat_map(|b| [b[0], b[1], b[2], b[3], -7.0])
                    .collect::<Vec<f32>>(),
                [1, 6, 5],
            ),
            &device,
        );
        let boxes = wide.slice([0..1, 0..6, 0..4]);
        let on_device = NmsCase {
            scores: scores.to_data().try_to_vec::<f32>().unwrap(),
            ..case.clone()
        };
        let want = expected_nms(&on_device);
        assert_eq!(
            select(boxes, scores, &on_device, None),
            want,
            "on {device:?}"
        );
        // f16 operands are computed in f32.
        if holds(&device, DType::F16, "NMS f16 boxes") {
            let boxes =
                Tensor::<3>::from_data(TensorData::new(case.boxes.clone(), [1, 6, 4]), &device)
                    .cast(burn::tensor::FloatDType::F16);
            let scores =
                Tensor::<3>::from_data(TensorData::new(case.scores.clone(), [1, 1, 6]), &device);
            assert_eq!(
                select(boxes, scores, &case, None).0,
                want_f16(),
                "on {device:?}"
            );
        }
    }
}

#[test]
fn operands_made_on_the_device() {
    // Random corners and sizes combined by fused arithmetic into boxes; scores from random
    // numbers, zeroed under a comparison and squared: what a model's head hands over.
    for device in devices_and_default() {
        let corner = Tensor::<3>::random([2, 300, 2], Distribution::Uniform(0.0, 100.0), &device);
        let size = Tensor::<3>::random([2, 300, 2], Distribution::Uniform(5.0, 30.0), &device);
        let boxes = Tensor::cat(vec![corner.clone(), corner + size], 2);
        let raw = Tensor::<3>::random([2, 3, 300], Distribution::Uniform(0.0, 1.0), &device);
        let scores = raw
            .clone()
            .mask_fill(raw.lower_elem(0.3), 0.0)
            .powi_scalar(2);
        let case = NmsCase {
            boxes: boxes.to_data().try_to_vec::<f32>().unwrap(),
            scores: scores.to_data().try_to_vec::<f32>().unwrap(),
            batches: 2,
            classes: 3,
            n: 300,
            iou_threshold: 0.3,
            score_threshold: Some(0.05),
            max_per_class: Some(40),
            center: false,
        };
        assert_eq!(
            select(boxes, scores, &case, None),
            expected_nms(&case),
            "on {device:?}"
        );
    }
}

/// ONNX's example selects the same boxes from f16 boxes.
fn want_f16() -> Vec<[i64; 3]> {
    vec![[0, 0, 3], [0, 0, 0], [0, 0, 5]]
}

#[test]
fn runs_on_autodiff_devices() {
    let case = onnx_case();
    for device in devices() {
        let device = device.autodiff();
        let boxes = Tensor::<3>::from_data(TensorData::new(case.boxes.clone(), [1, 6, 4]), &device)
            .require_grad();
        let scores =
            Tensor::<3>::from_data(TensorData::new(case.scores.clone(), [1, 1, 6]), &device)
                .require_grad();
        assert_eq!(
            select(boxes, scores, &case, None),
            expected_nms(&case),
            "on {device:?}"
        );
    }
}

#[test]
fn errors_name_the_problem() {
    let device = flex();
    let boxes = || Tensor::<3>::zeros([2, 5, 4], &device);
    let scores = || Tensor::<3>::zeros([2, 3, 5], &device);
    let base = options(&onnx_case(), None);
    let err = |boxes: Tensor<3>, scores: Tensor<3>, options: NmsOptions| {
        boxes
            .non_max_suppression(scores, options)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let message = err(Tensor::zeros([2, 5, 3], &device), scores(), base.clone());
    assert!(
        message.contains("[2, 5, 3]") && message.contains("[B, N, 4]"),
        "{message}"
    );
    let message = err(boxes(), Tensor::zeros([1, 3, 5], &device), base.clone());
    assert!(message.contains("[1, 3, 5]"), "{message}");
    let message = err(boxes(), Tensor::zeros([2, 3, 6], &device), base.clone());
    assert!(message.contains("do not match"), "{message}");
    for iou in [-0.1, 1.5, f32::NAN] {
        let options = NmsOptions {
            iou_threshold: iou,
            ..base.clone()
        };
        let message = err(boxes(), scores(), options);
        assert!(message.contains("iou_threshold"), "{message}");
    }
    let options = NmsOptions {
        indices_dtype: Some(IntDType::U32),
        ..base.clone()
    };
    assert!(err(boxes(), scores(), options).contains("unsigned"));
    let options = NmsOptions {
        indices_dtype: Some(IntDType::I8),
        max_per_class: None,
        ..base
    };
    let wide = Tensor::<3>::zeros([1, 200, 4], &device);
    let message = err(wide, Tensor::zeros([1, 1, 200], &device), options.clone());
    assert!(message.contains("IntDType::I64"), "{message}");
    // More kept boxes per class than the sweep takes, unless max_per_class says fewer.
    let n = (1 << 21) + 1;
    let huge = || Tensor::<3>::zeros([1, n, 4], &device);
    let huge_scores = || Tensor::<3>::zeros([1, 1, n], &device);
    let unlimited = NmsOptions {
        indices_dtype: None,
        ..options
    };
    let message = err(huge(), huge_scores(), unlimited.clone());
    assert!(message.contains("max_per_class"), "{message}");
    let limited = NmsOptions {
        max_per_class: Some(10),
        score_threshold: Some(1.0),
        ..unlimited
    };
    assert!(huge().non_max_suppression(huge_scores(), limited).is_ok());
}

#[test]
fn detector_sized_inputs() {
    // [4, 8400, 4] x 80 classes on the GPU only: Flex runs the same reference as the proptest,
    // whose debug build would take minutes here.
    let Some(device) = gpu() else { return };
    let (batches, classes, n) = (4, 80, 8400);
    let boxes = clustered_boxes(batches, n, 40, 7);
    let mut mix = Mix(11);
    let scores: Vec<f32> = (0..batches * classes * n)
        .map(|_| {
            let u = mix.unit();
            u * u * u
        })
        .collect();
    for score_threshold in [None, Some(0.25)] {
        let case = NmsCase {
            boxes: boxes.clone(),
            scores: scores.clone(),
            batches,
            classes,
            n,
            iou_threshold: 0.45,
            score_threshold,
            max_per_class: None,
            center: false,
        };
        let want = expected_nms(&case);
        assert_eq!(
            run(&device, &case, None),
            want,
            "score threshold {score_threshold:?}"
        );
    }
}

/// One class of 8,192 and of 20,000 boxes that do not overlap, no score threshold and no limit:
/// every box is kept, in score order, on every device (the sweep past many blocks and over
/// several launches, the radix passes of the sort).
#[test]
fn thousands_of_kept_boxes_come_back_whole() {
    for (n, seed) in [(8192usize, 3u64), (20_000, 4)] {
        let mut mix = Mix(seed);
        let scores: Vec<f32> = (0..n).map(|_| mix.unit()).collect();
        let case = NmsCase {
            boxes: spread_boxes(1, n, false, seed),
            scores: scores.clone(),
            batches: 1,
            classes: 1,
            n,
            iou_threshold: 0.5,
            score_threshold: None,
            max_per_class: None,
            center: false,
        };
        // Every box, by decreasing score, ties by lower index: what the oracle finds too.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let every_box: Vec<[i64; 3]> = order.iter().map(|&i| [0, 0, i as i64]).collect();
        assert_eq!(
            expected_nms(&case),
            (every_box.clone(), n),
            "the oracle, n {n}"
        );
        for device in devices_and_default() {
            let (rows, padded) = run(&device, &case, None);
            assert_eq!(padded, n);
            assert_eq!(rows.len(), n, "kept boxes of {n} on {device:?}");
            assert!(rows == every_box, "rows of {n} on {device:?}");
        }
    }
}

/// Long sequences: `N` past the one-cube sort (4,096) with thousands of boxes kept in a class
/// (past 4,096 and 8,192), some suppressed by their neighbours, score thresholds and limits.
fn long_case() -> impl Strategy<Value = NmsCase> {
    (
        prop::sample::select(vec![4097usize, 5000, 8193, 9000]),
        1usize..=2,
        any::<u64>(),
        any::<bool>(),
        prop::option::of(prop::sample::select(vec![0.1f32, 0.5])),
        prop::option::of(prop::sample::select(vec![4100usize, 8200])),
    )
        .prop_map(
            |(n, classes, seed, overlapping, score_threshold, max_per_class)| {
                let mut mix = Mix(seed);
                NmsCase {
                    boxes: spread_boxes(1, n, overlapping, seed),
                    scores: (0..classes * n).map(|_| mix.unit()).collect(),
                    batches: 1,
                    classes,
                    n,
                    iou_threshold: 0.3,
                    score_threshold,
                    max_per_class,
                    center: false,
                }
            },
        )
}

/// A case: `B`, `C` from 0 to 3, `N` around the sweep's block of 256, boxes from a few
/// clusters (duplicates and ties), scores from a small palette with NaN, both formats, and the
/// thresholds and limits at their ends.
fn case() -> impl Strategy<Value = NmsCase> {
    (
        0usize..=3,
        0usize..=3,
        prop::sample::select(vec![0usize, 1, 2, 3, 31, 32, 33, 255, 256, 257, 300]),
        any::<u64>(),
        prop::sample::select(vec![0.0f32, 0.3, 0.5, 0.7, 1.0]),
        prop::option::of(prop::sample::select(vec![0.0f32, 0.2, 0.5, -1.0])),
        prop::option::of(prop::sample::select(vec![0usize, 1, 2, 5, 300])),
        any::<bool>(),
    )
        .prop_map(
            |(batches, classes, n, seed, iou_threshold, score_threshold, max_per_class, center)| {
                let mut mix = Mix(seed);
                let objects = 1 + (seed % 7) as usize;
                let mut boxes = clustered_boxes(batches, n, objects, seed);
                if center {
                    // The same numbers read as centre boxes: some of negative size.
                    for b in boxes.chunks_exact_mut(4) {
                        b[2] -= b[0] + 30.0;
                        b[3] -= b[1] + 30.0;
                    }
                }
                let palette = [0.9f32, 0.5, 0.5, 0.2, 0.0, -0.0, 0.7, f32::NAN, 0.31];
                let scores = (0..batches * classes * n)
                    .map(|_| {
                        if mix.unit() < 0.5 {
                            palette[(mix.next_u64() % palette.len() as u64) as usize]
                        } else {
                            mix.unit()
                        }
                    })
                    .collect();
                NmsCase {
                    boxes,
                    scores,
                    batches,
                    classes,
                    n,
                    iou_threshold,
                    score_threshold,
                    max_per_class,
                    center,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn matches_the_oracle(case in case()) {
        let want = expected_nms(&case);
        for device in devices() {
            prop_assert_eq!(run(&device, &case, None), want.clone(), "on {:?}", device);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn long_sequences_match_the_oracle(case in long_case()) {
        let want = expected_nms(&case);
        for device in devices() {
            prop_assert_eq!(run(&device, &case, None), want.clone(), "on {:?}", device);
        }
    }
}
