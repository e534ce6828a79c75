//! Launches per call, counted without a GPU and held to a budget: each case runs its launcher
//! under a [`Capture`] at an NVIDIA H100's properties and at WebGPU's default limits, which
//! builds every kernel the launcher would launch there instead of launching it. A GPU pays a
//! few microseconds per launch, more than a pass over the keys of most of these calls, so the
//! count is what the sort's and NMS's designs answer to (see the sort module's cost model).
//! `BURN_DML_OPS_LAUNCH_COUNTS=1` prints every count, for `benches/README.md`.

mod common;

use burn_dml_ops_kernels::capture::Capture;
use burn_dml_ops_kernels::nms::{
    NmsBoxFormat, NmsInput, NmsLimits, NmsOutput, NmsShape, launch_non_max_suppression,
};
use burn_dml_ops_kernels::sample::{SampleInput, SampleOutput, launch_sample};
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ReduceOp, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, launch_scatter_nd,
};
use burn_dml_ops_kernels::sort::{
    SortInput, SortOrder, SortOutput, SortPlan, SortShape, launch_top_k,
};
use common::client;
use common::devices::{register_words32, sm90_device, webgpu_properties};
use cubecl::ir::{DeviceProperties, ElemType, FloatKind, IntKind};
use cubecl::prelude::*;

/// A call to count: what it is, the most launches it may take, and the call.
struct Case {
    name: &'static str,
    budget: usize,
    call: fn(&Client),
}

/// `top_k(k)` of `[outer, axis_len]` elements of `elem`, with `i64` indices, in the order and
/// under the plan a Burn user's call takes.
fn top_k(client: &Client, elem: ElemType, (outer, axis_len): (usize, usize), k: usize) {
    let len = outer * axis_len;
    let indices_elem = ElemType::Int(IntKind::I64);
    launch_top_k(
        client,
        &SortInput {
            values: client.empty(len * elem.size()),
            elem,
        },
        &SortOutput {
            values: client.empty(outer * k * elem.size()),
            indices: client.empty(outer * k * indices_elem.size()),
            indices_elem,
        },
        SortShape {
            outer,
            axis_len,
            inner: 1,
            k,
        },
        SortOrder::Descending,
        SortPlan::for_client(client),
    )
    .expect("the call is valid");
}

const F32: ElemType = ElemType::Float(FloatKind::F32);
const F64: ElemType = ElemType::Float(FloatKind::F64);

/// The calls and their budgets, set from the portable anchors' counts (DeviceRadixSort's 13
/// launches for 32-bit keys, AIR top-k's few); `benches/README.md` has each call's count.
const CASES: [Case; 18] = [
    Case {
        name: "sort_stable of one axis of 2^20 f32, with indices",
        budget: 16,
        call: |client| top_k(client, F32, (1, 1 << 20), 1 << 20),
    },
    Case {
        name: "sort_stable of one axis of 2^20 f64, with indices",
        budget: 28,
        call: |client| top_k(client, F64, (1, 1 << 20), 1 << 20),
    },
    Case {
        name: "top_k(10) of [32, 32000] f32",
        budget: 8,
        call: |client| top_k(client, F32, (32, 32_000), 10),
    },
    Case {
        name: "top_k(50) of [1, 128256] f32",
        budget: 8,
        call: |client| top_k(client, F32, (1, 128_256), 50),
    },
    Case {
        name: "top_k(10) of one axis of 2^20 f32 (the select over tiles)",
        budget: 16,
        call: |client| top_k(client, F32, (1, 1 << 20), 10),
    },
    Case {
        name: "sort_stable of [4096, 1000] f32",
        budget: 4,
        call: |client| top_k(client, F32, (4096, 1000), 1000),
    },
    Case {
        name: "sort_stable of [100000, 16] f32",
        budget: 4,
        call: |client| top_k(client, F32, (100_000, 16), 16),
    },
    Case {
        name: "sort_stable of [65536, 64] f32",
        budget: 4,
        call: |client| top_k(client, F32, (65_536, 64), 64),
    },
    Case {
        name: "non_max_suppression of [1, 8400, 4] x 80 classes",
        budget: 12,
        call: nms_8400,
    },
    Case {
        name: "sample of [1, 128256] f32 (greedy or filtered: one kernel per call)",
        budget: 1,
        call: |client| sample(client, 1, 128_256),
    },
    Case {
        name: "sample of [64, 128256] f32",
        budget: 1,
        call: |client| sample(client, 64, 128_256),
    },
    Case {
        name: "sample of [256, 151936] f32",
        budget: 1,
        call: |client| sample(client, 256, 151_936),
    },
    Case {
        name: "scatter_nd deterministic Add of 2^14 rows of 64 f32 onto 2^14 targets",
        budget: 11,
        call: |client| {
            let reduction = ScatterReduction::Reduce(ReduceOp::Add);
            scatter(client, F32, (1 << 14, 64), reduction, DETERMINISTIC);
        },
    },
    Case {
        name: "scatter_nd deterministic Add of 2^20 rows of 64 f32 onto 2^20 targets",
        budget: 15,
        call: |client| {
            let reduction = ScatterReduction::Reduce(ReduceOp::Add);
            scatter(client, F32, (1 << 20, 64), reduction, DETERMINISTIC);
        },
    },
    Case {
        name: "scatter_nd Mul of 2^22 rows of 1 i32 onto 2^22 targets (sorted rows)",
        budget: 15,
        call: |client| {
            let reduction = ScatterReduction::Reduce(ReduceOp::Mul);
            scatter(
                client,
                I32,
                (1 << 22, 1),
                reduction,
                ScatterStrategy::Sorted,
            );
        },
    },
    Case {
        name: "scatter_nd deterministic Mul of 2^14 rows of 64 f32 (the product tree)",
        budget: 13,
        call: |client| {
            let reduction = ScatterReduction::Reduce(ReduceOp::Mul);
            scatter(client, F32, (1 << 14, 64), reduction, DETERMINISTIC);
        },
    },
    Case {
        name: "scatter_nd deterministic Mul of 2^20 rows of 64 f32 (the product tree)",
        budget: 17,
        call: |client| {
            let reduction = ScatterReduction::Reduce(ReduceOp::Mul);
            scatter(client, F32, (1 << 20, 64), reduction, DETERMINISTIC);
        },
    },
    Case {
        name: "scatter_nd deterministic Assign of 2^20 rows of 64 f32 (latest rows, no sort)",
        budget: 3,
        call: |client| {
            scatter(
                client,
                F32,
                (1 << 20, 64),
                ScatterReduction::Assign,
                DETERMINISTIC,
            )
        },
    },
];

const I32: ElemType = ElemType::Int(IntKind::I32);
const DETERMINISTIC: ScatterStrategy = ScatterStrategy::Deterministic;

/// A ScatterND of `rows` update rows of `slice` elements of `elem` onto as many target rows
/// (data as large as the updates), with `i32` index tuples of one coordinate.
fn scatter(
    client: &Client,
    elem: ElemType,
    (rows, slice): (usize, usize),
    reduction: ScatterReduction,
    strategy: ScatterStrategy,
) {
    let index_elem = ElemType::Int(IntKind::I32);
    let data = ScatterNdData {
        output: client.empty(rows * slice * elem.size()),
        updates: client.empty(rows * slice * elem.size()),
        elem,
    };
    let indices = ScatterNdIndices {
        handle: client.empty(rows * index_elem.size()),
        elem: index_elem,
        out_of_range: OutOfRange::Skip,
    };
    let layout = ScatterNdLayout {
        dims: &[rows],
        rows,
        slice,
    };
    launch_scatter_nd(client, &data, &indices, layout, reduction, strategy)
        .expect("the call is valid");
}

/// Sampling of `[rows, vocab]` logits: one kernel whatever each row's options.
fn sample(client: &Client, rows: usize, vocab: usize) {
    launch_sample(
        client,
        &SampleInput {
            logits: client.empty(rows * vocab * 4),
            temperature: client.empty(rows * 4),
            top_k: client.empty(rows * 4),
            top_p: client.empty(rows * 4),
            min_p: client.empty(rows * 4),
            seeds: client.empty(rows * 8),
        },
        &SampleOutput {
            results: client.empty(rows * 8),
            logprobs_at: rows,
        },
        rows,
        vocab,
        0,
    )
    .expect("the call is valid");
}

/// NMS of 8,400 boxes in 80 classes, every box allowed to be kept (ONNX's default), as a
/// detector's head gives them.
fn nms_8400(client: &Client) {
    let (boxes, classes) = (8400, 80);
    let elem = ElemType::Int(IntKind::I64);
    launch_non_max_suppression(
        client,
        &NmsInput {
            boxes: client.empty(boxes * 4 * 4),
            scores: client.empty(classes * boxes * 4),
        },
        &NmsOutput {
            count: client.empty(8),
            selected: client.empty(classes * boxes * 3 * elem.size()),
            elem,
        },
        NmsShape {
            batches: 1,
            classes,
            boxes,
        },
        &NmsLimits {
            iou_threshold: 0.45,
            score_threshold: Some(0.25),
            max_per_class: boxes,
            format: NmsBoxFormat::Corners,
        },
        SortPlan::for_client(client),
    )
    .expect("the call is valid");
}

/// Counts every case's launches on a device of `properties`; panics naming each case over its
/// budget.
fn check_budgets(client: &Client, device: &str, properties: DeviceProperties) {
    let capture = Capture::open(properties, Default::default());
    let print = std::env::var_os("BURN_DML_OPS_LAUNCH_COUNTS").is_some();
    let mut over = Vec::new();
    for case in &CASES {
        (case.call)(client);
        let launches = capture.take().len();
        if print {
            println!("{device}: {}: {launches} launches", case.name);
        }
        if launches > case.budget {
            over.push(format!(
                "{}: {launches} launches, budget {}",
                case.name, case.budget
            ));
        }
        assert!(launches > 0, "{}: nothing was captured", case.name);
    }
    assert!(over.is_empty(), "over budget on {device}: {over:#?}");
}

#[test]
fn launches_per_call_within_budget_on_an_h100() {
    let Some(client) = client() else { return };
    let mut properties = sm90_device(&client);
    register_words32(&mut properties);
    check_budgets(&client, "H100", properties);
}

#[test]
fn launches_per_call_within_budget_at_webgpu_limits() {
    let Some(client) = client() else { return };
    check_budgets(&client, "WebGPU", webgpu_properties(&client, false, true));
}
