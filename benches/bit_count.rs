//! BitCount against what a Burn user has without this crate, on `Device::default()`.
//!
//! Tables at 2^16, 2^20 and 2^24 elements (`BIT_COUNT_BENCH_SIZES=20,24,26,28`
//! picks the sizes, as log2, on a GPU):
//! - contiguous `i32`: `bit_count`; `copy`, `x.add_scalar(1)`, an elementwise pass over the same
//!   bytes (the memory-bound floor); `swar`, the SWAR popcount formula in Burn's bitwise ops;
//! - a transposed `i32` view (`[n / 256, 256]` transposed): `bit_count` reads it where it lies;
//!   `copy` is Burn's elementwise pass over the same view;
//! - contiguous `f16` (the word-wise kernel on WGSL, which binds no 16-bit integers):
//!   `bit_count` against `copy`, `x.add_scalar(1.0)` in f16;
//! - contiguous `i32` on `CubeBackend` itself (no Fusion): the crate's `DmlOps::int_bit_count`
//!   against Burn's `int_add_scalar`, which tells Fusion's per-call cost apart from the kernel's;
//! - contiguous `i32` through the kernel crate's launcher with each [`BitCountPath`]: one, four
//!   and eight vectors per unit, and the word-wise kernel with one, four and eight groups, to
//!   choose between them per runtime;
//! - the runtime's ceiling: the four-vector path against bare CubeCL copies of the same bytes
//!   (a bench-local kernel, `grid_copy`), with exact grids and grid-stride loops of a few cube
//!   sizes, to tell what the runtime allows from what the kernel reaches (the exact grids are
//!   one-dimensional, so they stop at 2^26 or 2^28 elements).
//!
//! Each measurement queues `QUEUED` calls between two syncs, each on its own input (one sync
//! costs about 0.2 ms on wgpu, and Fusion merges identical elementwise work on one input), and
//! keeps every output alive until the sync. After criterion's report the tables give ms per
//! call, GB/s (input plus output bytes) and the ratios. Run with `cargo bench --bench bit_count`.

mod common;

use burn::backend::ops::IntTensorOps;
use burn::tensor::{DType, Device, Float, Int, IntDType, Scalar, Tensor, TensorData};
use burn_cubecl::CubeBackend;
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops::DmlOps;
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::bit_count::{BitCountPath, launch_bit_count};
use burn_dml_ops_kernels::{InputView, StorageWidth};
use criterion::Criterion;
use cubecl::ir::{ElemType, IntKind};
use cubecl::prelude::*;

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

/// Copies `units` vectors of 4 `u32`: unit `u` of the grid copies vectors `u`, `u + stride`,
/// `u + 2 * stride`, ... (`stride`: the grid's units), `per_step` of them loaded before any is
/// stored. The runtime's memory ceiling for BitCount's bytes, without a popcount or Burn.
#[cube(launch_unchecked)]
fn grid_copy<N: Size>(
    input: &[Vector<u32, N>],
    output: &mut [Vector<u32, N>],
    units: usize,
    #[comptime] per_step: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut first = ABSOLUTE_POS;
    let mut values = Array::<Vector<u32, N>>::new(per_step);
    while first < units {
        #[unroll]
        for k in 0..per_step {
            let i = first + k * stride;
            if i < units {
                values[k] = input[i];
            }
        }
        #[unroll]
        for k in 0..per_step {
            let i = first + k * stride;
            if i < units {
                output[i] = values[k];
            }
        }
        first += per_step * stride;
    }
}

/// The ceiling table's geometries: name, units per cube, cubes for `vectors` vectors of 4 u32
/// (`None`: enough for every unit to copy `per_step` once) and vectors per unit and step.
const CEILINGS: [(&str, u32, Option<u32>, usize); 5] = [
    ("exact, 1 per unit", 256, None, 1),
    ("exact, 4 per unit", 256, None, 4),
    ("2048 x 256, stride", 256, Some(2048), 4),
    ("1024 x 512, stride", 512, Some(1024), 4),
    ("512 x 1024, stride", 1024, Some(512), 4),
];

/// A copy of the contiguous i32 `input` with [`grid_copy`] on one of [`CEILINGS`]; the output is
/// returned to live until the sync.
fn ceiling_copy(
    input: &CubeTensor,
    (_, cube, cubes, per_step): (&str, u32, Option<u32>, usize),
) -> cubecl::server::Handle {
    let len = input.meta.shape()[0];
    let units = len / 4;
    let output = input.client.empty(len * 4);
    let cubes = cubes.unwrap_or_else(|| units.div_ceil(cube as usize * per_step) as u32);
    // SAFETY: every load and store is guarded by `units`, the vectors both buffers hold.
    unsafe {
        grid_copy::launch_unchecked(
            &input.client,
            CubeCount::Static(cubes, 1, 1),
            CubeDim::new_1d(cube),
            4,
            BufferArg::from_raw_parts(input.handle.clone(), len),
            BufferArg::from_raw_parts(output.clone(), len),
            units,
            per_step,
        );
    }
    output
}

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

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut contiguous_rows = Vec::new();
    let mut transposed_rows = Vec::new();
    let mut half_rows = Vec::new();
    let mut no_fusion_rows = Vec::new();
    let mut path_rows = Vec::new();
    let mut ceiling_rows = Vec::new();
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
        common::bench(&mut group, &device, "bit_count", &parameter, &ints, |x| {
            x.clone().bit_count()
        });
        common::bench(&mut group, &device, "copy", &parameter, &ints, |x| {
            x.clone().add_scalar(1)
        });
        common::bench(&mut group, &device, "swar", &parameter, &ints, |x| {
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
        common::bench(&mut group, &device, "bit_count", &parameter, &views, |x| {
            x.clone().bit_count()
        });
        common::bench(&mut group, &device, "copy", &parameter, &views, |x| {
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
        common::bench(&mut group, &device, "bit_count", &parameter, &halves, |x| {
            x.clone().bit_count()
        });
        common::bench(&mut group, &device, "copy", &parameter, &halves, |x| {
            x.clone().add_scalar(1.0)
        });
        group.finish();
        half_rows.push((parameter.clone(), vec![6.0 * len as f64, 4.0 * len as f64]));

        let cubes: Vec<CubeTensor> = ints.iter().map(|x| common::cube_int(x, &device)).collect();
        let mut group = criterion.benchmark_group("bit_count_no_fusion");
        common::configure(&mut group);
        common::bench(&mut group, &device, "bit_count", &parameter, &cubes, |x| {
            CubeBackend::int_bit_count(x.clone(), IntDType::I32)
        });
        common::bench(&mut group, &device, "copy", &parameter, &cubes, |x| {
            CubeBackend::int_add_scalar(x.clone(), Scalar::Int(1))
        });
        group.finish();
        no_fusion_rows.push((parameter.clone(), vec![8.0 * len as f64; 2]));

        let mut group = criterion.benchmark_group("bit_count_paths");
        common::configure(&mut group);
        for (name, path) in PATHS {
            common::bench(&mut group, &device, name, &parameter, &cubes, |x| {
                launch(x, path)
            });
        }
        group.finish();
        path_rows.push((parameter.clone(), vec![8.0 * len as f64; PATHS.len()]));

        // The copies are correct: check each once, on sizes small enough to read back.
        if len <= 1 << 20 {
            let client = &cubes[0].client;
            let expected = client
                .read_one(cubes[0].handle.clone())
                .expect("read the input");
            for ceiling in CEILINGS {
                let copied = client
                    .read_one(ceiling_copy(&cubes[0], ceiling))
                    .expect("read the copy");
                assert!(copied == expected, "{} copies its input", ceiling.0);
            }
        }
        let mut group = criterion.benchmark_group("bit_count_ceiling");
        common::configure(&mut group);
        common::bench(&mut group, &device, "4 vectors", &parameter, &cubes, |x| {
            launch(x, PATHS[1].1)
        });
        for ceiling in CEILINGS {
            // At most 65535 cubes in one dimension: the exact grids stop at 2^26 elements.
            if ceiling.2.is_none() && len / 4 > 256 * 65_535 * ceiling.3 {
                continue;
            }
            common::bench(&mut group, &device, ceiling.0, &parameter, &cubes, |x| {
                ceiling_copy(x, ceiling)
            });
        }
        group.finish();
        ceiling_rows.push((parameter, vec![8.0 * len as f64; CEILINGS.len() + 1]));
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
        "BitCount and Burn's copy of i32 on CubeBackend itself, without Fusion",
        "bit_count_no_fusion",
        &["bit_count", "copy"],
        &no_fusion_rows,
    );
    common::print_throughput(
        "BitCount of i32 through the launcher on each path (ratios to one vector per unit)",
        "bit_count_paths",
        &PATHS.map(|(name, _)| name),
        &path_rows,
    );
    let mut ceiling_names = vec!["4 vectors"];
    ceiling_names.extend(CEILINGS.map(|(name, ..)| name));
    common::print_throughput(
        "The runtime's ceiling: BitCount's 4-vector path against bare CubeCL copies of the same \
         bytes (16-byte vectors; exact grids or a grid-stride loop)",
        "bit_count_ceiling",
        &ceiling_names,
        &ceiling_rows,
    );
}
