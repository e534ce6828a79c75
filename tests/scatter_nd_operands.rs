//! ScatterND's operands on Flex and wgpu: Bool data, 8- to 64-bit dtypes, views, shared inputs
//! (copied, never modified) and updates that view the input.

mod common;

use burn::tensor::{Bool, DType, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::scatter::*;
use common::*;

/// Bool tensors as the device creates them (its own bool storage), through the API.
#[test]
fn bool_tensors_assign() {
    for device in devices() {
        let input = Tensor::<2, Bool>::from_data([[true, false], [false, true]], &device);
        let indices = Tensor::<2, Int>::from_data([[1, 0], [-2, -1]], &device);
        let updates = Tensor::<1, Bool>::from_data([true, false], &device);
        let output = input.scatter_nd_update(indices, updates);
        assert_eq!(
            output.into_data().iter::<bool>().collect::<Vec<_>>(),
            vec![true, false, true, true],
            "{device:?}"
        );
    }
}

/// 8- and 16-bit operands that are views (a transposed input and updates) and an input that
/// stays shared (so the scatter copies it first): on WGSL and OpenGL both the gather of a view
/// and the copy go through 32-bit words, and the kept input must not change. (Burn itself cannot
/// read back a transposed view of such a tensor there, so only contiguous tensors are read.)
#[test]
fn narrow_views_and_shared_inputs() {
    for device in devices() {
        for dtype in NARROW_DTYPES {
            let context = format!("{dtype:?} on {device:?}");
            // 15 elements: an odd number of bytes for 8 bits, of half-words for 16.
            let host: Vec<f64> = (0..15).map(|v| (v % 6) as f64).collect();
            let host_updates = [7.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0];
            // x^T is [3, 5] with x^T[i][j] = host[j * 3 + i]; updates^T is [2, 5].
            let transposed: Vec<f64> = (0..15).map(|e| host[(e % 5) * 3 + e / 5]).collect();
            let update_rows: Vec<f64> =
                (0..10).map(|e| host_updates[(e % 5) * 2 + e / 5]).collect();
            let run = |input: TensorData, updates: TensorData, rows: &[[i64; 1]], transpose| {
                let indices = Tensor::<2, Int>::from_data(
                    TensorData::new(rows.concat(), [rows.len(), 1]),
                    &device,
                );
                let options = reduce(Reduction::Add);
                if dtype.is_float() {
                    let base = float_tensor::<2>(input, &device);
                    let updates = float_tensor::<2>(updates, &device);
                    let (x, u) = if transpose {
                        (base.clone().transpose(), updates.transpose())
                    } else {
                        (base.clone(), updates)
                    };
                    let out = x.try_scatter_nd(indices, u, options).unwrap();
                    (out.into_data(), base.into_data())
                } else {
                    let base = int_tensor::<2>(input, &device);
                    let updates = int_tensor::<2>(updates, &device);
                    let (x, u) = if transpose {
                        (base.clone().transpose(), updates.transpose())
                    } else {
                        (base.clone(), updates)
                    };
                    let out = x.try_scatter_nd(indices, u, options).unwrap();
                    (out.into_data(), base.into_data())
                }
            };
            // Transposed views, scattered by rows of the transposed input.
            let (output, kept) = run(
                data(&host, &[5, 3], dtype),
                data(&host_updates, &[5, 2], dtype),
                &[[2], [0]],
                true,
            );
            let expected = oracle(
                &[3, 5],
                &transposed,
                &[2, 0],
                1,
                &update_rows,
                Reduction::Add,
                false,
                dtype,
            );
            assert_meets(&values(&output), &expected, &format!("{context}, views"));
            assert_eq!(values(&kept), host, "{context}: the viewed input changed");
            // A contiguous input that stays shared: copied first, then scattered.
            let (output, kept) = run(
                data(&host, &[15, 1], dtype),
                data(&host_updates[..3], &[3, 1], dtype),
                &[[14], [0], [-2]],
                false,
            );
            let expected = oracle(
                &[15, 1],
                &host,
                &[14, 0, -2],
                1,
                &host_updates[..3],
                Reduction::Add,
                false,
                dtype,
            );
            assert_meets(&values(&output), &expected, &format!("{context}, shared"));
            assert_eq!(values(&kept), host, "{context}: the shared input changed");
        }
    }
}

/// 64-bit data and indices on every device, with every reduction, duplicates included: on a
/// device that stores no 64-bit type (wgpu's OpenGL backend) they are held as 32-bit word pairs,
/// and only f64 `Add`/`Mul` are refused, with an error that says why.
#[test]
fn sixty_four_bit_data_and_indices() {
    let input = [5.0, -2.0, 0.0, 7.0];
    // Element 1 is hit three times (once through a negative index), element 3 once; row 4 is
    // out of range and skipped.
    let indices = [1i64, -3, 3, 1, 9];
    let updates = [-4.0, 6.0, 2.0, 3.0, 8.0];
    for device in devices() {
        for dtype in [DType::I64, DType::U64, DType::F64] {
            for reduction in [
                Reduction::Assign,
                Reduction::Add,
                Reduction::Mul,
                Reduction::Min,
                Reduction::Max,
            ] {
                let abs = |v: &[f64]| -> Vec<f64> {
                    v.iter()
                        .map(|x| if dtype == DType::U64 { x.abs() } else { *x })
                        .collect()
                };
                let (input, updates) = (abs(&input), abs(&updates));
                let context = format!("{dtype:?} {reduction:?} on {device:?}");
                let result = scatter::<1, 2, 1>(
                    &device,
                    data(&input, &[4], dtype),
                    index_data(&indices, &[5, 1], DType::I64),
                    data(&updates, &[5], dtype),
                    reduce(reduction),
                );
                if refuses(&device, dtype, reduction) {
                    let err = result.unwrap_err();
                    assert!(
                        matches!(err, DmlOpsError::UnsupportedDType { .. })
                            && err.to_string().contains("arithmetic"),
                        "{context}: {err}"
                    );
                    continue;
                }
                let output = result.unwrap_or_else(|err| panic!("{context}: {err}"));
                let expected = oracle(&[4], &input, &indices, 1, &updates, reduction, false, dtype);
                assert_meets(&values(&output), &expected, &context);
            }
        }
    }
}

/// The input is updated in place only when nothing else holds it: a clone kept aside is
/// unchanged, and so is an input used again after the call.
#[test]
fn shared_inputs_are_not_modified() {
    for device in devices() {
        let input = Tensor::<1, Int>::from_data([1, 2, 3, 4], &device);
        let kept = input.clone();
        let output = input.scatter_nd_update(
            Tensor::<2, Int>::from_data([[0], [3]], &device),
            Tensor::<1, Int>::from_data([9, 9], &device),
        );
        assert_eq!(to_i64(&output.into_data()), vec![9, 2, 3, 9]);
        assert_eq!(to_i64(&kept.into_data()), vec![1, 2, 3, 4], "{device:?}");
    }
}

/// Non-contiguous input, indices and updates (transposed views).
#[test]
fn non_contiguous_operands() {
    for device in devices() {
        // [3, 2]: [[0, 3], [1, 4], [2, 5]]
        let input = Tensor::<2>::from_data([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], &device).transpose();
        // Tuples (2, 0) and (1, 1), from a transposed [[2, 1], [0, 1]].
        let indices = Tensor::<2, Int>::from_data([[2, 1], [0, 1]], &device).transpose();
        let output = input
            .clone()
            .try_scatter_nd(
                indices,
                Tensor::<1>::from_data([60.0, 40.0], &device),
                Default::default(),
            )
            .unwrap();
        assert_eq!(
            output.into_data().try_to_vec::<f32>().unwrap(),
            vec![0.0, 3.0, 1.0, 40.0, 60.0, 5.0],
            "{device:?}"
        );
        // k = 1: rows 1 and 2 replaced by the rows of transposed updates [[10, 20], [30, 40]].
        let rows = Tensor::<2, Int>::from_data([[1, 2]], &device).transpose();
        let updates = Tensor::<2>::from_data([[10.0, 30.0], [20.0, 40.0]], &device).transpose();
        let output = input
            .try_scatter_nd(rows, updates, Default::default())
            .unwrap();
        assert_eq!(
            output.into_data().try_to_vec::<f32>().unwrap(),
            vec![0.0, 3.0, 10.0, 20.0, 30.0, 40.0],
            "{device:?}"
        );
    }
}

/// Updates that are a view of the input itself (the same buffer, read while it is scattered
/// into): every device takes the updates as they were before the call.
#[test]
fn updates_that_view_the_input() {
    for device in devices() {
        for reduction in [Reduction::Assign, Reduction::Add, Reduction::Max] {
            let host: Vec<f32> = (0..24).map(|v| (v * 7 % 11) as f32 - 5.0).collect();
            let x = Tensor::<2>::from_data(TensorData::new(host.clone(), [6, 4]), &device);
            // Rows 3..6 of the input, scattered onto rows 0, 2 and 0 again.
            let updates = x.clone().slice([3..6, 0..4]);
            let indices = Tensor::<2, Int>::from_data([[0], [2], [0]], &device);
            let output = x
                .try_scatter_nd(indices, updates, reduce(reduction))
                .unwrap()
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            let expected = oracle(
                &[6, 4],
                &host.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                &[0, 2, 0],
                1,
                &host[12..].iter().map(|&v| v as f64).collect::<Vec<_>>(),
                reduction,
                false,
                DType::F32,
            );
            assert_meets(
                &output.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                &expected,
                &format!("{reduction:?} on {device:?}"),
            );
        }
    }
}

/// Indices of 8- and 16-bit types as transposed views, which Burn creates on every wgpu device,
/// under every policy: made contiguous as 32-bit words where the runtime cannot bind the type,
/// and read back that way for `Error`'s check (Burn's own copy of such a view would need a
/// kernel of that type).
#[test]
fn narrow_index_views() {
    for device in devices() {
        for dtype in [DType::I8, DType::I16, DType::U8, DType::U16] {
            for out_of_bounds in [OutOfBounds::Skip, OutOfBounds::Clamp, OutOfBounds::Error] {
                // Tuples (2, 1) and (0, 1), from a transposed [[2, 0], [1, 1]].
                let tuples = TensorData::new(vec![2i64, 0, 1, 1], [2, 2]).convert_dtype(dtype);
                let indices = int_tensor::<2>(tuples, &device).transpose();
                let x = Tensor::<2>::from_data([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], &device);
                let updates = Tensor::<1>::from_data([9.0, 8.0], &device);
                let options = ScatterNdOptions {
                    out_of_bounds,
                    ..Default::default()
                };
                let output = x.try_scatter_nd(indices, updates, options).unwrap();
                assert_eq!(
                    output.into_data().try_to_vec::<f32>().unwrap(),
                    vec![1.0, 8.0, 3.0, 4.0, 5.0, 9.0],
                    "{dtype:?} indices, {out_of_bounds:?}, on {device:?}"
                );
            }
        }
    }
}

/// `input_dims` on a non-contiguous view of 8- and 16-bit data: the leading dimension it
/// ignores is skipped by the backends, never reshaped away (Burn would copy the view with a
/// kernel of its type, which WGSL and OpenGL lack).
#[test]
fn input_dims_on_narrow_views() {
    // x^T of a [1, 5, 3] x is [1, 3, 5]: x^T[0][i][j] = host[j * 3 + i].
    let host: Vec<f64> = (0..15).map(|v| (v % 7) as f64).collect();
    let rows = [9.0, 8.0, 7.0, 6.0, 5.0, 1.0, 2.0, 3.0, 4.0, 0.0];
    let mut expected: Vec<f64> = (0..15).map(|e| host[(e % 5) * 3 + e / 5]).collect();
    // Tuples (2) and (0) of the real [3, 5] input take the two rows of `rows`.
    expected[10..15].copy_from_slice(&rows[..5]);
    expected[..5].copy_from_slice(&rows[5..]);
    let options = ScatterNdOptions {
        input_dims: Some(2),
        ..Default::default()
    };
    for device in devices() {
        for dtype in NARROW_DTYPES {
            let indices = Tensor::<2, Int>::from_data([[2], [0]], &device);
            let (input, updates) = (data(&host, &[1, 5, 3], dtype), data(&rows, &[2, 5], dtype));
            let output = if dtype.is_float() {
                let x = float_tensor::<3>(input, &device).swap_dims(1, 2);
                let u = float_tensor::<2>(updates, &device);
                x.try_scatter_nd(indices, u, options.clone())
                    .unwrap()
                    .into_data()
            } else {
                let x = int_tensor::<3>(input, &device).swap_dims(1, 2);
                let u = int_tensor::<2>(updates, &device);
                x.try_scatter_nd(indices, u, options.clone())
                    .unwrap()
                    .into_data()
            };
            assert_eq!(
                output.shape().to_vec(),
                vec![1, 3, 5],
                "{dtype:?} on {device:?}"
            );
            assert_eq!(values(&output), expected, "{dtype:?} on {device:?}");
        }
    }
}
