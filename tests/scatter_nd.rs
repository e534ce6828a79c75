//! ScatterND against the spec on Flex (the reference bodies) and wgpu (the kernels).
//!
//! The oracle below works on f64 values and row-major strides, and resolves each index with
//! explicit range tests (a different route from the crate's wrap-then-check): it returns, per
//! element, the exact result of a reduction or the set of candidates of an `Assign`.

mod common;

use burn::tensor::{Bool, DType, Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::*;
use proptest::prelude::*;

/// What the oracle expects of one output element.
#[derive(Clone, Debug)]
enum Expected {
    /// A reduction (or an element no update touches): exactly this value.
    Exact(f64),
    /// `Assign` with updates: any of these values.
    OneOf(Vec<f64>),
}

/// `v` as `dtype` holds it: integers wrap to their width (two's complement), floats round to
/// nearest. Every step of a reduction lands on a value of the dtype, and wrapping commutes with
/// integer sums and products, so fitting each step gives the exact wrapped result.
fn fit(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::U8 => v as i64 as u8 as f64,
        DType::I8 => v as i64 as i8 as f64,
        DType::U16 => v as i64 as u16 as f64,
        DType::I16 => v as i64 as i16 as f64,
        DType::U32 => v as i64 as u32 as f64,
        DType::I32 => v as i64 as i32 as f64,
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::BF16 => half::bf16::from_f64(v).to_f64(),
        DType::F32 => v as f32 as f64,
        _ => v,
    }
}

/// The expected output of ScatterND on `input` (shape `shape`), index tuples `indices`
/// (`k` each) and `updates` (one row of `prod(shape[k..])` per tuple), for data of `dtype`.
#[allow(clippy::too_many_arguments)]
fn oracle(
    shape: &[usize],
    input: &[f64],
    indices: &[i64],
    k: usize,
    updates: &[f64],
    reduction: Reduction,
    clamp: bool,
    dtype: DType,
) -> Vec<Expected> {
    let strides: Vec<usize> = (0..shape.len())
        .map(|i| shape[i + 1..].iter().product())
        .collect();
    let slice: usize = shape[k..].iter().product();
    let mut out: Vec<Expected> = input.iter().map(|&v| Expected::Exact(v)).collect();
    for (row, tuple) in indices.chunks(k).enumerate() {
        let coords: Option<Vec<usize>> = tuple
            .iter()
            .zip(shape)
            .map(|(&v, &d)| oracle_index(v, d, clamp))
            .collect();
        let Some(coords) = coords else { continue };
        let base: usize = coords.iter().zip(&strides).map(|(c, s)| c * s).sum();
        for j in 0..slice {
            let update = updates[row * slice + j];
            let element = &mut out[base + j];
            *element = match (reduction, element.clone()) {
                (Reduction::Assign, Expected::OneOf(mut values)) => {
                    values.push(update);
                    Expected::OneOf(values)
                }
                (Reduction::Assign, Expected::Exact(_)) => Expected::OneOf(vec![update]),
                (Reduction::Add, Expected::Exact(v)) => Expected::Exact(fit(dtype, v + update)),
                (Reduction::Mul, Expected::Exact(v)) => Expected::Exact(fit(dtype, v * update)),
                (Reduction::Min, Expected::Exact(v)) => Expected::Exact(v.min(update)),
                (Reduction::Max, Expected::Exact(v)) => Expected::Exact(v.max(update)),
                (_, Expected::OneOf(_)) => unreachable!("only Assign collects candidates"),
            };
        }
    }
    out
}

/// Data of `dtype` (Bool: non-zero is true) from f64 values.
fn data(values: &[f64], shape: &[usize], dtype: DType) -> TensorData {
    match dtype {
        DType::Bool(_) => TensorData::new(
            values.iter().map(|&v| v != 0.0).collect::<Vec<_>>(),
            shape.to_vec(),
        ),
        _ => TensorData::new(values.to_vec(), shape.to_vec()).convert_dtype(dtype),
    }
}

/// Index data of `dtype`.
fn index_data(values: &[i64], shape: &[usize], dtype: DType) -> TensorData {
    TensorData::new(values.to_vec(), shape.to_vec()).convert_dtype(dtype)
}

/// The values of `data` as f64 (Bool: 1.0 for true).
fn values(data: &TensorData) -> Vec<f64> {
    match data.dtype() {
        DType::Bool(_) => data.iter::<bool>().map(|b| f64::from(b as u8)).collect(),
        _ => data.iter::<f64>().collect(),
    }
}

/// Runs `try_scatter_nd` with the ranks `D` (input), `DI` (indices), `DU` (updates).
fn scatter<const D: usize, const DI: usize, const DU: usize>(
    device: &Device,
    input: TensorData,
    indices: TensorData,
    updates: TensorData,
    options: ScatterNdOptions,
) -> Result<TensorData, DmlOpsError> {
    let indices = int_tensor::<DI>(indices, device);
    let output = match input.dtype() {
        DType::Bool(_) => Tensor::<D, Bool>::from_data(input, device)
            .try_scatter_nd(
                indices,
                Tensor::<DU, Bool>::from_data(updates, device),
                options,
            )
            .map(|t| t.into_data()),
        dtype if dtype.is_float() => float_tensor::<D>(input, device)
            .try_scatter_nd(indices, float_tensor::<DU>(updates, device), options)
            .map(|t| t.into_data()),
        _ => int_tensor::<D>(input, device)
            .try_scatter_nd(indices, int_tensor::<DU>(updates, device), options)
            .map(|t| t.into_data()),
    }?;
    Ok(output)
}

/// Asserts that `actual` meets `expected` element by element.
fn assert_meets(actual: &[f64], expected: &[Expected], context: &str) {
    assert_eq!(actual.len(), expected.len(), "{context}: output size");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let ok = match e {
            Expected::Exact(v) => a == v || (a.is_nan() && v.is_nan()),
            Expected::OneOf(vs) => vs.contains(a),
        };
        assert!(ok, "{context}: element {i} is {a}, expected {e:?}");
    }
}

/// One case on every device: input `[shape]`, indices `[rows, k]`, updates `[rows] ++
/// shape[k..]`, checked against the oracle.
#[allow(clippy::too_many_arguments)]
fn check_case<const D: usize>(
    shape: &[usize],
    input: &[f64],
    indices: &[i64],
    k: usize,
    updates: &[f64],
    dtype: DType,
    index_dtype: DType,
    options: ScatterNdOptions,
) {
    check_case_on::<D>(
        &devices(),
        (shape, input),
        (indices, k),
        updates,
        (dtype, index_dtype),
        options,
    );
}

/// [`check_case`] on `devices` only.
fn check_case_on<const D: usize>(
    devices: &[Device],
    (shape, input): (&[usize], &[f64]),
    (indices, k): (&[i64], usize),
    updates: &[f64],
    (dtype, index_dtype): (DType, DType),
    options: ScatterNdOptions,
) {
    let rows = indices.len() / k;
    let expected = oracle(
        shape,
        input,
        indices,
        k,
        updates,
        options.reduction,
        options.out_of_bounds == OutOfBounds::Clamp,
        dtype,
    );
    // Updates padded with leading 1s to the input's rank: the shape rule ignores them.
    let mut update_shape = vec![rows];
    update_shape.extend_from_slice(&shape[k..]);
    while update_shape.len() < D {
        update_shape.insert(0, 1);
    }
    assert_eq!(
        update_shape.len(),
        D,
        "updates have rank at most the input's"
    );
    for device in devices {
        let result = scatter::<D, 2, D>(
            device,
            data(input, shape, dtype),
            index_data(indices, &[rows, k], index_dtype),
            data(updates, &update_shape, dtype),
            options.clone(),
        );
        if refuses(device, dtype, options.reduction) {
            assert!(
                matches!(result, Err(DmlOpsError::UnsupportedDType { .. })),
                "{device:?}: a reduction on {dtype:?}, which the device cannot compute with"
            );
            continue;
        }
        let output =
            result.unwrap_or_else(|err| panic!("{device:?} {dtype:?}/{index_dtype:?}: {err}"));
        assert_eq!(
            output.dtype().is_bool(),
            dtype.is_bool(),
            "{device:?}: output kind"
        );
        if !dtype.is_bool() {
            assert_eq!(output.dtype(), dtype, "{device:?}: output dtype");
        }
        assert_eq!(output.shape().as_slice(), shape, "{device:?}: output shape");
        assert_meets(
            &values(&output),
            &expected,
            &format!("{device:?} {dtype:?} indices {index_dtype:?} {options:?}"),
        );
    }
}

/// Whether the crate refuses `reduction` on data of `dtype` on `device` (the spec's dtype rule as
/// the README states it): 8- and 16-bit data always runs (computed in 32 bits where the device
/// has no arithmetic for it); a 32- or 64-bit dtype the device stores needs its arithmetic for
/// a reduction; 64-bit data the device does not store (OpenGL) is held as word pairs, which
/// serve every reduction but float `Add` and `Mul`.
fn refuses(device: &Device, dtype: DType, reduction: Reduction) -> bool {
    if reduction == Reduction::Assign || dtype.size() <= 2 {
        false
    } else if can_store(device, dtype) {
        !can_compute(device, dtype)
    } else {
        dtype.is_float() && matches!(reduction, Reduction::Add | Reduction::Mul)
    }
}

/// Whether Burn says `device` can compute with `dtype`.
fn can_compute(device: &Device, dtype: DType) -> bool {
    use burn::backend::{Backend, DTypeUsage, Dispatch};
    <Dispatch as Backend>::dtype_usage(device.as_dispatch(), dtype).contains(DTypeUsage::Arithmetic)
}

fn reduce(reduction: Reduction) -> ScatterNdOptions {
    ScatterNdOptions {
        reduction,
        ..Default::default()
    }
}

fn policy(out_of_bounds: OutOfBounds) -> ScatterNdOptions {
    ScatterNdOptions {
        out_of_bounds,
        ..Default::default()
    }
}

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

/// 8- and 16-bit data dtypes: packed into 32-bit words where the runtime cannot bind them (all
/// of them on OpenGL; all but F16 on WGSL), typed elsewhere.
const NARROW_DTYPES: [DType; 6] = [
    DType::U8,
    DType::I8,
    DType::U16,
    DType::I16,
    DType::F16,
    DType::BF16,
];

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
