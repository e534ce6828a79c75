//! The deterministic strategy's own methods on their own: `Assign` of the latest rows
//! (`scatter_nd_assign_latest`) against a host loop, and float
//! `Add`'s exact sums along the sorted rows (`scatter_nd_sorted_sum_*`) at the edges of `f32`
//! against IEEE's sums, and on random rows, whose bits no permutation of the rows may change
//! (the sum is exact before its one rounding, so any order of the terms, and any cut of a run
//! into segments, gives it).

mod common;

use burn_dml_ops_kernels::scatter_nd::{ReduceOp, ScatterReduction, ScatterStrategy};
use common::scatter::Scatter;
use common::{GUARD_BYTE, bytes, client, xorshift};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;
use proptest::prelude::*;

/// The smallest normal `f32`.
const MIN_NORMAL: f32 = f32::MIN_POSITIVE;

/// Deterministic `Assign`, moving the latest rows' groups of columns,
/// on 32- and 64-bit data (OpenGL holds 64-bit data as word
/// pairs) with slices moved in vectors (8, 4) and element by element (3), many duplicates and
/// tuples out of range: the update latest in index order lands, as in a host loop.
#[test]
fn assign_keeps_the_latest_row() {
    let Some(client) = client() else { return };
    let (rows, len) = (5000usize, 40usize);
    // Targets 0..40 with duplicates, and every 13th tuple out of range (skipped).
    let indices: Vec<i32> = (0..rows as i32)
        .map(|r| if r % 13 == 12 { 99 } else { (r * 7) % 41 - 1 })
        .collect();
    for elem in [
        ElemType::Float(FloatKind::F32),
        ElemType::UInt(UIntKind::U32),
        ElemType::Int(IntKind::I64),
    ] {
        let width = elem.size();
        for slice in [8usize, 4, 3] {
            let row_bytes = slice * width;
            let values = bytes(len * row_bytes, 5);
            let updates = bytes(rows * row_bytes, 6);
            let mut expected = values.clone();
            for (row, &i) in indices.iter().enumerate() {
                let target = if i < 0 { i + len as i32 } else { i };
                if (0..len as i32).contains(&target) {
                    let at = target as usize * row_bytes;
                    expected[at..at + row_bytes]
                        .copy_from_slice(&updates[row * row_bytes..(row + 1) * row_bytes]);
                }
            }
            let mut buffer = values.clone();
            buffer.resize(values.len() + 8, GUARD_BYTE);
            let strategy = ScatterStrategy::Deterministic;
            let scatter = Scatter {
                dims: vec![len],
                slice,
                strategy: Some(strategy),
                ..Scatter::new(elem, &buffer, &indices, &updates, ScatterReduction::Assign)
            };
            assert_eq!(
                scatter.built_kernels(&client),
                [
                    "ScatterNdClear",
                    "ScatterNdLinkRows",
                    "ScatterNdAssignLatest"
                ],
                "{elem} slice {slice} {strategy:?}: the kernels launched"
            );
            let (result, used) = scatter.run(&client).unwrap();
            assert_eq!(used, strategy);
            assert_eq!(
                result[..values.len()],
                expected[..],
                "{elem} slice {slice} {strategy:?}: the latest rows land"
            );
            assert!(
                result[values.len()..].iter().all(|&b| b == GUARD_BYTE),
                "{elem} slice {slice} {strategy:?}: guard bytes"
            );
        }
    }
}

/// Deterministic f32 `Add` at the edges of the format, with enough rows that the hot targets'
/// runs take nodes of several levels: sole rows (subnormal operands and sums, zero
/// sums of either sign, overflow, infinities, a NaN with a payload) give IEEE's sum, a NaN the
/// canonical one; hot targets whose rows mix magnitudes from the subnormals to cancelling
/// maxima, with an infinity, both infinities or a NaN somewhere along the run, give the
/// special result.
#[test]
fn float_add_at_the_edges_of_the_format() {
    let Some(client) = client() else { return };
    let nan = f32::from_bits(0x7FC0_0000);
    let sole: [(f32, f32); 11] = [
        (1.5, 0.25),
        (0.0, 2.0),
        (MIN_NORMAL / 4.0, 1.0),
        (MIN_NORMAL, -MIN_NORMAL / 2.0),
        (1.0, -1.0),
        (-0.0, -0.0),
        (-0.0, 0.0),
        (f32::MAX, f32::MAX),
        (f32::INFINITY, 1.0),
        (f32::from_bits(0x7F80_0001), 1.0),
        (-MIN_NORMAL / 8.0, -MIN_NORMAL / 8.0),
    ];
    let (slice, hot, rows_per_hot) = (3usize, 4usize, 900usize);
    let len = hot + sole.len() + 1;
    let mut values = vec![0f32; len * slice];
    let mut indices = Vec::new();
    let mut updates = Vec::new();
    let mut random = xorshift(0x2545_F491);
    for row in 0..hot * rows_per_hot {
        let target = row % hot;
        // Every 97th row of a target skipped (out of range).
        indices.push(if row % 97 == 50 {
            len as i32 + 5
        } else {
            target as i32
        });
        for col in 0..slice {
            let bits = random() as u32;
            let value = match (row / hot) % 5 {
                // Any finite value of either sign, from the subnormals up.
                0 | 1 => f32::from_bits(bits & 0xFF7F_FFFF),
                2 => f32::from_bits(bits & 0x807F_FFFF),
                3 => f32::MAX,
                _ => -f32::MAX,
            };
            updates.push(value);
            if row == 1800 + target && col == target % slice {
                // Target 1 (column 1) meets +inf, 2 (column 2) both infinities, 3 a NaN.
                match target {
                    1 => *updates.last_mut().unwrap() = f32::INFINITY,
                    2 => *updates.last_mut().unwrap() = f32::INFINITY,
                    3 => *updates.last_mut().unwrap() = f32::from_bits(0xFF80_0123),
                    _ => {}
                }
            }
            if row == 2400 + 2 && col == 2 {
                *updates.last_mut().unwrap() = f32::NEG_INFINITY;
            }
        }
    }
    for (i, &(value, update)) in sole.iter().enumerate() {
        let target = hot + i;
        indices.push(target as i32);
        for col in 0..slice {
            values[target * slice + col] = value;
            updates.push(update);
        }
    }
    let expected_sole: Vec<u32> = sole
        .iter()
        .map(|&(value, update)| {
            let sum = value + update;
            if sum.is_nan() { nan } else { sum }.to_bits()
        })
        .collect();
    let mut buffer = f32::as_bytes(&values).to_vec();
    buffer.resize(buffer.len() + 8, GUARD_BYTE);
    let strategy = ScatterStrategy::Deterministic;
    let kernel = "ScatterNdSortedSumJoin";
    let scatter = Scatter {
        dims: vec![len],
        slice,
        strategy: Some(strategy),
        ..Scatter::new(
            ElemType::Float(FloatKind::F32),
            &buffer,
            &indices,
            f32::as_bytes(&updates),
            ScatterReduction::Reduce(ReduceOp::Add),
        )
    };
    let kernels = scatter.built_kernels(&client);
    assert!(
        kernels.iter().any(|k| k == kernel),
        "{strategy:?}: {kernel} among {kernels:?}"
    );
    let (result, used) = scatter.run(&client).unwrap();
    assert_eq!(used, strategy);
    let bits = u32::from_bytes(&result[..values.len() * 4]).to_vec();
    for (i, &want) in expected_sole.iter().enumerate() {
        for col in 0..slice {
            assert_eq!(
                bits[(hot + i) * slice + col],
                want,
                "{strategy:?}: sole pair {:?}, column {col}",
                sole[i]
            );
        }
    }
    assert_eq!(
        bits[slice + 1],
        f32::INFINITY.to_bits(),
        "{strategy:?}: +inf"
    );
    assert_eq!(
        bits[2 * slice + 2],
        nan.to_bits(),
        "{strategy:?}: both infinities"
    );
    assert_eq!(bits[3 * slice], nan.to_bits(), "{strategy:?}: a NaN");
    assert!(
        result[values.len() * 4..].iter().all(|&b| b == GUARD_BYTE),
        "{strategy:?}: guard bytes"
    );
}

/// Deterministic float `Add` of `rows` rows of `slice` elements of `elem` (bits from `seed`)
/// onto `len` targets (`hot`: `row % len`, else scattered, every 11th row out of range), and of
/// the same rows in an order shuffled by `seed`: the same bits, and nothing written past the
/// data.
fn permuting_rows_changes_no_bit(
    elem: ElemType,
    rows: usize,
    slice: usize,
    len: usize,
    hot: bool,
    seed: u64,
) {
    let width = elem.size();
    let mut random = xorshift(seed);
    let indices: Vec<i32> = (0..rows)
        .map(|r| match (r % 11, hot) {
            (10, _) => len as i32 + 3,
            (_, true) => (r % len) as i32,
            _ => (random() % len as u64) as i32,
        })
        .collect();
    // Bits of every exponent, finite but for one element in 64 (an infinity or a NaN there
    // at times): the exponent's lowest bit cleared keeps it below the top.
    let low_exponent_bit = match elem {
        ElemType::Float(FloatKind::F32) => 1u64 << 23,
        ElemType::Float(FloatKind::F16) => 1 << 10,
        _ => 1 << 7,
    };
    let mut data = |count: usize| -> Vec<u8> {
        (0..count)
            .flat_map(|_| {
                let bits = random();
                let bits = if bits.is_multiple_of(64) {
                    bits
                } else {
                    bits & !low_exponent_bit
                };
                bits.to_le_bytes().into_iter().take(width)
            })
            .collect()
    };
    let values = data(len * slice);
    let updates = data(rows * slice);
    // A Fisher-Yates shuffle of the rows, indices and updates together.
    let mut order: Vec<usize> = (0..rows).collect();
    for i in (1..rows).rev() {
        order.swap(i, (random() % (i as u64 + 1)) as usize);
    }
    let row_bytes = slice * width;
    let shuffled_indices: Vec<i32> = order.iter().map(|&r| indices[r]).collect();
    let shuffled_updates: Vec<u8> = order
        .iter()
        .flat_map(|&r| updates[r * row_bytes..(r + 1) * row_bytes].to_vec())
        .collect();
    let mut buffer = values.clone();
    buffer.resize(values.len() + 8, GUARD_BYTE);
    let strategy = ScatterStrategy::Deterministic;
    let results: Vec<Vec<u8>> = [(&indices, &updates), (&shuffled_indices, &shuffled_updates)]
        .into_iter()
        .map(|(indices, updates)| {
            let (result, used) = Scatter {
                dims: vec![len],
                slice,
                strategy: Some(strategy),
                ..Scatter::new(
                    elem,
                    &buffer,
                    indices,
                    updates,
                    ScatterReduction::Reduce(ReduceOp::Add),
                )
            }
            .run(&client().expect("a client"))
            .unwrap();
            assert_eq!(used, strategy);
            assert!(
                result[values.len()..].iter().all(|&b| b == GUARD_BYTE),
                "{elem} {strategy:?}: guard bytes"
            );
            result
        })
        .collect();
    assert_eq!(
        results[0], results[1],
        "{elem} {strategy:?}: {rows} rows of {slice} onto {len} targets (hot: {hot}): \
         shuffling the rows changed the sum"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random shapes, duplication and bits, with runs short and long enough to be cut into
    /// segments: the same bits in any order of the rows, for f32, f16 and bf16.
    #[test]
    fn float_add_ignores_the_order_of_the_rows(
        kind in 0usize..3,
        rows in 1usize..1500,
        slice in 1usize..7,
        len in 1usize..40,
        hot in any::<bool>(),
        seed in any::<u64>(),
    ) {
        if client().is_none() {
            return Ok(());
        }
        let elem = [FloatKind::F32, FloatKind::F16, FloatKind::BF16][kind];
        permuting_rows_changes_no_bit(ElemType::Float(elem), rows, slice, len, hot, seed);
    }
}
