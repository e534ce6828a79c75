//! The sort's launcher over raw handles on wgpu: both cube scans (plane operations forced on
//! lavapipe, which has subgroups), every element width read as words, sequences along inner and
//! outer axes, the bytes after each output left alone, and every refusal.

mod common;

use burn_dml_ops_kernels::KernelError;
use burn_dml_ops_kernels::sort::{
    CUBE_PACK, CUBE_SORT_MAX, SortInput, SortOrder, SortOutput, SortPlan, SortShape, launch_top_k,
};
use common::nonzero::planes_run;
use common::{GUARD, GUARD_BYTE, client, xorshift};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;

/// The plans under test: shared memory, and planes where they run, each with the one-cube sort
/// of short axes (several short sequences to a cube) and with the radix passes only, and each with the radix select of every `k`
/// it may take (one cube per row, and over tiles) and with none.
fn plans(client: &Client) -> Vec<SortPlan> {
    let mut scans = vec![false];
    if planes_run(client) {
        scans.push(true);
    }
    let mut plans = Vec::new();
    for planes in scans {
        for cube_len in [0, CUBE_SORT_MAX] {
            for (select_k, row_select_len) in [(0, 0), (usize::MAX, 0), (usize::MAX, usize::MAX)] {
                plans.push(SortPlan {
                    planes,
                    cube_len,
                    select_k,
                    cube_pack: cube_len.min(CUBE_PACK),
                    row_select_len,
                });
            }
        }
    }
    plans
}

/// The key an element of `bits` bits orders by (unsigned order = the element's), independent of
/// the kernels: floats through f64, integers sign-extended.
fn order_key(bits: u64, elem: ElemType) -> (u8, f64, i128) {
    match elem {
        ElemType::Float(kind) => {
            let value = match kind {
                FloatKind::F16 => half::f16::from_bits(bits as u16).to_f64(),
                FloatKind::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
                FloatKind::F32 => f64::from(f32::from_bits(bits as u32)),
                _ => f64::from_bits(bits),
            };
            if value.is_nan() {
                (1, 0.0, 0)
            } else {
                (0, value + 0.0, 0)
            }
        }
        ElemType::Int(_) => {
            let width = 8 * elem.size() as u32;
            (0, 0.0, (((bits as i128) << (128 - width)) >> (128 - width)))
        }
        _ => (0, 0.0, bits as i128),
    }
}

/// Runs a top-`k` of `[outer, axis_len, inner]` elements of `elem` (raw bits) and checks values,
/// indices (u16, packed in words on WGSL, or u32 for an axis u16 cannot index) and the guard
/// bytes after both outputs.
fn check(client: &Client, elem: ElemType, shape: SortShape, order: SortOrder, plan: SortPlan) {
    let SortShape {
        outer,
        axis_len,
        inner,
        k,
    } = shape;
    let bytes = elem.size();
    let len = outer * axis_len * inner;
    let mut next = xorshift(len as u64 * 31 + bytes as u64);
    // Few distinct values, so ties are common.
    let palette: Vec<u64> = (0..6).map(|_| next()).collect();
    let bits: Vec<u64> = (0..len)
        .map(|_| palette[next() as usize % 6] & mask(bytes))
        .collect();
    let input: Vec<u8> = bits
        .iter()
        .flat_map(|b| b.to_le_bytes()[..bytes].to_vec())
        .collect();
    let out_len = outer * k * inner;
    let guarded = |size: usize| {
        let words = size.div_ceil(4) * 4;
        client.create_from_slice(&vec![GUARD_BYTE; words + GUARD])
    };
    let (index_elem, index_bytes) = if axis_len <= 1 << 16 {
        (ElemType::UInt(UIntKind::U16), 2)
    } else {
        (ElemType::UInt(UIntKind::U32), 4)
    };
    let values = guarded(out_len * bytes);
    let indices = guarded(out_len * index_bytes);
    launch_top_k(
        client,
        &SortInput {
            values: client.create_from_slice(&input),
            elem,
        },
        &SortOutput {
            values: values.clone(),
            indices: indices.clone(),
            indices_elem: index_elem,
        },
        shape,
        order,
        plan,
    )
    .unwrap();
    let got_values = client.read_one(values).unwrap().to_vec();
    let got_indices = client.read_one(indices).unwrap().to_vec();
    let case = format!("{elem} {shape:?} {order:?} {plan:?}");
    for (buffer, size) in [
        (&got_values, out_len * bytes),
        (&got_indices, out_len * index_bytes),
    ] {
        assert!(
            buffer[size.div_ceil(4) * 4..]
                .iter()
                .all(|&b| b == GUARD_BYTE),
            "a store past the output: {case}"
        );
    }
    for o in 0..outer {
        for i in 0..inner {
            let at = |p: usize| (o * axis_len + p) * inner + i;
            let mut expected: Vec<usize> = (0..axis_len).collect();
            expected.sort_by(|&a, &b| {
                let (ka, kb) = (order_key(bits[at(a)], elem), order_key(bits[at(b)], elem));
                let by = ka.partial_cmp(&kb).unwrap();
                let by = if order == SortOrder::Descending {
                    by.reverse()
                } else {
                    by
                };
                by.then(a.cmp(&b))
            });
            for (r, &p) in expected[..k].iter().enumerate() {
                let target = (o * k + r) * inner + i;
                let index = got_indices[index_bytes * target..index_bytes * (target + 1)]
                    .iter()
                    .rev()
                    .fold(0usize, |acc, &b| acc << 8 | b as usize);
                assert_eq!(index, p, "index {target}: {case}");
                let value = &got_values[target * bytes..(target + 1) * bytes];
                assert_eq!(
                    value,
                    &bits[at(p)].to_le_bytes()[..bytes],
                    "value {target}: {case}"
                );
            }
        }
    }
}

fn mask(bytes: usize) -> u64 {
    if bytes == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * bytes)) - 1
    }
}

#[test]
fn every_width_both_scans_and_both_orders() {
    let Some(client) = client() else { return };
    let elems = [
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
        ElemType::Float(FloatKind::F32),
        ElemType::Float(FloatKind::F64),
        ElemType::Int(IntKind::I8),
        ElemType::UInt(UIntKind::U8),
        ElemType::Int(IntKind::I16),
        ElemType::Int(IntKind::I32),
        ElemType::UInt(UIntKind::U32),
        ElemType::Int(IntKind::I64),
        ElemType::UInt(UIntKind::U64),
    ];
    let shapes = [(1, 300, 1, 300), (2, 129, 3, 5), (3, 1, 2, 1), (1, 7, 5, 0)];
    check_every_plan(&client, &elems, &shapes);
}

/// [`check`] of every `(outer, axis_len, inner, k)` of `shapes` for every element type of
/// `elems`, in both orders, under every plan.
fn check_every_plan(client: &Client, elems: &[ElemType], shapes: &[(usize, usize, usize, usize)]) {
    for plan in plans(client) {
        for &elem in elems {
            for &(outer, axis_len, inner, k) in shapes {
                for order in [SortOrder::Ascending, SortOrder::Descending] {
                    let shape = SortShape {
                        outer,
                        axis_len,
                        inner,
                        k,
                    };
                    check(client, elem, shape, order, plan);
                }
            }
        }
    }
}

#[test]
fn axes_around_the_one_cube_sorts_runs() {
    let Some(client) = client() else { return };
    // A run of 1 to 32 elements per unit, the longest axis one cube sorts, and one past it.
    for plan in plans(&client) {
        for elem in [ElemType::Float(FloatKind::F32), ElemType::Int(IntKind::I64)] {
            for (outer, axis_len, k) in [
                (3, 128, 128),
                (2, 129, 129),
                (2, 1025, 1025),
                (1, CUBE_SORT_MAX, 10),
                (1, CUBE_SORT_MAX + 1, CUBE_SORT_MAX + 1),
            ] {
                let shape = SortShape {
                    outer,
                    axis_len,
                    inner: 1,
                    k,
                };
                check(&client, elem, shape, SortOrder::Descending, plan);
            }
        }
    }
}

#[test]
fn radix_select_around_its_tiles_and_the_kth_key() {
    let Some(client) = client() else { return };
    // Select tiles hold 2,048 keys: one tile, one past it, and several; `k` of 1, a few, one
    // past a tile of candidates, and the whole axis. The palette of six values makes the `k`-th
    // key tie with many others, so the first `remaining` equal keys decide the result.
    let elems = [
        ElemType::Float(FloatKind::F32),
        ElemType::Int(IntKind::I64),
        ElemType::UInt(UIntKind::U8),
        ElemType::Float(FloatKind::F16),
    ];
    let shapes = [
        (2, 2048, 1, 1),
        (1, 2049, 2, 3),
        (3, 5000, 1, 129),
        (1, 6000, 1, 6000),
        (1, 4500, 1, 2049),
    ];
    check_every_plan(&client, &elems, &shapes);
}

#[test]
fn an_axis_whose_count_rows_take_several_scan_passes() {
    let Some(client) = client() else { return };
    // Tiles of 2,048 keys and scan passes of 2,048 table entries: an axis of more than 2,048
    // tiles scans each (digit) row of its table in several passes, carrying the sum across.
    // Bytes take one radix pass, which keeps the axis affordable.
    let plan = SortPlan {
        planes: false,
        ..SortPlan::for_client(&client)
    };
    let shape = SortShape {
        outer: 1,
        axis_len: 2048 * 2048 + 2049,
        inner: 1,
        k: 2048 * 2048 + 2049,
    };
    check(
        &client,
        ElemType::UInt(UIntKind::U8),
        shape,
        SortOrder::Descending,
        plan,
    );
}

#[test]
fn many_short_sequences_share_the_scan_cubes() {
    let Some(client) = client() else { return };
    for plan in plans(&client) {
        let shape = SortShape {
            outer: 400,
            axis_len: 150,
            inner: 1,
            k: 150,
        };
        check(
            &client,
            ElemType::Int(IntKind::I32),
            shape,
            SortOrder::Ascending,
            plan,
        );
    }
}

#[test]
fn refusals_launch_nothing() {
    let Some(client) = client() else { return };
    let input = SortInput {
        values: client.create_from_slice(&[0u8; 64]),
        elem: ElemType::Float(FloatKind::F32),
    };
    let output = |indices_elem| SortOutput {
        values: client.create_from_slice(&[0u8; 64]),
        indices: client.create_from_slice(&[0u8; 64]),
        indices_elem,
    };
    let shape = SortShape {
        outer: 1,
        axis_len: 16,
        inner: 1,
        k: 16,
    };
    let plan = SortPlan::for_client(&client);
    let i32_out = output(ElemType::Int(IntKind::I32));
    let too_many = SortShape { k: 17, ..shape };
    assert!(matches!(
        launch_top_k(
            &client,
            &input,
            &i32_out,
            too_many,
            SortOrder::Ascending,
            plan
        ),
        Err(KernelError::ShapeMismatch { .. })
    ));
    let float_indices = output(ElemType::Float(FloatKind::F32));
    assert!(matches!(
        launch_top_k(
            &client,
            &input,
            &float_indices,
            shape,
            SortOrder::Ascending,
            plan
        ),
        Err(KernelError::NotAnInteger { .. })
    ));
    let long = SortShape {
        axis_len: 300,
        k: 1,
        outer: 1,
        inner: 1,
    };
    let u8_out = output(ElemType::UInt(UIntKind::U8));
    let big_input = SortInput {
        values: client.create_from_slice(&[0u8; 1200]),
        elem: ElemType::Float(FloatKind::F32),
    };
    assert!(matches!(
        launch_top_k(
            &client,
            &big_input,
            &u8_out,
            long,
            SortOrder::Ascending,
            plan
        ),
        Err(KernelError::ValueOutOfRange { .. })
    ));
    let bools = SortInput {
        values: client.create_from_slice(&[0u8; 64]),
        elem: ElemType::Bool,
    };
    assert!(matches!(
        launch_top_k(&client, &bools, &i32_out, shape, SortOrder::Ascending, plan),
        Err(KernelError::UnsupportedType { .. })
    ));
    let small = SortShape {
        axis_len: 32,
        k: 32,
        ..shape
    };
    assert!(matches!(
        launch_top_k(&client, &input, &i32_out, small, SortOrder::Ascending, plan),
        Err(KernelError::BufferTooSmall { .. })
    ));
}
