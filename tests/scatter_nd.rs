//! ScatterND's indexing and validation against the spec on Flex (the reference bodies) and wgpu
//! (the kernels): the spec's examples, index tuples at and past every edge under each policy,
//! every index dtype, DirectML's dimension counts, and every error path.

mod common;

use burn::tensor::{Bool, DType, Int, Tensor};
use burn_dml_ops::prelude::*;
use common::scatter::*;
use common::*;

#[test]
fn spec_examples() {
    for device in devices() {
        let input = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &device);
        let updates = Tensor::<1>::from_data([9.0, 10.0, 11.0, 12.0], &device);
        let expected = vec![1.0f32, 11.0, 3.0, 10.0, 9.0, 6.0, 7.0, 12.0];
        for indices in [[[4], [3], [1], [7]], [[-4], [-5], [-7], [-1]]] {
            let indices = Tensor::<2, Int>::from_data(indices, &device);
            let output = input.clone().scatter_nd_update(indices, updates.clone());
            assert_eq!(
                output.into_data().try_to_vec::<f32>().unwrap(),
                expected,
                "{device:?}"
            );
        }

        let zeros = Tensor::<2>::zeros([2, 3], &device);
        let indices = Tensor::<2, Int>::from_data([[0, 1], [0, 1]], &device);
        let updates = Tensor::<1>::from_data([5.0, 3.0], &device);
        let output = zeros
            .try_scatter_nd(indices, updates, reduce(Reduction::Add))
            .unwrap();
        assert_eq!(
            output.into_data().try_to_vec::<f32>().unwrap(),
            vec![0.0, 8.0, 0.0, 0.0, 0.0, 0.0],
            "{device:?}"
        );
    }
}

#[test]
fn onnx_slices_and_batched_indices() {
    // ONNX ScatterND example 2: k = 1 on a rank-3 input, whole [4, 4] slices.
    let slab = |v: f64| vec![v; 16];
    let input: Vec<f64> = (0..64).map(|i| (i % 7) as f64).collect();
    let updates: Vec<f64> = [slab(5.0), slab(6.0)].concat();
    check_case::<3>(
        &[4, 4, 4],
        &input,
        &[0, 2],
        1,
        &updates,
        DType::F32,
        DType::I64,
        Default::default(),
    );
    // Indices of rank 3 (batch [2, 2]) and updates of rank 3: [2, 2] ++ [3].
    for device in devices() {
        let input = Tensor::<3, Int>::zeros([2, 2, 3], &device);
        let indices = Tensor::<3, Int>::from_data([[[0, 0], [0, 1]], [[1, 0], [-1, -1]]], &device);
        let updates = Tensor::<3, Int>::from_data(
            [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]],
            &device,
        );
        let output = input.scatter_nd_update(indices, updates);
        assert_eq!(
            to_i64(&output.into_data()),
            (1..=12).collect::<Vec<i64>>(),
            "{device:?}"
        );
    }
}

#[test]
fn negative_indices_in_one_to_five_dims() {
    let dims = [3usize, 4, 2, 3, 2];
    for rank in 1..=5 {
        let shape = &dims[..rank];
        let numel: usize = shape.iter().product();
        let input: Vec<f64> = (0..numel).map(|i| i as f64).collect();
        for k in [1, rank] {
            // Every tuple mixes negative and non-negative coordinates, all in range.
            let tuples: Vec<Vec<i64>> = (0..3)
                .map(|t| {
                    (0..k)
                        .map(|j| {
                            let d = shape[j] as i64;
                            let c = (t as i64 + j as i64) % d;
                            if (t + j) % 2 == 0 { c - d } else { c }
                        })
                        .collect()
                })
                .collect();
            // Distinct tuples only, so Assign is exact.
            let mut seen = Vec::new();
            for tuple in tuples {
                let resolved: Vec<usize> = tuple
                    .iter()
                    .zip(shape)
                    .map(|(&v, &d)| oracle_index(v, d, false).unwrap())
                    .collect();
                if !seen.iter().any(|(r, _)| *r == resolved) {
                    seen.push((resolved, tuple));
                }
            }
            let indices: Vec<i64> = seen.iter().flat_map(|(_, t)| t.clone()).collect();
            let slice: usize = shape[k..].iter().product();
            let updates: Vec<f64> = (0..seen.len() * slice).map(|i| 100.0 + i as f64).collect();
            with_rank!(
                rank,
                check_case(
                    shape,
                    &input,
                    &indices,
                    k,
                    &updates,
                    DType::F32,
                    DType::I32,
                    Default::default()
                )
            );
        }
    }
}

/// Indices at and beyond every edge, for each policy and signed index dtype (8- and 16-bit ones
/// are read from 32-bit words on WGSL and OpenGL, 64-bit ones on OpenGL).
#[test]
fn out_of_range_policies() {
    let shape = [4usize, 3];
    let input: Vec<f64> = (0..12).map(|i| i as f64).collect();
    let edges: [(DType, Vec<i64>); 4] = [
        (
            DType::I8,
            vec![-5, 4, i8::MIN as i64, i8::MAX as i64, -4, 3, -1],
        ),
        (
            DType::I16,
            vec![-5, 4, i16::MIN as i64, i16::MAX as i64, -4, 3, -1],
        ),
        (
            DType::I32,
            vec![-5, 4, i32::MIN as i64, i32::MAX as i64, -4, 3, -1],
        ),
        (
            DType::I64,
            vec![
                -5,
                4,
                i64::MIN,
                i64::MAX,
                i32::MIN as i64 - 1,
                // Low 32 bits in range, value not: never folded onto a valid row.
                1 << 32,
                (1 << 32) + 1,
                -(1 << 32) - 1,
                -(1 << 32) + 2,
                -4,
                -1,
            ],
        ),
    ];
    for (index_dtype, edge) in edges {
        for (position, &bad) in edge.iter().enumerate() {
            let in_range = (-4..4).contains(&bad);
            let indices = vec![bad, 1, 2, 2];
            let updates = vec![50.0, 51.0, 52.0, 60.0, 61.0, 62.0];
            for out_of_bounds in [OutOfBounds::Skip, OutOfBounds::Clamp] {
                for k in [1, 2] {
                    let indices: Vec<i64> = if k == 1 {
                        vec![bad, 2]
                    } else {
                        indices.clone()
                    };
                    let updates = if k == 1 {
                        updates.clone()
                    } else {
                        vec![50.0, 60.0]
                    };
                    check_case::<2>(
                        &shape,
                        &input,
                        &indices,
                        k,
                        &updates,
                        DType::F32,
                        index_dtype,
                        policy(out_of_bounds),
                    );
                }
            }
            // Error: an Err naming the tuple and the shape, or a normal result in range.
            for device in devices() {
                let result = scatter::<2, 2, 1>(
                    &device,
                    data(&input, &shape, DType::F32),
                    index_data(&indices, &[2, 2], index_dtype),
                    data(&[50.0, 60.0], &[2], DType::F32),
                    policy(OutOfBounds::Error),
                );
                match result {
                    Ok(output) => {
                        assert!(in_range, "{device:?} {bad}: expected an error");
                        let expected = oracle(
                            &shape,
                            &input,
                            &indices,
                            2,
                            &[50.0, 60.0],
                            Reduction::Assign,
                            false,
                            DType::F32,
                        );
                        assert_meets(&values(&output), &expected, "Error policy in range");
                    }
                    Err(err) => {
                        assert!(!in_range, "{device:?} {bad} (edge {position}): {err}");
                        let message = err.to_string();
                        assert!(
                            message.contains(&format!("[{bad}, 1]")) && message.contains("[4, 3]"),
                            "{device:?}: the message names the tuple and shape: {message}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn unsigned_indices_at_the_edges() {
    let shape = [5usize];
    let input = [1.0, 2.0, 3.0, 4.0, 5.0];
    for index_dtype in [DType::U32, DType::U64, DType::U8, DType::U16] {
        let max = match index_dtype {
            DType::U8 => u8::MAX as i64,
            DType::U16 => u16::MAX as i64,
            _ => u32::MAX as i64,
        };
        for out_of_bounds in [OutOfBounds::Skip, OutOfBounds::Clamp] {
            if index_dtype == DType::U64 {
                // Low 32 bits in range, value not.
                check_case::<1>(
                    &shape,
                    &input,
                    &[1 << 32, (1 << 32) + 3, 2, u32::MAX as i64 + 5],
                    1,
                    &[10.0, 20.0, 30.0, 40.0],
                    DType::I32,
                    index_dtype,
                    policy(out_of_bounds),
                );
            }
            check_case::<1>(
                &shape,
                &input,
                &[5, max, 0, 4],
                1,
                &[10.0, 20.0, 30.0, 40.0],
                DType::I32,
                index_dtype,
                policy(out_of_bounds),
            );
        }
    }
}

#[test]
fn every_index_dtype_and_data_kind() {
    let shape = [3usize, 2];
    let input = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0];
    for index_dtype in INT_DTYPES {
        let signed = matches!(
            index_dtype,
            DType::I8 | DType::I16 | DType::I32 | DType::I64
        );
        let indices: &[i64] = if signed { &[-1, 0] } else { &[2, 0] };
        for dtype in [
            DType::F32,
            DType::I32,
            DType::Bool(burn::tensor::BoolStore::Native),
        ]
        .into_iter()
        .chain(INT_DTYPES)
        .chain([DType::F16, DType::BF16, DType::F64])
        {
            check_case::<2>(
                &shape,
                &input,
                indices,
                1,
                &[0.0, 1.0, 1.0, 1.0],
                dtype,
                index_dtype,
                Default::default(),
            );
        }
    }
}

/// DirectML's dimension counts: padded tensors behave as their real trailing dimensions.
#[test]
fn directml_dimension_counts() {
    let real: Vec<f64> = (0..24).map(|i| i as f64).collect();
    for device in devices() {
        // input [1, 1, 4, 6] with InputDimensionCount 2; indices [1, 1, 3, 2] with
        // IndicesDimensionCount 2; updates [3].
        let padded = scatter::<4, 4, 1>(
            &device,
            data(&real, &[1, 1, 4, 6], DType::F32),
            index_data(&[0, 5, 3, 0, -1, -1], &[1, 1, 3, 2], DType::I32),
            data(&[-1.0, -2.0, -3.0], &[3], DType::F32),
            ScatterNdOptions {
                input_dims: Some(2),
                indices_dims: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(padded.shape().as_slice(), &[1, 1, 4, 6]);
        let plain = scatter::<2, 2, 1>(
            &device,
            data(&real, &[4, 6], DType::F32),
            index_data(&[0, 5, 3, 0, -1, -1], &[3, 2], DType::I32),
            data(&[-1.0, -2.0, -3.0], &[3], DType::F32),
            Default::default(),
        )
        .unwrap();
        assert_eq!(values(&padded), values(&plain), "{device:?}");
        let mut expected = real.clone();
        expected[5] = -1.0;
        expected[18] = -2.0;
        expected[23] = -3.0;
        assert_eq!(values(&plain), expected, "{device:?}");

        // Without InputDimensionCount, k = 2 addresses the two leading 1s: [0, 5] is out of
        // range there and skipped, [-1, -1] is [0, 0], a whole [4, 6] slice.
        let unpadded = scatter::<4, 2, 3>(
            &device,
            data(&real, &[1, 1, 4, 6], DType::F32),
            index_data(&[-1, -1], &[1, 2], DType::I32),
            data(&[7.0; 24], &[1, 4, 6], DType::F32),
            Default::default(),
        )
        .unwrap();
        assert_eq!(values(&unpadded), vec![7.0; 24], "{device:?}");

        // A dimension count that ignores a dimension that is not 1, or is out of range.
        for (input_dims, indices_dims, needle) in [
            (Some(1), None, "ignored dimensions must have size 1"),
            (Some(0), None, "input_dims = 0 is outside 1..=4"),
            (Some(5), None, "input_dims = 5 is outside 1..=4"),
            (None, Some(0), "indices_dims = 0 is outside 1..=4"),
        ] {
            let err = scatter::<4, 4, 1>(
                &device,
                data(&real, &[1, 1, 4, 6], DType::F32),
                index_data(&[0, 5, 3, 0, -1, -1], &[1, 1, 3, 2], DType::I32),
                data(&[-1.0, -2.0, -3.0], &[3], DType::F32),
                ScatterNdOptions {
                    input_dims,
                    indices_dims,
                    ..Default::default()
                },
            )
            .unwrap_err();
            assert!(err.to_string().contains(needle), "{device:?}: {err}");
        }
    }
}

#[test]
fn validation_errors_name_the_rule() {
    for device in devices() {
        let input = || Tensor::<2>::zeros([4, 3], &device);
        let indices = |v: [[i64; 1]; 2]| Tensor::<2, Int>::from_data(v, &device);

        // Wrong updates shape: the message spells the expected one out.
        let err = input()
            .try_scatter_nd(
                indices([[0], [1]]),
                Tensor::<2>::zeros([2, 4], &device),
                Default::default(),
            )
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("[2, 4]") && message.contains("must have shape [2, 3]"),
            "{message}"
        );

        // Leading 1s are ignored on both sides.
        input()
            .try_scatter_nd(
                indices([[0], [1]]),
                Tensor::<4>::zeros([1, 1, 2, 3], &device),
                Default::default(),
            )
            .unwrap();

        // k = 0 and k > rank.
        let empty_tuples = Tensor::<2, Int>::zeros([2, 0], &device);
        let err = input()
            .try_scatter_nd(
                empty_tuples,
                Tensor::<2>::zeros([2, 3], &device),
                Default::default(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("k = 0"), "{err}");
        let wide = Tensor::<2, Int>::zeros([2, 3], &device);
        let err = input()
            .try_scatter_nd(wide, Tensor::<1>::zeros([2], &device), Default::default())
            .unwrap_err();
        assert!(err.to_string().contains("k = 3") && err.to_string().contains("1..=2"));

        // Dtype mismatch between input and updates.
        let err = input()
            .try_scatter_nd(
                indices([[0], [1]]),
                Tensor::<2>::zeros([2, 3], (&device, DType::F64)),
                Default::default(),
            )
            .map(|_| ())
            .unwrap_err();
        assert!(err.to_string().contains("dtype"), "{err}");

        // Bool takes Assign only.
        let err = Tensor::<1, Bool>::from_data([true, false], &device)
            .try_scatter_nd(
                Tensor::<2, Int>::from_data([[0]], &device),
                Tensor::<1, Bool>::from_data([false], &device),
                reduce(Reduction::Max),
            )
            .unwrap_err();
        assert!(err.to_string().contains("Assign only"), "{err}");
    }

    // Tensors on different devices.
    let Some(wgpu) = gpu() else { return };
    let flex = flex();
    let err = Tensor::<1>::zeros([4], &flex)
        .try_scatter_nd(
            Tensor::<2, Int>::from_data([[0]], &wgpu),
            Tensor::<1>::zeros([1], &flex),
            Default::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("different devices"), "{err}");
}

#[test]
#[should_panic(expected = "must have shape [3]")]
fn scatter_nd_update_panics_with_the_message() {
    let device = flex();
    Tensor::<1>::zeros([8], &device).scatter_nd_update(
        Tensor::<2, Int>::from_data([[0], [1], [2]], &device),
        Tensor::<1>::zeros([2], &device),
    );
}

/// Empty cases: no index tuples, and an input with a dimension of size 0.
#[test]
fn empty_operands() {
    for device in devices() {
        let input = Tensor::<2>::from_data([[1.0, 2.0], [3.0, 4.0]], &device);
        let output = input
            .try_scatter_nd(
                Tensor::<2, Int>::zeros([0, 1], &device),
                Tensor::<2>::zeros([0, 2], &device),
                reduce(Reduction::Add),
            )
            .unwrap();
        assert_eq!(
            output.into_data().try_to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 4.0]
        );
        for out_of_bounds in [OutOfBounds::Skip, OutOfBounds::Clamp] {
            let output = Tensor::<2>::zeros([0, 3], &device)
                .try_scatter_nd(
                    Tensor::<2, Int>::from_data([[0], [-1]], &device),
                    Tensor::<2>::ones([2, 3], &device),
                    policy(out_of_bounds),
                )
                .unwrap();
            assert_eq!(output.dims(), [0, 3], "{device:?}");
        }
    }
}

/// ScatterND inside a lazy Fusion graph: inputs computed by Burn ops, the output consumed by
/// more of them, nothing read back in between.
#[test]
fn composes_inside_fusion_graphs() {
    let Some(device) = default_device() else {
        return;
    };
    let base = Tensor::<2>::ones([3, 4], &device) * 2.0;
    let indices = Tensor::<1, Int>::arange(0..3, &device)
        .reshape([3, 1])
        .flip([0]);
    let updates = Tensor::<2>::ones([3, 4], &device).cumsum(1);
    let summed = base
        .try_scatter_nd(indices, updates, reduce(Reduction::Add))
        .unwrap()
        .sum_dim(1)
        .mul_scalar(0.5);
    assert_eq!(
        summed.into_data().try_to_vec::<f32>().unwrap(),
        vec![9.0, 9.0, 9.0]
    );
}
