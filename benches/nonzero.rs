//! NonZeroCoordinates against what a Burn user has without this crate, on `Device::default()`.
//!
//! For f32 inputs at densities 1%, 10% and 50%, 1-D (one coordinate per row):
//! - `nonzero`: `x.nonzero_coordinates()`, the padded form, which never reads back;
//! - `copy`: `x.add_scalar(1.0)`, an elementwise pass over the same input (the memory's pace);
//! - `argwhere`: `x.not_equal_elem(0.0).argwhere()`, Burn's own, which reads the mask back to
//!   the host and loops there (only up to 2^20 elements: it takes seconds beyond);
//! - `nonzero f16`: the same values cast to f16 (read as 32-bit words on WGSL, which binds no
//!   u16), where the device holds f16.
//!
//! Each measurement queues `QUEUED` calls between two syncs, each on its own input (one sync
//! costs about 0.2 ms on wgpu, and Fusion merges identical elementwise work on one input), and
//! keeps every output alive until the sync. After criterion's report a table gives ms per call,
//! GB/s (nonzero: the input's bytes plus the rows it writes; copy: input plus output) and the
//! ratios.
//!
//! A second table times the kernel crate's launcher with each [`CompactionPlan`] of
//! `NONZERO_BENCH_PLANS` (`units x vectors per unit`, comma-separated; the crate's own plan
//! when unset), on the same inputs and into i32 coordinates, to tune the plan per runtime, and
//! the crate's `DmlOps::float_nonzero_coordinates` on `CubeBackend` itself (no Fusion), which
//! tells the crate's glue and Fusion's share apart.
//!
//! `cargo bench --bench nonzero` measures 2^16, 2^20 and 2^24 elements (lavapipe's table);
//! `NONZERO_BENCH_SIZES=20,24,26,28` picks the sizes (log2) on a GPU, and for example
//! `NONZERO_BENCH_PLANS=256x16,256x8,512x8` the plans.

mod common;

use burn::tensor::{DType, Device, Float, IntDType, Tensor, TensorData};
use burn_cubecl::CubeBackend;
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops::DmlOps;
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::StorageWidth;
use burn_dml_ops_kernels::nonzero::{
    CompactionInput, CompactionOutput, CompactionPlan, CompactionStages, NonZeroPredicate,
};
use criterion::Criterion;
use cubecl::ir::{ElemType, IntKind};
use cubecl::prelude::Client;

const GROUP: &str = "nonzero";
const NAMES: [&str; 4] = ["nonzero", "copy", "argwhere", "nonzero f16"];
/// The crate's `DmlOps` on the Cube backend itself, without Fusion: what the crate's glue
/// (output allocation, plan choice) adds to the launcher, and what Fusion adds on top.
const BACKEND_OP: &str = "CubeBackend op";
/// Calls queued between two syncs, each on its own input.
const QUEUED: usize = 8;

/// [`values`] on `device`.
fn input(len: usize, density: f64, seed: u64, device: &Device) -> Tensor<1, Float> {
    Tensor::from_data(values(len, density, seed), device)
}

/// `len` f32 values: `1 + u` where a uniform `u` in [0, 1) from a xorshift generator seeded by
/// `seed` is below `density` (so about `density` of them), 0 elsewhere.
fn values(len: usize, density: f64, seed: u64) -> TensorData {
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
    TensorData::new(values, [len])
}

/// The plans of `NONZERO_BENCH_PLANS` (`256x16,512x8`: units per cube x vectors per unit) with
/// the scan of the crate's plan for `len` elements on `client`, else that plan (named "crate's
/// plan"); each with its name in the table.
fn plans(client: &Client, len: usize) -> Vec<(String, CompactionPlan)> {
    let crate_plan = CompactionPlan::for_len(client, len);
    let Ok(list) = std::env::var("NONZERO_BENCH_PLANS") else {
        // One name for every size: the table has one column per name, and the crate's plan
        // changes with the size (`CompactionPlan::for_len`).
        return vec![("crate's plan".to_owned(), crate_plan)];
    };
    list.split(',')
        .map(|item| {
            let parsed = item
                .trim()
                .split_once('x')
                .and_then(|(units, per_unit)| Some((units.parse().ok()?, per_unit.parse().ok()?)));
            let (cube_size, per_unit) = parsed.unwrap_or_else(|| {
                panic!("NONZERO_BENCH_PLANS: plans like 256x16,512x8; got {list:?}")
            });
            let plan = CompactionPlan {
                cube_size,
                per_unit,
                ..crate_plan
            };
            (format!("plan {cube_size}x{per_unit}"), plan)
        })
        .collect()
}

/// The i32 coordinates of the non-zero elements of the 1-D f32 `input` under `plan`, through
/// the kernel crate's launcher, one stage after another as `launch_nonzero_coordinates` runs
/// them; the stages hold the fresh outputs, alive until the sync, and can be launched again
/// one at a time.
fn launch(input: &CubeTensor, plan: CompactionPlan) -> CompactionStages {
    let client = &input.client;
    let len = input.meta.shape()[0];
    let stages = CompactionStages::new(
        client,
        &CompactionInput {
            handle: input.handle.clone(),
            width: StorageWidth::W32,
            predicate: NonZeroPredicate::AnyBitButSign,
            dims: &[len],
        },
        &CompactionOutput {
            count: client.empty(4),
            coordinates: client.empty(len * 4),
            elem: ElemType::Int(IntKind::I32),
            fill: None,
        },
        plan,
    )
    .expect("a valid launch");
    stages.count();
    stages.offsets();
    stages.rows();
    stages
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    common::configure(&mut group);
    let mut rows = Vec::new();
    let mut plan_rows = Vec::new();
    let mut plan_names = Vec::new();
    let mut stage_rows = Vec::new();
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
            common::bench(&mut group, &device, "nonzero", &parameter, &inputs, |x| {
                x.clone().nonzero_coordinates()
            });
            // The same values in f16, where the device holds it: read as 32-bit words where the
            // runtime binds no u16 (WGSL).
            if common::stores(&device, DType::F16) {
                let halves: Vec<Tensor<1, Float>> = (0..QUEUED as u64)
                    .map(|seed| {
                        let data = values(len, density, seed).convert_dtype(DType::F16);
                        Tensor::from_data(data, (&device, DType::F16))
                    })
                    .collect();
                common::bench(
                    &mut group,
                    &device,
                    "nonzero f16",
                    &parameter,
                    &halves,
                    |x| x.clone().nonzero_coordinates(),
                );
            }
            common::bench(&mut group, &device, "copy", &parameter, &inputs, |x| {
                x.clone().add_scalar(1.0)
            });
            if log2 <= 20 {
                common::bench(&mut group, &device, "argwhere", &parameter, &inputs, |x| {
                    x.clone().not_equal_elem(0.0).argwhere()
                });
            }
            let cubes: Vec<CubeTensor> = inputs
                .iter()
                .map(|x| common::cube_float(x, &device))
                .collect();
            let plans = plans(&cubes[0].client, len);
            for (name, plan) in &plans {
                common::bench(&mut group, &device, name, &parameter, &cubes, |x| {
                    launch(x, *plan)
                });
            }
            common::bench(&mut group, &device, BACKEND_OP, &parameter, &cubes, |x| {
                CubeBackend::float_nonzero_coordinates(x.clone(), 1, None, IntDType::I32)
            });
            if std::env::var_os("NONZERO_BENCH_STAGES").is_some() {
                let crate_plan = CompactionPlan::for_len(&cubes[0].client, len);
                let stages: Vec<CompactionStages> =
                    cubes.iter().map(|x| launch(x, crate_plan)).collect();
                for (name, run) in [
                    (
                        "stage count",
                        CompactionStages::count as fn(&CompactionStages),
                    ),
                    ("stage scan", CompactionStages::offsets),
                    ("stage write", CompactionStages::rows),
                ] {
                    common::bench(&mut group, &device, name, &parameter, &stages, run);
                }
                stage_rows.push((parameter.clone(), vec![(len * 4) as f64, 0.0, 0.0]));
            }
            let nonzero_bytes = (len * 4 + count * out_bytes) as f64;
            let half_bytes = (len * 2 + count * out_bytes) as f64;
            let copy_bytes = (len * 8) as f64;
            let launcher_bytes = (len * 4 + count * 4) as f64;
            plan_names = plans.into_iter().map(|(name, _)| name).collect();
            plan_names.push(BACKEND_OP.to_owned());
            plan_rows.push((parameter.clone(), vec![launcher_bytes; plan_names.len()]));
            rows.push((parameter, vec![nonzero_bytes, copy_bytes, 0.0, half_bytes]));
        }
    }
    group.finish();
    criterion.final_summary();
    let title = format!(
        "NonZeroCoordinates of f32 on {device:?}: time per call, {QUEUED} calls queued per sync"
    );
    common::print_throughput(&title, GROUP, &NAMES, &rows);
    let plan_names: Vec<&str> = plan_names.iter().map(String::as_str).collect();
    common::print_throughput(
        "The kernel crate's launcher with each plan, and the crate's op on CubeBackend without \
         Fusion (i32 coordinates; ratios to the first plan)",
        GROUP,
        &plan_names,
        &plan_rows,
    );
    if !stage_rows.is_empty() {
        common::print_throughput(
            "The launches one at a time (the crate's plan; GB/s: the input read by the count)",
            GROUP,
            &["stage count", "stage scan", "stage write"],
            &stage_rows,
        );
    }
}
