//! TopK and the stable sort (`SortExt`) against an independent oracle on Flex (the reference
//! bodies) and wgpu (the radix sort's kernels), Fusion included: DirectML's example, every Float
//! and Int dtype, ranks 1 to 4 and every axis, every `k`, both orders, lengths around the tile,
//! the count table's block and the one-cube limit, small `k` of long axes (the radix select),
//! heavy ties, NaN payloads and signed zeros, the ends of every integer range, views, operands
//! made on the device, gradients, and every error.

mod common;

use burn::tensor::kind::Basic;
use burn::tensor::{DType, Device, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::sort::*;
use common::*;
use proptest::prelude::*;

/// `(values, indices)` of `try_top_k` of `data` (Float or Int by its dtype) on `device`.
fn top_k_of<const D: usize>(
    device: &Device,
    data: TensorData,
    k: usize,
    axis: isize,
    options: SortOptions,
) -> Result<(TensorData, TensorData), DmlOpsError> {
    if data.dtype().is_float() {
        let sorted = float_tensor::<D>(data, device).try_top_k(k, axis, options)?;
        Ok((sorted.values.into_data(), sorted.indices.into_data()))
    } else {
        let sorted = int_tensor::<D>(data, device).try_top_k(k, axis, options)?;
        Ok((sorted.values.into_data(), sorted.indices.into_data()))
    }
}

/// Checks a top-`k` of `data` along `axis` on `device` against the oracle, bit for bit.
fn check(device: &Device, data: &TensorData, k: usize, axis: usize, order: Order, case: &str) {
    let rank = data.shape().len();
    let options = SortOptions {
        order,
        indices_dtype: None,
    };
    let (values, indices) = with_rank!(
        rank,
        top_k_of(device, data.clone(), k, axis as isize, options)
    )
    .unwrap_or_else(|err| panic!("{case} on {device:?}: {err}"));
    let (want_values, want_indices) = expected_top_k(data, axis, k, order == Order::Descending);
    let mut shape = data.shape().to_vec();
    shape[axis] = k;
    assert_eq!(values.shape().to_vec(), shape, "{case} on {device:?}");
    assert_eq!(values.dtype(), data.dtype(), "{case} on {device:?}");
    assert_eq!(
        to_i64(&indices),
        want_indices,
        "indices of {case} on {device:?}"
    );
    assert_eq!(
        values.as_bytes(),
        &want_values[..],
        "values of {case} on {device:?}"
    );
}

/// Every Float and Int dtype Burn creates on every device, those a runtime cannot bind too (the
/// kernels read them as words); Flex32 is made on no device here (Flex does not hold it, and
/// CubeCL's `from_data` refuses it).
fn dtypes() -> Vec<DType> {
    FLOAT_DTYPES
        .into_iter()
        .chain(INT_DTYPES)
        .filter(|&dtype| dtype != DType::Flex32)
        .collect()
}

#[test]
fn directml_example() {
    for device in devices_and_default() {
        let x = Tensor::<4>::from_data(
            [[[
                [0.0, 1.0, 10.0, 11.0],
                [3.0, 2.0, 9.0, 8.0],
                [4.0, 5.0, 6.0, 7.0],
            ]]],
            &device,
        );
        let top = x.top_k(2, 3, Order::Descending);
        assert_eq!(top.values.dims(), [1, 1, 3, 2]);
        assert_eq!(
            top.values.into_data().try_to_vec::<f32>().unwrap(),
            vec![11.0, 10.0, 9.0, 8.0, 7.0, 6.0],
            "on {device:?}"
        );
        assert_eq!(
            to_i64(&top.indices.into_data()),
            vec![3, 2, 2, 3, 3, 2],
            "on {device:?}"
        );
    }
}

#[test]
fn ties_keep_increasing_index_in_both_orders_and_nan_ranks_above_infinity() {
    for device in devices_and_default() {
        let x = Tensor::<1>::from_data(
            [2.0, f32::NAN, -0.0, f32::INFINITY, 0.0, 2.0, f32::NAN, -1.0],
            &device,
        );
        let up = x.clone().sort_stable(0, Order::Ascending);
        assert_eq!(
            to_i64(&up.indices.into_data()),
            vec![7, 2, 4, 0, 5, 3, 1, 6],
            "on {device:?}"
        );
        let down = x.sort_stable(-1, Order::Descending);
        assert_eq!(
            to_i64(&down.indices.into_data()),
            vec![1, 6, 3, 0, 5, 2, 4, 7],
            "on {device:?}"
        );
    }
}

#[test]
fn every_dtype_with_the_palette_of_its_extremes() {
    for device in devices_and_default() {
        for dtype in dtypes() {
            let palette = palette(dtype);
            // Every palette value several times, shuffled, in two sequences along axis 1.
            let bits: Vec<u64> = (0..2 * 3 * palette.len())
                .map(|i| palette[(i * 7 + i / 5) % palette.len()])
                .collect();
            let data = from_bits(&bits, &[2, 3 * palette.len()], dtype);
            for order in [Order::Ascending, Order::Descending] {
                for k in [1, 5, 3 * palette.len()] {
                    let case = format!("{dtype:?}, k {k}, {order:?}");
                    check(&device, &data, k, 1, order, &case);
                }
            }
        }
    }
}

#[test]
fn lengths_around_the_tile_and_the_count_tables_block() {
    for device in devices() {
        for len in [0, 1, 2, 3, 127, 128, 129, 255, 256, 257, 1000] {
            let bits: Vec<u64> = (0..3 * len as u64)
                .map(|i| (i * 2_654_435_761) % 97)
                .collect();
            let data = from_bits(&bits, &[3, len], DType::I32);
            for order in [Order::Ascending, Order::Descending] {
                check(&device, &data, len, 1, order, &format!("[3, {len}]"));
                check(
                    &device,
                    &data,
                    len.min(2),
                    1,
                    order,
                    &format!("[3, {len}] k 2"),
                );
            }
        }
        // Many segments: the count table spans several of the scan's blocks.
        let bits: Vec<u64> = (0..300 * 200u64).map(|i| (i * 40_503) % 1009).collect();
        let data = from_bits(&bits, &[300, 200], DType::U32);
        check(&device, &data, 200, 1, Order::Ascending, "[300, 200]");
        check(
            &device,
            &data,
            7,
            0,
            Order::Descending,
            "[300, 200] along axis 0",
        );
    }
}

#[test]
fn small_k_of_a_long_axis_selects_before_it_sorts() {
    // Axes longer than one cube sorts, with `k` small enough for the radix select: every dtype's
    // palette of extremes, so the `k`-th value ties with a thousand others and only the first of
    // them by index belong to the result.
    for device in devices_and_default() {
        for dtype in dtypes() {
            let palette = palette(dtype);
            let len = 5000;
            let bits: Vec<u64> = (0..2 * len)
                .map(|i| palette[(i * 7 + i / 13) % palette.len()])
                .collect();
            let data = from_bits(&bits, &[2, len], dtype);
            for order in [Order::Ascending, Order::Descending] {
                for k in [1, 100, 2049] {
                    let case = format!("[2, {len}] {dtype:?}, k {k}, {order:?}");
                    check(&device, &data, k, 1, order, &case);
                }
            }
        }
    }
}

#[test]
fn heavy_ties_and_all_nan() {
    for device in devices() {
        let two: Vec<f32> = (0..1000)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let data = TensorData::new(two, [1000]);
        for order in [Order::Ascending, Order::Descending] {
            check(&device, &data, 1000, 0, order, "two values");
            check(&device, &data, 10, 0, order, "two values, k 10");
        }
        // NaNs with distinct payloads and signs come back bit for bit, in index order.
        let nans: Vec<u64> = (0..300u64)
            .map(|i| 0x7FC0_0000 | (i % 5) | ((i % 2) << 31))
            .collect();
        let data = from_bits(&nans, &[300], DType::F32);
        check(&device, &data, 300, 0, Order::Descending, "all NaN");
    }
}

#[test]
fn views_are_read_where_they_lie() {
    for device in devices_and_default() {
        let base = Tensor::<2>::from_data(
            TensorData::new((0..60).map(|i| ((i * 37) % 11) as f32).collect(), [6, 10]),
            &device,
        );
        let views = [
            ("transposed", base.clone().transpose()),
            ("sliced", base.clone().slice([1..5, 2..9])),
            (
                "permuted slice",
                base.clone().slice([0..6, 1..10]).swap_dims(0, 1),
            ),
        ];
        for (name, view) in views {
            let host = view.clone().into_data();
            for axis in 0..2 {
                for order in [Order::Ascending, Order::Descending] {
                    let sorted = view
                        .clone()
                        .try_sort_stable(
                            axis as isize,
                            SortOptions {
                                order,
                                indices_dtype: None,
                            },
                        )
                        .unwrap();
                    let (values, indices) =
                        expected_top_k(&host, axis, host.shape()[axis], order == Order::Descending);
                    assert_eq!(sorted.values.into_data().as_bytes(), &values[..], "{name}");
                    assert_eq!(to_i64(&sorted.indices.into_data()), indices, "{name}");
                }
            }
        }
    }
}

#[test]
fn operands_made_on_the_device() {
    for device in devices_and_default() {
        let random = Tensor::<2>::random([17, 300], burn::tensor::Distribution::Default, &device);
        // Fused arithmetic and a comparison turned into Int data.
        let scaled = random.clone().mul_scalar(4.0).floor().add_scalar(-2.0);
        let flags = random.clone().greater_elem(0.5).int().mul_scalar(3);
        for order in [Order::Ascending, Order::Descending] {
            let host = scaled.clone().into_data();
            let got = scaled.clone().top_k(50, 1, order);
            let (values, indices) = expected_top_k(&host, 1, 50, order == Order::Descending);
            assert_eq!(
                got.values.into_data().as_bytes(),
                &values[..],
                "on {device:?}"
            );
            assert_eq!(to_i64(&got.indices.into_data()), indices, "on {device:?}");
            let host = flags.clone().into_data();
            let got = flags.clone().sort_stable(0, order);
            let (values, indices) = expected_top_k(&host, 0, 17, order == Order::Descending);
            assert_eq!(
                got.values.into_data().as_bytes(),
                &values[..],
                "on {device:?}"
            );
            assert_eq!(to_i64(&got.indices.into_data()), indices, "on {device:?}");
        }
    }
}

#[test]
fn indices_take_the_dtype_asked_for() {
    for device in devices() {
        let x = Tensor::<1, Int>::from_data([5, 3, 9, 1], &device);
        // Every Int dtype: the kernels write the indices as 32-bit words.
        for dtype in [IntDType::I64, IntDType::U8, IntDType::I16, IntDType::U32] {
            let options = SortOptions {
                order: Order::Descending,
                indices_dtype: Some(dtype),
            };
            let sorted = x.clone().try_sort_stable(0, options).unwrap();
            assert_eq!(sorted.indices.dtype(), DType::from(dtype));
            assert_eq!(to_i64(&sorted.indices.into_data()), vec![2, 0, 1, 3]);
        }
    }
}

#[test]
fn the_gradient_goes_back_to_the_selected_positions() {
    for device in [Device::flex(), gpu().unwrap_or_else(Device::flex)] {
        let device = device.autodiff();
        let x = Tensor::<2>::from_data([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], &device).require_grad();
        let top = x.clone().top_k(2, 1, Order::Descending);
        let weights = Tensor::<2>::from_data([[10.0, 1.0], [100.0, 7.0]], &device);
        let grads = (top.values * weights).sum().backward();
        let grad = x.grad(&grads).unwrap();
        assert_eq!(
            grad.into_data().try_to_vec::<f32>().unwrap(),
            vec![0.0, 10.0, 1.0, 7.0, 0.0, 100.0],
            "on {device:?}"
        );
    }
}

#[test]
fn errors_name_the_shapes() {
    for device in devices() {
        let x = Tensor::<2>::zeros([2, 3], &device);
        let err = x
            .clone()
            .try_top_k(4, 1, SortOptions::default())
            .unwrap_err();
        assert!(
            err.to_string().contains("k = 4") && err.to_string().contains("[2, 3]"),
            "{err}"
        );
        let err = x
            .clone()
            .try_top_k(1, 2, SortOptions::default())
            .unwrap_err();
        assert!(err.to_string().contains("axis 2 is out of range"), "{err}");
        let err = x
            .clone()
            .try_sort_stable(-3, SortOptions::default())
            .unwrap_err();
        assert!(err.to_string().contains("axis -3 is out of range"), "{err}");
        let empty = Tensor::<2>::zeros([2, 0], &device);
        let err = empty
            .clone()
            .try_top_k(1, 1, SortOptions::default())
            .unwrap_err();
        assert!(err.to_string().contains("[2, 0]"), "{err}");
        let sorted = empty.sort_stable(1, Order::Ascending);
        assert_eq!(sorted.values.dims(), [2, 0]);
        let long = Tensor::<1>::zeros([300], &device);
        let options = SortOptions {
            order: Order::Ascending,
            indices_dtype: Some(IntDType::U8),
        };
        let err = long.try_sort_stable(0, options).unwrap_err();
        assert!(
            err.to_string().contains("cannot hold the positions"),
            "{err}"
        );
        let result = std::panic::catch_unwind(|| x.top_k(9, 0, Order::Ascending));
        assert!(result.is_err(), "top_k panics where try_top_k errs");
    }
}

/// Checks a sort of `[rows, len]` i32 or f32 `input` (no NaN) along axis 1 by its properties:
/// each row's indices are a permutation, each value is the input at its index, and consecutive
/// values are in order with ties by increasing index. Linear, so it serves inputs the oracle's
/// sort would take long to check in a debug build.
fn check_sorted(input: &[f64], rows: usize, sorted: Sorted<2, impl Basic>, descending: bool) {
    let Sorted { values, indices } = sorted;
    let len = input.len() / rows;
    let values = values
        .into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .unwrap();
    let indices = to_i64(&indices.into_data());
    let mut seen = vec![usize::MAX; len];
    for r in 0..rows {
        for p in 0..len {
            let at = r * len + p;
            let index = indices[at] as usize;
            assert!(
                index < len && seen[index] != r,
                "row {r}: indices are a permutation"
            );
            seen[index] = r;
            assert_eq!(values[at], input[r * len + index], "row {r}, position {p}");
            if p > 0 {
                let (a, b) = (values[at - 1], values[at]);
                let ordered = if descending { a > b } else { a < b };
                assert!(
                    ordered || (a == b && indices[at - 1] < indices[at]),
                    "row {r}, position {p}: {a} then {b}"
                );
            }
        }
    }
}

#[test]
fn axes_around_the_one_cube_limit() {
    // Up to 4,096 elements one cube sorts a sequence in shared memory; past it, the radix
    // passes. Ties from a palette of a few values, both orders, f32 and i64 keys.
    for dtype in [DType::F32, DType::I64, DType::U8] {
        let palette = palette(dtype);
        for (rows, len) in [(3usize, 1024usize), (2, 1025), (1, 4096), (2, 4097)] {
            let bits: Vec<u64> = (0..(rows * len) as u64)
                .map(|i| palette[(i.wrapping_mul(0x9E37_79B9) >> 7) as usize % palette.len()])
                .collect();
            let data = from_bits(&bits, &[rows, len], dtype);
            for device in devices() {
                for order in [Order::Ascending, Order::Descending] {
                    let case = format!("{dtype:?} [{rows}, {len}] {order:?}");
                    check(&device, &data, len, 1, order, &case);
                }
            }
        }
    }
}

#[test]
fn long_axes() {
    // On the GPU only: Flex runs the same reference as in every other test, whose debug build
    // would take minutes here.
    let Some(device) = gpu() else { return };
    let len = 1 << 24;
    let host: Vec<f32> = (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44) as f32 - 50_000.0)
        .collect();
    let input: Vec<f64> = host.iter().map(|&v| f64::from(v)).collect();
    let x = Tensor::<2>::from_data(TensorData::new(host, [1, len]), &device);
    check_sorted(&input, 1, x.clone().sort_stable(1, Order::Descending), true);
    let top = x.slice([0..1, 0..1 << 20]).top_k(100, 1, Order::Ascending);
    let mut smallest = input[..1 << 20].to_vec();
    smallest.sort_by(f64::total_cmp);
    let values = top
        .values
        .into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .unwrap();
    assert_eq!(values, smallest[..100].to_vec(), "a 2^20 view of it, k 100");

    let rows = 1 << 14;
    let host: Vec<i32> = (0..(rows * 1000) as u64)
        .map(|i| ((i * 2_654_435_761) % 50_000) as i32)
        .collect();
    let input: Vec<f64> = host.iter().map(|&v| f64::from(v)).collect();
    let x = Tensor::<2, Int>::from_data(TensorData::new(host, [rows, 1000]), &device);
    check_sorted(&input, rows, x.sort_stable(1, Order::Ascending), false);
}

/// A case: a shape of rank 1 to 4, an axis, `k`, an order, a dtype and palette choices.
fn case() -> impl Strategy<Value = (Vec<usize>, usize, usize, bool, usize, Vec<usize>)> {
    (
        prop::collection::vec(0usize..7, 1..=4),
        any::<prop::sample::Index>(),
        0usize..12,
    )
        .prop_flat_map(|(shape, axis, dtype)| {
            let axis = axis.index(shape.len());
            let len = shape[axis];
            let numel: usize = shape.iter().product();
            (
                Just(shape),
                Just(axis),
                0..=len,
                any::<bool>(),
                Just(dtype),
                prop::collection::vec(0usize..10, numel),
            )
        })
}

/// Long axes: `[outer, len, inner]` around the one-cube sort's limit (4,096) and across the
/// select's tiles of 2,048, with a small `k` (the radix select) or any up to the axis, the
/// palette picked by a seeded xorshift.
fn long_case() -> impl Strategy<Value = (Vec<usize>, usize, bool, usize, u64)> {
    (
        1usize..=3,
        prop_oneof![4090usize..4100, 4100usize..9000],
        1usize..=2,
        any::<bool>(),
        0usize..12,
        any::<u64>(),
    )
        .prop_flat_map(|(outer, len, inner, descending, dtype, seed)| {
            (
                Just(vec![outer, len, inner]),
                prop_oneof![1..=64usize, 1..=len],
                Just(descending),
                Just(dtype),
                Just(seed),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn matches_the_oracle((shape, axis, k, descending, dtype, picks) in case()) {
        let dtype = dtypes()[dtype];
        let palette = palette(dtype);
        let bits: Vec<u64> = picks.iter().map(|&p| palette[p % palette.len()]).collect();
        let data = from_bits(&bits, &shape, dtype);
        let order = if descending { Order::Descending } else { Order::Ascending };
        for device in devices() {
            let case = format!("{dtype:?} {shape:?} axis {axis} k {k} {order:?}");
            check(&device, &data, k, axis, order, &case);
        }
    }

    #[test]
    fn long_axes_match_the_oracle((shape, k, descending, dtype, seed) in long_case()) {
        let dtype = dtypes()[dtype];
        let palette = palette(dtype);
        let mut state = seed | 1;
        let numel: usize = shape.iter().product();
        let bits: Vec<u64> = (0..numel)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                palette[(state >> 33) as usize % palette.len()]
            })
            .collect();
        let data = from_bits(&bits, &shape, dtype);
        let order = if descending { Order::Descending } else { Order::Ascending };
        for device in devices() {
            let case = format!("{dtype:?} {shape:?} k {k} {order:?} seed {seed}");
            check(&device, &data, k, 1, order, &case);
        }
    }
}
