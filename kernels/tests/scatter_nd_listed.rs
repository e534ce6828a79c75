//! The CPU drivers' deterministic kernels on their own: the first pass of the listed sums
//! (`scatter_nd_listed_sum_heads`, float `Add`) launched alone on lists built here (which head
//! units it finishes with the hardware's add and which it lists for the exact walks, per group
//! of columns, with a slice read in vectors of four and one read element by element), `Assign`
//! of the latest rows (`scatter_nd_assign_latest`, both deterministic strategies) against a
//! host loop, and float `Add` at the edges of `f32` by both strategies.

mod common;

use burn_dml_ops_kernels::scatter_nd::{
    GROUP_COLUMNS, ReduceOp, ScatterReduction, ScatterStrategy, scatter_nd_listed_sum_heads,
};
use common::scatter::{DETERMINISTIC, Scatter};
use common::{GUARD_BYTE, bytes, client, xorshift};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::prelude::*;
use proptest::prelude::*;

/// A row's target the link step marks as out of range.
const SKIPPED: u32 = u32::MAX;
/// The smallest normal `f32`.
const MIN_NORMAL: f32 = f32::MIN_POSITIVE;

/// One update row onto a target of its own (or none), its current value and update in every
/// column but `odd_column`, which takes the odd pair.
struct Case {
    target: u32,
    value: f32,
    update: f32,
    odd_column: usize,
    odd: (f32, f32),
}

/// The cases, one row each: the units the pass must finish, and those it must list because the
/// hardware's sum may differ from the exact one rounded (a subnormal operand or sum, an
/// infinity, a zero sum whose sign the exact sum decides), for a list of one row only.
fn cases(slice: usize) -> Vec<(Case, bool)> {
    let last = slice - 1;
    vec![
        // Normal operands and sums: finished with the hardware's add.
        (
            Case {
                target: 0,
                value: 1.5,
                update: -0.25,
                odd_column: 0,
                odd: (3.0, 0.0),
            },
            false,
        ),
        (
            Case {
                target: 1,
                value: 2.0,
                update: 0.5,
                odd_column: last,
                odd: (MIN_NORMAL / 4.0, 1.0),
            },
            true,
        ),
        (
            Case {
                target: 2,
                value: 1.0,
                update: 1.0,
                odd_column: 0,
                odd: (3e38, 3e38),
            },
            true,
        ),
        (
            Case {
                target: 3,
                value: 1.0,
                update: 2.0,
                odd_column: last,
                odd: (-0.0, -0.0),
            },
            true,
        ),
        (
            Case {
                target: 4,
                value: 4.0,
                update: 4.0,
                odd_column: 1,
                odd: (1.5 * MIN_NORMAL, -MIN_NORMAL),
            },
            true,
        ),
        (
            Case {
                target: 5,
                value: 1.0,
                update: 1.0,
                odd_column: 0,
                odd: (f32::NAN, 1.0),
            },
            true,
        ),
        (
            Case {
                target: SKIPPED,
                value: 1.0,
                update: 1.0,
                odd_column: 0,
                odd: (1.0, 1.0),
            },
            false,
        ),
    ]
}

/// Runs the pass over the cases plus one target of two rows (its head listed, the other row
/// untouched) on f32 data of `slice` columns; checks the output and the list.
fn check(client: &Client, slice: usize) {
    let cases = cases(slice);
    let groups = slice.div_ceil(GROUP_COLUMNS);
    let pair_target = cases.len() as u32;
    let targets_len = pair_target as usize + 1;
    let rows = cases.len() + 2;
    let mut output = vec![0f32; targets_len * slice];
    let mut updates = vec![0f32; rows * slice];
    let mut targets = vec![SKIPPED; rows];
    let mut heads = vec![0u32; targets_len];
    let mut next = vec![0u32; rows];
    for (row, (case, _)) in cases.iter().enumerate() {
        targets[row] = case.target;
        for col in 0..slice {
            let (value, update) = if col == case.odd_column {
                case.odd
            } else {
                (case.value, case.update)
            };
            updates[row * slice + col] = update;
            if case.target != SKIPPED {
                output[case.target as usize * slice + col] = value;
            }
        }
        if case.target != SKIPPED {
            heads[case.target as usize] = row as u32 + 1;
        }
    }
    // The last two rows share a target: the later one heads the list, which the pass lists.
    let (first, second) = (rows - 2, rows - 1);
    targets[first] = pair_target;
    targets[second] = pair_target;
    heads[pair_target as usize] = second as u32 + 1;
    next[second] = first as u32 + 1;
    for col in 0..slice {
        output[pair_target as usize * slice + col] = 1.0;
        updates[first * slice + col] = 1.0;
        updates[second * slice + col] = 1.0;
    }

    let units = rows * groups;
    let output_handle = client.create_from_slice(f32::as_bytes(&output));
    let updates_handle = client.create_from_slice(f32::as_bytes(&updates));
    let heads_handle = client.create_from_slice(u32::as_bytes(&heads));
    let next_handle = client.create_from_slice(u32::as_bytes(&next));
    let targets_handle = client.create_from_slice(u32::as_bytes(&targets));
    // A counted list: the count (0), then a slot per unit.
    let mut work_words = vec![u32::MAX; units + 1];
    work_words[0] = 0;
    let work_handle = client.create_from_slice(u32::as_bytes(&work_words));
    let vector = if slice.is_multiple_of(4) { 4 } else { 1 };
    // SAFETY: every buffer holds what its argument says (rows, targets and units as built
    // above); each head's target is below `targets_len` and its group's columns inside the
    // slice; `work` has a slot for every unit.
    unsafe {
        scatter_nd_listed_sum_heads::launch_unchecked(
            client,
            CubeCount::Static(units.div_ceil(64) as u32, 1, 1),
            CubeDim::new_1d(64),
            AddressType::from_len(output.len().max(updates.len())),
            vector,
            BufferArg::from_raw_parts(output_handle.clone(), output.len()),
            BufferArg::from_raw_parts(updates_handle, updates.len()),
            BufferArg::from_raw_parts(heads_handle, heads.len()),
            BufferArg::from_raw_parts(next_handle, rows),
            BufferArg::from_raw_parts(targets_handle, rows),
            BufferArg::from_raw_parts(work_handle.clone(), units + 1),
            slice,
            groups,
            units,
            true,
            ElemType::Float(FloatKind::F32),
        );
    }
    let result =
        f32::from_bytes(&client.read_one(output_handle).expect("read the output")).to_vec();
    let work = u32::from_bytes(&client.read_one(work_handle).expect("read the list")).to_vec();
    let (count, work) = (work[0], &work[1..]);

    let mut expected_list = Vec::new();
    let mut expected = output.clone();
    for (row, (case, _)) in cases.iter().enumerate() {
        if case.target == SKIPPED {
            continue;
        }
        for group in 0..groups {
            let columns = group * GROUP_COLUMNS..((group + 1) * GROUP_COLUMNS).min(slice);
            if columns.contains(&case.odd_column) && cases[row].1 {
                expected_list.push((row * groups + group) as u32);
            } else {
                for col in columns {
                    let at = case.target as usize * slice + col;
                    let update = updates[row * slice + col];
                    expected[at] = output[at] + update;
                }
            }
        }
    }
    expected_list.extend((0..groups).map(|group| (second * groups + group) as u32));
    expected_list.sort_unstable();
    let mut listed = work[..count as usize].to_vec();
    listed.sort_unstable();
    assert_eq!(
        listed, expected_list,
        "slice {slice}: the units listed for the walks"
    );
    for (i, (&got, &want)) in result.iter().zip(&expected).enumerate() {
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "slice {slice}: element {i} (target {}, column {})",
            i / slice,
            i % slice
        );
    }
}

/// Slices of two groups (16 columns, read in vectors of four; 11, element by element, the
/// second group of 3 columns), and one of a single short group.
#[test]
fn sole_rows_add_with_the_hardware_where_it_is_exact() {
    let Some(client) = client() else { return };
    for slice in [16, 11, 3] {
        check(&client, slice);
    }
}

/// Deterministic `Assign` by both strategies, each moving the latest rows' groups of columns,
/// on 32- and 64-bit data (OpenGL holds 64-bit data as word
/// pairs) with slices moved in vectors (8, 4) and element by element (3), many duplicates and
/// tuples out of range: the update latest in index order lands, as in a host loop.
#[test]
fn assign_keeps_the_latest_row_by_both_strategies() {
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
            for strategy in DETERMINISTIC {
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
}

/// Deterministic f32 `Add` by both strategies at the edges of the format, with more than 256
/// rows, so that the GPUs' strategy cuts the lists into segments: sole rows whose pair the
/// hardware adds exactly and those it must not (subnormal operands and sums, zero sums of
/// either sign, overflow, infinities, a NaN with a payload) give IEEE's sum, a NaN the
/// canonical one; hot targets whose rows mix magnitudes from the subnormals to cancelling
/// maxima, with an infinity, both infinities or a NaN somewhere along the list, give the same
/// bits by both strategies.
#[test]
fn float_add_strategies_agree_at_the_edges() {
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
    let mut results = Vec::new();
    for (strategy, kernel) in [
        (ScatterStrategy::Deterministic, "ScatterNdExactSegments"),
        (ScatterStrategy::ListedDeterministic, "ScatterNdListedSum"),
    ] {
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
        results.push(bits);
    }
    assert_eq!(results[0], results[1], "the strategies differ");
}

/// Deterministic float `Add` of `rows` rows of `slice` elements of `elem` (bits from `seed`) onto `len` targets (`hot`: `row % len`, else scattered, every 11th row
/// out of range) by both strategies: the same bits, and nothing written past the data.
fn strategies_agree_on_random(
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
    let mut buffer = values.clone();
    buffer.resize(values.len() + 8, GUARD_BYTE);
    let results: Vec<Vec<u8>> = DETERMINISTIC
        .into_iter()
        .map(|strategy| {
            let (result, used) = Scatter {
                dims: vec![len],
                slice,
                strategy: Some(strategy),
                ..Scatter::new(
                    elem,
                    &buffer,
                    &indices,
                    &updates,
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
        "{elem}: {rows} rows of {slice} onto {len} targets (hot: {hot}): the strategies differ"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random shapes, duplication and bits: the GPUs' segments (with more than 256 rows) and
    /// the CPU drivers' walks give the same bits for f32, f16 and bf16.
    #[test]
    fn float_add_strategies_agree_on_random_lists(
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
        strategies_agree_on_random(ElemType::Float(elem), rows, slice, len, hot, seed);
    }
}
