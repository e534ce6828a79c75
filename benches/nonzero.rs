//! NonZeroCoordinates against what a Burn user has without this crate, on `Device::default()`.
//!
//! For f32 inputs at densities 1%, 10% and 50%, 1-D (one coordinate per row):
//! - `nonzero`: `x.nonzero_coordinates()`, the padded form, which never reads back;
//! - `copy`: `x.add_scalar(1.0)`, an elementwise pass over the same input (the memory's pace);
//! - `argwhere`: `x.not_equal_elem(0.0).argwhere()`, Burn's own, which reads the mask back to
//!   the host and loops there (only up to 2^20 elements: it takes seconds beyond).
//!
//! Each measurement queues `QUEUED` calls between two syncs, each on its own input (one sync
//! costs about 0.2 ms on wgpu, and Fusion merges identical elementwise work on one input), and
//! keeps every output alive until the sync. After criterion's report a table gives ms per call,
//! GB/s (nonzero: the input's bytes plus the rows it writes; copy: input plus output) and the
//! ratios.
//!
//! `cargo bench --bench nonzero` measures 2^16, 2^20 and 2^24 elements (lavapipe's table);
//! `NONZERO_BENCH_SIZES=20,24,26,28` picks the sizes (log2) on a GPU.

mod common;

use burn::tensor::{Device, Float, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use criterion::{BenchmarkId, Criterion};

const GROUP: &str = "nonzero";
const NAMES: [&str; 3] = ["nonzero", "copy", "argwhere"];
/// Calls queued between two syncs, each on its own input.
const QUEUED: usize = 8;

/// Values in [0, 1) from a xorshift generator seeded by `seed`, zeroed where they are at or
/// above `density`.
fn input(len: usize, density: f64, seed: u64, device: &Device) -> Tensor<1, Float> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
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
    let mut rows = Vec::new();
    for log2 in common::sizes("NONZERO_BENCH_SIZES", &[16, 20, 24]) {
        let len = 1usize << log2;
        for percent in [1u32, 10, 50] {
            let density = f64::from(percent) / 100.0;
            let inputs: Vec<_> = (0..QUEUED as u64)
                .map(|seed| input(len, density, seed, &device))
                .collect();
            let result = inputs[0].clone().nonzero_coordinates();
            let count = result.count_sync();
            let out_bytes = result.coordinates.dtype().size();
            let parameter = format!("2^{log2} at {percent}%");
            group.bench_with_input(BenchmarkId::new("nonzero", &parameter), &inputs, |b, xs| {
                b.iter_custom(|iters| {
                    common::time_queued(&device, iters, xs, |x| x.clone().nonzero_coordinates())
                })
            });
            group.bench_with_input(BenchmarkId::new("copy", &parameter), &inputs, |b, xs| {
                b.iter_custom(|iters| {
                    common::time_queued(&device, iters, xs, |x| x.clone().add_scalar(1.0))
                })
            });
            if log2 <= 20 {
                group.bench_with_input(
                    BenchmarkId::new("argwhere", &parameter),
                    &inputs,
                    |b, xs| {
                        b.iter_custom(|iters| {
                            common::time_queued(&device, iters, xs, |x| {
                                x.clone().not_equal_elem(0.0).argwhere()
                            })
                        })
                    },
                );
            }
            let nonzero_bytes = (len * 4 + count * out_bytes) as f64;
            let copy_bytes = (len * 8) as f64;
            rows.push((parameter, vec![nonzero_bytes, copy_bytes, 0.0]));
        }
    }
    group.finish();
    criterion.final_summary();
    let title = format!(
        "NonZeroCoordinates of f32 on {device:?}: time per call, {QUEUED} calls queued per sync"
    );
    common::print_throughput(&title, GROUP, &NAMES, &rows);
}
