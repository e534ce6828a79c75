//! BitCount against what a Burn user has without this crate, on `Device::default()`.
//!
//! For 2^16, 2^20 and 2^24 `i32` elements:
//! - `bit_count`: this crate's kernel;
//! - `copy`: `x.add_scalar(1)`, an elementwise pass over the same bytes (the memory-bound floor);
//! - `swar`: the SWAR popcount formula written with Burn's own bitwise ops.
//!
//! Every timed iteration enqueues the op and waits for the device (`device.sync()`), keeping the
//! output alive until then so Fusion cannot drop the work. After criterion's own report, the
//! ratios `bit_count / copy` and `bit_count / swar` are printed from its estimates.
//!
//! Run with `cargo bench --bench bit_count`.

use std::time::{Duration, Instant};

use burn::tensor::{Device, Int, Tensor};
use burn_dml_ops::prelude::*;
use criterion::{BenchmarkId, Criterion};

const SIZES: [u32; 3] = [16, 20, 24];
const GROUP: &str = "bit_count";

fn swar(x: Tensor<1, Int>) -> Tensor<1, Int> {
    let v = x.clone()
        - x.bitwise_right_shift_scalar(1)
            .bitwise_and_scalar(0x5555_5555);
    let v = v.clone().bitwise_and_scalar(0x3333_3333)
        + v.bitwise_right_shift_scalar(2)
            .bitwise_and_scalar(0x3333_3333);
    let v = (v.clone() + v.bitwise_right_shift_scalar(4)).bitwise_and_scalar(0x0F0F_0F0F);
    v.mul_scalar(0x0101_0101)
        .bitwise_right_shift_scalar(24)
        .bitwise_and_scalar(0xFF)
}

type Op = fn(Tensor<1, Int>) -> Tensor<1, Int>;

const OPS: [(&str, Op); 3] = [
    ("bit_count", |x| x.bit_count()),
    ("copy", |x| x.add_scalar(1)),
    ("swar", swar),
];

fn time(device: &Device, x: &Tensor<1, Int>, op: Op, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        let out = op(x.clone());
        device.sync().expect("the device runs the queued work");
        drop(out);
    }
    start.elapsed()
}

fn bench(c: &mut Criterion, device: &Device) {
    let mut group = c.benchmark_group(GROUP);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for log2 in SIZES {
        let n = 1usize << log2;
        let values: Vec<i32> = (0..n as i32)
            .map(|i| i.wrapping_mul(-1_640_531_535))
            .collect();
        let x = Tensor::<1, Int>::from_data(values.as_slice(), device);
        // Check the formula once, so the comparison is with a correct alternative.
        let check = 1usize << 12;
        let small = x.clone().narrow(0, 0, check);
        assert_eq!(
            swar(small.clone()).into_data(),
            small.bit_count().into_data(),
            "the SWAR formula and the kernel agree"
        );
        for (name, op) in OPS {
            group.bench_with_input(BenchmarkId::new(name, format!("2^{log2}")), &x, |b, x| {
                b.iter_custom(|iters| time(device, x, op, iters))
            });
        }
    }
    group.finish();
}

/// Criterion's mean estimate for one benchmark, in nanoseconds.
fn mean_ns(name: &str, log2: u32) -> Option<f64> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "target".into());
    let path = dir
        .join("criterion")
        .join(GROUP)
        .join(name)
        .join(format!("2^{log2}"))
        .join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    json["mean"]["point_estimate"].as_f64()
}

fn print_ratios(device: &Device) {
    println!("\nBitCount on {device:?} (mean time per call, ratio of bit_count to each)");
    println!("| elements | bit_count | copy | swar | bit_count / copy | bit_count / swar |");
    println!("|---|---|---|---|---|---|");
    for log2 in SIZES {
        let [ours, copy, swar] = ["bit_count", "copy", "swar"].map(|name| mean_ns(name, log2));
        let (Some(ours), Some(copy), Some(swar)) = (ours, copy, swar) else {
            println!("| 2^{log2} | (not measured in this run) |||||");
            continue;
        };
        println!(
            "| 2^{log2} | {:.3} ms | {:.3} ms | {:.3} ms | {:.2}x | {:.2}x |",
            ours / 1e6,
            copy / 1e6,
            swar / 1e6,
            ours / copy,
            ours / swar
        );
    }
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion, &device);
    criterion.final_summary();
    print_ratios(&device);
}
