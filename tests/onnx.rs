//! `burn_dml_ops::onnx`, what imported models call, against an independent oracle on Flex and
//! wgpu: GatherND with batch dimensions and ScatterElements along every axis over random shapes
//! and indices (negative, out of range, repeated), with operands uploaded and made on the device,
//! NonZero's output dtype, flattened Compress, Multinomial's draws (the same on every device, as
//! documented from the sampler), and every panic's message.

mod common;

use burn::tensor::{Bool, DType, Device, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::onnx;
use burn_dml_ops::{OutOfBounds, Reduction, SampleExt, SamplingOptions, ScatterNdOptions};
use common::*;
use proptest::prelude::*;

/// A GatherND case: data `[4 dims]`, indices `[b0, m, k]` with `batch_dims` 0 or 1.
#[derive(Clone, Debug)]
struct GatherCase {
    data_dims: [usize; 4],
    rows: usize,
    batch_dims: usize,
    k: usize,
    indices: Vec<i64>,
    made_on_device: bool,
}

fn gather_case() -> impl Strategy<Value = GatherCase> {
    (
        prop::array::uniform4(1usize..4),
        1usize..5,
        0usize..2,
        1usize..4,
        any::<bool>(),
    )
        .prop_flat_map(|(data_dims, rows, batch_dims, k, made_on_device)| {
            let k = k.min(4 - batch_dims);
            let batch = if batch_dims == 1 { data_dims[0] } else { 2 };
            let len = batch * rows * k;
            // Each coordinate from twice past either end: negative, in range and out of range.
            let values = prop::collection::vec(-8i64..8, len);
            values.prop_map(move |indices| GatherCase {
                data_dims,
                rows,
                batch_dims,
                k,
                indices,
                made_on_device,
            })
        })
}

/// GatherND by the definition: for each tuple, its batch prefix and its own coordinates, each
/// resolved by ONNX's rule or the whole row zero when one is out of range.
fn gather_oracle(case: &GatherCase, data: &[f32]) -> (Vec<usize>, Vec<f32>) {
    let GatherCase {
        data_dims: dims,
        rows,
        batch_dims: b,
        k,
        ..
    } = *case;
    let batch = case.indices.len() / (rows * k);
    let slice: usize = dims[b + k..].iter().product();
    let mut out = Vec::new();
    for (n, tuple) in case.indices.chunks(k).enumerate() {
        let prefix = (b == 1).then_some(n / rows);
        let coordinates: Option<Vec<usize>> = prefix
            .into_iter()
            .map(Some)
            .chain(
                tuple
                    .iter()
                    .zip(&dims[b..])
                    .map(|(&v, &d)| oracle_index(v, d, false)),
            )
            .collect();
        match coordinates {
            Some(at) => {
                let start = at
                    .iter()
                    .zip(&dims)
                    .fold(0, |offset, (&c, &d)| offset * d + c)
                    * slice;
                out.extend_from_slice(&data[start..start + slice]);
            }
            None => out.extend(std::iter::repeat_n(0.0, slice)),
        }
    }
    let shape = [batch, rows]
        .into_iter()
        .chain(dims[b + k..].iter().copied())
        .collect();
    (shape, out)
}

fn check_gather(device: &Device, case: &GatherCase) {
    let numel: usize = case.data_dims.iter().product();
    let values: Vec<f32> = (0..numel).map(|v| v as f32 + 0.5).collect();
    let batch = case.indices.len() / (case.rows * case.k);
    let data = Tensor::<4>::from_data(TensorData::new(values.clone(), case.data_dims), device);
    let index_data = TensorData::new(case.indices.clone(), [batch, case.rows, case.k]);
    let mut indices = Tensor::<3, Int>::from_data(index_data, device);
    let data = if case.made_on_device {
        // Fused arithmetic on the device: what a model's earlier nodes produce.
        indices = indices.add_scalar(3).sub_scalar(3);
        data.mul_scalar(2.0).div_scalar(2.0)
    } else {
        data
    };
    let (shape, expected) = gather_oracle(case, &values);
    let b = case.batch_dims;
    let got = match 3 + 4 - 1 - b - case.k {
        2 => onnx::gather_nd::<4, 3, 2, _>(data, indices, b, OutOfBounds::Skip).into_data(),
        3 => onnx::gather_nd::<4, 3, 3, _>(data, indices, b, OutOfBounds::Skip).into_data(),
        4 => onnx::gather_nd::<4, 3, 4, _>(data, indices, b, OutOfBounds::Skip).into_data(),
        5 => onnx::gather_nd::<4, 3, 5, _>(data, indices, b, OutOfBounds::Skip).into_data(),
        rank => unreachable!("output rank {rank}"),
    };
    assert_eq!(got.shape().to_vec(), shape, "{case:?} on {device:?}");
    assert_eq!(
        got.try_to_vec::<f32>().unwrap(),
        expected,
        "{case:?} on {device:?}"
    );
}

/// A ScatterElements case: data `[3 dims]` along `axis`, indices no larger than the data off
/// the axis, and a reduction.
#[derive(Clone, Debug)]
struct ElementsCase {
    data_dims: [usize; 3],
    index_dims: [usize; 3],
    axis: usize,
    indices: Vec<i64>,
    updates: Vec<f32>,
    reduction: Reduction,
}

fn elements_case() -> impl Strategy<Value = ElementsCase> {
    let reductions = prop::sample::select(vec![
        Reduction::Assign,
        Reduction::Add,
        Reduction::Mul,
        Reduction::Max,
        Reduction::Min,
    ]);
    (
        prop::array::uniform3(1usize..5),
        prop::array::uniform3(0usize..5),
        0usize..3,
        1usize..7,
        reductions,
    )
        .prop_flat_map(|(data_dims, shrink, axis, along, reduction)| {
            let mut index_dims = data_dims;
            for d in 0..3 {
                index_dims[d] = if d == axis {
                    along
                } else {
                    data_dims[d] - shrink[d] % data_dims[d]
                };
            }
            let len: usize = index_dims.iter().product();
            let reach = 2 * data_dims[axis] as i64;
            let updates = prop::collection::vec(
                prop::sample::select(vec![-2.0f32, -1.0, 0.5, 1.0, 2.0]),
                len,
            );
            (prop::collection::vec(-reach..reach, len), updates).prop_map(
                move |(indices, updates)| ElementsCase {
                    data_dims,
                    index_dims,
                    axis,
                    indices,
                    updates,
                    reduction,
                },
            )
        })
}

/// ScatterElements by the definition, in index order (`Assign` keeps the last duplicate, as the
/// deterministic kernels do); an index out of range after wrapping drops its update.
fn elements_oracle(case: &ElementsCase, data: &[f32]) -> Vec<f32> {
    let mut out = data.to_vec();
    let [i0, i1, i2] = case.index_dims;
    let [_, d1, d2] = case.data_dims;
    let mut n = 0;
    for a in 0..i0 {
        for b in 0..i1 {
            for c in 0..i2 {
                let mut at = [a, b, c];
                let (value, update) = (case.indices[n], case.updates[n]);
                n += 1;
                let Some(target) = oracle_index(value, case.data_dims[case.axis], false) else {
                    continue;
                };
                at[case.axis] = target;
                let slot = &mut out[(at[0] * d1 + at[1]) * d2 + at[2]];
                *slot = match case.reduction {
                    Reduction::Assign => update,
                    Reduction::Add => *slot + update,
                    Reduction::Mul => *slot * update,
                    Reduction::Max => slot.max(update),
                    Reduction::Min => slot.min(update),
                };
            }
        }
    }
    out
}

fn check_elements(device: &Device, case: &ElementsCase) {
    let numel: usize = case.data_dims.iter().product();
    let values: Vec<f32> = (0..numel).map(|v| (v % 7) as f32 - 3.0).collect();
    let data = Tensor::<3>::from_data(TensorData::new(values.clone(), case.data_dims), device);
    let indices = Tensor::<3, Int>::from_data(
        TensorData::new(case.indices.clone(), case.index_dims),
        device,
    );
    let updates = Tensor::<3>::from_data(
        TensorData::new(case.updates.clone(), case.index_dims),
        device,
    );
    let options = ScatterNdOptions {
        reduction: case.reduction,
        deterministic: true,
        ..Default::default()
    };
    let got = onnx::scatter_elements(data, indices, updates, case.axis, options);
    assert_eq!(
        got.into_data().try_to_vec::<f32>().unwrap(),
        elements_oracle(case, &values),
        "{case:?} on {device:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn gather_nd_matches_the_oracle(case in gather_case()) {
        for device in devices() {
            check_gather(&device, &case);
        }
    }

    #[test]
    fn scatter_elements_matches_the_oracle(case in elements_case()) {
        for device in devices() {
            check_elements(&device, &case);
        }
    }
}

#[test]
fn gather_nd_takes_int_and_bool_data_and_clamps_on_request() {
    for device in devices() {
        let data = Tensor::<2, Int>::from_data([[1, 2, 3], [4, 5, 6]], &device);
        let indices = Tensor::<2, Int>::from_data([[1, -1], [5, 0], [-7, 9]], &device);
        let skipped: Tensor<1, Int> =
            onnx::gather_nd(data.clone(), indices.clone(), 0, OutOfBounds::Skip);
        assert_eq!(to_i64(&skipped.into_data()), vec![6, 0, 0], "{device:?}");
        let clamped: Tensor<1, Int> = onnx::gather_nd(data, indices, 0, OutOfBounds::Clamp);
        assert_eq!(to_i64(&clamped.into_data()), vec![6, 4, 3], "{device:?}");

        let flags = Tensor::<2, Bool>::from_data([[true, false], [false, true]], &device);
        let rows = Tensor::<2, Int>::from_data([[1], [0], [3]], &device);
        let picked: Tensor<2, Bool> = onnx::gather_nd(flags, rows, 0, OutOfBounds::Skip);
        // Bool storage differs by device (bytes on Flex, u32 words on wgpu): compare as ints.
        assert_eq!(
            to_i64(&picked.into_data()),
            vec![0, 1, 1, 0, 0, 0],
            "{device:?}"
        );
    }
}

#[test]
fn non_zero_is_rank_by_count_in_the_asked_dtype_where_the_device_computes_it() {
    for device in devices() {
        let x = Tensor::<2>::from_data([[0.0, -0.0, f32::NAN], [1.0, 0.0, 2.0]], &device);
        let nz = onnx::non_zero(x, IntDType::I64);
        assert_eq!(nz.dims(), [2, 3]);
        let i64_computes = {
            use burn::backend::{Backend, DTypeUsage, Dispatch};
            <Dispatch as Backend>::dtype_usage(device.as_dispatch(), DType::I64)
                .contains(DTypeUsage::Arithmetic)
        };
        let expected = if i64_computes {
            DType::I64
        } else {
            device.settings().int_dtype.into()
        };
        assert_eq!(nz.dtype(), expected, "{device:?}");
        assert_eq!(to_i64(&nz.into_data()), vec![0, 1, 1, 2, 0, 2]);

        let none = onnx::non_zero(Tensor::<1, Int>::zeros([4], &device), IntDType::I32);
        assert_eq!(none.dims(), [1, 0]);
    }
}

#[test]
fn compress_flattens_without_an_axis_and_keeps_the_rank_with_one() {
    for device in devices() {
        let x = Tensor::<2, Int>::from_data([[1, 2, 3], [4, 5, 6]], &device);
        let keep = Tensor::<1, Bool>::from_data([false, true, true, false, true], &device);
        let flat: Tensor<1, Int> = onnx::compress(x.clone(), keep, None);
        assert_eq!(to_i64(&flat.into_data()), vec![2, 3, 5], "{device:?}");
        let keep = Tensor::<1, Bool>::from_data([true, false], &device);
        let columns: Tensor<2, Int> = onnx::compress(x, keep, Some(-1));
        assert_eq!(columns.dims(), [2, 1]);
        assert_eq!(to_i64(&columns.into_data()), vec![1, 4], "{device:?}");
    }
}

#[test]
fn multinomial_draws_as_documented_the_same_on_every_device() {
    let classes = 50;
    let mut values: Vec<f32> = (0..3 * classes)
        .map(|i| (i % classes * 37 % 23) as f32 * 0.25)
        .collect();
    values[7] = f32::NAN;
    values[8] = f32::NEG_INFINITY;
    values[2 * classes..].fill(f32::NEG_INFINITY);
    let data = TensorData::new(values, [3, classes]);
    let (seed, call, samples) = (2.5f32, 3u64, 16usize);
    let mut first: Option<Vec<i64>> = None;
    for device in devices_and_default() {
        let logits = Tensor::<2>::from_data(data.clone(), &device);
        let draws = onnx::multinomial(logits.clone(), samples, Some(seed), call, IntDType::I64);
        assert_eq!(draws.dims(), [3, samples], "{device:?}");
        let tokens = to_i64(&draws.into_data());
        // Identical rows draw differently (the row is in the seed); the NaN and -inf classes
        // never come; a row of -inf gives -1.
        assert_ne!(
            tokens[..samples],
            tokens[samples..2 * samples],
            "{device:?}"
        );
        let (drawn, empty) = tokens.split_at(2 * samples);
        assert!(
            drawn
                .iter()
                .all(|&t| (0..classes as i64).contains(&t) && t != 7 && t != 8)
        );
        assert!(empty.iter().all(|&t| t == -1), "{device:?}: {empty:?}");
        // Draw j of row b is the sampler's at step call * samples + j with b in the seed's high
        // half, whatever the row's batch.
        for row in 0..2 {
            let options = SamplingOptions {
                seed: u64::from(seed.to_bits()) | (row as u64) << 32,
                ..Default::default()
            };
            let alone = logits.clone().narrow(0, row, 1);
            for j in [0, samples - 1] {
                let step = call * samples as u64 + j as u64;
                let token = alone.clone().sample(options, step).unwrap().tokens;
                assert_eq!(
                    to_i64(&token.into_data()),
                    [tokens[row * samples + j]],
                    "{device:?}: row {row}, draw {j}"
                );
            }
        }
        let next = onnx::multinomial(logits.clone(), samples, Some(seed), call + 1, IntDType::I64);
        assert_ne!(
            to_i64(&next.into_data()),
            tokens,
            "{device:?}: the next run"
        );
        let none = onnx::multinomial(logits, 0, None, 0, IntDType::I32);
        assert_eq!(none.dims(), [3, 0]);
        match &first {
            None => first = Some(tokens),
            Some(flex) => assert_eq!(&tokens, flex, "{device:?} against Flex"),
        }
    }
}

/// The message of the panic `f` raises.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let panic = std::panic::catch_unwind(f).expect_err("the call must panic");
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn every_shape_error_panics_with_the_operator_and_the_shapes() {
    let device = flex();
    let data = || Tensor::<2>::zeros([2, 3], &device);
    let indices = |rows: [[i64; 2]; 2]| Tensor::<2, Int>::from_data(rows, &device);
    let cases: Vec<(String, &[&str])> = vec![
        (
            panic_message(|| {
                let _: Tensor<1> =
                    onnx::gather_nd(data(), indices([[0, 0], [1, 1]]), 1, OutOfBounds::Skip);
            }),
            &["ONNX GatherND", "batch_dims + k", "[2, 3]"],
        ),
        (
            panic_message(|| {
                let _: Tensor<2> =
                    onnx::gather_nd(data(), indices([[0, 0], [1, 1]]), 0, OutOfBounds::Skip);
            }),
            &["ONNX GatherND", "not rank 2"],
        ),
        (
            panic_message(|| {
                let _: Tensor<1> =
                    onnx::gather_nd(data(), indices([[0, 0], [4, 1]]), 0, OutOfBounds::Error);
            }),
            &["ONNX GatherND", "[4, 1]", "out of range"],
        ),
        (
            panic_message(|| {
                let updates = Tensor::<2>::zeros([2, 3], &device);
                onnx::scatter_elements(
                    data(),
                    indices([[0, 0], [1, 1]]),
                    updates,
                    1,
                    ScatterNdOptions::default(),
                );
            }),
            &["ONNX ScatterElements", "same shape"],
        ),
        (
            panic_message(|| {
                let updates = Tensor::<2>::zeros([2, 2], &device);
                onnx::scatter_elements(
                    data(),
                    indices([[0, 0], [1, 1]]),
                    updates,
                    2,
                    ScatterNdOptions::default(),
                );
            }),
            &["ONNX ScatterElements", "axis must be below the rank 2"],
        ),
        (
            panic_message(|| {
                let updates = Tensor::<2>::zeros([3, 1], &device);
                let tall = Tensor::<2, Int>::zeros([3, 1], &device);
                onnx::scatter_elements(data(), tall, updates, 1, ScatterNdOptions::default());
            }),
            &["ONNX ScatterElements", "dimension 0 is larger"],
        ),
        (
            panic_message(|| {
                let updates = Tensor::<1>::zeros([5], &device);
                onnx::scatter_nd(
                    data(),
                    indices([[0, 0], [1, 1]]),
                    updates,
                    ScatterNdOptions::default(),
                );
            }),
            &["ONNX ScatterND", "updates have shape [5]"],
        ),
        (
            panic_message(|| {
                let keep = Tensor::<1, Bool>::from_data([true; 4], &device);
                let _: Tensor<2> = onnx::compress(data(), keep, Some(1));
            }),
            &["ONNX Compress", "condition"],
        ),
        (
            panic_message(|| {
                let keep = Tensor::<1, Bool>::from_data([true; 2], &device);
                let _: Tensor<2> = onnx::compress(data(), keep, None);
            }),
            &["ONNX Compress", "rank 1, not 2"],
        ),
        (
            panic_message(|| {
                let empty = Tensor::<2>::zeros([2, 0], &device);
                onnx::multinomial(empty, 1, Some(1.0), 0, IntDType::I32);
            }),
            &["ONNX Multinomial", "vocabulary"],
        ),
    ];
    for (message, parts) in cases {
        for part in parts {
            assert!(message.contains(part), "{part:?} missing from: {message}");
        }
    }
}
