//! ScatterND reductions through Burn with the list kernels forced by the documented tuning
//! variable, on wgpu, against Flex.
//!
//! The default uses native atomics where the runtime has them (on WGSL, `Add` on i32 and u32;
//! `tests/scatter_nd.rs` runs it) and the list kernels otherwise;
//! `BURN_DML_OPS_SCATTER_STRATEGY=lists` forces the lists everywhere. The crate reads the
//! variable once per process, so this file (its own process) sets it before anything launches;
//! the kernel crate's `tests/scatter_nd.rs` runs each strategy directly, as a launch argument.

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
fn the_forced_lists_match_flex() {
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
    // SAFETY: the only test of this process, and nothing runs on another thread yet.
    unsafe { std::env::set_var("BURN_DML_OPS_SCATTER_STRATEGY", "lists") };
    let (flex, wgpu) = (flex(), wgpu());
    {
        let strategy = "lists";
        for dtype in [DType::I32, DType::U32, DType::I64] {
            for reduction in [Reduction::Add, Reduction::Min, Reduction::Max] {
                for index_set in [(&indices[..], DType::I32), (&wide[..], DType::I64)] {
                    let expected = run(&flex, dtype, index_set, &updates, reduction);
                    let actual = run(&wgpu, dtype, index_set, &updates, reduction);
                    assert_eq!(
                        actual, expected,
                        "{strategy} {dtype:?} {reduction:?} {:?} indices",
                        index_set.1
                    );
                }
            }
        }
    }
}
