//! `launch_scatter_nd` on wgpu: each reduction strategy as a launch argument against a host
//! computation, and float `Min`/`Max` against the crate's rule, bit for bit (an update replaces
//! a value only when it ranks strictly below or above it, `-0.0` below `+0.0`, so a NaN update
//! never replaces and a NaN value stays) on wgpu's default adapter and on its OpenGL backend,
//! whose compiler turns a compare-and-select into `min`.

mod common;

use burn_dml_ops_kernels::KernelError;
use burn_dml_ops_kernels::scatter_nd::{
    ReduceOp, ScatterReduction, ScatterStrategy, scatter_strategy,
};
use common::scatter::Scatter;
use common::{client, float_replaces, left_out};
use cubecl::ir::{ElemType, FloatKind, IntKind};
use cubecl::prelude::*;

/// The strategies that take every reduction: the sorted rows, and the deterministic one, which
/// takes the sorted rows' passes for the reductions exact in any order.
const GENERAL: [ScatterStrategy; 2] = [ScatterStrategy::Sorted, ScatterStrategy::Deterministic];

/// `(value, update)` pairs and what `Min` and `Max` leave, as f32 bit patterns.
fn cases() -> Vec<(f32, f32, f32, f32)> {
    let nan = f32::NAN;
    vec![
        // value, update, min, max
        (0.0, -0.0, -0.0, 0.0),
        (-0.0, 0.0, -0.0, 0.0),
        (-0.0, -0.0, -0.0, -0.0),
        (1.0, nan, 1.0, 1.0),
        (nan, 1.0, nan, nan),
        (nan, -1.0, nan, nan),
        (-2.0, nan, -2.0, -2.0),
        (1.0, -3.0, -3.0, 1.0),
        (1.0, 5.0, 1.0, 5.0),
        (
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::INFINITY,
        ),
    ]
}

/// Scatters each case's update onto its own element with `op` and returns the output bits.
fn run(client: &Client, op: ReduceOp, strategy: ScatterStrategy) -> Vec<u32> {
    let cases = cases();
    let values: Vec<f32> = cases.iter().map(|c| c.0).collect();
    let updates: Vec<f32> = cases.iter().map(|c| c.1).collect();
    let indices: Vec<i32> = (0..cases.len() as i32).collect();
    let (bytes, _) = Scatter {
        strategy: Some(strategy),
        ..Scatter::new(
            ElemType::Float(FloatKind::F32),
            f32::as_bytes(&values),
            &indices,
            f32::as_bytes(&updates),
            ScatterReduction::Reduce(op),
        )
    }
    .run(client)
    .expect("the launch is valid");
    f32::from_bytes(&bytes)
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

fn check(client: &Client, backend: &str) {
    let f32_elem = ElemType::Float(FloatKind::F32);
    for (op, pick) in [(ReduceOp::Min, 2), (ReduceOp::Max, 3)] {
        // Native float atomics follow the hardware's rule: floats always take the sorted rows.
        let strategy = scatter_strategy(client, f32_elem, ScatterReduction::Reduce(op));
        assert_eq!(strategy, ScatterStrategy::Sorted, "{op:?} on {backend}");
        let expected: Vec<u32> = cases()
            .iter()
            .map(|c| if pick == 2 { c.2 } else { c.3 }.to_bits())
            .collect();
        assert_eq!(
            run(client, op, strategy),
            expected,
            "{op:?} on {backend} (bits of: value, update -> result per element)"
        );
    }
}

#[test]
fn min_and_max_keep_nan_and_signed_zero_rules() {
    let Some(client) = client() else { return };
    check(&client, "the default adapter");
}

#[test]
fn min_and_max_keep_the_rules_on_opengl_too() {
    if cubecl::Device::vulkan(Default::default()).is_err() {
        // Without Vulkan the default adapter is OpenGL; a second EGL device in one process
        // fails in wgpu's EGL setup, so the default one is checked.
        let Some(client) = client() else { return };
        check(&client, "OpenGL (the default adapter)");
        return;
    }
    match cubecl::Device::gl(Default::default()) {
        Ok(device) => check(&device.client(), "OpenGL"),
        Err(err) => left_out(&format!("no OpenGL adapter: {err}")),
    }
}

/// `Add`, `Min` and `Max` of `updates` onto `values` at `targets` on the host (integers wrap).
fn host_reduce(values: &[i64], targets: &[usize], updates: &[i64], op: ReduceOp) -> Vec<i64> {
    let mut out = values.to_vec();
    for (&t, &u) in targets.iter().zip(updates) {
        out[t] = match op {
            ReduceOp::Add => (out[t] as i32).wrapping_add(u as i32) as i64,
            ReduceOp::Mul => (out[t] as i32).wrapping_mul(u as i32) as i64,
            ReduceOp::Min => out[t].min(u),
            ReduceOp::Max => out[t].max(u),
        };
    }
    out
}

/// Each reduction strategy as a launch argument, on i32 data with every update row landing on
/// one of 5 targets: the launcher returns the strategy it ran, and the result is the host's.
#[test]
fn each_strategy_as_an_argument_matches_the_host() {
    let Some(client) = client() else { return };
    let i32_elem = ElemType::Int(IntKind::I32);
    let rows = 4000usize;
    let targets: Vec<usize> = (0..rows).map(|r| (r * 7919) % 5).collect();
    let updates: Vec<i64> = (0..rows as i64).map(|r| (r * 31) % 13 - 6).collect();
    let values: Vec<i64> = vec![3, -2, 0, i32::MAX as i64, i32::MIN as i64];
    for op in [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max] {
        let reduction = ScatterReduction::Reduce(op);
        let mut strategies = GENERAL.to_vec();
        if scatter_strategy(&client, i32_elem, reduction) == ScatterStrategy::Atomic {
            strategies.push(ScatterStrategy::Atomic);
        }
        for strategy in strategies {
            let as_i32 = |v: &[i64]| v.iter().map(|&x| x as i32).collect::<Vec<i32>>();
            let indices: Vec<i32> = targets.iter().map(|&t| t as i32).collect();
            let (values_i32, updates_i32) = (as_i32(&values), as_i32(&updates));
            let (bytes, ran) = Scatter {
                strategy: Some(strategy),
                ..Scatter::new(
                    i32_elem,
                    i32::as_bytes(&values_i32),
                    &indices,
                    i32::as_bytes(&updates_i32),
                    reduction,
                )
            }
            .run(&client)
            .expect("the launch is valid");
            assert_eq!(ran, strategy, "{op:?}: the strategy that ran");
            let actual: Vec<i64> = i32::from_bytes(&bytes).iter().map(|&v| v as i64).collect();
            assert_eq!(
                actual,
                host_reduce(&values, &targets, &updates, op),
                "{op:?} through {strategy:?}"
            );
        }
    }
    // Mul has no atomic anywhere: asking for one is an error, and nothing runs.
    let err = Scatter {
        strategy: Some(ScatterStrategy::Atomic),
        ..Scatter::new(
            i32_elem,
            i32::as_bytes(&[1i32]),
            &[0],
            i32::as_bytes(&[2i32]),
            ScatterReduction::Reduce(ReduceOp::Mul),
        )
    }
    .run(&client)
    .unwrap_err();
    assert!(matches!(err, KernelError::InvalidPlan { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot apply"), "{err}");
}

/// `values` with row `r` of `updates` (`slice` wide) folded into target slice `targets[r]` by
/// `combine`, in row order (rows with no target are skipped): the host's sequential ScatterND.
fn fold_rows<T: Copy>(
    values: &[T],
    updates: &[T],
    targets: &[Option<usize>],
    slice: usize,
    combine: impl Fn(T, T) -> T,
) -> Vec<T> {
    let mut out = values.to_vec();
    for (r, target) in targets.iter().enumerate() {
        let Some(t) = *target else { continue };
        for c in 0..slice {
            out[t * slice + c] = combine(out[t * slice + c], updates[r * slice + c]);
        }
    }
    out
}

/// `op(a, v)` on i32, wrapping.
fn i32_op(op: ReduceOp, a: i32, v: i32) -> i32 {
    match op {
        ReduceOp::Add => a.wrapping_add(v),
        ReduceOp::Mul => a.wrapping_mul(v),
        ReduceOp::Min => a.min(v),
        ReduceOp::Max => a.max(v),
    }
}

/// `op(a, v)` on f32 with the crate's rules ([`float_replaces`] for `Min`/`Max`).
fn f32_op(op: ReduceOp, a: f32, v: f32) -> f32 {
    match op {
        ReduceOp::Add => a + v,
        ReduceOp::Mul => a * v,
        ReduceOp::Min | ReduceOp::Max
            if float_replaces(op == ReduceOp::Min, a.into(), v.into()) =>
        {
            v
        }
        _ => a,
    }
}

/// `updates` (rows of `slice` elements) reduced with `op` onto `values` (`values.len() / slice`
/// target slices) at the one-coordinate `target_of` (out of range skipped), asking for
/// `strategy`: the output read back.
fn reduce_rows<T: CubeElement>(
    client: &Client,
    values: &[T],
    target_of: &[i32],
    updates: &[T],
    slice: usize,
    op: ReduceOp,
    strategy: ScatterStrategy,
) -> Vec<T> {
    let (bytes, _) = Scatter {
        dims: vec![values.len() / slice],
        slice,
        strategy: Some(strategy),
        ..Scatter::new(
            T::cube_type(),
            T::as_bytes(values),
            target_of,
            T::as_bytes(updates),
            ScatterReduction::Reduce(op),
        )
    }
    .run(client)
    .expect("the launch is valid");
    T::from_bytes(&bytes).to_vec()
}

/// The bit patterns of `values`, to compare floats with NaN among them.
fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// A few hot targets in a large tensor along the sorted rows: 4000 rows onto 8000 targets, most
/// rows onto 2 targets (runs of 3000 and 600 rows), the rest onto distinct targets or out of
/// range (skipped). The segments (64 rows here) must cover every row of a run once, and runs of
/// one row take no segment: every reduction on i32 (wrapping) and f32 `Min`/`Max` (NaN updates
/// among them), against a sequential fold on the host.
#[test]
fn hot_targets_of_a_large_tensor_match_the_host() {
    let Some(client) = client() else { return };
    let (rows, targets, slice) = (4000usize, 8000usize, 2usize);
    let target_of: Vec<i32> = (0..rows as i32)
        .map(|r| match r % 20 {
            0..=14 => 17,
            15..=17 => -1,
            18 => 9000 + r, // out of range: skipped
            _ => 100 + r,
        })
        .collect();
    // Where each row lands: negative indices count from the end, out of range is skipped.
    let row_targets: Vec<Option<usize>> = target_of
        .iter()
        .map(|&i| {
            let t = if i < 0 { i + targets as i32 } else { i };
            (0..targets as i32).contains(&t).then_some(t as usize)
        })
        .collect();
    for op in [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max] {
        let values: Vec<i32> = (0..(targets * slice) as i32).map(|e| e * 3 - 7).collect();
        let updates: Vec<i32> = (0..(rows * slice) as i32)
            .map(|p| p.wrapping_mul(2_654_435_761u32 as i32) >> 5)
            .collect();
        let expected = fold_rows(&values, &updates, &row_targets, slice, |a, v| {
            i32_op(op, a, v)
        });
        for strategy in GENERAL {
            let actual = reduce_rows(&client, &values, &target_of, &updates, slice, op, strategy);
            assert_eq!(actual, expected, "i32 {op:?} {strategy:?}");
        }
    }
    for op in [ReduceOp::Min, ReduceOp::Max] {
        let values: Vec<f32> = (0..targets * slice).map(|e| e as f32 * 0.5 - 9.0).collect();
        let updates: Vec<f32> = (0..rows * slice)
            .map(|p| {
                if p % 89 == 0 {
                    f32::NAN
                } else {
                    ((p * 37) % 1001) as f32 - 500.0
                }
            })
            .collect();
        let expected = bits(&fold_rows(
            &values,
            &updates,
            &row_targets,
            slice,
            |a, v| f32_op(op, a, v),
        ));
        for strategy in GENERAL {
            let actual = reduce_rows(&client, &values, &target_of, &updates, slice, op, strategy);
            assert_eq!(bits(&actual), expected, "f32 {op:?} {strategy:?} (bits)");
        }
    }
}

/// Heavy duplicates along the sorted rows: runs of about 1667 rows, each cut into segments of
/// 128 rows, reduced side by side, then joined in order: f32 and i32, every reduction, rows of
/// 3 columns onto 3 targets, NaN updates among the f32 ones (which `Min`/`Max` never take),
/// against a sequential fold on the host. The f32 values are small integers and powers of two,
/// so every order of `Add` and `Mul` gives the same result.
#[test]
fn heavy_duplicates_match_the_host() {
    let Some(client) = client() else { return };
    let (rows, targets, slice) = (5000usize, 3usize, 3usize);
    let target_of: Vec<i32> = (0..rows).map(|r| ((r * 7) % targets) as i32).collect();
    let row_targets: Vec<Option<usize>> = target_of.iter().map(|&t| Some(t as usize)).collect();
    for op in [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max] {
        // f32: Mul multiplies by 1, -1 or 2 only 40 times per target (the rest are 1), so the
        // products stay exact; NaN updates only for Min/Max.
        let f32_update = |r: usize, c: usize| -> f32 {
            match op {
                ReduceOp::Mul if r.is_multiple_of(125) => [2.0, -1.0, 2.0][(r / 125 + c) % 3],
                ReduceOp::Mul => 1.0,
                ReduceOp::Min | ReduceOp::Max if r.is_multiple_of(97) => f32::NAN,
                _ => ((r * 31 + c * 7) % 41) as f32 - 20.0,
            }
        };
        let values: Vec<f32> = (0..targets * slice).map(|e| e as f32 - 4.0).collect();
        let updates: Vec<f32> = (0..rows * slice)
            .map(|p| f32_update(p / slice, p % slice))
            .collect();
        let expected = fold_rows(&values, &updates, &row_targets, slice, |a, v| {
            f32_op(op, a, v)
        });
        for strategy in GENERAL {
            let actual = reduce_rows(&client, &values, &target_of, &updates, slice, op, strategy);
            assert_eq!(
                bits(&actual),
                bits(&expected),
                "f32 {op:?} {strategy:?} (bits)"
            );
        }

        // i32 with wrapping: products of large factors.
        let i32_values: Vec<i32> = (0..(targets * slice) as i32).map(|e| e * 3 - 7).collect();
        let i32_updates: Vec<i32> = (0..rows * slice)
            .map(|p| (p as i32).wrapping_mul(2_654_435_761u32 as i32) >> 7)
            .collect();
        let expected = fold_rows(&i32_values, &i32_updates, &row_targets, slice, |a, v| {
            i32_op(op, a, v)
        });
        for strategy in GENERAL {
            let actual = reduce_rows(
                &client,
                &i32_values,
                &target_of,
                &i32_updates,
                slice,
                op,
                strategy,
            );
            assert_eq!(actual, expected, "i32 {op:?} {strategy:?}");
        }
    }
}

/// NaN updates never hide the winner: 256 to 4096 rows onto one element of value 1.0, every
/// update NaN but one (0.5 for `Min`, 9.0 for `Max`) at rows spread over the run, through both
/// general strategies. A segment that starts on a NaN update must still take the real one.
#[test]
fn nan_updates_never_hide_the_winner() {
    let Some(client) = client() else { return };
    for rows in [256usize, 1000, 4096] {
        let target_of = vec![0i32; rows];
        for winner in [0, 1, 7, rows / 3, rows / 2, rows - 2, rows - 1] {
            for (op, win) in [(ReduceOp::Min, 0.5f32), (ReduceOp::Max, 9.0)] {
                let mut updates = vec![f32::NAN; rows];
                updates[winner] = win;
                for strategy in GENERAL {
                    let out =
                        reduce_rows(&client, &[1.0f32], &target_of, &updates, 1, op, strategy);
                    assert_eq!(
                        out[0].to_bits(),
                        win.to_bits(),
                        "{op:?} {strategy:?}: {rows} rows, the winner at row {winner}, got {}",
                        out[0]
                    );
                }
            }
        }
    }
}

/// Duplicate updates of both zeros give the same zero whatever order they arrive in: `Min` of
/// 1.0 and any mix of `-0.0` and `+0.0` is `-0.0`, `Max` of -1.0 and the same mix `+0.0`, for
/// a few arrangements and row counts (with and without segments), through both general
/// strategies.
#[test]
fn the_sign_of_a_zero_does_not_depend_on_order() {
    let Some(client) = client() else { return };
    for rows in [2usize, 3, 300, 2048] {
        let target_of = vec![0i32; rows];
        let arrangements: [&dyn Fn(usize) -> bool; 4] =
            [&|r| r % 2 == 0, &|r| r % 2 == 1, &|r| r < rows / 2, &|r| {
                r * 7 % 5 == 0
            }];
        for negative in arrangements {
            let updates: Vec<f32> = (0..rows)
                .map(|r| if negative(r) { -0.0 } else { 0.0 })
                .collect();
            if updates
                .iter()
                .all(|u| u.is_sign_negative() == updates[0].is_sign_negative())
            {
                continue;
            }
            for (op, value, expected) in
                [(ReduceOp::Min, 1.0f32, -0.0f32), (ReduceOp::Max, -1.0, 0.0)]
            {
                for strategy in GENERAL {
                    let out = reduce_rows(&client, &[value], &target_of, &updates, 1, op, strategy);
                    assert_eq!(
                        out[0].to_bits(),
                        expected.to_bits(),
                        "{op:?} {strategy:?} over {rows} rows of zeros: got {}",
                        out[0]
                    );
                }
            }
        }
    }
}

/// Runs deep enough for four levels of nodes (32, 256, 2,048 and 16,384 sorted positions):
/// targets of about 40,000, 18,000 and 2,000 rows whose runs start off every node's alignment,
/// beside targets of a few hundred, on i32 (every reduction, wrapping) and f32 `Min`/`Max` with
/// NaN updates, against a sequential fold on the host. The join takes each run's largest nodes,
/// and every position of a run exactly once.
#[test]
fn runs_over_four_levels_of_nodes_match_the_host() {
    let Some(client) = client() else { return };
    let (rows, targets, slice) = (70_003usize, 40usize, 2usize);
    let target_of: Vec<i32> = (0..rows)
        .map(|r| match r % 7 {
            0 => (r / 7 % 30) as i32 + 5,
            1 if r % 5 == 0 => 3,
            1 | 2 => 1,
            _ => 2,
        })
        .collect();
    let row_targets: Vec<Option<usize>> = target_of.iter().map(|&t| Some(t as usize)).collect();
    let values: Vec<i32> = (0..(targets * slice) as i32).map(|e| e * 5 - 11).collect();
    let updates: Vec<i32> = (0..(rows * slice) as i32)
        .map(|p| p.wrapping_mul(2_654_435_761u32 as i32) >> 9)
        .collect();
    for op in [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max] {
        let expected = fold_rows(&values, &updates, &row_targets, slice, |a, v| {
            i32_op(op, a, v)
        });
        let actual = reduce_rows(
            &client,
            &values,
            &target_of,
            &updates,
            slice,
            op,
            ScatterStrategy::Sorted,
        );
        assert_eq!(actual, expected, "i32 {op:?}");
    }
    let values: Vec<f32> = (0..targets * slice).map(|e| e as f32 - 30.0).collect();
    let updates: Vec<f32> = (0..rows * slice)
        .map(|p| {
            if p % 13 == 0 {
                f32::NAN
            } else {
                ((p * 7919) % 100_003) as f32 * 0.01 - 500.0
            }
        })
        .collect();
    for op in [ReduceOp::Min, ReduceOp::Max] {
        let expected = bits(&fold_rows(
            &values,
            &updates,
            &row_targets,
            slice,
            |a, v| f32_op(op, a, v),
        ));
        let actual = reduce_rows(
            &client,
            &values,
            &target_of,
            &updates,
            slice,
            op,
            ScatterStrategy::Sorted,
        );
        assert_eq!(bits(&actual), expected, "f32 {op:?} (bits)");
    }
}
