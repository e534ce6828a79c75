//! The same imported models with burn-dml-ops-onnx's overrides and with Burn's built-ins, on
//! `Device::default()`: NonZero, torch's `x[mask]` chain (Greater, NonZero, Transpose, GatherND)
//! and ScatterND `add` with 64 updates to a target, beside a copy of the input's bytes (`x + 1`,
//! the memory limit), and NonMaxSuppression of `n / 64` boxes (at most 20,000) and 80 classes
//! (score threshold 0.25, IoU 0.45, at most 100 per class). Each row queues `CALLS` calls on
//! distinct inputs between two syncs and prints the median ms per call over the repetitions, and
//! GB/s of the input read.
//!
//! The models' constants (the mask's 0.5, NMS's limits) load from the importer's weight files.
//!
//! `cargo bench -p burn-dml-ops-onnx-tests --bench imported`; `IMPORTED_BENCH_SIZES=16,20,24`
//! (log2 element counts) sets the sizes, `IMPORTED_BENCH_REPS` the repetitions (default 5).

use std::time::Instant;

use burn::tensor::{Device, Distribution, Int, Tensor};
use burn_dml_ops_onnx_tests::{builtin, dml};

/// Calls queued between two syncs, each on an input of its own.
const CALLS: usize = 8;

fn main() {
    let device = Device::default();
    let sizes = env_list("IMPORTED_BENCH_SIZES", &[16, 20, 22]);
    let reps = env_list("IMPORTED_BENCH_REPS", &[5])[0] as usize;
    println!("device: {device:?}; {CALLS} calls per sync, median of {reps} repetitions");
    println!(
        "{:<28} {:>6} {:>11} {:>11} {:>9} {:>11} {:>9}",
        "model", "log2 n", "overrides", "built-ins", "ratio", "copy x+1", "GB/s"
    );
    for &log2 in &sizes {
        let n = 1usize << log2;
        let inputs: Vec<Tensor<1>> = (0..CALLS)
            .map(|_| Tensor::random([n], Distribution::Uniform(0.0, 1.0), &device))
            .collect();
        // About 10% of the elements are non-zero (the rest rounded down to exactly zero).
        let sparse: Vec<Tensor<1>> = inputs
            .iter()
            .map(|x| x.clone().sub_scalar(0.9).clamp_min(0.0))
            .collect();
        let copy = time(&device, reps, || {
            inputs.iter().map(|x| x.clone().add_scalar(1.0)).collect()
        });

        let (ours, model) = (
            dml::bench_nonzero::Model::from_file(
                concat!(env!("OUT_DIR"), "/dml/bench_nonzero.bpk"),
                &device,
            ),
            builtin::bench_nonzero::Model::from_file(
                concat!(env!("OUT_DIR"), "/builtin/bench_nonzero.bpk"),
                &device,
            ),
        );
        let a = time(&device, reps, || {
            sparse.iter().map(|x| ours.forward(x.clone())).collect()
        });
        let b = time(&device, reps, || {
            sparse.iter().map(|x| model.forward(x.clone())).collect()
        });
        row("NonZero (10% non-zero)", log2, a, b, copy, n);

        let (ours, model) = (
            dml::bench_mask_select::Model::from_file(
                concat!(env!("OUT_DIR"), "/dml/bench_mask_select.bpk"),
                &device,
            ),
            builtin::bench_mask_select::Model::from_file(
                concat!(env!("OUT_DIR"), "/builtin/bench_mask_select.bpk"),
                &device,
            ),
        );
        let a = time(&device, reps, || {
            inputs.iter().map(|x| ours.forward(x.clone())).collect()
        });
        let b = time(&device, reps, || {
            inputs.iter().map(|x| model.forward(x.clone())).collect()
        });
        row("x[x > 0.5] (50%)", log2, a, b, copy, n);

        let targets = (n / 64).max(1);
        let indices: Vec<Tensor<2, Int>> = (0..CALLS)
            .map(|_| {
                Tensor::<2>::random([n, 1], Distribution::Uniform(0.0, targets as f64), &device)
                    .int()
            })
            .collect();
        let data: Vec<Tensor<1>> = (0..CALLS)
            .map(|_| Tensor::zeros([targets], &device))
            .collect();
        let (ours, model) = (
            dml::bench_scatternd_add::Model::from_file(
                concat!(env!("OUT_DIR"), "/dml/bench_scatternd_add.bpk"),
                &device,
            ),
            builtin::bench_scatternd_add::Model::from_file(
                concat!(env!("OUT_DIR"), "/builtin/bench_scatternd_add.bpk"),
                &device,
            ),
        );
        let run = |forward: &dyn Fn(Tensor<1>, Tensor<2, Int>, Tensor<1>) -> Tensor<1>| {
            (0..CALLS)
                .map(|i| forward(data[i].clone(), indices[i].clone(), inputs[i].clone()))
                .collect()
        };
        let a = time(&device, reps, || run(&|d, i, u| ours.forward(d, i, u)));
        let b = time(&device, reps, || run(&|d, i, u| model.forward(d, i, u)));
        row("ScatterND add, 64 per target", log2, a, b, copy, n);

        // Detector-like: boxes around 40 objects, scores cubed uniform numbers (most are low).
        let boxes_n = (n / 64).clamp(1, 20_000);
        let centres = Tensor::<3>::random([1, 40, 2], Distribution::Uniform(0.0, 600.0), &device);
        let pick = Tensor::<1>::random([boxes_n], Distribution::Uniform(0.0, 40.0), &device).int();
        let corner = centres.select(1, pick)
            + Tensor::random([1, boxes_n, 2], Distribution::Uniform(-5.0, 5.0), &device);
        let boxes = Tensor::cat(vec![corner.clone(), corner.add_scalar(60.0)], 2);
        let scores: Vec<Tensor<3>> = (0..CALLS)
            .map(|_| {
                Tensor::<3>::random([1, 80, boxes_n], Distribution::Uniform(0.0, 1.0), &device)
                    .powi_scalar(3)
            })
            .collect();
        let (ours, model) = (
            dml::bench_nms::Model::from_file(
                concat!(env!("OUT_DIR"), "/dml/bench_nms.bpk"),
                &device,
            ),
            builtin::bench_nms::Model::from_file(
                concat!(env!("OUT_DIR"), "/builtin/bench_nms.bpk"),
                &device,
            ),
        );
        let (kept, builtin_kept) = (
            ours.forward(boxes.clone(), scores[0].clone()).into_data(),
            model.forward(boxes.clone(), scores[0].clone()).into_data(),
        );
        assert_eq!(kept, builtin_kept, "NMS: the two imports select other rows");
        let a = time(&device, reps, || {
            scores
                .iter()
                .map(|s| ours.forward(boxes.clone(), s.clone()))
                .collect()
        });
        let b = time(&device, reps, || {
            scores
                .iter()
                .map(|s| model.forward(boxes.clone(), s.clone()))
                .collect()
        });
        let copy = time(&device, reps, || {
            scores.iter().map(|s| s.clone().add_scalar(1.0)).collect()
        });
        row("NMS, n / 64 boxes x 80", log2, a, b, copy, boxes_n * 80);
    }
}

/// The median ms per call of `calls` (which queues `CALLS` calls) over `reps` repetitions, each
/// timed from before the calls to after the device finished them; two untimed passes first, so
/// kernel compilation and the memory pool's first allocations stay out.
fn time<T>(device: &Device, reps: usize, calls: impl Fn() -> Vec<T>) -> f64 {
    timed(reps, || {
        let outputs = calls();
        device.sync().expect("the device syncs");
        drop(outputs);
    })
}

fn timed(reps: usize, run: impl Fn()) -> f64 {
    run();
    run();
    let mut ms: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_secs_f64() * 1e3 / CALLS as f64
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn row(name: &str, log2: u32, ours: f64, builtin: f64, copy: f64, n: usize) {
    let gbs = (n * 4) as f64 / (ours * 1e-3) / 1e9;
    println!(
        "{name:<28} {log2:>6} {ours:>8.3} ms {builtin:>8.3} ms {:>8.2}x {copy:>8.3} ms {gbs:>9.2}",
        builtin / ours
    );
}

fn env_list(var: &str, default: &[u32]) -> Vec<u32> {
    match std::env::var(var) {
        Ok(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{var}: a comma-separated list; got {list:?}"))
            })
            .collect(),
        Err(_) => default.to_vec(),
    }
}
