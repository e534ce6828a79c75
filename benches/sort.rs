//! TopK and the stable sort against what a Burn user has without them, on `Device::default()`.
//!
//! Rows: `x.sort_stable(-1, Descending)` of f32 and i32 values with indices (one long axis of
//! 2^n, `[4096, 1000]` rows and a vocabulary of `[1, 128256]`), and `x.top_k(k, -1,
//! Descending)` of `[32, 32000]`, `[1, 128256]` and one axis of 2^22, against
//! - `burn sort_with_indices`: Burn's `sort_with_indices`, a host round trip on a GPU;
//! - `burn topk_with_indices`: Burn's `topk_with_indices` (top-k rows only), a kernel per `k`;
//! - `sort_stable + slice`: the whole sort sliced to `k` (top-k rows only), what `top_k` does
//!   without the radix select;
//! - `copy`: `x.add_scalar(1.0)`, an elementwise pass over the same input (the memory's pace).
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
use burn_dml_ops::prelude::*;
use criterion::Criterion;

const GROUP: &str = "sort";
const SORT_NAMES: [&str; 3] = ["sort_stable", "burn sort_with_indices", "copy"];
const TOP_K_NAMES: [&str; 4] = [
    "top_k",
    "burn topk_with_indices",
    "sort_stable + slice",
    "copy",
];
/// Calls queued between two syncs, each on its own input.
const QUEUED: usize = 8;

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
    let mut sort_rows = Vec::new();
    let mut top_k_rows = Vec::new();
    let mut shapes: Vec<(String, [usize; 2])> = common::sizes("SORT_BENCH_SIZES", &[16, 20])
        .into_iter()
        .map(|log2| (format!("[1, 2^{log2}]"), [1, 1usize << log2]))
        .collect();
    shapes.push(("[4096, 1000]".into(), [4096, 1000]));
    shapes.push(("[1, 128256]".into(), [1, 128_256]));
    for (name, shape) in &shapes {
        let len = shape[0] * shape[1];
        let floats = float_inputs(*shape, &device);
        let ints = int_inputs(*shape, &device);
        let sorted = floats[0].clone().sort_stable(-1, Order::Descending);
        check_values(sorted.values, floats[0].clone().sort_descending(1));
        let sorted = ints[0].clone().sort_stable(-1, Order::Descending);
        check_values(sorted.values, ints[0].clone().sort_descending(1));
        for (dtype, parameter) in [
            ("f32", format!("{name} f32")),
            ("i32", format!("{name} i32")),
        ] {
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
            sort_rows.push((parameter, vec![sort_bytes, 0.0, (len * 8) as f64]));
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
    let len = shape[0] * shape[1];
    let mut rows = Vec::new();
    for k in [1usize, 10, 100, 1000] {
        let parameter = format!("[{}, {}] k {k}", shape[0], shape[1]);
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
        // Burn's reduce of one 2^22 row at `k` 1000 ran for minutes on lavapipe without ending.
        let burn_runs = shape[0] > 1 || k <= 100;
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
        rows.push((parameter, vec![top_k_bytes, 0.0, 0.0, len as f64 * 8.0]));
    }
    rows
}
