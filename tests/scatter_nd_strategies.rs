//! ScatterND integer reductions under heavy contention through Burn on wgpu, against Flex: the
//! strategy `scatter_strategy` picks for each (native atomics where the runtime has them, on
//! WGSL `Add` on i32 and u32; the rows sorted by target otherwise). The kernel crate's
//! `tests/scatter_nd.rs` runs each strategy as a launch argument.

mod common;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::*;

fn run(
    device: &Device,
    dtype: DType,
    (indices, index_dtype): (&[i64], DType),
    updates: &[i64],
    reduction: Reduction,
) -> Vec<i64> {
    let rows = indices.len();
    let input = Tensor::<2, Int>::from_data(
        TensorData::new((0..24i64).map(|v| v % 5).collect::<Vec<_>>(), [8, 3]),
        (device, dtype),
    );
    let indices = Tensor::<2, Int>::from_data(
        TensorData::new(indices.to_vec(), [rows, 1]),
        (device, index_dtype),
    );
    let updates = Tensor::<2, Int>::from_data(
        TensorData::new(updates.to_vec(), [rows, 3]),
        (device, dtype),
    );
    let options = ScatterNdOptions {
        reduction,
        ..Default::default()
    };
    to_i64(
        &input
            .try_scatter_nd(indices, updates, options)
            .unwrap()
            .into_data(),
    )
}

#[test]
fn contended_reductions_match_flex() {
    let rows = 3000usize;
    // Heavy duplication on 8 rows, plus out-of-range rows (-9, 8) that must be skipped.
    let indices: Vec<i64> = (0..rows as i64).map(|r| (r * 13) % 10 - 9).collect();
    let updates: Vec<i64> = (0..rows as i64 * 3).map(|v| (v * 7) % 11).collect();
    // The same with 64-bit indices whose low 32 bits are in range but whose value is not
    // (2^32 + t, -2^32 - 1): skipped, never folded onto row t.
    let wide: Vec<i64> = indices
        .iter()
        .enumerate()
        .map(|(r, &i)| match r % 5 {
            0 => (1 << 32) + (r as i64 % 8),
            1 => -(1 << 32) - 1,
            _ => i,
        })
        .collect();
    let Some(wgpu) = gpu() else { return };
    let flex = flex();
    for dtype in [DType::I32, DType::U32, DType::I64] {
        for reduction in [Reduction::Add, Reduction::Min, Reduction::Max] {
            for index_set in [(&indices[..], DType::I32), (&wide[..], DType::I64)] {
                let case = "contended_reductions_match_flex";
                if !holds(&wgpu, dtype, case) || !holds(&wgpu, index_set.1, case) {
                    continue;
                }
                let expected = run(&flex, dtype, index_set, &updates, reduction);
                let actual = run(&wgpu, dtype, index_set, &updates, reduction);
                assert_eq!(
                    actual, expected,
                    "{dtype:?} {reduction:?} {:?} indices",
                    index_set.1
                );
            }
        }
    }
}
