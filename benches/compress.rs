//! Compress against what a Burn user has without it, on `Device::default()`.
//!
//! Elements: `x.compress(mask)` of an f32 vector by a Bool mask at densities 1%, 10% and 50%,
//! against
//! - `copy`: `x.add_scalar(1.0)`, an elementwise pass over the same input (the memory's pace);
//! - `nonzero + gather_nd`: `x.gather_nd(mask.nonzero_coordinates_with(fill 0).coordinates)`,
//!   the fixed-shape route a Burn user has without this crate;
//! - `nonzero`: `mask.nonzero_coordinates()` alone.
//!
//! Rows: `rows.compress_axis(0, condition)` of `[n, 64]` f32 rows by an `[n]` condition at the
//! same densities, against `copy` of the rows.
//!
//! Each measurement queues `QUEUED` calls between two syncs, each on its own input, keeping
//! every output alive until the sync. Every result is checked against the host at full size
//! before it is timed. The tables give ms per call, GB/s (compress: the mask or condition, the
//! selected values read and the whole output written; copy: input plus output) and the ratios.
//!
//! `cargo bench --bench compress` measures 2^16 and 2^22 elements (lavapipe);
//! `COMPRESS_BENCH_SIZES=24,26,28` picks the sizes (log2) on a GPU.

mod common;

use burn::tensor::{Bool, Device, Float, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use criterion::Criterion;

const GROUP: &str = "compress";
const ELEMENT_NAMES: [&str; 4] = ["compress", "copy", "nonzero + gather_nd", "nonzero"];
const ROW_NAMES: [&str; 2] = ["compress_axis rows", "copy rows"];
/// Calls queued between two syncs, each on its own input.
const QUEUED: usize = 8;
/// Elements per row in the rows case.
const ROW: usize = 64;

/// `len` xorshift flags, about `density` of them true, and `len` f32 values from `seed`.
fn case(len: usize, density: f64, seed: u64) -> (Vec<f32>, Vec<bool>) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let flags = (0..len).map(|_| next() < density).collect();
    let values = (0..len).map(|i| i as f32 + 0.5).collect();
    (values, flags)
}

/// Checks a padded compress against the host: the selection in order, then zeros.
fn check<const D: usize>(out: Compressed<D>, values: &[f32], flags: &[bool], slice: usize) {
    let mut expected: Vec<f32> = values
        .chunks(slice)
        .zip(flags)
        .filter(|(_, keep)| **keep)
        .flat_map(|(chunk, _)| chunk.iter().copied())
        .collect();
    let count = expected.len() / slice;
    expected.resize(values.len(), 0.0);
    let got = out.values.into_data().try_to_vec::<f32>().unwrap();
    assert_eq!(got.len(), values.len() / slice * slice);
    let got_count = out
        .count
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap()[0];
    assert_eq!(got_count as usize, count, "the count");
    assert!(got == expected, "the values differ from the host's");
}

fn main() {
    let device = Device::default();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    common::configure(&mut group);
    let mut element_rows = Vec::new();
    let mut row_rows = Vec::new();
    for log2 in common::sizes("COMPRESS_BENCH_SIZES", &[16, 22]) {
        let len = 1usize << log2;
        for percent in [1u32, 10, 50] {
            let density = f64::from(percent) / 100.0;
            let parameter = format!("2^{log2} at {percent}%");
            let hosts: Vec<_> = (0..QUEUED as u64).map(|s| case(len, density, s)).collect();
            let inputs: Vec<(Tensor<1, Float>, Tensor<1, Bool>)> = hosts
                .iter()
                .map(|(values, flags)| {
                    (
                        Tensor::from_data(TensorData::new(values.clone(), [len]), &device),
                        Tensor::from_data(TensorData::new(flags.clone(), [len]), &device),
                    )
                })
                .collect();
            let (x, mask) = &inputs[0];
            check(
                x.clone().compress(mask.clone()),
                &hosts[0].0,
                &hosts[0].1,
                1,
            );
            let selected = hosts[0].1.iter().filter(|&&f| f).count();
            let mask_bytes = len * mask.dtype().size();
            common::bench(
                &mut group,
                &device,
                "compress",
                &parameter,
                &inputs,
                |(x, m)| x.clone().compress(m.clone()),
            );
            common::bench(
                &mut group,
                &device,
                "copy",
                &parameter,
                &inputs,
                |(x, _)| x.clone().add_scalar(1.0),
            );
            let fill = NonZeroOptions {
                fill: Some(0),
                ..Default::default()
            };
            common::bench(
                &mut group,
                &device,
                "nonzero + gather_nd",
                &parameter,
                &inputs,
                |(x, m)| {
                    let coordinates = m
                        .clone()
                        .nonzero_coordinates_with(fill.clone())
                        .expect("a valid NonZero")
                        .coordinates;
                    x.clone().gather_nd::<2, 1>(coordinates)
                },
            );
            common::bench(
                &mut group,
                &device,
                "nonzero",
                &parameter,
                &inputs,
                |(_, m)| m.clone().nonzero_coordinates(),
            );
            let compress_bytes = (mask_bytes + selected * 4 + len * 4) as f64;
            let copy_bytes = (len * 8) as f64;
            element_rows.push((
                parameter.clone(),
                vec![compress_bytes, copy_bytes, 0.0, 0.0],
            ));

            // Rows of 64 selected by a condition: the same element count.
            let n = len / ROW;
            let row_hosts: Vec<_> = (0..QUEUED as u64)
                .map(|s| case(n * ROW, density, s))
                .collect();
            let row_inputs: Vec<(Tensor<2, Float>, Tensor<1, Bool>)> = row_hosts
                .iter()
                .map(|(values, flags)| {
                    (
                        Tensor::from_data(TensorData::new(values.clone(), [n, ROW]), &device),
                        Tensor::from_data(TensorData::new(flags[..n].to_vec(), [n]), &device),
                    )
                })
                .collect();
            let (rows, condition) = &row_inputs[0];
            let out = rows.clone().compress_axis(0, condition.clone());
            check(out, &row_hosts[0].0, &row_hosts[0].1[..n], ROW);
            let kept = row_hosts[0].1[..n].iter().filter(|&&f| f).count();
            common::bench(
                &mut group,
                &device,
                "compress_axis rows",
                &parameter,
                &row_inputs,
                |(r, c)| r.clone().compress_axis(0, c.clone()),
            );
            common::bench(
                &mut group,
                &device,
                "copy rows",
                &parameter,
                &row_inputs,
                |(r, _)| r.clone().add_scalar(1.0),
            );
            let rows_bytes = (n * condition.dtype().size() + (kept + n) * ROW * 4) as f64;
            row_rows.push((parameter, vec![rows_bytes, copy_bytes]));
        }
    }
    group.finish();
    criterion.final_summary();
    common::print_throughput(
        &format!("Compress of f32 elements on {device:?}: time per call, {QUEUED} queued per sync"),
        GROUP,
        &ELEMENT_NAMES,
        &element_rows,
    );
    common::print_throughput(
        &format!("Compress of [n, {ROW}] f32 rows by an [n] condition on {device:?}"),
        GROUP,
        &ROW_NAMES,
        &row_rows,
    );
}
