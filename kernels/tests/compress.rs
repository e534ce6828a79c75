//! `launch_compress` on wgpu against a host oracle, through each way the last launch moves the
//! values: typed vectors, whole 32-bit words (types the runtime cannot bind, slices of whole
//! words) and packed words (8- and 16-bit elements the runtime cannot bind, odd slices); the
//! bytes past the output left as they were; every plan; and the launcher's errors.

mod common;

use burn_dml_ops_kernels::KernelError;
use burn_dml_ops_kernels::StorageWidth;
use burn_dml_ops_kernels::compress::{
    CompressInput, CompressOutput, CompressShape, launch_compress,
};
use burn_dml_ops_kernels::nonzero::{CompactionPlan, CubeScan};
use common::{GUARD, GUARD_BYTE, INTEGERS, binds, bytes, client};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;
use proptest::prelude::*;

const I32: ElemType = ElemType::Int(IntKind::I32);

/// The expected output bytes: for each outer index, the selected slices' bytes in order, then
/// zero bytes up to `slices` slices.
fn oracle(data: &[u8], width: usize, shape: CompressShape, condition: &[u8]) -> (i32, Vec<u8>) {
    let slice = shape.inner * width;
    let selected: Vec<usize> = (0..shape.slices).filter(|&i| condition[i] != 0).collect();
    let mut out = Vec::new();
    for o in 0..shape.outer {
        for &s in &selected {
            let start = (o * shape.axis_len + s) * slice;
            out.extend_from_slice(&data[start..start + slice]);
        }
        out.resize((o + 1) * shape.slices * slice, 0);
    }
    (selected.len() as i32, out)
}

/// Runs the launcher on `data` (elements of `elem`) and a u8 `condition`, into an output of
/// whole words followed by `GUARD` bytes of `GUARD_BYTE`; returns the count and all the
/// output's bytes.
fn run(
    client: &Client,
    data: &[u8],
    elem: ElemType,
    condition: &[u8],
    shape: CompressShape,
    plan: CompactionPlan,
) -> Result<(i32, Vec<u8>), KernelError> {
    let width = elem.size();
    let out_bytes = shape.outer * shape.slices * shape.inner * width;
    let whole = out_bytes.div_ceil(4) * 4;
    let output = client.create_from_slice(&vec![GUARD_BYTE; whole + GUARD]);
    let count = client.create_from_slice(&[0u8; 4]);
    // Conditions are read as u32 words where u8 cannot be bound: keep whole words.
    let mut condition_bytes = condition.to_vec();
    condition_bytes.resize(condition.len().div_ceil(4) * 4 + 4, 0);
    let mut data_bytes = data.to_vec();
    data_bytes.resize(data.len().div_ceil(4) * 4 + 4, 0);
    launch_compress(
        client,
        &CompressInput {
            values: client.create_from_slice(&data_bytes),
            elem,
            condition: client.create_from_slice(&condition_bytes),
            condition_width: StorageWidth::W8,
        },
        &CompressOutput {
            count: count.clone(),
            count_elem: I32,
            values: output
                .clone()
                .offset_end((whole + GUARD - out_bytes) as u64),
        },
        shape,
        plan,
    )?;
    let count = i32::from_le_bytes(client.read_one(count).unwrap()[..4].try_into().unwrap());
    Ok((count, client.read_one(output).unwrap().to_vec()))
}

fn check(client: &Client, elem: ElemType, shape: CompressShape, density: u8, seed: u64) {
    let small = CompactionPlan {
        cube_size: 32,
        per_unit: 2,
        ..CompactionPlan::new(CubeScan::Shared)
    };
    check_plans(
        client,
        elem,
        shape,
        density,
        seed,
        &[CompactionPlan::for_client(client), small],
    );
}

fn check_plans(
    client: &Client,
    elem: ElemType,
    shape: CompressShape,
    density: u8,
    seed: u64,
    plans: &[CompactionPlan],
) {
    let width = elem.size();
    let data = bytes(shape.outer * shape.axis_len * shape.inner * width, seed);
    let condition: Vec<u8> = bytes(shape.slices, seed ^ 3)
        .into_iter()
        .map(|b| u8::from(b < density))
        .collect();
    for &plan in plans {
        let (count, out) = run(client, &data, elem, &condition, shape, plan)
            .unwrap_or_else(|err| panic!("{elem:?} {shape:?}: {err}"));
        let (expected_count, expected) = oracle(&data, width, shape, &condition);
        let case = format!("{elem:?} {shape:?} {plan:?}");
        assert_eq!(count, expected_count, "{case}");
        assert_eq!(out[..expected.len()], expected[..], "{case}");
        // Bytes of the last word past the output, and the guard after it, keep their value.
        assert!(
            out[expected.len()..].iter().all(|&b| b == GUARD_BYTE),
            "{case}"
        );
    }
}

fn shape(outer: usize, axis_len: usize, inner: usize, slices: usize) -> CompressShape {
    CompressShape {
        outer,
        axis_len,
        inner,
        slices,
    }
}

#[test]
fn every_width_and_slice_length() {
    let Some(client) = client() else { return };
    let elems = INTEGERS.into_iter().chain([
        ElemType::Float(FloatKind::F32),
        ElemType::Float(FloatKind::F16),
    ]);
    for elem in elems {
        // Which way the values move: typed where the runtime binds the type (or its unsigned
        // twin), else words or packed words by the slice's bytes. Elements of a bound width
        // (`inner` 1, one outer index) go through the compaction's own write instead.
        let typed = binds(&client, elem);
        for inner in [1, 2, 3, 4, 5, 8] {
            let whole_words = (inner * elem.size()).is_multiple_of(4);
            let path = match (typed, whole_words) {
                (true, _) => "typed, and the compaction's write for elements",
                (false, true) => "words",
                (false, false) => "packed",
            };
            eprintln!("{elem:?} inner {inner}: {path}");
            check(&client, elem, shape(3, 9, inner, 7), 128, inner as u64);
            check(&client, elem, shape(1, 1_000, inner, 1_000), 40, 7);
        }
    }
}

/// Elements (one outer index, slices of one) go through the compaction's write, which stores
/// the selected values: every plan, the plane layouts included where they run, at densities
/// that make tiles empty, very sparse, sparse, dense and full.
#[test]
fn elements_through_every_plan() {
    let Some(client) = client() else { return };
    let plans = common::nonzero::plans();
    for elem in [
        I32,
        ElemType::UInt(UIntKind::U64),
        ElemType::UInt(UIntKind::U8),
    ] {
        if !binds(&client, elem) {
            eprintln!("{elem:?}: the runtime cannot bind it, so it moves as words");
        }
        for density in [0, 8, 40, 128, 255] {
            check_plans(&client, elem, shape(1, 5_003, 1, 5_003), density, 9, &plans);
        }
        check_plans(&client, elem, shape(1, 5_003, 1, 4_000), 128, 2, &plans);
    }
}

#[test]
fn empty_and_extreme_conditions() {
    let Some(client) = client() else { return };
    let u8_ = ElemType::UInt(UIntKind::U8);
    for elem in [I32, u8_] {
        check(&client, elem, shape(2, 5, 3, 0), 128, 1);
        check(&client, elem, shape(0, 5, 3, 5), 128, 1);
        check(&client, elem, shape(2, 5, 0, 5), 128, 1);
        check(&client, elem, shape(1, 0, 4, 0), 128, 1);
        check(&client, elem, shape(2, 50, 3, 50), 0, 1);
        check(&client, elem, shape(2, 50, 3, 50), 255, 1);
    }
}

#[test]
fn errors_launch_nothing() {
    let Some(client) = client() else { return };
    let plan = CompactionPlan::for_client(&client);
    let data = [1u8; 64];
    let err = run(&client, &data, I32, &[1; 5], shape(1, 4, 1, 5), plan).unwrap_err();
    assert!(matches!(err, KernelError::ShapeMismatch { .. }), "{err}");
    let input = CompressInput {
        values: client.create_from_slice(&data),
        elem: I32,
        condition: client.create_from_slice(&[1u8; 16]),
        condition_width: StorageWidth::W8,
    };
    let output = |count_elem| CompressOutput {
        count: client.create_from_slice(&[0u8; 8]),
        count_elem,
        values: client.create_from_slice(&data),
    };
    let err = launch_compress(
        &client,
        &input,
        &output(ElemType::Float(FloatKind::F32)),
        shape(1, 16, 1, 16),
        plan,
    )
    .unwrap_err();
    assert!(matches!(err, KernelError::NotAnInteger { .. }), "{err}");
    let err =
        launch_compress(&client, &input, &output(I32), shape(2, 16, 1, 16), plan).unwrap_err();
    assert!(
        matches!(err, KernelError::BufferTooSmall { role: "input", .. }),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_shapes_match_the_oracle(
        outer in 0usize..5,
        axis_len in 0usize..300,
        inner in 0usize..7,
        shorter in 0usize..40,
        density in any::<u8>(),
        elem in prop::sample::select(INTEGERS.to_vec()),
        seed in any::<u64>(),
    ) {
        let Some(client) = client() else { return Ok(()) };
        let slices = axis_len.saturating_sub(shorter);
        check(&client, elem, shape(outer, axis_len, inner, slices), density, seed);
    }
}
