//! BitCount against what a Burn user has without this crate, on `Device::default()`.
//!
//! For 2^16, 2^20 and 2^24 `i32` elements:
//! - `bit_count`: this crate's kernel;
//! - `copy`: `x.add_scalar(1)`, an elementwise pass over the same bytes (the memory-bound floor);
//! - `swar`: the SWAR popcount formula written with Burn's own bitwise ops.
//!
//! After criterion's report, the ratios of `bit_count` to the others are printed as a table.
//! Run with `cargo bench --bench bit_count`.

mod common;

use burn::tensor::{Device, Int, Tensor};
use burn_dml_ops::prelude::*;
use criterion::{BenchmarkId, Criterion};

const GROUP: &str = "bit_count";
const NAMES: [&str; 3] = ["bit_count", "copy", "swar"];

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

fn op(name: &str, x: Tensor<1, Int>) -> Tensor<1, Int> {
    match name {
        "bit_count" => x.bit_count(),
        "copy" => x.add_scalar(1),
        _ => swar(x),
    }
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    common::configure(&mut group);
    let mut parameters = Vec::new();
    for log2 in [16, 20, 24] {
        let n = 1usize << log2;
        let values: Vec<i32> = (0..n as i32)
            .map(|i| i.wrapping_mul(-1_640_531_535))
            .collect();
        let x = Tensor::<1, Int>::from_data(values.as_slice(), &device);
        // The formula is a correct alternative: check it once against the kernel.
        let small = x.clone().narrow(0, 0, 1 << 12);
        assert_eq!(
            swar(small.clone()).into_data(),
            small.bit_count().into_data()
        );
        let parameter = format!("2^{log2}");
        for name in NAMES {
            group.bench_with_input(BenchmarkId::new(name, &parameter), &x, |b, x| {
                b.iter_custom(|iters| common::time(&device, iters, || op(name, x.clone())))
            });
        }
        parameters.push(parameter);
    }
    group.finish();
    criterion.final_summary();
    let title = format!("BitCount of i32 on {device:?}: mean time per call (with a device sync)");
    common::print_ratios(&title, GROUP, &NAMES, &parameters);
}
