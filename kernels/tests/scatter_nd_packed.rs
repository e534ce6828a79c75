//! ScatterND on 8- and 16-bit data through `launch_scatter_nd` and `launch_gather_nd`, against a
//! host computation on the raw bits (`half` for f16/bf16 arithmetic). Where the runtime cannot
//! bind the type (8/16-bit integers and bf16 on WGSL; those and f16 on OpenGL) the data is
//! packed into 32-bit words, and each test asserts which binding ran. Outputs share their last
//! word with guard bytes that no launch may change.

mod common;

use burn_dml_ops_kernels::KernelError;
use burn_dml_ops_kernels::scatter_nd::{
    ReduceOp, ScatterReduction, ScatterStrategy, data_in_words, scatter_strategy,
};
use common::scatter::{Scatter, gather};
use common::{GUARD_BYTE, binds, bytes, client, float_replaces};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;
use half::{bf16, f16};

/// The 8- and 16-bit element types.
const NARROW: [ElemType; 6] = [
    ElemType::UInt(UIntKind::U8),
    ElemType::Int(IntKind::I8),
    ElemType::UInt(UIntKind::U16),
    ElemType::Int(IntKind::I16),
    ElemType::Float(FloatKind::F16),
    ElemType::Float(FloatKind::BF16),
];

const REDUCTIONS: [ScatterReduction; 5] = [
    ScatterReduction::Assign,
    ScatterReduction::Reduce(ReduceOp::Add),
    ScatterReduction::Reduce(ReduceOp::Mul),
    ScatterReduction::Reduce(ReduceOp::Min),
    ScatterReduction::Reduce(ReduceOp::Max),
];

/// The raw bits of element `i` of `data`, little-endian, `width` bytes each.
fn element(data: &[u8], i: usize, width: usize) -> u32 {
    (0..width).fold(0u32, |acc, b| {
        acc | (u32::from(data[i * width + b]) << (8 * b))
    })
}

fn set_element(data: &mut [u8], i: usize, width: usize, bits: u32) {
    for b in 0..width {
        data[i * width + b] = (bits >> (8 * b)) as u8;
    }
}

/// Whether two results of `elem` agree: equal bits, or both NaN for floats.
fn same(elem: ElemType, a: u32, b: u32) -> bool {
    a == b
        || match elem {
            ElemType::Float(FloatKind::F16) => {
                f16::from_bits(a as u16).is_nan() && f16::from_bits(b as u16).is_nan()
            }
            ElemType::Float(FloatKind::BF16) => {
                bf16::from_bits(a as u16).is_nan() && bf16::from_bits(b as u16).is_nan()
            }
            _ => false,
        }
}

/// `op(acc, value)` on the host, on the bits of `elem`: integers wrap, floats go through `half`
/// (which computes in f32 and rounds to nearest even), float `Min`/`Max` follow
/// [`float_replaces`].
fn host_combine(elem: ElemType, op: ReduceOp, acc: u32, value: u32) -> u32 {
    macro_rules! int {
        ($t:ty) => {{
            let (a, v) = (acc as $t, value as $t);
            (match op {
                ReduceOp::Add => a.wrapping_add(v),
                ReduceOp::Mul => a.wrapping_mul(v),
                ReduceOp::Min => a.min(v),
                ReduceOp::Max => a.max(v),
            }) as u32
                & ((1u64 << (8 * size_of::<$t>())) - 1) as u32
        }};
    }
    macro_rules! float {
        ($t:ty) => {{
            let (a, v) = (<$t>::from_bits(acc as u16), <$t>::from_bits(value as u16));
            let out = match op {
                ReduceOp::Add => a + v,
                ReduceOp::Mul => a * v,
                ReduceOp::Min | ReduceOp::Max
                    if float_replaces(op == ReduceOp::Min, a.into(), v.into()) =>
                {
                    v
                }
                _ => a,
            };
            u32::from(out.to_bits())
        }};
    }
    match elem {
        ElemType::UInt(UIntKind::U8) => int!(u8),
        ElemType::Int(IntKind::I8) => int!(i8),
        ElemType::UInt(UIntKind::U16) => int!(u16),
        ElemType::Int(IntKind::I16) => int!(i16),
        ElemType::Float(FloatKind::F16) => float!(f16),
        ElemType::Float(FloatKind::BF16) => float!(bf16),
        other => unreachable!("not a narrow type: {other}"),
    }
}

/// A scatter of `updates` (raw little-endian bytes) onto `values` at `indices` (i32, one per row,
/// slice 1) with `reduction`, returning the output's bytes, guard bytes included: `values` is
/// followed in its buffer by guard bytes up to the next word and 4 more.
fn run(
    client: &Client,
    elem: ElemType,
    values: &[u8],
    indices: &[i32],
    updates: &[u8],
    reduction: ScatterReduction,
) -> Result<(Vec<u8>, ScatterStrategy), KernelError> {
    let mut buffer = values.to_vec();
    buffer.resize(values.len().div_ceil(4) * 4 + 4, GUARD_BYTE);
    Scatter {
        dims: vec![values.len() / elem.size()],
        ..Scatter::new(elem, &buffer, indices, updates, reduction)
    }
    .run(client)
}

/// Every narrow type packs exactly where the runtime cannot bind it (or, for a reduction,
/// compute with it), and packed data always takes the sorted rows; asking a packed scatter for
/// plain stores is an error that launches nothing.
#[test]
fn narrow_data_is_packed_where_the_runtime_cannot_bind_it() {
    let Some(client) = client() else { return };
    let mut packed = Vec::new();
    for elem in NARROW {
        for reduction in REDUCTIONS {
            let packs = data_in_words(&client, elem, reduction);
            let unsigned = ElemType::UInt(match elem.size() {
                1 => UIntKind::U8,
                _ => UIntKind::U16,
            });
            if !binds(&client, elem) {
                // Assign binds the unsigned type of the width where the runtime has one.
                let typed = reduction == ScatterReduction::Assign && binds(&client, unsigned);
                assert_eq!(packs, !typed, "{elem} {reduction:?}");
            }
            let min_max = matches!(
                reduction,
                ScatterReduction::Reduce(ReduceOp::Min | ReduceOp::Max)
            );
            if matches!(elem, ElemType::Float(_)) && min_max && !binds(&client, unsigned) {
                // Float Min/Max choose on raw bits: packed where no 16-bit integer type binds
                // (f16 on WGSL too, which binds f16 itself).
                assert!(packs, "{elem} {reduction:?}");
            }
            if packs {
                packed.push(format!("{elem} {reduction:?}"));
                assert!(
                    scatter_strategy(&client, elem, reduction) == ScatterStrategy::Sorted,
                    "{elem} {reduction:?}"
                );
            }
        }
        if data_in_words(&client, elem, ScatterReduction::Assign) {
            let err = Scatter {
                strategy: Some(ScatterStrategy::Store),
                ..Scatter::new(elem, &[0u8; 4], &[0], &[1u8; 4], ScatterReduction::Assign)
            }
            .run(&client)
            .unwrap_err();
            assert!(
                matches!(err, KernelError::InvalidPlan { .. }),
                "{elem}: {err}"
            );
        }
    }
    // WGSL binds no 8-bit type: on lavapipe and on OpenGL the packed path must have run.
    if !binds(&client, ElemType::UInt(UIntKind::U8)) {
        assert!(!packed.is_empty());
    }
    println!("packed here: {packed:?}");
}

/// Every narrow type and reduction on 7 elements (odd, so the last word holds a guard byte or
/// two), with neighbours in one word, duplicate targets (integers; floats take one update per
/// target, since their sums depend on the order) and out-of-range rows that are skipped.
#[test]
fn narrow_scatter_matches_the_host() {
    let Some(client) = client() else { return };
    for (n, elem) in NARROW.into_iter().enumerate() {
        let width = elem.size();
        let float = matches!(elem, ElemType::Float(_));
        let values = bytes(7 * width, 11 + n as u64);
        for (r, reduction) in REDUCTIONS.into_iter().enumerate() {
            let indices: Vec<i32> = if float {
                vec![3, -1, 0, 9, 1, -3, 5, 2, -8]
            } else {
                (0..40).map(|i| ((i * 5 + r as i32) % 10) - 2).collect()
            };
            let updates = bytes(indices.len() * width, 100 + (n * 5 + r) as u64);
            let (actual, ran) = run(&client, elem, &values, &indices, &updates, reduction)
                .unwrap_or_else(|err| panic!("{elem} {reduction:?}: {err}"));
            assert_eq!(ran, scatter_strategy(&client, elem, reduction));
            // Guard bytes after the 7 elements, in the last word and past it, are untouched.
            assert!(
                actual[7 * width..].iter().all(|&b| b == GUARD_BYTE),
                "{elem} {reduction:?}: a guard byte changed: {:?}",
                &actual[7 * width..]
            );
            for target in 0..7usize {
                let rows: Vec<usize> = (0..indices.len())
                    .filter(|&row| {
                        let i = indices[row];
                        (if i < 0 { i + 7 } else { i }) == target as i32
                    })
                    .collect();
                let got = element(&actual, target, width);
                let before = element(&values, target, width);
                let context = format!("{elem} {reduction:?}, element {target} (rows {rows:?})");
                match reduction {
                    ScatterReduction::Assign if rows.is_empty() => {
                        assert_eq!(got, before, "{context}")
                    }
                    // Packed data takes the sorted rows: the latest row lands.
                    ScatterReduction::Assign if data_in_words(&client, elem, reduction) => {
                        let latest = element(&updates, *rows.last().unwrap(), width);
                        assert_eq!(got, latest, "{context}: the latest row")
                    }
                    ScatterReduction::Assign => assert!(
                        rows.iter().any(|&row| element(&updates, row, width) == got),
                        "{context}: {got:#x} is no candidate"
                    ),
                    ScatterReduction::Reduce(op) => {
                        let expected = rows.iter().fold(before, |acc, &row| {
                            host_combine(elem, op, acc, element(&updates, row, width))
                        });
                        assert!(
                            same(elem, got, expected),
                            "{context}: {got:#x}, expected {expected:#x}"
                        );
                    }
                }
            }
        }
    }
}

/// f16 and bf16 `Add`, `Mul`, `Min` and `Max` on 4096 random bit patterns each (subnormals,
/// infinities, NaNs, overflow, ties), one update per element, bit for bit against `half`, where
/// the data is packed (bf16 on WGSL and OpenGL, f16 on OpenGL, and f16 `Min`/`Max` on WGSL;
/// elsewhere the runtime's own 16-bit arithmetic runs, which this test does not judge).
#[test]
fn packed_float_arithmetic_rounds_like_half() {
    let Some(client) = client() else { return };
    let mut checked = 0;
    for elem in [
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
    ] {
        for (r, op) in [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max]
            .into_iter()
            .enumerate()
        {
            let len = 4096usize;
            let mut values = bytes(2 * len, 7 + r as u64);
            let mut updates = bytes(2 * len, 70 + r as u64);
            // Some exact zeros of both signs, and equal magnitudes, for Min/Max.
            for i in (0..len).step_by(17) {
                set_element(&mut values, i, 2, 0x8000 * (i as u32 % 2));
                set_element(&mut updates, i, 2, 0x8000 * (i as u32 / 17 % 2));
            }
            let indices: Vec<i32> = (0..len as i32).rev().collect();
            checked += usize::from(one_update_each(
                &client, elem, op, &values, &indices, &updates,
            ));
        }
    }
    println!("{checked} packed float reductions checked");
}

/// Scatters 16-bit float `updates` into `values` with `op`, each row onto its own element
/// (`indices` a permutation), and checks every element bit for bit against `half`: `false`,
/// with a line saying so, where the runtime computes `op` on `elem` itself (the data is not
/// packed), which the packed tests do not judge.
fn one_update_each(
    client: &Client,
    elem: ElemType,
    op: ReduceOp,
    values: &[u8],
    indices: &[i32],
    updates: &[u8],
) -> bool {
    let reduction = ScatterReduction::Reduce(op);
    if !data_in_words(client, elem, reduction) {
        println!("{elem} {op:?}: typed on this runtime, not checked here");
        return false;
    }
    let (actual, _) = run(client, elem, values, indices, updates, reduction)
        .unwrap_or_else(|err| panic!("{elem} {op:?}: {err}"));
    for (row, &target) in indices.iter().enumerate() {
        let target = target as usize;
        let (a, v) = (element(values, target, 2), element(updates, row, 2));
        let expected = host_combine(elem, op, a, v);
        let got = element(&actual, target, 2);
        assert!(
            same(elem, got, expected),
            "{elem} {op:?}({a:#06x}, {v:#06x}) = {got:#06x}, expected {expected:#06x}"
        );
    }
    true
}

/// bf16 `Add` and `Mul` on every pair of 144 values chosen around the edges of its range
/// (subnormals, the smallest normals, products and sums that land in the subnormal range or
/// overflow, values near 2, where the packed sum changes method, infinities and NaN), bit for
/// bit against `half`. bf16's subnormals are f32's, which GPUs commonly flush to zero: on an
/// H100 through WGSL, f32 arithmetic returned 0 for `0x0034 + 0` before the packed kernel
/// computed them without f32 subnormals.
#[test]
fn bf16_subnormal_sums_and_products_round_like_half() {
    let Some(client) = client() else { return };
    let elem = ElemType::Float(FloatKind::BF16);
    let mut edges = Vec::new();
    for exponent in [
        0u32, 1, 2, 7, 8, 60, 63, 64, 65, 66, 70, 100, 120, 126, 127, 128, 200, 255,
    ] {
        for mantissa in [0u32, 1, 0x40, 0x7F] {
            for sign in [0u32, 0x8000] {
                edges.push(sign | exponent << 7 | mantissa);
            }
        }
    }
    let len = edges.len() * edges.len();
    let (mut values, mut updates) = (vec![0u8; 2 * len], vec![0u8; 2 * len]);
    for (i, (&a, &b)) in edges
        .iter()
        .flat_map(|a| edges.iter().map(move |b| (a, b)))
        .enumerate()
    {
        set_element(&mut values, i, 2, a);
        set_element(&mut updates, i, 2, b);
    }
    let indices: Vec<i32> = (0..len as i32).collect();
    let checked = [ReduceOp::Add, ReduceOp::Mul]
        .into_iter()
        .filter(|&op| one_update_each(&client, elem, op, &values, &indices, &updates))
        .count();
    println!("{checked} bf16 reductions checked on {len} pairs each");
}

/// Packed data with a few hot targets (nodes of several levels, see the `scatter_nd` suite's
/// `hot_targets_of_a_large_tensor_match_the_host`): u8 and i16, every reduction, 4000 rows onto
/// 8000 elements, 3000 of them onto one element and 600 onto another, some skipped, the rest
/// distinct, along the sorted rows, against a sequential fold on the host; the guard
/// bytes past the data stay.
#[test]
fn hot_targets_of_packed_data_match_the_host() {
    let Some(client) = client() else { return };
    let (rows, len) = (4000usize, 8000usize);
    let indices: Vec<i32> = (0..rows as i32)
        .map(|r| match r % 20 {
            0..=14 => 17,
            15..=17 => -1,
            18 => 9000 + r,
            _ => 100 + r,
        })
        .collect();
    for elem in [ElemType::UInt(UIntKind::U8), ElemType::Int(IntKind::I16)] {
        let width = elem.size();
        for (r, op) in [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max]
            .into_iter()
            .enumerate()
        {
            let reduction = ScatterReduction::Reduce(op);
            if !data_in_words(&client, elem, reduction) {
                println!("{elem} {op:?}: typed on this runtime, not checked here");
                continue;
            }
            let values = bytes(len * width, 40 + r as u64);
            let updates = bytes(rows * width, 50 + r as u64);
            let mut expected: Vec<u32> = (0..len).map(|i| element(&values, i, width)).collect();
            for (row, &i) in indices.iter().enumerate() {
                let target = if i < 0 { i + len as i32 } else { i };
                if (0..len as i32).contains(&target) {
                    let t = target as usize;
                    expected[t] =
                        host_combine(elem, op, expected[t], element(&updates, row, width));
                }
            }
            let mut buffer = values.clone();
            buffer.resize(values.len().div_ceil(4) * 4 + 4, GUARD_BYTE);
            for strategy in [ScatterStrategy::Sorted] {
                let (actual, _) = Scatter {
                    dims: vec![len],
                    strategy: Some(strategy),
                    ..Scatter::new(elem, &buffer, &indices, &updates, reduction)
                }
                .run(&client)
                .unwrap_or_else(|err| panic!("{elem} {op:?} {strategy:?}: {err}"));
                for (t, &want) in expected.iter().enumerate() {
                    let got = element(&actual, t, width);
                    assert_eq!(got, want, "{elem} {op:?} {strategy:?}, element {t}");
                }
                assert!(
                    actual[len * width..].iter().all(|&b| b == GUARD_BYTE),
                    "{elem} {op:?} {strategy:?}: a guard byte changed"
                );
            }
        }
    }
}

/// `Assign` along the sorted rows on typed data (any strategy may be asked for `Assign` but
/// atomics): each target's latest row.
#[test]
fn assign_along_the_sorted_rows() {
    let Some(client) = client() else { return };
    let values = [10i32, 20, 30];
    let indices = [2i32, 0, 2, 2];
    let updates = [1i32, 2, 3, 4];
    let (bytes, ran) = Scatter {
        strategy: Some(ScatterStrategy::Sorted),
        ..Scatter::new(
            ElemType::Int(IntKind::I32),
            i32::as_bytes(&values),
            &indices,
            i32::as_bytes(&updates),
            ScatterReduction::Assign,
        )
    }
    .run(&client)
    .expect("the launch is valid");
    assert_eq!(ran, ScatterStrategy::Sorted);
    let out = i32::from_bytes(&bytes);
    assert_eq!(out[0], 2);
    assert_eq!(out[1], 20);
    assert_eq!(out[2], 4, "the latest of rows 0, 2 and 3: {out:?}");
}

/// The gather (ScatterND's adjoint) of narrow data: 5 rows of 3 elements (odd, so the output's
/// last word is partial and keeps its guard bytes), skipped rows give zeros.
#[test]
fn narrow_gather_matches_the_host() {
    let Some(client) = client() else { return };
    for (n, elem) in NARROW.into_iter().enumerate() {
        let width = elem.size();
        // Input [4, 3]; indices for 5 rows, one out of range (skipped), one negative.
        let input = bytes(12 * width, 300 + n as u64);
        let indices = [1i32, 3, -1, 4, 0];
        let units = indices.len() * 3;
        let mut output = vec![0u8; units * width];
        output.resize((units * width).div_ceil(4) * 4 + 4, GUARD_BYTE);
        let actual = gather(&client, elem, &input, &output, &indices, &[4], 3)
            .unwrap_or_else(|err| panic!("{elem}: {err}"));
        for (row, &index) in indices.iter().enumerate() {
            let source = if index < 0 { index + 4 } else { index };
            for col in 0..3 {
                let expected = if (0..4).contains(&source) {
                    element(&input, source as usize * 3 + col, width)
                } else {
                    0
                };
                assert_eq!(
                    element(&actual, row * 3 + col, width),
                    expected,
                    "{elem}: row {row}, column {col}"
                );
            }
        }
        assert!(
            actual[units * width..].iter().all(|&b| b == GUARD_BYTE),
            "{elem}: a guard byte changed"
        );
    }
}

/// The 16-bit bits of `value` as `elem` (f16 or bf16).
fn half_bits(elem: ElemType, value: f32) -> u16 {
    match elem {
        ElemType::Float(FloatKind::F16) => f16::from_f32(value).to_bits(),
        _ => bf16::from_f32(value).to_bits(),
    }
}

/// `updates` (16-bit floats as `f32`) reduced with `op` onto one packed element of `value`
/// through `strategy`, every row onto it: the element's bits afterwards.
fn reduce_onto_one(
    client: &Client,
    elem: ElemType,
    value: f32,
    updates: &[f32],
    op: ReduceOp,
    strategy: ScatterStrategy,
) -> u16 {
    let mut buffer = half_bits(elem, value).to_le_bytes().to_vec();
    buffer.resize(8, GUARD_BYTE);
    let updates: Vec<u8> = updates
        .iter()
        .flat_map(|&u| half_bits(elem, u).to_le_bytes())
        .collect();
    let indices = vec![0i32; updates.len() / 2];
    let (actual, _) = Scatter {
        dims: vec![1],
        strategy: Some(strategy),
        ..Scatter::new(
            elem,
            &buffer,
            &indices,
            &updates,
            ScatterReduction::Reduce(op),
        )
    }
    .run(client)
    .unwrap_or_else(|err| panic!("{elem} {op:?} {strategy:?}: {err}"));
    assert!(
        actual[2..].iter().all(|&b| b == GUARD_BYTE),
        "{elem} {op:?} {strategy:?}: a guard byte changed"
    );
    u16::from_le_bytes([actual[0], actual[1]])
}

/// Packed f16 and bf16 `Min`/`Max` keep the typed kernels' rules under duplicates, along the
/// sorted rows: NaN updates never hide the winner (every update NaN but one, at rows spread
/// over 256 to 2048 rows, so that nodes start on NaN updates), and a mix of `-0.0` and
/// `+0.0` gives `-0.0` for `Min` and `+0.0` for `Max` whatever the order.
#[test]
fn packed_min_and_max_rules_hold_under_duplicates() {
    let Some(client) = client() else { return };
    for elem in [
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
    ] {
        for (op, win, value, zero) in [
            (ReduceOp::Min, 0.5f32, 1.0f32, -0.0f32),
            (ReduceOp::Max, 9.0, -1.0, 0.0),
        ] {
            if !data_in_words(&client, elem, ScatterReduction::Reduce(op)) {
                println!("{elem} {op:?}: typed on this runtime, not checked here");
                continue;
            }
            for strategy in [ScatterStrategy::Sorted, ScatterStrategy::Deterministic] {
                for rows in [256usize, 2048] {
                    for winner in [0, 1, rows / 3, rows - 1] {
                        let mut updates = vec![f32::NAN; rows];
                        updates[winner] = win;
                        let got = reduce_onto_one(&client, elem, 1.0, &updates, op, strategy);
                        assert_eq!(
                            got,
                            half_bits(elem, win),
                            "{elem} {op:?} {strategy:?}: {rows} rows, winner at row {winner}"
                        );
                    }
                    let zeros: Vec<f32> = (0..rows)
                        .map(|r| if r * 7 % 3 == 0 { -0.0 } else { 0.0 })
                        .collect();
                    let got = reduce_onto_one(&client, elem, value, &zeros, op, strategy);
                    assert_eq!(
                        got,
                        half_bits(elem, zero),
                        "{elem} {op:?} {strategy:?}: {rows} rows of zeros"
                    );
                }
            }
        }
    }
}

/// Packed f16 and bf16 `Add`/`Mul` along the sorted rows keep a NaN update wherever it lies in
/// a run of duplicates, the start of a node, inside one and in the join's own updates: only
/// `Min`/`Max` let a node's NaN partial give way.
#[test]
fn packed_sums_and_products_keep_a_nan_among_duplicates() {
    let Some(client) = client() else { return };
    for elem in [
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
    ] {
        for op in [ReduceOp::Add, ReduceOp::Mul] {
            if !data_in_words(&client, elem, ScatterReduction::Reduce(op)) {
                println!("{elem} {op:?}: typed on this runtime, not checked here");
                continue;
            }
            let rows = 300usize;
            for nan_at in [0, 1, 31, 32, 100, rows - 1] {
                let mut updates = vec![1.0f32; rows];
                updates[nan_at] = f32::NAN;
                let got =
                    reduce_onto_one(&client, elem, 1.0, &updates, op, ScatterStrategy::Sorted);
                let nan = match elem {
                    ElemType::Float(FloatKind::F16) => f16::from_bits(got as u16).is_nan(),
                    _ => bf16::from_bits(got as u16).is_nan(),
                };
                assert!(
                    nan,
                    "{elem} {op:?}: NaN at row {nan_at} of {rows} gave {got:#06x}"
                );
            }
        }
    }
}

/// `exact` (finite) as `f32` rounded to odd: a 16-bit format rounds it on to nearest even as
/// it would round `exact` itself.
fn odd_f32(exact: f64) -> f32 {
    let nearest = exact as f32;
    if f64::from(nearest) == exact {
        return nearest;
    }
    let toward_zero = if f64::from(nearest).abs() > exact.abs() {
        f32::from_bits(nearest.to_bits() - 1)
    } else {
        nearest
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// Factor `i` of the deterministic `Mul` tests: mostly `±1`, some `±2`, `±0.5`, `±1.5` and
/// `±1.25`, so that the product of 600 of them stays in every format's range and is exact in
/// f64 (its significand about 40 bits), where rounding every step (index order) in a 16-bit
/// format or `f32` loses bits.
fn exact_factor(i: usize) -> f64 {
    let hash = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    let sign = if hash & 1 == 0 { 1.0 } else { -1.0 };
    let scale = match hash >> 1 & 15 {
        0 => 2.0,
        1 => 0.5,
        _ => 1.0,
    };
    let odd = match hash >> 5 & 63 {
        0 => 1.5,
        1 => 1.25,
        _ => 1.0,
    };
    sign * scale * odd
}

/// The deterministic strategy on 16-bit floats, packed where the runtime cannot bind them:
/// `Add` gives the correctly rounded sum of each element's value and updates (here exact in
/// f64, so `half`'s rounding of it is the oracle) on every call, `Mul` the product (exact in f64
/// too) rounded once, and `Assign` on bytes keeps the latest duplicate; the guard bytes stay.
#[test]
fn deterministic_packed_data_matches_the_host() {
    let Some(client) = client() else { return };
    let (rows, len) = (3000usize, 64usize);
    let indices: Vec<i32> = (0..rows as i32).map(|r| (r * 7) % 5 - 1).collect();
    let target = |i: i32| if i < 0 { i + len as i32 } else { i } as usize;
    let deterministic = Some(ScatterStrategy::Deterministic);
    for elem in [
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
    ] {
        let reduction = ScatterReduction::Reduce(ReduceOp::Add);
        let encode = |v: f64| match elem {
            ElemType::Float(FloatKind::F16) => f16::from_f32(odd_f32(v)).to_bits(),
            _ => bf16::from_f32(odd_f32(v)).to_bits(),
        };
        let decode = |bits: u32| match elem {
            ElemType::Float(FloatKind::F16) => f16::from_bits(bits as u16).to_f64(),
            _ => bf16::from_bits(bits as u16).to_f64(),
        };
        let value = |i: usize| encode(((i * 37 % 101) as f64 - 50.0) * 2f64.powi(i as i32 % 9 - 6));
        let values: Vec<u8> = (0..len).flat_map(|i| value(i).to_le_bytes()).collect();
        let updates: Vec<u8> = (0..rows).flat_map(|r| value(r + 7).to_le_bytes()).collect();
        let mut sums: Vec<f64> = (0..len).map(|i| decode(element(&values, i, 2))).collect();
        for (row, &i) in indices.iter().enumerate() {
            sums[target(i)] += decode(element(&updates, row, 2));
        }
        let mut buffer = values.clone();
        buffer.resize(len * 2 + 4, GUARD_BYTE);
        let scatter = Scatter {
            dims: vec![len],
            strategy: deterministic,
            ..Scatter::new(elem, &buffer, &indices, &updates, reduction)
        };
        let (first, _) = scatter.run(&client).unwrap();
        let (second, _) = scatter.run(&client).unwrap();
        assert_eq!(first, second, "{elem}: two calls differ");
        let packed = data_in_words(&client, elem, reduction);
        for (t, &sum) in sums.iter().enumerate() {
            assert_eq!(
                element(&first, t, 2),
                u32::from(encode(sum)),
                "{elem} (packed: {packed}): element {t} is not the correctly rounded sum {sum}"
            );
        }
        assert!(
            first[len * 2..].iter().all(|&b| b == GUARD_BYTE),
            "{elem}: guard bytes"
        );
    }
    for elem in [
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
    ] {
        let reduction = ScatterReduction::Reduce(ReduceOp::Mul);
        let f16_data = elem == ElemType::Float(FloatKind::F16);
        let encode = |v: f32| match f16_data {
            true => f16::from_f32(v).to_bits(),
            false => bf16::from_f32(v).to_bits(),
        };
        let decode = |bits: u32| match f16_data {
            true => f16::from_bits(bits as u16).to_f64(),
            false => bf16::from_bits(bits as u16).to_f64(),
        };
        let factor = |i: usize| encode(exact_factor(i) as f32);
        let values: Vec<u8> = (0..len).flat_map(|i| factor(i).to_le_bytes()).collect();
        let updates: Vec<u8> = (0..rows)
            .flat_map(|r| factor(r + 5).to_le_bytes())
            .collect();
        let mut exact: Vec<f64> = (0..len).map(|i| decode(element(&values, i, 2))).collect();
        let mut in_order: Vec<u32> = (0..len).map(|i| element(&values, i, 2)).collect();
        for (row, &i) in indices.iter().enumerate() {
            let update = decode(element(&updates, row, 2));
            exact[target(i)] *= update;
            let step = decode(in_order[target(i)]) * update;
            in_order[target(i)] = u32::from(encode(odd_f32(step)));
        }
        let products: Vec<u32> = exact
            .iter()
            .map(|&p| u32::from(encode(odd_f32(p))))
            .collect();
        assert_ne!(
            products, in_order,
            "{elem} Mul: index order cannot be told apart"
        );
        let mut buffer = values.clone();
        buffer.resize(len * 2 + 4, GUARD_BYTE);
        let scatter = Scatter {
            dims: vec![len],
            strategy: deterministic,
            ..Scatter::new(elem, &buffer, &indices, &updates, reduction)
        };
        let (first, _) = scatter.run(&client).unwrap();
        let (second, _) = scatter.run(&client).unwrap();
        assert_eq!(first, second, "{elem} Mul: two calls differ");
        let packed = data_in_words(&client, elem, reduction);
        for (t, &product) in products.iter().enumerate() {
            assert_eq!(
                element(&first, t, 2),
                product,
                "{elem} Mul (packed: {packed}): element {t} is not the product rounded once"
            );
        }
        assert!(
            first[len * 2..].iter().all(|&b| b == GUARD_BYTE),
            "{elem} Mul: guard bytes"
        );
    }
    let elem = ElemType::UInt(UIntKind::U8);
    let values = bytes(len, 3);
    let updates: Vec<u8> = (0..rows).map(|r| (r % 251) as u8).collect();
    let mut expected = values.clone();
    for (row, &i) in indices.iter().enumerate() {
        expected[target(i)] = updates[row];
    }
    let mut buffer = values.clone();
    buffer.resize(len + 4, GUARD_BYTE);
    let (actual, _) = Scatter {
        dims: vec![len],
        strategy: deterministic,
        ..Scatter::new(elem, &buffer, &indices, &updates, ScatterReduction::Assign)
    }
    .run(&client)
    .unwrap();
    assert_eq!(
        actual[..len],
        expected[..],
        "u8 Assign: the latest duplicate lands"
    );
}

/// Deterministic `Add` on f32 and on 16-bit floats (packed where the runtime cannot bind them),
/// two targets of 20,000 rows each (nodes of four levels) and one of a single row, with 8, 6
/// and 3 columns: the correctly rounded sum, exact in f64 here.
#[test]
fn deterministic_add_rounds_long_runs_once() {
    let Some(client) = client() else { return };
    for slice in [8, 6, 3] {
        add_rounds_once(&client, slice);
    }
}

/// [`deterministic_add_rounds_long_runs_once`] with `slice` columns.
fn add_rounds_once(client: &Client, slice: usize) {
    let (rows, len) = (40_001usize, 4usize);
    let indices: Vec<i32> = (0..rows as i32)
        .map(|r| if r == 40_000 { 3 } else { 2 * (r % 2) })
        .collect();
    let reduction = ScatterReduction::Reduce(ReduceOp::Add);
    for elem in [
        ElemType::Float(FloatKind::F32),
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
    ] {
        let width = elem.size();
        let encode = |v: f64| match elem {
            ElemType::Float(FloatKind::F32) => (v as f32).to_bits(),
            ElemType::Float(FloatKind::F16) => u32::from(f16::from_f32(odd_f32(v)).to_bits()),
            _ => u32::from(bf16::from_f32(odd_f32(v)).to_bits()),
        };
        // Multiples of 1/16 below 4 in magnitude: exact in every format, and their sums in f64.
        let value = |i: usize| ((i * 37 % 101) as f64 - 50.0) / 16.0;
        let mut values = vec![0u8; len * slice * width];
        let mut updates = vec![0u8; rows * slice * width];
        let mut sums: Vec<f64> = (0..len * slice).map(value).collect();
        for (i, &v) in sums.iter().enumerate() {
            set_element(&mut values, i, width, encode(v));
        }
        for (row, &target) in indices.iter().enumerate() {
            for col in 0..slice {
                let v = value(row * slice + col + 3);
                set_element(&mut updates, row * slice + col, width, encode(v));
                sums[target as usize * slice + col] += v;
            }
        }
        let mut buffer = values.clone();
        buffer.resize(values.len() + 4, GUARD_BYTE);
        let strategy = ScatterStrategy::Deterministic;
        let (result, used) = Scatter {
            dims: vec![len],
            slice,
            strategy: Some(strategy),
            ..Scatter::new(elem, &buffer, &indices, &updates, reduction)
        }
        .run(client)
        .unwrap();
        assert_eq!(used, strategy);
        for (i, &sum) in sums.iter().enumerate() {
            assert_eq!(
                element(&result, i, width),
                encode(sum),
                "{elem} {strategy:?} slice {slice}: element {i} is not the correctly \
                 rounded sum {sum}"
            );
        }
        assert!(
            result[values.len()..].iter().all(|&b| b == GUARD_BYTE),
            "{elem} {strategy:?} slice {slice}: guard bytes"
        );
    }
}

/// Deterministic `Mul` on f32, f16 and bf16 (16-bit floats two to a word), 8 and 3 columns,
/// many duplicates: each element is the exact product of its value and updates rounded once.
#[test]
fn deterministic_mul_matches_the_host() {
    let Some(client) = client() else { return };
    let (rows, len) = (3000usize, 5usize);
    let indices: Vec<i32> = (0..rows as i32).map(|r| (r * 7) % 5).collect();
    let reduction = ScatterReduction::Reduce(ReduceOp::Mul);
    for elem in [
        ElemType::Float(FloatKind::F32),
        ElemType::Float(FloatKind::F16),
        ElemType::Float(FloatKind::BF16),
    ] {
        let width = elem.size();
        let encode = |v: f64| match elem {
            ElemType::Float(FloatKind::F32) => (v as f32).to_bits(),
            ElemType::Float(FloatKind::F16) => u32::from(f16::from_f32(odd_f32(v)).to_bits()),
            _ => u32::from(bf16::from_f32(odd_f32(v)).to_bits()),
        };
        let decode = |bits: u32| match elem {
            ElemType::Float(FloatKind::F32) => f64::from(f32::from_bits(bits)),
            ElemType::Float(FloatKind::F16) => f16::from_bits(bits as u16).to_f64(),
            _ => bf16::from_bits(bits as u16).to_f64(),
        };
        let factor = |i: usize| encode(exact_factor(i));
        for slice in [8usize, 3] {
            let mut values = vec![0u8; len * slice * width];
            let mut updates = vec![0u8; rows * slice * width];
            let mut exact: Vec<f64> = (0..len * slice).map(|i| decode(factor(i))).collect();
            for i in 0..len * slice {
                set_element(&mut values, i, width, factor(i));
            }
            for (row, &target) in indices.iter().enumerate() {
                for col in 0..slice {
                    let bits = factor(row * slice + col + 5);
                    set_element(&mut updates, row * slice + col, width, bits);
                    exact[target as usize * slice + col] *= decode(bits);
                }
            }
            let products: Vec<u32> = exact.iter().map(|&p| encode(p)).collect();
            let mut buffer = values.clone();
            buffer.resize(values.len() + 4, GUARD_BYTE);
            let strategy = ScatterStrategy::Deterministic;
            let (result, used) = Scatter {
                dims: vec![len],
                slice,
                strategy: Some(strategy),
                ..Scatter::new(elem, &buffer, &indices, &updates, reduction)
            }
            .run(&client)
            .unwrap();
            assert_eq!(used, strategy);
            for (i, &product) in products.iter().enumerate() {
                assert_eq!(
                    element(&result, i, width),
                    product,
                    "{elem} slice {slice} ({used:?}): element {i} is not the product rounded \
                     once"
                );
            }
            assert!(
                result[values.len()..].iter().all(|&b| b == GUARD_BYTE),
                "{elem} slice {slice} ({used:?}): guard bytes"
            );
        }
    }
}

/// Deterministic `f32` `Mul` on many targets, slice 1: `values[t]` times the
/// `row_updates` of target `t`'s rows in index order, each target taking one row of each of
/// `row_updates.len()` runs of rows so that the sort brings them together. Checks that
/// `kernel` was built and the guard bytes; returns each target's bits.
fn many_targets_mul(
    client: &Client,
    values: &[u32],
    row_updates: &[Vec<u32>],
    kernel: &str,
) -> Vec<u32> {
    let targets = values.len();
    let indices: Vec<i32> = (0..targets * row_updates.len())
        .map(|r| ((r % targets + r / targets) % targets) as i32)
        .collect();
    // Row `r` of run `k` is target `(r + k) % targets`'s row `k`.
    let updates: Vec<u32> = row_updates
        .iter()
        .enumerate()
        .flat_map(|(k, run)| (0..targets).map(move |r| run[(r + k) % targets]))
        .collect();
    let mut output = u32::as_bytes(values).to_vec();
    output.extend([GUARD_BYTE; 4]);
    let scatter = Scatter {
        dims: vec![targets],
        slice: 1,
        strategy: Some(ScatterStrategy::Deterministic),
        ..Scatter::new(
            ElemType::Float(FloatKind::F32),
            &output,
            &indices,
            u32::as_bytes(&updates),
            ScatterReduction::Reduce(ReduceOp::Mul),
        )
    };
    let kernels = scatter.built_kernels(client);
    assert!(
        kernels.iter().any(|k| k == kernel),
        "{kernel} among {kernels:?}"
    );
    let (result, _) = scatter.run(client).unwrap();
    assert!(
        result[4 * targets..].iter().all(|&b| b == GUARD_BYTE),
        "guard bytes"
    );
    (0..targets).map(|i| element(&result, i, 4)).collect()
}

/// Factors whose products of a few dozen are exact in `f64` and `f32`, none of magnitude 1:
/// an update left out changes its target's product.
fn exact_power(i: usize) -> f32 {
    [2.0f32, -0.5, 4.0, -2.0, 0.25, 1.5][i % 6]
}

/// `many_targets_mul` of `rows` rows a target on `targets` targets, against the exact products.
fn many_targets_products(client: &Client, targets: usize, rows: usize, kernel: &str) {
    let values: Vec<u32> = (0..targets).map(|t| exact_power(t).to_bits()).collect();
    let row_updates: Vec<Vec<u32>> = (1..=rows)
        .map(|k| (0..targets).map(|t| exact_power(t + k).to_bits()).collect())
        .collect();
    let result = many_targets_mul(client, &values, &row_updates, kernel);
    for (t, &bits) in result.iter().enumerate() {
        let exact: f64 = (0..=rows).map(|k| f64::from(exact_power(t + k))).product();
        assert_eq!(bits, (exact as f32).to_bits(), "target {t}");
    }
}

/// Many targets of 33 rows (`2^17 + 1` of them): every target's node of 32 rows, wherever its
/// run starts among the sorted rows, and its last row.
#[test]
fn many_targets_take_their_nodes() {
    let Some(client) = client() else { return };
    many_targets_products(&client, (1 << 17) + 1, 33, "ScatterNdSortedProductNodes");
}

/// Many products whose rounding the tree cannot tell (`2^18 + 1` targets of the three factors
/// of `uncertain_products_take_index_order`): the index-order walk takes every one.
#[test]
fn every_uncertain_product_takes_index_order() {
    let Some(client) = client() else { return };
    let [value, first, second] = [0x3F80_25D5u32, 0x3FA3_E702, 0x3FA1_1561];
    let targets = (1 << 18) + 1;
    let row_updates = [vec![first; targets], vec![second; targets]];
    let result = many_targets_mul(
        &client,
        &vec![value; targets],
        &row_updates,
        "ScatterNdOrderedProduct",
    );
    for (t, &bits) in result.iter().enumerate() {
        assert_eq!(bits, 0x3FCE_80E8, "target {t}: not index order");
    }
}

/// Deterministic `f32` `Mul` where the tree cannot tell the rounding: three factors whose exact
/// product lies just below a midpoint, closer than the tree's error bound. In columns 0 and 2
/// of a target with one chunk and of one with 500 rows (the tree's levels; the other rows 1 or
/// 2), index order decides, a bit above the product rounded once; column 1 (1.1, 1.3, 0.3)
/// keeps the product rounded once, a bit above index order's.
#[test]
fn uncertain_products_take_index_order() {
    let Some(client) = client() else { return };
    let [value, first, second] = [0x3F80_25D5u32, 0x3FA3_E702, 0x3FA1_1561];
    let (in_order, rounded_once) = (0x3FCE_80E8u32, 0x3FCE_80E7u32);
    let slice = 3;
    let (one, two) = (1f32.to_bits(), 2f32.to_bits());
    // Column 1: index order gives 0x3EDB_A5E3.
    let (close, rounded) = (0x3EDB_A5E4u32, |scale: f32| {
        f32::from_bits(0x3EDB_A5E4) * scale
    });
    let rows = 2 + 500;
    let indices: Vec<i32> = (0..rows as i32).map(|r| i32::from(r >= 2)).collect();
    let row = |r: usize| match r {
        0 | 2 => [first, 1.3f32.to_bits(), first],
        1 | 3 => [second, 0.3f32.to_bits(), second],
        _ => [one, if r.is_multiple_of(100) { two } else { one }, one],
    };
    let eleven = 1.1f32.to_bits();
    let mut output = u32::as_bytes(&[value, eleven, value, value, eleven, value]).to_vec();
    output.extend([GUARD_BYTE; 4]);
    let updates: Vec<u32> = (0..rows).flat_map(row).collect();
    let updates = u32::as_bytes(&updates);
    let reduction = ScatterReduction::Reduce(ReduceOp::Mul);
    let scatter = Scatter {
        dims: vec![2],
        slice,
        strategy: Some(ScatterStrategy::Deterministic),
        ..Scatter::new(
            ElemType::Float(FloatKind::F32),
            &output,
            &indices,
            updates,
            reduction,
        )
    };
    let kernels = scatter.built_kernels(&client);
    for kernel in ["ScatterNdSortedProductNodes", "ScatterNdOrderedProduct"] {
        assert!(
            kernels.iter().any(|k| k == kernel),
            "{kernel} among {kernels:?}"
        );
    }
    let (result, _) = scatter.run(&client).unwrap();
    let powers = (2..rows).filter(|r| r.is_multiple_of(100)).count() as i32;
    let expected = [
        in_order,
        close,
        in_order,
        in_order,
        rounded(2f32.powi(powers)).to_bits(),
        in_order,
    ];
    for (i, &bits) in expected.iter().enumerate() {
        assert_eq!(element(&result, i, 4), bits, "element {i}");
    }
    assert_ne!(in_order, rounded_once);
    assert!(result[24..].iter().all(|&b| b == GUARD_BYTE), "guard bytes");
}

/// Deterministic float `Add` and `Mul` on `f16` and `bf16` read and write the elements' bits in
/// 32-bit words, also where the runtime binds the type (a GPU's conversion
/// through `f32` may change a NaN's payload or flush a subnormal): the kernels that launch are
/// the packed ones, a NaN of any payload gives the format's canonical quiet NaN, and subnormal
/// operands and results keep their bits.
#[test]
fn deterministic_16_bit_floats_move_bits() {
    let Some(client) = client() else { return };
    let indices = [0i32, 1, 1, 2, 2];
    for (elem, nan, payload, smallest) in [
        (ElemType::Float(FloatKind::F16), 0x7E00u32, 0x7C01u32, 1u32),
        (ElemType::Float(FloatKind::BF16), 0x7FC0, 0xFF81, 1),
    ] {
        let width = elem.size();
        // Target 0: NaN with a payload; 1: two subnormals; 2: a subnormal and zeros.
        let values = [payload, smallest, smallest, 0];
        let rows = [smallest, smallest, 3 * smallest, 0x8000, 0];
        let mut buffer = vec![0u8; values.len() * width + 4];
        let mut updates = vec![0u8; rows.len() * width];
        for (i, &bits) in values.iter().enumerate() {
            set_element(&mut buffer, i, width, bits);
        }
        for (i, &bits) in rows.iter().enumerate() {
            set_element(&mut updates, i, width, bits);
        }
        buffer[values.len() * width..].fill(GUARD_BYTE);
        for (op, expected) in [
            (ReduceOp::Add, [nan, 5 * smallest, smallest, 0]),
            // smallest * smallest * 3 underflows to +0; a subnormal times -0 and +0 is -0.
            (ReduceOp::Mul, [nan, 0, 0x8000, 0]),
        ] {
            let reduction = ScatterReduction::Reduce(op);
            let strategy = ScatterStrategy::Deterministic;
            let scatter = Scatter {
                strategy: Some(strategy),
                dims: vec![values.len()],
                ..Scatter::new(elem, &buffer, &indices, &updates, reduction)
            };
            let kernels = scatter.built_kernels(&client);
            let packed = match op {
                // The exact sum reads and writes 32-bit words only, whatever the format.
                ReduceOp::Add => "ScatterNdSortedSumJoin",
                // The tree's join, in words of every format.
                _ => "ScatterNdSortedProductJoin",
            };
            assert!(
                kernels.iter().any(|kernel| kernel == packed),
                "{elem} {op:?} {strategy:?}: {packed} among {kernels:?}"
            );
            let (result, _) = scatter.run(&client).unwrap();
            for (i, &bits) in expected.iter().enumerate() {
                assert_eq!(
                    element(&result, i, width),
                    bits,
                    "{elem} {op:?} {strategy:?}: element {i}"
                );
            }
            assert!(
                result[values.len() * width..]
                    .iter()
                    .all(|&b| b == GUARD_BYTE),
                "{elem} {op:?} {strategy:?}: guard bytes"
            );
        }
    }
}
