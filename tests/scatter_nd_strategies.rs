//! ScatterND reductions through each kernel strategy on wgpu, against Flex.
//!
//! `BURN_DML_OPS_SCATTER_STRATEGY` forces a strategy. This file holds a single test, so the
//! variable is set before anything else in the process reads it. On lavapipe the default is
//! the list strategy, so the atomic kernels run here only (where WGSL has them: `Add` on i32
//! and u32; the other cases fall back to the lists).

mod common;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::*;

fn run(
    device: &Device,
    dtype: DType,
    indices: &[i64],
    updates: &[i64],
    reduction: Reduction,
) -> Vec<i64> {
    let rows = indices.len();
    let input = Tensor::<2, Int>::from_data(
        TensorData::new((0..24i64).map(|v| v % 5).collect::<Vec<_>>(), [8, 3]),
        (device, dtype),
    );
    let indices = Tensor::<2, Int>::from_data(TensorData::new(indices.to_vec(), [rows, 1]), device);
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
fn every_strategy_matches_flex() {
    let rows = 3000usize;
    // Heavy duplication on 8 rows, plus out-of-range rows (-9, 8) that must be skipped.
    let indices: Vec<i64> = (0..rows as i64).map(|r| (r * 13) % 10 - 9).collect();
    let updates: Vec<i64> = (0..rows as i64 * 3).map(|v| (v * 7) % 11).collect();
    let (flex, wgpu) = (flex(), wgpu());
    for strategy in ["atomic", "lists"] {
        // SAFETY: the only test of this process, and nothing runs on another thread yet.
        unsafe { std::env::set_var("BURN_DML_OPS_SCATTER_STRATEGY", strategy) };
        for dtype in [DType::I32, DType::U32, DType::I64] {
            for reduction in [Reduction::Add, Reduction::Min, Reduction::Max] {
                let expected = run(&flex, dtype, &indices, &updates, reduction);
                let actual = run(&wgpu, dtype, &indices, &updates, reduction);
                assert_eq!(actual, expected, "{strategy} {dtype:?} {reduction:?}");
            }
        }
    }
}
