//! TopK and the stable sort against what a Burn user has without them, on `Device::default()`.
//!
//! Rows: `x.sort_stable(-1, Descending)` of f32 and i32 values with indices (one long axis of
//! 2^n, `[4096, 1000]`, `[100000, 16]` and `[65536, 64]` rows and a vocabulary of `[1,
//! 128256]`), and `x.top_k(k, -1, Descending)` of `[32, 32000]`, `[1, 128256]` and one axis of
//! 2^22, each labelled with the launches the call takes on this device (counted by the kernel
//! crate's capture), against
//! - `burn sort_with_indices`: Burn's `sort_with_indices`, a host round trip on a GPU;
//! - `burn topk_with_indices`: Burn's `topk_with_indices` (top-k rows only), a kernel per `k`;
//! - `sort_stable + slice`: the whole sort sliced to `k` (top-k rows only), what `top_k` does
//!   without the radix select;
//! - `copy`: `x.add_scalar(1.0)`, an elementwise pass over the same input (the memory's pace);
//! - `plan`, with `SORT_BENCH_PLAN` set: the kernel crate's launcher under that plan instead of
//!   the crate's (`planes=1,cube_len=0,select_k=4096,cube_pack=0,row_select_len=0`, any of the
//!   fields), so that one run on a GPU tries the alternatives the cost model weighs; its
//!   launches per call are printed beside the crate's.
//!
//! Each measurement queues `QUEUED` calls between two syncs, each on its own input, keeping
//! every output alive until the sync. The first input's result is checked against Burn's on the
//! host before anything is timed. The tables give ms per call, GB/s (sort: the input read and the
//! values and 4-byte indices written; copy: input plus output) and the ratios.
//!
//! `cargo bench --bench sort` measures 2^16 and 2^20 (lavapipe); `SORT_BENCH_SIZES=20,22,24`
//! picks the long-axis sizes (log2) on a GPU, `SORT_BENCH_TOP_K_LOG2` the top-k's long axis.

mod common;

use burn::tensor::{Device, Float, Int, Tensor, TensorData};
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops::prelude::*;
use burn_dml_ops_kernels::capture::Capture;
use burn_dml_ops_kernels::sort::{
    SortInput, SortOrder, SortOutput, SortPlan, SortShape, launch_top_k,
};
use criterion::Criterion;
use cubecl::ir::{ElemType, FloatKind, IntKind};
use cubecl::prelude::Client;
use cubecl::server::Handle;

const GROUP: &str = "sort";
const SORT_NAMES: [&str; 4] = ["sort_stable", "burn sort_with_indices", "copy", "plan"];
const TOP_K_NAMES: [&str; 5] = [
    "top_k",
    "burn topk_with_indices",
    "sort_stable + slice",
    "copy",
    "plan",
];
/// Calls queued between two syncs, each on its own input.
const QUEUED: usize = 8;

/// The plan `SORT_BENCH_PLAN` asks for: the crate's plan for `client` with the fields it names
/// changed (`planes=1,cube_len=0,select_k=4096,cube_pack=0,row_select_len=0`); `None` where
/// it is unset.
fn plan_from_env(client: &Client) -> Option<SortPlan> {
    let spec = std::env::var("SORT_BENCH_PLAN").ok()?;
    let mut plan = SortPlan::for_client(client);
    for field in spec.split(',').filter(|f| !f.trim().is_empty()) {
        let (name, value) = field
            .split_once('=')
            .unwrap_or_else(|| panic!("SORT_BENCH_PLAN: `field=value`, got {field:?}"));
        let value: usize = value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("SORT_BENCH_PLAN: {name} takes a number, got {value:?}"));
        match name.trim() {
            "planes" => plan.planes = value != 0,
            "cube_len" => plan.cube_len = value,
            "select_k" => plan.select_k = value,
            "cube_pack" => plan.cube_pack = value,
            "row_select_len" => plan.row_select_len = value,
            other => panic!("SORT_BENCH_PLAN: no field {other:?} in {plan:?}"),
        }
    }
    Some(plan)
}

/// The kernel crate's descending top-`k` of the `[rows, len]` Cube tensor `x` of `elem` under
/// `plan`, with i32 indices: what `top_k` and `sort_stable` launch, without Burn around it.
fn launch(x: &CubeTensor, elem: ElemType, k: usize, plan: SortPlan) -> (Handle, Handle) {
    let [outer, axis_len] = [x.meta.shape()[0], x.meta.shape()[1]];
    let client = &x.client;
    let output = SortOutput {
        values: client.empty(outer * k * 4),
        indices: client.empty(outer * k * 4),
        indices_elem: ElemType::Int(IntKind::I32),
    };
    let input = SortInput {
        values: x.handle.clone(),
        elem,
    };
    let shape = SortShape {
        outer,
        axis_len,
        inner: 1,
        k,
    };
    launch_top_k(client, &input, &output, shape, SortOrder::Descending, plan)
        .expect("a valid top-k");
    (output.values, output.indices)
}

/// Launches per call of [`launch`] on `x`'s device, counted by a capture of its own
/// properties (nothing runs).
fn launches(x: &CubeTensor, elem: ElemType, k: usize, plan: SortPlan) -> usize {
    let capture = Capture::open(x.client.properties().clone(), Default::default());
    launch(x, elem, k, plan);
    capture.take().len()
}

/// A row's label: its input and the launches a call takes under the crate's plan (and under
/// `SORT_BENCH_PLAN`'s, where set).
fn label(input: &str, x: &CubeTensor, elem: ElemType, k: usize, plan: Option<SortPlan>) -> String {
    let ours = launches(x, elem, k, SortPlan::for_client(&x.client));
    match plan {
        Some(plan) => format!(
            "{input} ({ours} launches; plan {})",
            launches(x, elem, k, plan)
        ),
        None => format!("{input} ({ours} launches)"),
    }
}

/// Says which plans the rows run: the crate's for the device, and `SORT_BENCH_PLAN`'s.
fn print_plans(client: &Client, plan: Option<SortPlan>) {
    println!("crate's plan: {:?}", SortPlan::for_client(client));
    if let Some(plan) = plan {
        println!("SORT_BENCH_PLAN: {plan:?}");
    }
}

/// `len` xorshift values from `seed`, in `0..1`.
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

/// `QUEUED` Float inputs of `shape`.
fn float_inputs(shape: [usize; 2], device: &Device) -> Vec<Tensor<2, Float>> {
    (0..QUEUED as u64)
        .map(|s| {
            let data = TensorData::new(values(shape[0] * shape[1], s), shape);
            Tensor::from_data(data, device)
        })
        .collect()
}

/// The same values scaled to integers, as Int inputs.
fn int_inputs(shape: [usize; 2], device: &Device) -> Vec<Tensor<2, Int>> {
    float_inputs(shape, device)
        .into_iter()
        .map(|x| x.mul_scalar(1_000_000.0).int())
        .collect()
}

/// Checks the stable sort against Burn's (descending; the values are distinct enough that ties
/// are rare, and the values must match wherever they fall).
fn check_values<K>(ours: Tensor<2, K>, burn: Tensor<2, K>)
where
    K: burn::tensor::kind::Basic,
{
    let ours = ours
        .into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .unwrap();
    let burn = burn
        .into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .unwrap();
    assert!(ours == burn, "the sorted values differ from Burn's");
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    common::configure(&mut group);
    let client = common::cube_float(&Tensor::<1>::zeros([1], &device), &device).client;
    print_plans(&client, plan_from_env(&client));
    let mut sort_rows = Vec::new();
    let mut top_k_rows = Vec::new();
    let mut shapes: Vec<(String, [usize; 2])> = common::sizes("SORT_BENCH_SIZES", &[16, 20])
        .into_iter()
        .map(|log2| (format!("[1, 2^{log2}]"), [1, 1usize << log2]))
        .collect();
    for shape in [[4096, 1000], [100_000, 16], [65_536, 64], [1, 128_256]] {
        shapes.push((format!("[{}, {}]", shape[0], shape[1]), shape));
    }
    for (name, shape) in &shapes {
        let len = shape[0] * shape[1];
        let floats = float_inputs(*shape, &device);
        let ints = int_inputs(*shape, &device);
        let cube_floats: Vec<CubeTensor> = floats
            .iter()
            .map(|x| common::cube_float(x, &device))
            .collect();
        let cube_ints: Vec<CubeTensor> =
            ints.iter().map(|x| common::cube_int(x, &device)).collect();
        let plan = plan_from_env(&cube_floats[0].client);
        let sorted = floats[0].clone().sort_stable(-1, Order::Descending);
        check_values(sorted.values, floats[0].clone().sort_descending(1));
        let sorted = ints[0].clone().sort_stable(-1, Order::Descending);
        check_values(sorted.values, ints[0].clone().sort_descending(1));
        let f32_elem = ElemType::Float(FloatKind::F32);
        let i32_elem = ElemType::Int(IntKind::I32);
        for (dtype, elem, cubes) in [
            ("f32", f32_elem, &cube_floats),
            ("i32", i32_elem, &cube_ints),
        ] {
            let parameter = label(&format!("{name} {dtype}"), &cubes[0], elem, shape[1], plan);
            if let Some(plan) = plan {
                let run = |x: &CubeTensor| launch(x, elem, shape[1], plan);
                common::bench(&mut group, &device, "plan", &parameter, cubes, run);
            }
            if dtype == "f32" {
                let run = |x: &Tensor<2, Float>| x.clone().sort_stable(-1, Order::Descending);
                common::bench(&mut group, &device, "sort_stable", &parameter, &floats, run);
                let burn = |x: &Tensor<2, Float>| x.clone().sort_descending_with_indices(1);
                common::bench(
                    &mut group,
                    &device,
                    SORT_NAMES[1],
                    &parameter,
                    &floats,
                    burn,
                );
                let copy = |x: &Tensor<2, Float>| x.clone().add_scalar(1.0);
                common::bench(&mut group, &device, "copy", &parameter, &floats, copy);
            } else {
                let run = |x: &Tensor<2, Int>| x.clone().sort_stable(-1, Order::Descending);
                common::bench(&mut group, &device, "sort_stable", &parameter, &ints, run);
                let burn = |x: &Tensor<2, Int>| x.clone().sort_descending_with_indices(1);
                common::bench(&mut group, &device, SORT_NAMES[1], &parameter, &ints, burn);
                let copy = |x: &Tensor<2, Int>| x.clone().add_scalar(1);
                common::bench(&mut group, &device, "copy", &parameter, &ints, copy);
            }
            let sort_bytes = (len * 4 * 3) as f64;
            sort_rows.push((
                parameter,
                vec![sort_bytes, 0.0, (len * 8) as f64, sort_bytes],
            ));
        }
    }
    for shape in top_k_shapes() {
        top_k_rows.extend(bench_top_k(&mut group, &device, shape));
    }
    group.finish();
    criterion.final_summary();
    common::print_throughput(
        &format!("Stable sort with indices on {device:?}: time per call, {QUEUED} queued per sync"),
        GROUP,
        &SORT_NAMES,
        &sort_rows,
    );
    common::print_throughput(
        &format!("TopK with indices of f32 rows on {device:?}"),
        GROUP,
        &TOP_K_NAMES,
        &top_k_rows,
    );
}

/// The top-k inputs: `[32, 32000]`, a vocabulary `[1, 128256]` and one long axis of
/// `2^SORT_BENCH_TOP_K_LOG2` (22 unless set).
fn top_k_shapes() -> Vec<[usize; 2]> {
    let long = common::sizes("SORT_BENCH_TOP_K_LOG2", &[22]);
    [[32, 32000], [1, 128_256]]
        .into_iter()
        .chain(long.into_iter().map(|log2| [1, 1usize << log2]))
        .collect()
}

/// Times `top_k` of `shape` for `k` of 1, 10, 100 and 1000, checked against the host, against
/// Burn's `topk_with_indices` (where it returns the right values), the full sort sliced to `k`,
/// and a copy; returns the throughput rows.
fn bench_top_k(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    device: &Device,
    shape: [usize; 2],
) -> Vec<(String, Vec<f64>)> {
    let floats = float_inputs(shape, device);
    let cubes: Vec<CubeTensor> = floats
        .iter()
        .map(|x| common::cube_float(x, device))
        .collect();
    let plan = plan_from_env(&cubes[0].client);
    let elem = ElemType::Float(FloatKind::F32);
    let len = shape[0] * shape[1];
    let mut rows = Vec::new();
    for k in [1usize, 10, 100, 1000] {
        let input = format!("[{}, {}] k {k}", shape[0], shape[1]);
        let parameter = label(&input, &cubes[0], elem, k, plan);
        if let Some(plan) = plan {
            let run = |x: &CubeTensor| launch(x, elem, k, plan);
            common::bench(group, device, "plan", &parameter, &cubes, run);
        }
        // Checked against the host: Burn's own `topk` is wrong on lavapipe from some `k` on (its
        // reduce overruns shared memory), so it cannot be the reference here.
        let ours = floats[0].clone().top_k(k, -1, Order::Descending);
        let host: Vec<f32> = values(len, 0)
            .chunks(shape[1])
            .flat_map(|row| {
                let mut row = row.to_vec();
                row.sort_by(|a, b| b.total_cmp(a));
                row.truncate(k);
                row
            })
            .collect();
        let host = Tensor::<2>::from_data(TensorData::new(host, [shape[0], k]), device);
        check_values(ours.values, host.clone());
        let run = |x: &Tensor<2, Float>| x.clone().top_k(k, -1, Order::Descending);
        common::bench(group, device, "top_k", &parameter, &floats, run);
        // Burn's reduce at `k` 1000 ran for minutes on lavapipe without ending (one 2^22 row, and
        // 32 rows of 32,000), and returned wrong values at `k` 100 already.
        let burn_runs = k <= 100;
        let burn_right = burn_runs && {
            let burn = floats[0].clone().topk(k, 1);
            burn.equal(host).all().into_scalar::<bool>()
        };
        if !burn_runs {
            println!("note: Burn's topk of {parameter} is not run");
        } else if burn_right {
            let burn = |x: &Tensor<2, Float>| x.clone().topk_with_indices(k, 1);
            common::bench(group, device, TOP_K_NAMES[1], &parameter, &floats, burn);
        } else {
            // Timing it ended the process without a message on lavapipe at `k` 1000.
            println!("note: Burn's topk of {parameter} differs from the host's; not timed");
        }
        let sliced = |x: &Tensor<2, Float>| {
            let sorted = x.clone().sort_stable(-1, Order::Descending);
            (
                sorted.values.slice([0..shape[0], 0..k]),
                sorted.indices.slice([0..shape[0], 0..k]),
            )
        };
        common::bench(group, device, TOP_K_NAMES[2], &parameter, &floats, sliced);
        let copy = |x: &Tensor<2, Float>| x.clone().add_scalar(1.0);
        common::bench(group, device, "copy", &parameter, &floats, copy);
        let top_k_bytes = len as f64 * 4.0 + (shape[0] * k * 8) as f64;
        rows.push((
            parameter,
            vec![top_k_bytes, 0.0, 0.0, len as f64 * 8.0, top_k_bytes],
        ));
    }
    rows
}
