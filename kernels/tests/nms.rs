//! Non-maximum suppression's launcher over raw handles on wgpu: both cube scans, every signed
//! output width (8 and 16 bits packed in words), the bytes after each output left alone, rows
//! past a block of the sweep, thousands of kept boxes in one class (the sweep split over
//! launches), every refusal, and the exact IoU decision in a kernel against `f32` division.

mod common;

use burn_dml_ops_kernels::KernelError;
use burn_dml_ops_kernels::nms::{
    NmsBoxFormat, NmsInput, NmsLimits, NmsOutput, NmsShape, QuotientThreshold,
    launch_non_max_suppression, quotient_exceeds,
};
use burn_dml_ops_kernels::sort::{CUBE_PACK, CUBE_SORT_MAX, SortPlan};
use common::nonzero::planes_run;
use common::{GUARD, GUARD_BYTE, client};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;

/// `n` unit boxes on a diagonal, each overlapping the next by half its width (IoU 1/3), and
/// scores falling with the index: at an IoU threshold of 0.2 every other box is kept.
fn diagonal(n: usize) -> (Vec<f32>, Vec<f32>) {
    let boxes = (0..n)
        .flat_map(|i| {
            let x = i as f32 * 0.5;
            [0.0, x, 1.0, x + 1.0]
        })
        .collect();
    let scores = (0..n).map(|i| 1.0 - i as f32 / n as f32).collect();
    (boxes, scores)
}

/// Runs NMS of `classes` copies of the diagonal's scores with `elem` rows and returns the
/// count and the rows as i64, after checking the guard bytes past both outputs.
fn run(
    client: &Client,
    n: usize,
    classes: usize,
    limits: NmsLimits,
    elem: ElemType,
    plan: SortPlan,
) -> (i64, Vec<i64>) {
    let (boxes, scores) = diagonal(n);
    run_boxes(client, (&boxes, &scores), classes, limits, elem, plan)
}

/// Runs NMS of `boxes` (`n` boxes of one batch) with `classes` copies of `scores`, as [`run`].
fn run_boxes(
    client: &Client,
    (boxes, scores): (&[f32], &[f32]),
    classes: usize,
    limits: NmsLimits,
    elem: ElemType,
    plan: SortPlan,
) -> (i64, Vec<i64>) {
    let n = scores.len();
    let scores: Vec<f32> = scores.repeat(classes);
    let shape = NmsShape {
        batches: 1,
        classes,
        boxes: n,
    };
    let capacity = shape.capacity(limits.max_per_class);
    let bytes = elem.size();
    let guarded = |size: usize| {
        let words = size.div_ceil(4) * 4;
        client.create_from_slice(&vec![GUARD_BYTE; words + GUARD])
    };
    let count = guarded(bytes);
    let selected = guarded(capacity * 3 * bytes);
    launch_non_max_suppression(
        client,
        &NmsInput {
            boxes: client.create_from_slice(f32::as_bytes(boxes)),
            scores: client.create_from_slice(f32::as_bytes(&scores)),
        },
        &NmsOutput {
            count: count.clone(),
            selected: selected.clone(),
            elem,
        },
        shape,
        &limits,
        plan,
    )
    .unwrap();
    let count = client.read_one(count).unwrap().to_vec();
    let selected = client.read_one(selected).unwrap().to_vec();
    let case = format!("{elem} n {n} classes {classes} {plan:?}");
    for (buffer, size) in [(&count, bytes), (&selected, capacity * 3 * bytes)] {
        assert!(
            buffer[size.div_ceil(4) * 4..]
                .iter()
                .all(|&b| b == GUARD_BYTE),
            "a store past the output: {case}"
        );
    }
    let value = |chunk: &[u8]| {
        let mut wide = [0u8; 8];
        wide[..bytes].copy_from_slice(chunk);
        let shift = 64 - 8 * bytes as u32;
        (i64::from_le_bytes(wide) << shift) >> shift
    };
    let rows = selected[..capacity * 3 * bytes]
        .chunks_exact(bytes)
        .map(value)
        .collect();
    (value(&count[..bytes]), rows)
}

#[test]
fn every_other_box_survives_across_blocks() {
    let Some(client) = client() else { return };
    let mut plans = vec![SortPlan::for_client(&client)];
    for cube_len in [0, CUBE_SORT_MAX] {
        plans.push(SortPlan {
            planes: false,
            cube_len,
            select_k: 0,
            cube_pack: CUBE_PACK,
            row_select_len: 0,
        });
        if planes_run(&client) {
            plans.push(SortPlan {
                planes: true,
                cube_len,
                select_k: 0,
                cube_pack: CUBE_PACK,
                row_select_len: 0,
            });
        }
    }
    for plan in plans {
        for elem in [
            ElemType::Int(IntKind::I8),
            ElemType::Int(IntKind::I16),
            ElemType::Int(IntKind::I32),
            ElemType::Int(IntKind::I64),
        ] {
            // 600 boxes span three blocks of the sweep; an 8-bit type holds indices to 127.
            let n = if elem.size() == 1 { 101 } else { 600 };
            let limits = NmsLimits {
                iou_threshold: 0.2,
                score_threshold: None,
                max_per_class: n,
                format: NmsBoxFormat::Corners,
            };
            let classes = if elem.size() == 1 { 1 } else { 2 };
            let (count, rows) = run(&client, n, classes, limits, elem, plan);
            let kept: Vec<i64> = (0..n as i64).step_by(2).collect();
            assert_eq!(count as usize, kept.len() * classes, "{elem} {plan:?}");
            let mut want = Vec::new();
            for class in 0..classes as i64 {
                for &index in &kept {
                    want.extend([0, class, index]);
                }
            }
            want.resize(rows.len(), -1);
            assert_eq!(rows, want, "{elem} {plan:?}");
        }
    }
}

/// Far-apart boxes, so every box is kept: each class keeps all `n`, in score order, past the
/// blocks of one sweep launch (the sweep's work per launch is bounded, so 20,000 boxes take
/// several launches) and past the one-cube sort (the radix passes order them).
#[test]
fn thousands_of_kept_boxes_come_back_whole() {
    let Some(client) = client() else { return };
    let elem = ElemType::Int(IntKind::I32);
    for (n, classes, shuffled) in [(8192usize, 2usize, true), (20_000, 1, false)] {
        let boxes: Vec<f32> = (0..n)
            .flat_map(|i| {
                let x = 3.0 * i as f32;
                [0.0, x, 1.0, x + 2.0]
            })
            .collect();
        // Distinct scores, decreasing with the index or shuffled by a multiplicative hash.
        let rank = |i: usize| if shuffled { i * 7919 % n } else { i };
        let scores: Vec<f32> = (0..n).map(|i| 1.0 - rank(i) as f32 / n as f32).collect();
        let mut by_score: Vec<usize> = (0..n).collect();
        by_score.sort_by_key(|&i| rank(i));
        for iou_threshold in [0.0, 0.5, 1.0] {
            let limits = NmsLimits {
                iou_threshold,
                score_threshold: None,
                max_per_class: usize::MAX,
                format: NmsBoxFormat::Corners,
            };
            let plan = SortPlan::for_client(&client);
            let (count, rows) = run_boxes(&client, (&boxes, &scores), classes, limits, elem, plan);
            let mut want = Vec::new();
            for class in 0..classes as i64 {
                for &index in &by_score {
                    want.extend([0, class, index as i64]);
                }
            }
            assert_eq!(count as usize, n * classes, "n {n} IoU {iou_threshold}");
            assert!(rows == want, "n {n} IoU {iou_threshold}: rows differ");
        }
    }
}

/// Writes, for each `(i, u)` pair of `f32` bits, whether the exact decision finds
/// `fl(i / u) > t` for the threshold fields given.
#[cube(launch_unchecked)]
fn decide_quotients(pairs: &[u32], decided: &mut [u32], midpoint: u32, exponent: i32, rule: u32) {
    let pair = ABSOLUTE_POS;
    if pair < decided.len() {
        let exceeds = quotient_exceeds(
            pairs[2 * pair],
            pairs[2 * pair + 1],
            midpoint,
            exponent,
            rule,
        );
        decided[pair] = select(exceeds, 1u32, 0u32);
    }
}

/// The exact IoU decision, in a kernel, against `f32` division on the host (correctly rounded):
/// every integer pair `I <= U <= 64`, random positive floats from every binade (subnormals and
/// `+inf` unions included), the quotients that fall exactly on a rounding midpoint, and
/// thresholds at 0, 1, their neighbours, each pair's own quotient, and past both ends.
#[test]
fn the_iou_decision_matches_f32_division() {
    let Some(client) = client() else { return };
    let mut pairs: Vec<(f32, f32)> = Vec::new();
    for u in 1..=64u32 {
        for i in 1..=u {
            pairs.push((i as f32, u as f32));
        }
    }
    let mut next = common::xorshift(0x5EED);
    while pairs.len() < 12_000 {
        let value = |bits: u64| f32::from_bits((bits as u32) % 0x7F80_0000 + 1);
        let (i, u) = (value(next()), value(next()));
        // Half of them with `i <= u` within a few binades, as an IoU's are.
        let u = if pairs.len().is_multiple_of(2) {
            i * (1.0 + (next() % 1000) as f32 / 7.0)
        } else {
            u
        };
        if u > 0.0 {
            pairs.push((i, u));
        }
    }
    let tiny = f32::from_bits(1);
    pairs.extend([
        (tiny, 2.0),
        (3.0 * tiny, 2.0),
        (5.0 * tiny, 2.0),
        (tiny, f32::INFINITY),
        (f32::MAX, tiny),
        (1.0, f32::MAX),
        (9.0, 10.0),
    ]);
    let mut thresholds = vec![
        0.0,
        -0.0,
        1.0,
        f32::from_bits(1.0f32.to_bits() - 1),
        f32::from_bits(1.0f32.to_bits() + 1),
        tiny,
        2.0 * tiny,
        0.5,
        0.9,
        1.0 / 3.0,
        -1.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NAN,
        f32::MAX,
        f32::MIN_POSITIVE,
    ];
    for k in 0..40 {
        let (i, u) = pairs[(k * 997) % pairs.len()];
        thresholds.push(i / u);
        thresholds.push(f32::from_bits((next() as u32) % 0x3F80_0001));
    }
    let bits: Vec<u32> = pairs
        .iter()
        .flat_map(|&(i, u)| [i.to_bits(), u.to_bits()])
        .collect();
    let input = client.create_from_slice(u32::as_bytes(&bits));
    let len = pairs.len();
    for t in thresholds {
        let threshold = QuotientThreshold::new(t);
        let output = client.empty(len * 4);
        let dim = CubeDim::new_1d(128);
        // SAFETY: unit `p < len` reads pair `p` (two words of `2 * len`) and writes word `p`.
        unsafe {
            decide_quotients::launch_unchecked(
                &client,
                CubeCount::Static(len.div_ceil(128) as u32, 1, 1),
                dim,
                BufferArg::from_raw_parts(input.clone(), 2 * len),
                BufferArg::from_raw_parts(output.clone(), len),
                threshold.midpoint,
                threshold.exponent,
                threshold.rule,
            );
        }
        let decided = client.read_one(output).unwrap().to_vec();
        let decided = u32::from_bytes(&decided);
        for (p, &(i, u)) in pairs.iter().enumerate() {
            let want = i / u > t;
            assert_eq!(
                decided[p] == 1,
                want,
                "fl({i:e} / {u:e}) = {:e} > {t:e} ({threshold:?})",
                i / u
            );
        }
    }
}

#[test]
fn limits_and_thresholds_are_launch_arguments() {
    let Some(client) = client() else { return };
    let plan = SortPlan::for_client(&client);
    let elem = ElemType::Int(IntKind::I32);
    let limits = |max_per_class, score_threshold| NmsLimits {
        iou_threshold: 0.2,
        score_threshold,
        max_per_class,
        format: NmsBoxFormat::Corners,
    };
    // At most 3 kept.
    let (count, rows) = run(&client, 300, 1, limits(3, None), elem, plan);
    assert_eq!((count, &rows[..]), (3, &[0, 0, 0, 0, 0, 2, 0, 0, 4][..]));
    // Scores above 0.99 are those of boxes 0, 1 and 2 (1.0, 0.9967, 0.9933): 0 and 2 are kept.
    let (count, rows) = run(&client, 300, 1, limits(300, Some(0.99)), elem, plan);
    assert_eq!((count, &rows[..6]), (2, &[0, 0, 0, 0, 0, 2][..]));
    assert!(rows[6..].iter().all(|&v| v == -1));
    // A NaN score threshold passes nothing.
    let (count, _) = run(&client, 300, 1, limits(300, Some(f32::NAN)), elem, plan);
    assert_eq!(count, 0);
}

#[test]
fn refusals_launch_nothing() {
    let Some(client) = client() else { return };
    let input = NmsInput {
        boxes: client.create_from_slice(&[0u8; 64]),
        scores: client.create_from_slice(&[0u8; 16]),
    };
    let output = |elem| NmsOutput {
        count: client.create_from_slice(&[0u8; 8]),
        selected: client.create_from_slice(&[0u8; 96]),
        elem,
    };
    let shape = NmsShape {
        batches: 1,
        classes: 1,
        boxes: 4,
    };
    let limits = NmsLimits {
        iou_threshold: 0.5,
        score_threshold: None,
        max_per_class: 4,
        format: NmsBoxFormat::Center,
    };
    let plan = SortPlan::for_client(&client);
    let launch = |input: &NmsInput, output: &NmsOutput, shape: NmsShape| {
        launch_non_max_suppression(&client, input, output, shape, &limits, plan)
    };
    for elem in [
        ElemType::UInt(UIntKind::U32),
        ElemType::Float(FloatKind::F32),
    ] {
        assert!(matches!(
            launch(&input, &output(elem), shape),
            Err(KernelError::NotAnInteger { .. })
        ));
    }
    let i32_out = output(ElemType::Int(IntKind::I32));
    let more_boxes = NmsShape { boxes: 5, ..shape };
    assert!(matches!(
        launch(&input, &i32_out, more_boxes),
        Err(KernelError::BufferTooSmall { .. })
    ));
    let wide = NmsShape {
        boxes: 200,
        ..shape
    };
    assert!(matches!(
        launch(&input, &output(ElemType::Int(IntKind::I8)), wide),
        Err(KernelError::ValueOutOfRange { .. })
    ));
    let huge = NmsShape {
        batches: 1 << 20,
        classes: 1 << 20,
        boxes: 1 << 20,
    };
    assert!(matches!(
        launch(&input, &i32_out, huge),
        Err(KernelError::TooLarge { .. })
    ));
    assert_eq!(launch(&input, &i32_out, shape), Ok(()));
}
