//! Token sampling against what a Burn user has without it, on `Device::default()`.
//!
//! Rows: `logits.sample(options, step)` of `[1, 128256]` and `[64, 128256]` f32 logits (and
//! `[256, 151936]`, with `SAMPLE_BENCH_SHAPES=1x128256,64x128256,256x151936` on a GPU), each with
//! top-p 0.9 and with top-k 50 + top-p 0.95 + temperature 0.7, labelled with the launches a call
//! takes (counted by the kernel crate's capture), against
//! - `burn sort + cumsum`: temperature, Burn's `sort_descending_with_indices` (a host round trip
//!   on a GPU), top-k by a slice, softmax, `cumsum`, the top-p mask and a Gumbel-max draw with
//!   Burn's `random` noise, then the token's index gathered: the composition a Burn user writes;
//! - `sort_stable + cumsum`: the same with this crate's `sort_stable` (what
//!   `examples/top_p_sampling.rs` did before `sample`);
//! - `burn categorical`: `softmax(z / T).categorical(1)`, Burn's own draw, which cannot filter
//!   (a lower bound for anything built on it);
//! - `copy`: `x.add_scalar(1.0)`, one read and one write of the logits (the memory's pace).
//!
//! The floor is one read of the logits: `sample`'s GB/s counts only those bytes (the tokens and
//! log-probabilities it writes are 8 bytes a row). Each measurement queues `QUEUED` calls between
//! two syncs, each on its own logits. Before anything is timed, the device's tokens for the
//! first logits are checked against Flex's.

mod common;

use burn::tensor::activation::softmax;
use burn::tensor::{Device, Distribution, Float, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::capture::Capture;
use burn_dml_ops_kernels::sample::{SampleInput, SampleOutput, launch_sample};
use criterion::Criterion;

const GROUP: &str = "sample";
const NAMES: [&str; 5] = [
    "sample",
    "burn sort + cumsum",
    "sort_stable + cumsum",
    "burn categorical",
    "copy",
];
/// Calls queued between two syncs, each on its own logits.
const QUEUED: usize = 8;

/// The two filters every shape is sampled with.
const FILTERS: [(&str, SamplingOptions); 2] = [
    (
        "top-p 0.9",
        SamplingOptions {
            temperature: 1.0,
            top_k: None,
            top_p: Some(0.9),
            min_p: None,
            seed: 7,
        },
    ),
    (
        "top-k 50 + top-p 0.95 + T 0.7",
        SamplingOptions {
            temperature: 0.7,
            top_k: Some(50),
            top_p: Some(0.95),
            min_p: None,
            seed: 7,
        },
    ),
];

/// The shapes to sample: `SAMPLE_BENCH_SHAPES` (`1x128256,64x128256`), else those two.
fn shapes() -> Vec<[usize; 2]> {
    let list = std::env::var("SAMPLE_BENCH_SHAPES").unwrap_or_else(|_| "1x128256,64x128256".into());
    list.split(',')
        .map(|shape| {
            let parsed = shape.split_once('x').and_then(|(rows, vocab)| {
                Some([rows.trim().parse().ok()?, vocab.trim().parse().ok()?])
            });
            parsed.unwrap_or_else(|| panic!("SAMPLE_BENCH_SHAPES: `rowsxvocab,..`, got {list:?}"))
        })
        .collect()
}

/// Logits of a language model's spread: a few large values over a long tail, from `seed`.
fn logits(shape: [usize; 2], seed: u64, device: &Device) -> Tensor<2> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let values: Vec<f32> = (0..shape[0] * shape[1])
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 40) as f32 / (1u64 << 24) as f32;
            // Mostly around 0, one in a few thousand up to about 12: a peaked softmax.
            -4.0 * (1.0 - u).ln().min(3.0) * u.powi(64) * 3.0 + 2.0 * u
        })
        .collect();
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// Launches per call of the kernel crate's sampler for `shape` on `device`'s properties
/// (nothing runs).
fn launches(shape: [usize; 2], device: &Device) -> usize {
    let client = common::cube_float(&Tensor::<1>::zeros([1], device), device).client;
    let client = &client;
    let capture = Capture::open(client.properties().clone(), Default::default());
    let [rows, vocab] = shape;
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
    .expect("a valid call");
    capture.take().len()
}

/// The composition a Burn user writes without `sample`: temperature, a descending sort (Burn's
/// or this crate's), top-k by a slice, top-p by a cumulative sum, a Gumbel-max draw.
fn composed(logits: &Tensor<2>, options: &SamplingOptions, crate_sort: bool) -> Tensor<2, Int> {
    let [rows, vocab] = logits.dims();
    let z = logits.clone().div_scalar(options.temperature);
    let (values, indices) = if crate_sort {
        let sorted = z.sort_stable(-1, Order::Descending);
        (sorted.values, sorted.indices)
    } else {
        z.sort_descending_with_indices(1)
    };
    let width = options.top_k.map_or(vocab, |k| k.min(vocab));
    let values = values.slice([0..rows, 0..width]);
    let indices = indices.slice([0..rows, 0..width]);
    let probabilities = softmax(values.clone(), 1);
    let before = probabilities.clone().cumsum(1) - probabilities;
    let dropped = before.greater_equal_elem(options.top_p.unwrap_or(1.0));
    let kept = values.mask_fill(dropped, f32::NEG_INFINITY);
    let uniform = Tensor::<2>::random(
        [rows, width],
        Distribution::Uniform(1e-7, 1.0),
        &logits.device(),
    );
    let gumbel = uniform.log().neg().log().neg();
    let pick = (kept + gumbel).argmax(1);
    indices.gather(1, pick)
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    common::configure(&mut group);
    let mut rows = Vec::new();
    for shape in shapes() {
        let inputs: Vec<Tensor<2, Float>> = (0..QUEUED as u64)
            .map(|s| logits(shape, s, &device))
            .collect();
        let calls = launches(shape, &device);
        let len = shape[0] * shape[1];
        for (filter, options) in FILTERS {
            let parameter = format!(
                "[{}, {}] {filter} ({calls} launch{})",
                shape[0],
                shape[1],
                if calls == 1 { "" } else { "es" }
            );
            let on_device = inputs[0].clone().sample(options, 3).expect("valid options");
            let flex = Tensor::<2>::from_data(inputs[0].to_data(), &Device::flex())
                .sample(options, 3)
                .expect("valid options");
            assert_eq!(
                on_device.tokens.to_data().convert::<i64>(),
                flex.tokens.to_data().convert::<i64>(),
                "{parameter}: the device's tokens differ from Flex's"
            );
            let ours = |x: &Tensor<2, Float>| x.clone().sample(options, 3).expect("valid options");
            common::bench(&mut group, &device, NAMES[0], &parameter, &inputs, ours);
            let burn = |x: &Tensor<2, Float>| composed(x, &options, false);
            common::bench(&mut group, &device, NAMES[1], &parameter, &inputs, burn);
            let crate_sort = |x: &Tensor<2, Float>| composed(x, &options, true);
            common::bench(
                &mut group, &device, NAMES[2], &parameter, &inputs, crate_sort,
            );
            let categorical = |x: &Tensor<2, Float>| {
                softmax(x.clone().div_scalar(options.temperature), 1).categorical(1)
            };
            common::bench(
                &mut group,
                &device,
                NAMES[3],
                &parameter,
                &inputs,
                categorical,
            );
            let copy = |x: &Tensor<2, Float>| x.clone().add_scalar(1.0);
            common::bench(&mut group, &device, NAMES[4], &parameter, &inputs, copy);
            rows.push((
                parameter,
                vec![len as f64 * 4.0, 0.0, 0.0, 0.0, len as f64 * 8.0],
            ));
        }
    }
    group.finish();
    criterion.final_summary();
    common::print_throughput(
        &format!(
            "Token sampling of f32 logits on {device:?}: time per call, {QUEUED} queued per \
             sync; sample's GB/s counts one read of the logits"
        ),
        GROUP,
        &NAMES,
        &rows,
    );
}
