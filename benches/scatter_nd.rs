//! ScatterND against what a Burn user has without this crate, on `Device::default()`.
//!
//! Inputs of 2^20 and 2^24 f32 elements, shaped `[n / 16, 16]`; index tuples of size 1 address
//! rows of 16 elements, and the updates cover a quarter of the input's size:
//! - `assign`: unique, shuffled target rows, `Reduction::Assign` against Burn's
//!   `scatter_nd(.., IndexingUpdateOp::Assign)`;
//! - `add`: every target row hit 16 times on average, `Reduction::Add` against Burn's
//!   `IndexingUpdateOp::Add` (which loses updates on duplicates: it is not atomic);
//! - `add_i32`: the same on i32 data, where WGSL has an atomic add: the kernel crate's
//!   launcher with each strategy as an argument (`lists`, `atomic`; in place on one buffer, so
//!   no copy), to choose between them, and Burn's `IndexingUpdateOp::Add``;
//! - `copy`: `x.add_scalar(1.0)`, an elementwise pass over the input, the memory-bound floor
//!   (both scatters copy their input first, since the benchmark keeps it alive);
//! - `add_narrow`: the `add` case on u8 and bf16 data beside i32: on WGSL and OpenGL the u8 and
//!   bf16 data is held packed in 32-bit words (the lists, an atomic XOR per element), so this
//!   measures what packing costs against a type the runtime binds.
//!
//! After criterion's report, the ratios are printed as tables. Run with
//! `cargo bench --bench scatter_nd`.

mod common;

use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ReduceOp, ScatterNdData, ScatterNdIndices, ScatterNdLayout, ScatterReduction,
    ScatterStrategy, launch_scatter_nd,
};
use criterion::{BenchmarkId, Criterion};
use cubecl::ir::{ElemType, IntKind};

const ROW: usize = 16;

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

/// Index tuples `[rows, 1]`: a shuffle of `0..rows` when `unique`, else `rows / 16` targets
/// each hit about 16 times.
fn indices(rows: usize, targets: usize, unique: bool, device: &Device) -> Tensor<2, Int> {
    let values: Vec<i32> = (0..rows)
        .map(|r| {
            let spread = r.wrapping_mul(2_654_435_761) % rows;
            if unique {
                // Multiplying by an odd constant modulo a power of two is a permutation.
                ((r * 40_503) % targets) as i32
            } else {
                (spread % (rows / 16).max(1)) as i32
            }
        })
        .collect();
    Tensor::from_data(TensorData::new(values, [rows, 1]), device)
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut tables = Vec::new();
    for (group_name, names) in [
        (
            "scatter_nd_assign",
            ["scatter_nd", "burn_scatter_nd", "copy"],
        ),
        ("scatter_nd_add", ["scatter_nd", "burn_scatter_nd", "copy"]),
        ("scatter_nd_add_i32", ["lists", "atomic", "burn_scatter_nd"]),
        ("scatter_nd_add_narrow", ["i32", "u8", "bf16"]),
    ] {
        let mut group = criterion.benchmark_group(group_name);
        common::configure(&mut group);
        let mut parameters = Vec::new();
        for log2 in [20, 24] {
            let n = 1usize << log2;
            let targets = n / ROW;
            let rows = targets / 4;
            let unique = group_name == "scatter_nd_assign";
            let idx = indices(rows, targets, unique, &device);
            let x =
                Tensor::<2>::random([targets, ROW], burn::tensor::Distribution::Default, &device);
            let updates =
                Tensor::<2>::random([rows, ROW], burn::tensor::Distribution::Default, &device);
            let (xi, updates_i) = (x.clone().int(), updates.clone().int());
            let parameter = format!("2^{log2}");
            for name in names {
                let id = BenchmarkId::new(name, &parameter);
                let (idx, x, updates, xi, updates_i) = (&idx, &x, &updates, &xi, &updates_i);
                group.bench_function(id, |b| {
                    b.iter_custom(|iters| match (group_name, name) {
                        ("scatter_nd_add_i32", "burn_scatter_nd") => {
                            common::time(&device, iters, || {
                                xi.clone().scatter_nd(
                                    idx.clone(),
                                    updates_i.clone(),
                                    IndexingUpdateOp::Add,
                                )
                            })
                        }
                        ("scatter_nd_add_i32", strategy) => {
                            let strategy = match strategy {
                                "lists" => ScatterStrategy::Lists,
                                _ => ScatterStrategy::Atomic,
                            };
                            let output = common::cube_int(xi, &device);
                            let (indices, updates) = (
                                common::cube_int(idx, &device),
                                common::cube_int(updates_i, &device),
                            );
                            common::time(&device, iters, || {
                                add_i32(&output, &indices, &updates, strategy)
                            })
                        }
                        ("scatter_nd_add_narrow", dtype) => {
                            let dtype = match dtype {
                                "u8" => DType::U8,
                                "bf16" => DType::BF16,
                                _ => DType::I32,
                            };
                            let options = ScatterNdOptions {
                                reduction: Reduction::Add,
                                ..Default::default()
                            };
                            // Small integers (exact in every dtype), created on the host: Burn's
                            // own cast binds the type, which WGSL cannot for u8 and bf16.
                            let host = |len: usize| {
                                TensorData::new((0..len).map(|i| (i % 7) as i32).collect(), [len])
                                    .convert_dtype(dtype)
                            };
                            let shape = |t: &Tensor<2>| t.shape();
                            let (xs, us) = (shape(x), shape(updates));
                            if dtype.is_float() {
                                let x = Tensor::<1>::from_data(
                                    host(xs.num_elements()),
                                    (&device, dtype),
                                )
                                .reshape([xs[0], xs[1]]);
                                let u = Tensor::<1>::from_data(
                                    host(us.num_elements()),
                                    (&device, dtype),
                                )
                                .reshape([us[0], us[1]]);
                                common::time(&device, iters, || {
                                    x.clone()
                                        .try_scatter_nd(idx.clone(), u.clone(), options.clone())
                                        .unwrap()
                                })
                            } else {
                                let x = Tensor::<1, Int>::from_data(
                                    host(xs.num_elements()),
                                    (&device, dtype),
                                )
                                .reshape([xs[0], xs[1]]);
                                let u = Tensor::<1, Int>::from_data(
                                    host(us.num_elements()),
                                    (&device, dtype),
                                )
                                .reshape([us[0], us[1]]);
                                common::time(&device, iters, || {
                                    x.clone()
                                        .try_scatter_nd(idx.clone(), u.clone(), options.clone())
                                        .unwrap()
                                })
                            }
                        }
                        (_, "copy") => common::time(&device, iters, || x.clone().add_scalar(1.0)),
                        (group, "burn_scatter_nd") => {
                            let op = if group == "scatter_nd_assign" {
                                IndexingUpdateOp::Assign
                            } else {
                                IndexingUpdateOp::Add
                            };
                            common::time(&device, iters, || {
                                x.clone().scatter_nd(idx.clone(), updates.clone(), op)
                            })
                        }
                        (group, _) => {
                            let reduction = if group == "scatter_nd_assign" {
                                Reduction::Assign
                            } else {
                                Reduction::Add
                            };
                            let options = ScatterNdOptions {
                                reduction,
                                ..Default::default()
                            };
                            common::time(&device, iters, || {
                                x.clone()
                                    .try_scatter_nd(idx.clone(), updates.clone(), options.clone())
                                    .unwrap()
                            })
                        }
                    })
                });
            }
            parameters.push(parameter);
        }
        group.finish();
        tables.push((group_name, names, parameters));
    }
    criterion.final_summary();
    for (group, names, parameters) in tables {
        let title = format!("{group} on {device:?}: mean time per call (with a device sync)");
        common::print_ratios(&title, group, &names, &parameters);
    }
}
