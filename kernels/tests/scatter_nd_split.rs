//! `launch_scatter_nd` on 64-bit data, and on indices of every integer width, against host
//! computations. Where the runtime binds no 64-bit type (wgpu's OpenGL backend) the data is
//! held as 32-bit word pairs; where it cannot bind an index type (8- and 16-bit ones on WGSL and
//! OpenGL, 64-bit ones on OpenGL) one launch resolves the indices from 32-bit words first. Each
//! test says which path ran.

mod common;

use burn_dml_ops_kernels::KernelError;
use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ReduceOp, ScatterReduction, ScatterStrategy, data_in_words,
};
use common::scatter::{Scatter, gather};
use common::{INTEGERS, binds, bytes, client, float_replaces};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;

const WIDE: [ElemType; 3] = [
    ElemType::UInt(UIntKind::U64),
    ElemType::Int(IntKind::I64),
    ElemType::Float(FloatKind::F64),
];

/// `op(acc, value)` on the host for the 64-bit `elem`: integers wrap, float `Min`/`Max` follow
/// [`float_replaces`].
fn host_combine(elem: ElemType, op: ReduceOp, acc: u64, value: u64) -> u64 {
    match elem {
        ElemType::UInt(_) => match op {
            ReduceOp::Add => acc.wrapping_add(value),
            ReduceOp::Mul => acc.wrapping_mul(value),
            ReduceOp::Min => acc.min(value),
            ReduceOp::Max => acc.max(value),
        },
        ElemType::Int(_) => {
            let (a, v) = (acc as i64, value as i64);
            (match op {
                ReduceOp::Add => a.wrapping_add(v),
                ReduceOp::Mul => a.wrapping_mul(v),
                ReduceOp::Min => a.min(v),
                ReduceOp::Max => a.max(v),
            }) as u64
        }
        _ => {
            let (a, v) = (f64::from_bits(acc), f64::from_bits(value));
            let out = match op {
                ReduceOp::Min | ReduceOp::Max if float_replaces(op == ReduceOp::Min, a, v) => v,
                ReduceOp::Add => a + v,
                ReduceOp::Mul => a * v,
                _ => a,
            };
            out.to_bits()
        }
    }
}

fn same(elem: ElemType, a: u64, b: u64) -> bool {
    a == b
        || (matches!(elem, ElemType::Float(_))
            && f64::from_bits(a).is_nan()
            && f64::from_bits(b).is_nan())
}

/// 64-bit patterns with carries, signs and the float edge cases: random bits, then extremes.
fn patterns(count: usize, seed: u64) -> Vec<u64> {
    let mut values: Vec<u64> = bytes(count * 8, seed)
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let edges = [
        0,
        1,
        u64::MAX,
        u32::MAX as u64,
        1 << 32,
        1 << 63,
        (-1.5f64).to_bits(),
        0.0f64.to_bits(),
        (-0.0f64).to_bits(),
        f64::NAN.to_bits(),
        f64::INFINITY.to_bits(),
        f64::NEG_INFINITY.to_bits(),
        f64::MIN_POSITIVE.to_bits() >> 1,
    ];
    for (i, edge) in edges.into_iter().enumerate() {
        if i * 3 < count {
            values[i * 3] = edge;
        }
    }
    values
}

/// 64-bit data with every reduction: integers with duplicate targets (their result does not
/// depend on the order), f64 `Min`/`Max` with one update per target. f64 `Add`/`Mul` held in
/// words are refused; where the runtime has f64, they run typed and are checked too.
#[test]
fn wide_data_matches_the_host() {
    let Some(client) = client() else { return };
    let len = 64usize;
    for (n, elem) in WIDE.into_iter().enumerate() {
        let float = matches!(elem, ElemType::Float(_));
        for (r, op) in [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max]
            .into_iter()
            .enumerate()
        {
            let reduction = ScatterReduction::Reduce(op);
            let in_words = data_in_words(&client, elem, reduction);
            // f64 sums and products need the runtime's f64: refused where it has none.
            let refused =
                float && !binds(&client, elem) && matches!(op, ReduceOp::Add | ReduceOp::Mul);
            assert_eq!(
                in_words,
                !binds(&client, elem) && !refused,
                "{elem} {op:?}: held in words exactly where the runtime cannot bind it"
            );
            let values = patterns(len, 1 + (n * 4 + r) as u64);
            let targets: Vec<usize> = if float {
                (0..len).rev().collect()
            } else {
                (0..4 * len).map(|i| (i * 37 + r) % len).collect()
            };
            let updates = patterns(targets.len(), 100 + (n * 4 + r) as u64);
            let indices: Vec<i32> = targets.iter().map(|&t| t as i32).collect();
            let result = Scatter::new(
                elem,
                u64::as_bytes(&values),
                &indices,
                u64::as_bytes(&updates),
                reduction,
            )
            .run(&client);
            if refused {
                let err = result.unwrap_err();
                assert!(
                    matches!(err, KernelError::UnsupportedType { .. }),
                    "{elem} {op:?}: {err}"
                );
                continue;
            }
            let (bytes, ran) = result.unwrap_or_else(|err| panic!("{elem} {op:?}: {err}"));
            if in_words {
                assert_eq!(ran, ScatterStrategy::Sorted, "{elem} {op:?}");
            }
            let actual = u64::from_bytes(&bytes);
            let mut expected = values.clone();
            for (row, &t) in targets.iter().enumerate() {
                expected[t] = host_combine(elem, op, expected[t], updates[row]);
            }
            for t in 0..len {
                assert!(
                    same(elem, actual[t], expected[t]),
                    "{elem} {op:?} (words: {in_words}) element {t}: {:#x}, expected {:#x}",
                    actual[t],
                    expected[t]
                );
            }
        }
        // Assign with duplicates: each element one of its candidates, never a torn mix; word
        // pairs take the sorted rows, where the latest row lands.
        let in_words = data_in_words(&client, elem, ScatterReduction::Assign);
        let values = patterns(len, 500 + n as u64);
        let targets: Vec<usize> = (0..8 * len).map(|i| (i * 13) % (len / 2)).collect();
        let updates = patterns(targets.len(), 600 + n as u64);
        let indices: Vec<i32> = targets.iter().map(|&t| t as i32).collect();
        let (bytes, _) = Scatter::new(
            elem,
            u64::as_bytes(&values),
            &indices,
            u64::as_bytes(&updates),
            ScatterReduction::Assign,
        )
        .run(&client)
        .unwrap_or_else(|err| panic!("{elem} Assign: {err}"));
        let actual = u64::from_bytes(&bytes);
        for t in 0..len {
            let candidates: Vec<u64> = (0..targets.len())
                .filter(|&row| targets[row] == t)
                .map(|row| updates[row])
                .collect();
            let ok = match candidates.last() {
                None => actual[t] == values[t],
                Some(&latest) if in_words => actual[t] == latest,
                Some(_) => candidates.contains(&actual[t]),
            };
            assert!(ok, "{elem} Assign element {t}: {:#x}", actual[t]);
        }
    }
}

/// The gather (ScatterND's adjoint) of 64-bit data: rows of 3, one skipped.
#[test]
fn wide_gather_matches_the_host() {
    let Some(client) = client() else { return };
    for elem in WIDE {
        let input = patterns(12, 900);
        let indices = [1i32, 3, -1, 4, 0];
        let output = vec![0u8; indices.len() * 3 * 8];
        let bytes = gather(
            &client,
            elem,
            u64::as_bytes(&input),
            &output,
            &indices,
            &[4],
            3,
        )
        .unwrap_or_else(|err| panic!("{elem}: {err}"));
        let actual = u64::from_bytes(&bytes);
        for (row, &index) in indices.iter().enumerate() {
            let source = if index < 0 { index + 4 } else { index };
            for col in 0..3 {
                let expected = if (0..4).contains(&source) {
                    input[source as usize * 3 + col]
                } else {
                    0
                };
                assert_eq!(actual[row * 3 + col], expected, "{elem}: row {row}");
            }
        }
    }
}

/// Index values of every integer type around every edge, against the host's rule (a negative
/// value counts from the end once; still out of range, skipped or clamped), read typed or from
/// words. Each row adds a distinct power of two to its target, so the sums say which rows landed
/// where.
#[test]
fn indices_of_every_width_resolve_like_the_host() {
    let Some(client) = client() else { return };
    let dim = 5i128;
    let raw: [i128; 15] = [
        0,
        4,
        5,
        -1,
        -5,
        -6,
        127,
        -128,
        255,
        65_535,
        -32_768,
        (1 << 32) + 1,
        -(1 << 32) + 2,
        // Low word 2^32 - 3: -3 if the high word were ignored.
        -(1 << 32) - 3,
        i64::MIN as i128,
    ];
    let mut words_ran = Vec::new();
    for elem in INTEGERS {
        let width = elem.size();
        let signed = matches!(elem, ElemType::Int(_));
        if !binds(&client, elem) {
            words_ran.push(elem.to_string());
        }
        // Each raw value as the type stores it (two's complement, truncated), and what the
        // type reads it back as.
        let stored: Vec<i128> = raw
            .iter()
            .map(|&v| {
                let bits = v & ((1i128 << (8 * width)) - 1);
                if signed && bits >> (8 * width - 1) == 1 {
                    bits - (1i128 << (8 * width))
                } else {
                    bits
                }
            })
            .collect();
        let mut index_bytes: Vec<u8> = stored
            .iter()
            .flat_map(|&v| v.to_le_bytes()[..width].to_vec())
            .collect();
        index_bytes.resize(index_bytes.len().div_ceil(4) * 4, 0);
        for out_of_range in [OutOfRange::Skip, OutOfRange::Clamp] {
            let updates: Vec<i32> = (0..raw.len()).map(|r| 1 << r).collect();
            let (bytes, _) = Scatter {
                indices: &index_bytes,
                rows: raw.len(),
                index_elem: elem,
                out_of_range,
                strategy: Some(ScatterStrategy::Sorted),
                ..Scatter::new(
                    ElemType::Int(IntKind::I32),
                    i32::as_bytes(&[0i32; 5]),
                    &[],
                    i32::as_bytes(&updates),
                    ScatterReduction::Reduce(ReduceOp::Add),
                )
            }
            .run(&client)
            .unwrap_or_else(|err| panic!("{elem} {out_of_range:?}: {err}"));
            let actual = i32::from_bytes(&bytes).to_vec();
            let mut expected = [0i32; 5];
            for (row, &v) in stored.iter().enumerate() {
                let wrapped = if v < 0 { v + dim } else { v };
                let target = if (0..dim).contains(&wrapped) {
                    Some(wrapped)
                } else if out_of_range == OutOfRange::Clamp {
                    Some(if wrapped < 0 { 0 } else { dim - 1 })
                } else {
                    None
                };
                if let Some(t) = target {
                    expected[t as usize] += 1 << row;
                }
            }
            assert_eq!(
                actual,
                expected,
                "{elem} {out_of_range:?} (read from words: {})",
                !binds(&client, elem)
            );
        }
    }
    // On WGSL and OpenGL no 8-bit type binds: the word path must have run.
    if !binds(&client, ElemType::UInt(UIntKind::U8)) {
        assert!(words_ran.iter().any(|e| e == "u8"), "{words_ran:?}");
    }
    println!("indices read from words here: {words_ran:?}");
}

/// One element hit more often than a CPU driver runs a loop (llvmpipe stops one after 65,535
/// iterations), its winning update in row 0, which the list reaches last: every update counts,
/// held in words (OpenGL) or typed, for the reductions of each 64-bit type the runtime runs.
#[test]
fn a_wide_target_hit_70000_times() {
    let Some(client) = client() else { return };
    let rows = 70_000usize;
    let indices = vec![1i32; rows];
    for elem in WIDE {
        for op in [ReduceOp::Add, ReduceOp::Min, ReduceOp::Max] {
            let reduction = ScatterReduction::Reduce(op);
            let values = vec![0u64; 4];
            // Row 0 holds the extreme (as a float: its bits order like the value, all positive).
            let updates: Vec<u64> = (0..rows)
                .map(|row| match (op, row) {
                    (ReduceOp::Min, 0) => 1,
                    (ReduceOp::Min, _) => 5,
                    (_, 0) => 1 << 40,
                    _ => 3,
                })
                .map(|v| {
                    if elem == WIDE[2] {
                        (v as f64).to_bits()
                    } else {
                        v
                    }
                })
                .collect();
            let values = if op == ReduceOp::Min {
                vec![if elem == WIDE[2] { 9f64.to_bits() } else { 9 }; 4]
            } else {
                values
            };
            let result = Scatter::new(
                elem,
                u64::as_bytes(&values),
                &indices,
                u64::as_bytes(&updates),
                reduction,
            )
            .run(&client);
            let Ok((bytes, ran)) = result else {
                // f64 Add where the runtime has no f64 (refused, see above).
                continue;
            };
            let actual = u64::from_bytes(&bytes)[1];
            let mut expected = values[1];
            for &update in &updates {
                expected = host_combine(elem, op, expected, update);
            }
            let in_words = data_in_words(&client, elem, reduction);
            assert!(
                same(elem, actual, expected),
                "{elem} {op:?} ({ran:?}, words: {in_words}): {actual:#x}, expected {expected:#x}"
            );
        }
    }
}
