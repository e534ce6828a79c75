//! ScatterND's reductions against the oracle on Flex and wgpu: duplicates, heavy duplication,
//! wrapping integer arithmetic, the signed-zero rule of `Min`/`Max`, and random cases over
//! shapes, dtypes, reductions and index patterns.

mod common;

use burn::tensor::{DType, Device, TensorData};
use burn_dml_ops::prelude::*;
use common::scatter::*;
use common::*;
use proptest::prelude::*;

/// Each reduction with and without duplicates, on Int and Float data.
#[test]
fn reductions_with_and_without_duplicates() {
    let shape = [4usize, 3];
    let input: Vec<f64> = (0..12).map(|i| (i % 5) as f64 - 2.0).collect();
    let unique = [0i64, 3, 1];
    let duplicated = [2i64, 2, -2, 0, 0, 2];
    for reduction in [
        Reduction::Add,
        Reduction::Mul,
        Reduction::Min,
        Reduction::Max,
        Reduction::Assign,
    ] {
        for indices in [&unique[..], &duplicated[..]] {
            let updates: Vec<f64> = (0..indices.len() * 3)
                .map(|i| [2.0, -1.0, 3.0, 1.0, -3.0][i % 5])
                .collect();
            for dtype in [DType::I32, DType::F32, DType::I64, DType::U32, DType::F64] {
                let input: Vec<f64> = if dtype == DType::U32 {
                    input.iter().map(|v| v.abs()).collect()
                } else {
                    input.clone()
                };
                let updates: Vec<f64> = if dtype == DType::U32 {
                    updates.iter().map(|v| v.abs()).collect()
                } else {
                    updates.clone()
                };
                check_case::<2>(
                    &shape,
                    &input,
                    indices,
                    1,
                    &updates,
                    dtype,
                    DType::I32,
                    reduce(reduction),
                );
            }
        }
    }
}

/// Thousands of duplicates on a handful of targets: `Add` is exact on integers.
#[test]
fn add_with_heavy_duplication_is_exact() {
    let rows = 20_000usize;
    let targets = 5i64;
    let indices: Vec<i64> = (0..rows as i64).map(|r| (r * 7919) % targets).collect();
    let updates: Vec<f64> = (0..rows).map(|r| ((r * 31) % 13) as f64 - 4.0).collect();
    for dtype in [DType::I32, DType::I64, DType::F32] {
        check_case::<1>(
            &[8],
            &[0.0; 8],
            &indices,
            1,
            &updates,
            dtype,
            DType::I32,
            reduce(Reduction::Add),
        );
    }
    // Min and Max under the same contention.
    for reduction in [Reduction::Min, Reduction::Max] {
        check_case::<1>(
            &[8],
            &[0.0; 8],
            &indices,
            1,
            &updates,
            DType::I32,
            DType::I64,
            reduce(reduction),
        );
    }
}

/// Integer `Add` and `Mul` wrap in two's complement on every device, under contention too (the
/// kernels compute them in the unsigned type of the same width, so no runtime meets signed
/// overflow).
#[test]
fn integer_add_and_mul_wrap() {
    macro_rules! case {
        ($t:ty, $dtype:expr) => {{
            let input: Vec<$t> = vec![<$t>::MAX, <$t>::MIN, 3, -7];
            // Target 0 gets +1 twice, target 1 gets -1, target 2 gets MAX, target 3 gets MIN.
            let indices: Vec<i32> = vec![0, 0, 1, 2, 3];
            let updates: Vec<$t> = vec![1, 1, -1, <$t>::MAX, <$t>::MIN];
            let sums: Vec<$t> = vec![
                <$t>::MAX.wrapping_add(2),
                <$t>::MIN.wrapping_sub(1),
                (3 as $t).wrapping_add(<$t>::MAX),
                (-7 as $t).wrapping_add(<$t>::MIN),
            ];
            let products: Vec<$t> = vec![
                <$t>::MAX,
                <$t>::MIN.wrapping_mul(-1),
                (3 as $t).wrapping_mul(<$t>::MAX),
                (-7 as $t).wrapping_mul(<$t>::MIN),
            ];
            for device in devices() {
                for (reduction, expected) in [(Reduction::Add, &sums), (Reduction::Mul, &products)]
                {
                    let output = scatter::<1, 2, 1>(
                        &device,
                        TensorData::new(input.clone(), [4]),
                        TensorData::new(indices.clone(), [5, 1]),
                        TensorData::new(updates.clone(), [5]),
                        reduce(reduction),
                    )
                    .unwrap_or_else(|err| {
                        panic!("{:?} {reduction:?} on {device:?}: {err}", $dtype)
                    });
                    assert_eq!(
                        output.convert_dtype($dtype).try_to_vec::<$t>().unwrap(),
                        *expected,
                        "{:?} {reduction:?} on {device:?}",
                        $dtype
                    );
                }
            }
        }};
    }
    case!(i8, DType::I8);
    case!(i16, DType::I16);
    case!(i32, DType::I32);
    case!(i64, DType::I64);
}

/// Float `Min`/`Max` rank `-0.0` below `+0.0` on every device and float dtype, whatever order
/// the duplicate updates come in: `Min` of 1.0 and both zeros is `-0.0`, `Max` of -1.0 and both
/// zeros is `+0.0`; with a zero as the value, the other zero replaces it only where it ranks
/// beyond it.
#[test]
fn signed_zeros_rank_negative_below_positive() {
    let orders: [&[f64]; 3] = [
        &[-0.0, 0.0],
        &[0.0, -0.0],
        &[0.0, -0.0, 0.0, 0.0, -0.0, 0.0],
    ];
    for device in devices() {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            if !holds(&device, dtype, "signed zeros") {
                continue;
            }
            for updates in orders {
                let indices = vec![0i64; updates.len()];
                let cases = [
                    (Reduction::Min, 1.0, true),
                    (Reduction::Max, -1.0, false),
                    (Reduction::Min, 0.0, true),
                    (Reduction::Max, -0.0, false),
                ];
                for (reduction, value, negative) in cases {
                    let output = scatter::<1, 2, 1>(
                        &device,
                        data(&[value], &[1], dtype),
                        index_data(&indices, &[updates.len(), 1], DType::I32),
                        data(updates, &[updates.len()], dtype),
                        reduce(reduction),
                    )
                    .unwrap_or_else(|err| panic!("{device:?} {dtype:?}: {err}"));
                    let got = values(&output)[0];
                    assert!(
                        got == 0.0 && got.is_sign_negative() == negative,
                        "{device:?} {dtype:?} {reduction:?} of {value} and {updates:?}: {got:?}"
                    );
                }
            }
        }
    }
}

/// One random case: `rows` index tuples of size `k` (mostly in range, some negative, some one
/// past either end; with `one_target`, every tuple the same, so every update lands on one
/// slice), checked on `devices` against the oracle.
#[allow(clippy::too_many_arguments)]
fn prop_case<const D: usize>(
    devices: &[Device],
    shape: Vec<usize>,
    k: usize,
    rows: usize,
    seed: u64,
    (dtype, index_dtype): (DType, DType),
    options: ScatterNdOptions,
    one_target: bool,
) {
    let numel: usize = shape.iter().product();
    let slice: usize = shape[k..].iter().product();
    let unsigned_indices = matches!(
        index_dtype,
        DType::U8 | DType::U16 | DType::U32 | DType::U64
    );
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Unsigned data in 0..=6, the rest in -3..=3.
    let unsigned = |dtype: DType| matches!(dtype, DType::U8 | DType::U16 | DType::U32 | DType::U64);
    let low = if unsigned(dtype) { 0.0 } else { -3.0 };
    let small = |v: u64| ((v % 7) as f64) + low;
    let input: Vec<f64> = (0..numel).map(|_| small(next())).collect();
    let mut indices: Vec<i64> = (0..rows * k)
        .map(|i| {
            let d = shape[i % k] as i64;
            // Mostly in range (negative half the time), sometimes one past either end;
            // unsigned indices in 0..=d.
            let v = (next() % (2 * d as u64 + 2)) as i64 - d - 1;
            if unsigned_indices && v < 0 {
                v + d + 1
            } else {
                v
            }
        })
        .collect();
    if one_target && rows > 0 {
        let first: Vec<i64> = indices[..k].to_vec();
        for tuple in indices.chunks_mut(k) {
            tuple.copy_from_slice(&first);
        }
    }
    let updates: Vec<f64> = (0..rows * slice)
        .map(|_| match options.reduction {
            Reduction::Mul if unsigned(dtype) => [1.0, 3.0, 2.0][(next() % 3) as usize],
            Reduction::Mul => [1.0, -1.0, 2.0][(next() % 3) as usize],
            _ => small(next()),
        })
        .collect();
    check_case_on::<D>(
        devices,
        (&shape, &input),
        (&indices, k),
        &updates,
        (dtype, index_dtype),
        options,
    );
}

fn reduction_strategy() -> impl Strategy<Value = Reduction> {
    prop::sample::select(vec![
        Reduction::Assign,
        Reduction::Add,
        Reduction::Mul,
        Reduction::Min,
        Reduction::Max,
    ])
}

/// A random case: shape (ranks 1 to 8), index tuple size pick, rows, seed, data and index
/// dtypes, reduction, `Clamp` or `Skip`, and whether every row goes to one target.
#[derive(Clone, Debug)]
struct RandomCase {
    shape: Vec<usize>,
    k_pick: usize,
    rows: usize,
    seed: u64,
    dtypes: (DType, DType),
    reduction: Reduction,
    clamp: bool,
    one_target: bool,
}

/// The data dtypes of the random cases: 32- and 64-bit ones, bound typed everywhere they run.
const WIDE_DTYPES: [DType; 3] = [DType::F32, DType::I32, DType::I64];

fn case_strategy(dtypes: &[DType]) -> impl Strategy<Value = RandomCase> {
    (
        prop::collection::vec(1usize..=4, 1..=8),
        0usize..8,
        0usize..48,
        any::<u64>(),
        prop::sample::select(dtypes.to_vec()),
        // 8- and 16-bit indices are read from 32-bit words on WGSL and OpenGL.
        prop::sample::select(vec![
            DType::I32,
            DType::I64,
            DType::U32,
            DType::I16,
            DType::U8,
        ]),
        reduction_strategy(),
        any::<bool>(),
        prop::bool::weighted(0.25),
    )
        .prop_map(
            |(shape, k_pick, rows, seed, dtype, index_dtype, reduction, clamp, one_target)| {
                RandomCase {
                    shape,
                    k_pick,
                    rows,
                    seed,
                    dtypes: (dtype, index_dtype),
                    reduction,
                    clamp,
                    one_target,
                }
            },
        )
}

/// Runs `case` on `devices` against the oracle.
fn check_random(devices: &[Device], case: RandomCase) {
    let k = 1 + case.k_pick % case.shape.len();
    let options = scatter_options(case.reduction, case.clamp);
    with_rank!(
        case.shape.len(),
        prop_case(
            devices,
            case.shape.clone(),
            k,
            case.rows,
            case.seed,
            case.dtypes,
            options,
            case.one_target
        )
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Flex against the oracle on random shapes, index tuple sizes, row counts (duplicates,
    /// every row on one target, out-of-range tuples), reductions and policies.
    #[test]
    fn flex_random_cases_match_the_oracle(case in case_strategy(&WIDE_DTYPES)) {
        check_random(&[flex()], case);
    }

    /// The same for 8- and 16-bit data: the oracle wraps and rounds each step to the dtype.
    #[test]
    fn flex_random_narrow_cases_match_the_oracle(case in case_strategy(&NARROW_DTYPES)) {
        check_random(&[flex()], case);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The kernels on wgpu against the same oracle.
    #[test]
    fn wgpu_random_cases_match_the_oracle(case in case_strategy(&WIDE_DTYPES)) {
        let Some(device) = gpu() else { return Ok(()) };
        check_random(&[device], case);
    }

    /// 8- and 16-bit data on wgpu: the packed kernels where the runtime cannot bind the dtype
    /// (`narrow_data_is_packed_where_the_runtime_cannot_bind_it` says which ran).
    #[test]
    fn wgpu_random_narrow_cases_match_the_oracle(case in case_strategy(&NARROW_DTYPES)) {
        let Some(device) = gpu() else { return Ok(()) };
        check_random(&[device], case);
    }
}

/// One element of a large tensor hit more often than a CPU driver runs a loop (llvmpipe stops
/// one after 65,535 iterations), the winning update in row 0: every update still counts, for
/// `Min`, `Max` and `Mul` (the sorted rows' reductions on lavapipe).
#[test]
fn a_target_hit_70000_times_in_a_large_tensor() {
    let rows = 70_000usize;
    let input = vec![500.0; rows];
    let indices = vec![3i64; rows];
    let first_differs = |first: f64, rest: f64| -> Vec<f64> {
        (0..rows)
            .map(|i| if i == 0 { first } else { rest })
            .collect()
    };
    for (reduction, dtype, updates, expected) in [
        (Reduction::Min, DType::F32, first_differs(-1.0, 7.0), -1.0),
        (Reduction::Max, DType::F32, first_differs(9e3, 7.0), 9e3),
        (Reduction::Mul, DType::I32, first_differs(3.0, 1.0), 1500.0),
    ] {
        for device in devices() {
            let out = scatter::<1, 2, 1>(
                &device,
                data(&input, &[rows], dtype),
                index_data(&indices, &[rows, 1], DType::I32),
                data(&updates, &[rows], dtype),
                scatter_options(reduction, false),
            )
            .unwrap();
            assert_eq!(values(&out)[3], expected, "{reduction:?} on {device:?}");
        }
    }
}
