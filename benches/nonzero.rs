//! NonZeroCoordinates against what a Burn user has without this crate, on `Device::default()`.
//!
//! For f32 inputs of 2^16, 2^20 and 2^24 elements at densities 1%, 10% and 50%:
//! - `nonzero`: `x.nonzero_coordinates()`, the padded form, which never reads back;
//! - `argwhere`: `x.not_equal_elem(0.0).argwhere()`, Burn's own, which reads the mask back to
//!   the host and loops there;
//! - `copy`: `x.add_scalar(1.0)`, an elementwise pass over the input (the memory-bound floor).
//!
//! After criterion's report, the ratios of `nonzero` to the others are printed as a table.
//! Run with `cargo bench --bench nonzero`.

mod common;

use burn::tensor::{Device, Float, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use criterion::{BenchmarkId, Criterion};

const GROUP: &str = "nonzero";
const NAMES: [&str; 3] = ["nonzero", "argwhere", "copy"];

/// Values in [0, 1) from a xorshift generator, zeroed where they are at or above `density`.
fn input(len: usize, density: f64, device: &Device) -> Tensor<1, Float> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let values: Vec<f32> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            if u < density { 1.0 + u as f32 } else { 0.0 }
        })
        .collect();
    Tensor::from_data(TensorData::new(values, [len]), device)
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    common::configure(&mut group);
    let mut parameters = Vec::new();
    for log2 in [16, 20, 24] {
        for percent in [1, 10, 50] {
            let x = input(1 << log2, percent as f64 / 100.0, &device);
            let parameter = format!("2^{log2} at {percent}%");
            group.bench_with_input(BenchmarkId::new("nonzero", &parameter), &x, |b, x| {
                b.iter_custom(|iters| {
                    common::time(&device, iters, || x.clone().nonzero_coordinates())
                })
            });
            group.bench_with_input(BenchmarkId::new("argwhere", &parameter), &x, |b, x| {
                b.iter_custom(|iters| {
                    common::time(&device, iters, || x.clone().not_equal_elem(0.0).argwhere())
                })
            });
            group.bench_with_input(BenchmarkId::new("copy", &parameter), &x, |b, x| {
                b.iter_custom(|iters| common::time(&device, iters, || x.clone().add_scalar(1.0)))
            });
            parameters.push(parameter);
        }
    }
    group.finish();
    criterion.final_summary();
    let title =
        format!("NonZeroCoordinates of f32 on {device:?}: mean time per call (with a device sync)");
    common::print_ratios(&title, GROUP, &NAMES, &parameters);
}
