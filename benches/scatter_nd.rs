//! ScatterND on `Device::default()`, in the shapes the peers were measured with (see
//! `benches/README.md`): data `[n / 64, 64]` f32, `n / 256` update rows of 64 elements.
//!
//! - `assign`: the update rows go to every 4th row (unique targets), `Reduction::Assign`;
//! - `add`: the update rows go to 7 targets (heavy duplicates), `Reduction::Add`.
//!
//! Each against:
//! - `in_place`: the same call on an input nothing else holds, so it updates the input's buffer
//!   without a copy (`x = x.scatter_nd_update(..)` in model code; the inputs are fresh copies
//!   made outside the timed span);
//! - `burn_scatter_nd`: Burn's own `scatter_nd` with the same `IndexingUpdateOp` (its `Add`
//!   loses updates on duplicates: it is not atomic);
//! - `copy`: `x + 1`, an elementwise pass over the input: the floor of a scatter that keeps its
//!   input (the crate's and the peers' `index_put`/`index_add` copy it first).
//!
//! Two more groups choose between strategies: `add_i32` (the `add` case on i32 through the
//! kernel crate's launcher in place, with each reduction strategy as an argument) and
//! `add_narrow` (`Add` on i32, u8 and bf16 data; on WGSL and OpenGL u8 and bf16 are held packed
//! in 32-bit words).
//!
//! `deterministic` compares `deterministic: true` with the default in the same run, on `Add`
//! of f32 rows of 64 onto data as large as the updates, in three index patterns: unique rows,
//! 7 hot targets, and a power law (target `t` about as often as `1 / (t + 1)`), and `Assign` and
//! `Mul` on the same patterns. Its sizes count update elements: 2^22 and 2^24, or the log2 list in
//! `DETERMINISTIC_BENCH_SIZES`.
//!
//! Every measurement queues `QUEUED` calls between two syncs, each on its own input (one sync
//! costs about 0.2 ms on wgpu), and keeps the outputs alive until the sync. After criterion's
//! report the tables give ms per call, GB/s and ratios. Sizes: 2^20 and 2^24 elements, or the
//! log2 list in `SCATTER_BENCH_SIZES` (`20,24,26,28` on a GPU). Run with
//! `cargo bench --bench scatter_nd`.

mod common;

use std::time::{Duration, Instant};

use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ReduceOp, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, launch_scatter_nd, scatter_strategy,
};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, measurement::WallTime};
use cubecl::ir::{ElemType, IntKind};

/// Calls queued between two syncs, each on its own input.
const QUEUED: usize = 8;
/// Elements per data row (the slice each index tuple addresses).
const ROW: usize = 64;
/// Targets of the `add` case.
const ADD_TARGETS: i32 = 7;

/// Index tuples `[m, 1]` of the peers' cases: every 4th row for `assign`, `i % 7` for `add`.
fn indices(m: usize, assign: bool, device: &Device) -> Tensor<2, Int> {
    let values: Vec<i32> = (0..m as i32)
        .map(|i| if assign { 4 * i } else { i % ADD_TARGETS })
        .collect();
    Tensor::from_data(TensorData::new(values, [m, 1]), device)
}

/// `rows x ROW` small integers as `dtype` (exact in every dtype), different for each `seed`,
/// made on the host: Burn's own cast binds the type, which WGSL cannot for u8 and bf16.
fn host(rows: usize, seed: usize, dtype: DType) -> TensorData {
    TensorData::new(
        (0..rows * ROW).map(|i| ((i + seed) % 7) as i32).collect(),
        [rows, ROW],
    )
    .convert_dtype(dtype)
}

/// Runs `op` `iters` times, `QUEUED` calls between two syncs, each consuming an input that
/// `make` built before the batch (outside the timed span, with a sync after it), so that the
/// call is the input's only holder.
fn time_consuming<I, T>(
    device: &Device,
    iters: u64,
    mut make: impl FnMut(usize) -> I,
    mut op: impl FnMut(I) -> T,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0u64;
    while done < iters {
        let batch = (iters - done).min(QUEUED as u64) as usize;
        let inputs: Vec<I> = (0..batch).map(&mut make).collect();
        device.sync().expect("the device makes the inputs");
        let start = Instant::now();
        let outputs: Vec<T> = inputs.into_iter().map(&mut op).collect();
        device.sync().expect("the device runs the queued work");
        total += start.elapsed();
        drop(outputs);
        done += batch as u64;
    }
    total
}

/// Benchmarks `op` as `group/name/parameter` on inputs that each call consumes
/// ([`time_consuming`]).
fn bench_consuming<I, T>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    device: &Device,
    name: &str,
    parameter: &str,
    make: impl Fn(usize) -> I,
    op: impl Fn(I) -> T,
) {
    // Unmeasured first, as `common::bench` does: compiled kernels and pooled buffers.
    time_consuming(device, 2 * QUEUED as u64, &make, &op);
    group.bench_function(BenchmarkId::new(name, parameter), |b| {
        b.iter_custom(|iters| time_consuming(device, iters, &make, &op))
    });
}

/// Scatter-adds the i32 `updates` rows into `output` in place, through `strategy`.
fn add_i32(
    output: &CubeTensor,
    indices: &CubeTensor,
    updates: &CubeTensor,
    strategy: ScatterStrategy,
) {
    let i32_elem = ElemType::Int(IntKind::I32);
    let [targets, row] = [output.meta.shape()[0], output.meta.shape()[1]];
    launch_scatter_nd(
        &output.client,
        &ScatterNdData {
            output: output.handle.clone(),
            updates: updates.handle.clone(),
            elem: i32_elem,
        },
        &ScatterNdIndices {
            handle: indices.handle.clone(),
            elem: i32_elem,
            out_of_range: OutOfRange::Skip,
        },
        ScatterNdLayout {
            dims: &[targets],
            rows: updates.meta.shape()[0],
            slice: row,
        },
        ScatterReduction::Reduce(ReduceOp::Add),
        strategy,
    )
    .expect("a valid launch");
}

/// Bytes a scatter that keeps its input moves: the input read and the output written (the
/// copy), the update rows read and written into it, the indices read.
fn scatter_bytes(n: usize, m: usize) -> f64 {
    (2 * n * 4 + 2 * m * ROW * 4 + m * 4) as f64
}

/// The target rows of `m` update rows onto `m` data rows in the `deterministic` group's
/// patterns.
fn pattern(name: &str, m: usize) -> Vec<i32> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..m)
        .map(|i| match name {
            "unique" => (i * 7919 % m) as i32,
            "7 hot" => (i % 7) as i32,
            _ => {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let u = ((state >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                (((m as f64 + 1.0).powf(u) - 1.0) as usize).min(m - 1) as i32
            }
        })
        .collect()
}

/// The `deterministic` group: each pattern with and without `deterministic`, keeping the input.
fn bench_deterministic(criterion: &mut Criterion, device: &Device) -> (Vec<String>, Vec<String>) {
    let cases = [
        ("unique", Reduction::Add),
        ("7 hot", Reduction::Add),
        ("power law", Reduction::Add),
        ("unique", Reduction::Assign),
        ("7 hot", Reduction::Assign),
        ("power law", Reduction::Assign),
        ("unique", Reduction::Mul),
        ("7 hot", Reduction::Mul),
        ("power law", Reduction::Mul),
    ];
    let mut names = Vec::new();
    let mut parameters = Vec::new();
    for log2 in common::sizes("DETERMINISTIC_BENCH_SIZES", &[22, 24]) {
        let m = (1usize << log2) / ROW;
        let parameter = format!("2^{log2}");
        let data: Vec<Tensor<2>> = (0..QUEUED)
            .map(|seed| Tensor::from_data(host(m, seed, DType::F32), device))
            .collect();
        let updates = Tensor::<2>::from_data(
            TensorData::new(
                (0..m * ROW)
                    .map(|i| (i % 1013) as f32 * 0.001 - 0.5)
                    .collect(),
                [m, ROW],
            ),
            device,
        );
        let mut group = criterion.benchmark_group("scatter_nd_deterministic");
        common::configure(&mut group);
        names.clear();
        for (name, reduction) in cases {
            let idx =
                Tensor::<2, Int>::from_data(TensorData::new(pattern(name, m), [m, 1]), device);
            for deterministic in [false, true] {
                let label = format!(
                    "{name} {}{}",
                    match reduction {
                        Reduction::Add => "add",
                        Reduction::Mul => "mul",
                        _ => "assign",
                    },
                    if deterministic { ", deterministic" } else { "" }
                );
                let options = ScatterNdOptions {
                    reduction,
                    deterministic,
                    ..Default::default()
                };
                common::bench(&mut group, device, &label, &parameter, &data, |x| {
                    x.clone()
                        .try_scatter_nd(idx.clone(), updates.clone(), options.clone())
                        .unwrap()
                });
                names.push(label);
            }
        }
        group.finish();
        parameters.push(parameter);
    }
    (parameters, names)
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let reductions = [("scatter_nd_assign", true), ("scatter_nd_add", false)];
    let main_names = ["scatter_nd", "in_place", "burn_scatter_nd", "copy"];
    let mut main_rows: Vec<Vec<(String, Vec<f64>)>> = vec![Vec::new(); reductions.len()];
    let (mut i32_parameters, mut narrow_parameters) = (Vec::new(), Vec::new());
    for log2 in common::sizes("SCATTER_BENCH_SIZES", &[20, 24]) {
        let n = 1usize << log2;
        let rows = n / ROW;
        let m = (rows / 4).max(1);
        let parameter = format!("2^{log2}");
        let data: Vec<Tensor<2>> = (0..QUEUED)
            .map(|seed| Tensor::from_data(host(rows, seed, DType::F32), &device))
            .collect();
        let updates = Tensor::<2>::from_data(host(m, 99, DType::F32), &device);
        for (case, (group_name, assign)) in reductions.into_iter().enumerate() {
            let idx = indices(m, assign, &device);
            let (reduction, op) = if assign {
                (Reduction::Assign, IndexingUpdateOp::Assign)
            } else {
                (Reduction::Add, IndexingUpdateOp::Add)
            };
            let options = ScatterNdOptions {
                reduction,
                ..Default::default()
            };
            let mut group = criterion.benchmark_group(group_name);
            common::configure(&mut group);
            common::bench(&mut group, &device, "scatter_nd", &parameter, &data, |x| {
                x.clone()
                    .try_scatter_nd(idx.clone(), updates.clone(), options.clone())
                    .unwrap()
            });
            bench_consuming(
                &mut group,
                &device,
                "in_place",
                &parameter,
                |i| data[i % QUEUED].clone().mul_scalar(1.0),
                |x| {
                    x.try_scatter_nd(idx.clone(), updates.clone(), options.clone())
                        .unwrap()
                },
            );
            common::bench(
                &mut group,
                &device,
                "burn_scatter_nd",
                &parameter,
                &data,
                |x| x.clone().scatter_nd(idx.clone(), updates.clone(), op),
            );
            common::bench(&mut group, &device, "copy", &parameter, &data, |x| {
                x.clone().add_scalar(1.0)
            });
            group.finish();
            let in_place = (2 * m * ROW * 4 + m * 4) as f64;
            main_rows[case].push((
                parameter.clone(),
                vec![
                    scatter_bytes(n, m),
                    in_place,
                    scatter_bytes(n, m),
                    (2 * n * 4) as f64,
                ],
            ));
        }

        // The add case on i32 through the launcher, in place on one buffer, per strategy.
        let mut group = criterion.benchmark_group("scatter_nd_add_i32");
        common::configure(&mut group);
        let ints: Vec<CubeTensor> = (0..QUEUED)
            .map(|seed| {
                let x = Tensor::<2, Int>::from_data(host(rows, seed, DType::I32), &device);
                common::cube_int(&x, &device)
            })
            .collect();
        let idx = common::cube_int(&indices(m, false, &device), &device);
        let updates_i = common::cube_int(
            &Tensor::<2, Int>::from_data(host(m, 99, DType::I32), &device),
            &device,
        );
        let atomics = scatter_strategy(
            &idx.client,
            ElemType::Int(IntKind::I32),
            ScatterReduction::Reduce(ReduceOp::Add),
        ) == ScatterStrategy::Atomic;
        for (name, strategy) in [
            ("sorted rows", ScatterStrategy::Sorted),
            ("atomic", ScatterStrategy::Atomic),
        ] {
            if strategy == ScatterStrategy::Atomic && !atomics {
                // No atomic i32 add on this runtime: the table shows `-`.
                continue;
            }
            common::bench(&mut group, &device, name, &parameter, &ints, |x| {
                add_i32(x, &idx, &updates_i, strategy)
            });
        }
        group.finish();
        i32_parameters.push(parameter.clone());

        // Add on i32, u8 and bf16 data, keeping the input.
        let mut group = criterion.benchmark_group("scatter_nd_add_narrow");
        common::configure(&mut group);
        let idx = indices(m, false, &device);
        let options = ScatterNdOptions {
            reduction: Reduction::Add,
            ..Default::default()
        };
        for (name, dtype) in [
            ("i32", DType::I32),
            ("u8", DType::U8),
            ("bf16", DType::BF16),
        ] {
            if dtype.is_float() {
                let xs: Vec<Tensor<2>> = (0..QUEUED)
                    .map(|seed| Tensor::from_data(host(rows, seed, dtype), (&device, dtype)))
                    .collect();
                let u = Tensor::<2>::from_data(host(m, 99, dtype), (&device, dtype));
                common::bench(&mut group, &device, name, &parameter, &xs, |x| {
                    x.clone()
                        .try_scatter_nd(idx.clone(), u.clone(), options.clone())
                        .unwrap()
                });
            } else {
                let xs: Vec<Tensor<2, Int>> = (0..QUEUED)
                    .map(|seed| Tensor::from_data(host(rows, seed, dtype), (&device, dtype)))
                    .collect();
                let u = Tensor::<2, Int>::from_data(host(m, 99, dtype), (&device, dtype));
                common::bench(&mut group, &device, name, &parameter, &xs, |x| {
                    x.clone()
                        .try_scatter_nd(idx.clone(), u.clone(), options.clone())
                        .unwrap()
                });
            }
        }
        group.finish();
        narrow_parameters.push(parameter);
    }
    let (deterministic_parameters, deterministic_names) =
        bench_deterministic(&mut criterion, &device);
    criterion.final_summary();
    for ((group, _), rows) in reductions.iter().zip(&main_rows) {
        let title = format!(
            "{group} on {device:?}: ms per call, {QUEUED} queued per sync (GB/s: the bytes each \
             moves)"
        );
        common::print_throughput(&title, group, &main_names, rows);
    }
    common::print_ratios(
        &format!("scatter_nd_add_i32 on {device:?}: the launcher in place, per strategy"),
        "scatter_nd_add_i32",
        &["sorted rows", "atomic"],
        &i32_parameters,
    );
    common::print_ratios(
        &format!("scatter_nd_add_narrow on {device:?}: Add keeping the input, per data dtype"),
        "scatter_nd_add_narrow",
        &["i32", "u8", "bf16"],
        &narrow_parameters,
    );
    println!(
        "\nscatter_nd_deterministic on {device:?}: f32 rows of 64 keeping the input, ms per \
         call and deterministic / default (rows: update elements)"
    );
    println!("| case | {} |", deterministic_parameters.join(" | "));
    println!("|---|{}", "---|".repeat(deterministic_parameters.len()));
    for pair in deterministic_names.chunks(2) {
        let cells: Vec<String> = deterministic_parameters
            .iter()
            .map(|parameter| {
                let mean =
                    |name: &str| common::mean_ns("scatter_nd_deterministic", name, parameter);
                match (mean(&pair[0]), mean(&pair[1])) {
                    (Some(racy), Some(ordered)) => format!(
                        "{:.3} / {:.3} ({:.2}x)",
                        racy / 1e6,
                        ordered / 1e6,
                        ordered / racy
                    ),
                    _ => "-".to_string(),
                }
            })
            .collect();
        println!("| {} | {} |", pair[0], cells.join(" | "));
    }
}
