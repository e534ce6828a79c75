//! BitCount against what a Burn user has without this crate, on `Device::default()`.
//!
//! Three tables, each at 2^16, 2^20 and 2^24 elements (`BIT_COUNT_BENCH_SIZES=20,24,26,28`
//! picks the sizes, as log2, on a GPU):
//! - contiguous `i32`: `bit_count`; `copy`, `x.add_scalar(1)`, an elementwise pass over the same
//!   bytes (the memory-bound floor); `swar`, the SWAR popcount formula in Burn's bitwise ops;
//! - a transposed `i32` view (`[n / 256, 256]` transposed): `bit_count` reads it where it lies;
//!   `copy` is Burn's elementwise pass over the same view;
//! - contiguous `f16` (the word-wise kernel on WGSL, which binds no 16-bit integers):
//!   `bit_count` against `copy`, `x.add_scalar(1.0)` in f16;
//! - contiguous `i32` through the kernel crate's launcher with each [`BitCountPath`]: one, four
//!   and eight vectors per unit, and the word-wise kernel with one, four and eight groups, to
//!   choose between them per runtime.
//!
//! Each measurement queues `QUEUED` calls between two syncs, each on its own input (one sync
//! costs about 0.2 ms on wgpu, and Fusion merges identical elementwise work on one input), and
//! keeps every output alive until the sync. After criterion's report the tables give ms per
//! call, GB/s (input plus output bytes) and the ratios. Run with `cargo bench --bench bit_count`.

mod common;

use burn::tensor::{DType, Device, Float, Int, Tensor, TensorData};
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::bit_count::{BitCountPath, launch_bit_count};
use burn_dml_ops_kernels::{InputView, StorageWidth};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion};
use cubecl::ir::{ElemType, IntKind};

/// Calls queued between two syncs, each on its own input.
const QUEUED: usize = 8;

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

/// `len` pseudo-random i32 values, different for each `seed`.
fn values(len: usize, seed: u32) -> Vec<i32> {
    (0..len as u32)
        .map(|i| (i ^ seed.wrapping_mul(0x9E37_79B9)).wrapping_mul(2_654_435_761) as i32)
        .collect()
}

/// The launcher's paths compared in the last table, with their names.
const PATHS: [(&str, BitCountPath); 6] = [
    (
        "1 vector",
        BitCountPath::Elements {
            vectors_per_unit: 1,
        },
    ),
    (
        "4 vectors",
        BitCountPath::Elements {
            vectors_per_unit: 4,
        },
    ),
    (
        "8 vectors",
        BitCountPath::Elements {
            vectors_per_unit: 8,
        },
    ),
    ("words, 1 group", BitCountPath::Words { groups_per_unit: 1 }),
    (
        "words, 4 groups",
        BitCountPath::Words { groups_per_unit: 4 },
    ),
    (
        "words, 8 groups",
        BitCountPath::Words { groups_per_unit: 8 },
    ),
];

/// The i32 counts of the contiguous i32 `input` through the kernel crate's launcher on `path`;
/// the output is returned to live until the sync.
fn launch(input: &CubeTensor, path: BitCountPath) -> cubecl::server::Handle {
    let len = input.meta.shape()[0];
    let output = input.client.empty(len * 4);
    let view = InputView::contiguous(input.handle.clone(), StorageWidth::W32, len);
    let i32_elem = ElemType::Int(IntKind::I32);
    launch_bit_count(&input.client, &view, output.clone(), i32_elem, path).expect("a valid launch");
    output
}

/// Benchmarks `op` over `inputs`, `QUEUED` calls per sync.
fn bench<I, T>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    device: &Device,
    name: &str,
    parameter: &str,
    inputs: &[I],
    op: impl Fn(&I) -> T,
) {
    group.bench_with_input(BenchmarkId::new(name, parameter), inputs, |b, xs| {
        b.iter_custom(|iters| common::time_queued(device, iters, xs, &op))
    });
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut contiguous_rows = Vec::new();
    let mut transposed_rows = Vec::new();
    let mut half_rows = Vec::new();
    let mut path_rows = Vec::new();
    for log2 in common::sizes("BIT_COUNT_BENCH_SIZES", &[16, 20, 24]) {
        let len = 1usize << log2;
        let parameter = format!("2^{log2}");
        let ints: Vec<Tensor<1, Int>> = (0..QUEUED as u32)
            .map(|seed| Tensor::from_data(TensorData::new(values(len, seed), [len]), &device))
            .collect();
        // The formula is a correct alternative: check it once against the kernel.
        let small = ints[0].clone().narrow(0, 0, 1 << 12);
        assert_eq!(
            swar(small.clone()).into_data(),
            small.bit_count().into_data()
        );

        let mut group = criterion.benchmark_group("bit_count");
        common::configure(&mut group);
        bench(&mut group, &device, "bit_count", &parameter, &ints, |x| {
            x.clone().bit_count()
        });
        bench(&mut group, &device, "copy", &parameter, &ints, |x| {
            x.clone().add_scalar(1)
        });
        bench(&mut group, &device, "swar", &parameter, &ints, |x| {
            swar(x.clone())
        });
        group.finish();
        contiguous_rows.push((parameter.clone(), vec![8.0 * len as f64; 3]));

        let views: Vec<Tensor<2, Int>> = ints
            .iter()
            .map(|x| x.clone().reshape([len / 256, 256]).transpose())
            .collect();
        let mut group = criterion.benchmark_group("bit_count_transposed");
        common::configure(&mut group);
        bench(&mut group, &device, "bit_count", &parameter, &views, |x| {
            x.clone().bit_count()
        });
        bench(&mut group, &device, "copy", &parameter, &views, |x| {
            x.clone().add_scalar(1)
        });
        group.finish();
        transposed_rows.push((parameter.clone(), vec![8.0 * len as f64; 2]));

        let halves: Vec<Tensor<1, Float>> = ints
            .iter()
            .map(|x| x.clone().float().cast(DType::F16))
            .collect();
        let mut group = criterion.benchmark_group("bit_count_f16");
        common::configure(&mut group);
        bench(&mut group, &device, "bit_count", &parameter, &halves, |x| {
            x.clone().bit_count()
        });
        bench(&mut group, &device, "copy", &parameter, &halves, |x| {
            x.clone().add_scalar(1.0)
        });
        group.finish();
        half_rows.push((parameter.clone(), vec![6.0 * len as f64, 4.0 * len as f64]));

        let cubes: Vec<CubeTensor> = ints.iter().map(|x| common::cube_int(x, &device)).collect();
        let mut group = criterion.benchmark_group("bit_count_paths");
        common::configure(&mut group);
        for (name, path) in PATHS {
            bench(&mut group, &device, name, &parameter, &cubes, |x| {
                launch(x, path)
            });
        }
        group.finish();
        path_rows.push((parameter, vec![8.0 * len as f64; PATHS.len()]));
    }
    criterion.final_summary();
    common::print_throughput(
        &format!("BitCount of i32 on {device:?}: ms per call, {QUEUED} calls per sync"),
        "bit_count",
        &["bit_count", "copy", "swar"],
        &contiguous_rows,
    );
    common::print_throughput(
        "BitCount of a transposed i32 view: read where it lies",
        "bit_count_transposed",
        &["bit_count", "copy"],
        &transposed_rows,
    );
    common::print_throughput(
        "BitCount of f16 (i32 counts out)",
        "bit_count_f16",
        &["bit_count", "copy"],
        &half_rows,
    );
    common::print_throughput(
        "BitCount of i32 through the launcher on each path (ratios to one vector per unit)",
        "bit_count_paths",
        &PATHS.map(|(name, _)| name),
        &path_rows,
    );
}
