//! Compress (`compress`, `compress_axis`) against an independent oracle on Flex (the reference
//! bodies) and wgpu (the kernels): ONNX's examples, every kind and dtype, views of inputs and masks
//! (transposed, permuted, sliced, broadcast), ranks 1 to 8 and every axis, conditions shorter than
//! the axis, all-false, all-true and empty inputs, masks of mixed density across many tiles,
//! `into_exact`, lazy composition, and every error.
//!
//! The oracle walks the output's coordinates and reads each value by index, a different route
//! from the kernels' listed slices and the reference's byte copies.

mod common;

use burn::tensor::{Bool, DType, Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::compress::*;
use common::*;
use proptest::prelude::*;

fn rows(device: &Device) -> Tensor<2, Int> {
    Tensor::<2, Int>::from_data([[1, 2], [3, 4], [5, 6]], device)
}

fn condition(values: &[bool], device: &Device) -> Tensor<1, Bool> {
    Tensor::<1, Bool>::from_data(TensorData::new(values.to_vec(), [values.len()]), device)
}

#[test]
fn onnx_examples() {
    for device in devices_and_default() {
        // Axis 0, a condition as long as the axis.
        let out = rows(&device).compress_axis(0, condition(&[false, true, true], &device));
        assert_eq!(out.values.dims(), [3, 2]);
        assert_eq!(
            to_i64(&out.values.clone().into_data()),
            vec![3, 4, 5, 6, 0, 0]
        );
        assert_eq!(to_i64(&out.into_exact().into_data()), vec![3, 4, 5, 6]);
        // Axis 1 and the same axis counted from the end.
        for axis in [1, -1] {
            let out = rows(&device).compress_axis(axis, condition(&[false, true], &device));
            assert_eq!(out.values.dims(), [3, 2], "axis {axis} on {device:?}");
            let exact = out.into_exact();
            assert_eq!(exact.dims(), [3, 1]);
            assert_eq!(to_i64(&exact.into_data()), vec![2, 4, 6]);
        }
        // A condition shorter than the axis discards the slices past its end.
        let out = rows(&device).compress_axis(0, condition(&[false, true], &device));
        assert_eq!(out.values.dims(), [2, 2]);
        assert_eq!(to_i64(&out.count.clone().into_data()), vec![1]);
        assert_eq!(to_i64(&out.into_exact().into_data()), vec![3, 4]);
        // The flattened form.
        let flat = rows(&device).reshape([6]);
        let keep = condition(&[false, true, true, false, false, true], &device);
        let exact = flat.compress_axis(0, keep).into_exact();
        assert_eq!(to_i64(&exact.into_data()), vec![2, 3, 6]);
    }
}

#[test]
fn mask_selects_like_torch_indexing() {
    for device in devices_and_default() {
        let x = Tensor::<2>::from_data([[0.5, -1.0, 2.0], [3.0, -4.0, 0.25]], &device);
        let out = x.clone().compress(x.clone().greater_elem(0.0));
        assert_eq!(out.values.dims(), [6]);
        let values = out.values.clone().into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(values, vec![0.5, 2.0, 3.0, 0.25, 0.0, 0.0], "on {device:?}");
        // The padding is zero, so a sum over `values` is the sum of the selection.
        let sum = out
            .values
            .clone()
            .sum()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap()[0];
        assert_eq!(sum, 5.75);
        assert_eq!(out.into_exact().dims(), [4]);
    }
}

#[test]
fn float_bits_move_unchanged() {
    let values = [
        -0.0f32,
        f32::NAN,
        f32::INFINITY,
        -1e-45,
        0.0,
        f32::from_bits(0x7FC0_1234),
    ];
    for device in devices() {
        let x = Tensor::<1>::from_data(TensorData::new(values.to_vec(), [6]), &device);
        let keep = condition(&[true, true, true, true, false, true], &device);
        let out = x.compress_axis(0, keep).values.into_data();
        let bits: Vec<u32> = out
            .try_to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let expected = [values[0], values[1], values[2], values[3], values[5], 0.0];
        let expected: Vec<u32> = expected.iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits[..5], expected[..5], "on {device:?}");
        assert_eq!(bits[5], 0, "the padding is +0.0 on {device:?}");
    }
}

#[test]
fn every_dtype_and_kind() {
    let dtypes = FLOAT_DTYPES
        .into_iter()
        .chain(INT_DTYPES)
        .chain([DType::Bool(burn::tensor::BoolStore::Native)]);
    for device in devices() {
        for dtype in dtypes.clone() {
            // Burn creates every other dtype on every device, those a runtime cannot bind too.
            if dtype == DType::Flex32 && !holds(&device, dtype, "compress of Flex32") {
                continue;
            }
            // Inner slices of 1, 3 and 4 elements: packed, odd and whole-word moves.
            for shape in [[7, 1], [5, 3], [6, 4]] {
                let data = values_of(dtype, &shape, 3);
                let keep = flags_with_density(shape[0], 0.5, 11);
                assert_axis_matches(&data, 0, &keep, &device);
                let mask = flags_with_density(shape[0] * shape[1], 0.4, 5);
                assert_mask_matches(&data, &mask, &device);
            }
        }
    }
}

#[test]
fn all_false_all_true_and_empty() {
    for device in devices() {
        let data = values_of(DType::F32, &[4, 5, 3], 1);
        for axis in 0..3 {
            let len = data.shape()[axis];
            assert_axis_matches(&data, axis as isize, &vec![false; len], &device);
            assert_axis_matches(&data, axis as isize, &vec![true; len], &device);
            assert_axis_matches(&data, axis as isize, &[], &device);
        }
        assert_mask_matches(&data, &[false; 60], &device);
        assert_mask_matches(&data, &[true; 60], &device);
        // Empty inputs: an empty axis, an empty slice, an empty mask.
        for shape in [vec![0, 3], vec![3, 0], vec![2, 0, 4]] {
            let data = TensorData::new(Vec::<f32>::new(), shape.clone());
            assert_axis_matches(&data, 0, &vec![true; shape[0]], &device);
            assert_mask_matches(&data, &[], &device);
        }
        let out =
            Tensor::<2, Int>::empty([0, 3], &device).compress_axis(0, condition(&[], &device));
        assert_eq!(out.clone().into_exact().dims(), [0, 3]);
        let out = rows(&device).compress_axis(1, condition(&[false, false], &device));
        assert_eq!(out.into_exact().dims(), [3, 0]);
    }
}

#[test]
fn mixed_density_masks_across_many_tiles() {
    // Runs of every density, so that tiles are empty, full, dense and sparse in one call.
    let len = 300_007;
    let mut mask = Vec::with_capacity(len);
    for (run, density) in [0.0, 1.0, 0.5, 0.01, 0.3, 0.0, 0.9]
        .iter()
        .cycle()
        .enumerate()
    {
        if mask.len() >= len {
            break;
        }
        let take = (5_000 + run * 3_331).min(len - mask.len());
        mask.extend(flags_with_density(take, *density, run as u64 + 1));
    }
    let data = TensorData::new((0..len as i32).collect::<Vec<_>>(), [len]);
    for device in devices() {
        assert_mask_matches(&data, &mask, &device);
    }
    // Rows of 64 by a condition of mixed density.
    let condition = flags_with_density(4_099, 0.3, 9);
    let data = values_of(DType::F32, &[4_099, 64], 2);
    for device in devices() {
        assert_axis_matches(&data, 0, &condition, &device);
    }
}

#[test]
fn lazy_composition_on_the_default_device() {
    let Some(device) = default_device() else {
        return;
    };
    let x = Tensor::<2>::from_data([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], &device);
    // Compress inside an elementwise graph: nothing in between reads back.
    let out = (x.clone() * 2.0).compress(x.clone().lower_elem(0.0));
    let total = (out.values.abs() + 1.0).sum();
    assert_eq!(total.into_data().try_to_vec::<f32>().unwrap(), vec![30.0]);
}

#[test]
fn errors_name_the_shapes() {
    for device in devices() {
        let x = Tensor::<2>::zeros([3, 4], &device);
        let err = x
            .clone()
            .try_compress(Tensor::<2, Bool>::empty([4, 3], &device))
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("Compress: the mask has shape [4, 3]"),
            "{message}"
        );
        assert!(message.contains("[3, 4]"), "{message}");
        let err = x
            .clone()
            .try_compress_axis(1, condition(&[true; 5], &device))
            .unwrap_err();
        assert!(err.to_string().contains("5 elements but axis 1"), "{err}");
        for axis in [2, -3] {
            let err = x
                .clone()
                .try_compress_axis(axis, condition(&[true], &device))
                .unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("axis {axis} is out of range")),
                "{err}"
            );
        }
        assert!(matches!(err, DmlOpsError::InvalidArgument { .. }));
    }
    if let Some(gpu) = gpu() {
        let x = Tensor::<1>::zeros([3], &flex());
        let err = x
            .clone()
            .try_compress_axis(0, condition(&[true], &gpu))
            .unwrap_err();
        assert!(err.to_string().contains("different devices"), "{err}");
        let err = x
            .try_compress(Tensor::<1, Bool>::empty([3], &gpu))
            .unwrap_err();
        assert!(err.to_string().contains("different devices"), "{err}");
    }
}

#[test]
#[should_panic(expected = "Compress: the condition has 4 elements but axis 0")]
fn plain_forms_panic_with_the_message() {
    let device = flex();
    let _ = rows(&device).compress_axis(0, condition(&[true; 4], &device));
}

/// A shape of rank 1 to 8 (dimensions 0 to 6 up to rank 5, 0 to 3 past it, so that a case stays
/// small), an axis, a condition length up to the axis's, a density, a seed and a dtype.
fn case_strategy() -> impl Strategy<Value = (Vec<usize>, isize, usize, f64, u64, DType)> {
    let dtypes = prop::sample::select(vec![
        DType::F32,
        DType::F16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::I16,
        DType::Bool(burn::tensor::BoolStore::Native),
    ]);
    let index = any::<prop::sample::Index>;
    (
        (1usize..=8).prop_flat_map(|rank| {
            let most = if rank <= 5 { 6 } else { 3 };
            prop::collection::vec(0usize..=most, rank)
        }),
        index(),
        index(),
        any::<bool>(),
    )
        .prop_flat_map(move |(shape, axis, length, shorter)| {
            let rank = shape.len();
            let axis = axis.index(2 * rank) as isize - rank as isize;
            let resolved = if axis < 0 {
                (rank as isize + axis) as usize
            } else {
                axis as usize
            };
            // Half the cases shorten the condition (to any length up to the axis's).
            let len = shape[resolved];
            let slices = if shorter { length.index(len + 1) } else { len };
            (
                Just(shape),
                Just(axis),
                Just(slices),
                prop::sample::select(vec![0.0, 0.1, 0.5, 0.9, 1.0]),
                any::<u64>(),
                dtypes.clone(),
            )
        })
}

fn check_random(device: &Device, case: (Vec<usize>, isize, usize, f64, u64, DType)) {
    // Every dtype of the strategy is created on every device, those a runtime cannot bind too.
    let (shape, axis, slices, density, seed, dtype) = case;
    let data = values_of(dtype, &shape, seed);
    assert_axis_matches(
        &data,
        axis,
        &flags_with_density(slices, density, seed),
        device,
    );
    let numel = shape.iter().product();
    assert_mask_matches(&data, &flags_with_density(numel, density, seed ^ 7), device);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Flex (the reference bodies) against the oracle.
    #[test]
    fn flex_matches_the_oracle(case in case_strategy()) {
        check_random(&flex(), case);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The kernels on wgpu against the same oracle.
    #[test]
    fn wgpu_matches_the_oracle(case in case_strategy()) {
        let Some(device) = gpu() else { return Ok(()) };
        check_random(&device, case);
    }
}

/// `view` compressed by `mask` (itself a view of a Bool tensor) and along every axis, against
/// the oracle run on `shown`, the values and flags the same views show on Flex: a view is read
/// where it lies (strides, offsets, broadcast dimensions), never as the buffer under it. (Burn
/// itself cannot read some views back on wgpu: it copies 8- and 16-bit views with kernels of
/// types WGSL lacks.)
fn assert_view_matches<K>(
    view: Tensor<3, K>,
    mask: Tensor<3, Bool>,
    shown: (&TensorData, &[bool]),
    case: &str,
) where
    K: burn::tensor::kind::Basic,
    Tensor<3, K>: CompressExt<3, K>,
{
    let (data, flags) = shown;
    let out = view.clone().compress(mask);
    let (count, expected) = mask_oracle(data, flags);
    assert_eq!(to_i64(&out.count.into_data()), vec![count as i64], "{case}");
    assert_eq!(as_f64(&out.values.into_data()), expected, "{case}");
    for axis in 0..3 {
        let len = data.shape()[axis];
        let keep: Vec<bool> = (0..len).map(|i| i % 3 != 1).collect();
        let condition = condition(&keep, &view.device());
        let out = view.clone().compress_axis(axis as isize, condition);
        let (count, expected) = oracle(data, axis, &keep);
        assert_eq!(
            to_i64(&out.count.into_data()),
            vec![count as i64],
            "{case}, axis {axis}"
        );
        assert_eq!(
            as_f64(&out.values.into_data()),
            expected,
            "{case}, axis {axis}"
        );
    }
}

/// Views of a `[4, 5, 6]` tensor, each paired with a view of `mask` (also `[4, 5, 6]`) of the
/// same shape: transposed, permuted, and with `sliced` sliced and broadcast.
fn views<K: burn::tensor::kind::Basic>(
    x: Tensor<3, K>,
    mask: &Tensor<3, Bool>,
    sliced: bool,
) -> Vec<(&'static str, Tensor<3, K>, Tensor<3, Bool>)> {
    let mask = mask.clone();
    let mut views = vec![
        (
            "transposed",
            x.clone().swap_dims(0, 2),
            mask.clone().swap_dims(0, 2),
        ),
        (
            "permuted",
            x.clone().permute([1, 2, 0]),
            mask.clone().permute([1, 2, 0]),
        ),
    ];
    if !sliced {
        return views;
    }
    views.extend([
        (
            "sliced",
            x.clone().slice([1..3, 0..5, 2..6]),
            mask.clone().slice([2..4, 0..5, 1..5]),
        ),
        (
            "broadcast",
            x.slice([1..2, 0..5, 0..6]).expand([4, 5, 6]),
            mask.slice([0..4, 2..3, 0..6]).expand([4, 5, 6]),
        ),
    ]);
    views
}

/// Each of [`views`] of `x` (on a device) and of `on_flex` (the same data on Flex), checked
/// with [`assert_view_matches`]; the sliced ones only where Burn can slice `x` (it runs a kernel
/// of the element's type).
fn assert_views_match<K>(x: Tensor<3, K>, on_flex: Tensor<3, K>, mask: &Tensor<3, Bool>, case: &str)
where
    K: burn::tensor::kind::Basic,
    Tensor<3, K>: CompressExt<3, K>,
{
    let flex_mask = Tensor::<3, Bool>::from_data(mask.to_data(), &flex());
    let device = x.device();
    let sliced = matches!(x.dtype(), DType::Bool(_))
        || holds(&device, x.dtype(), "compress of sliced and broadcast views");
    let shown = views(on_flex, &flex_mask, sliced);
    for ((name, view, mask), (_, flex_view, flex_mask)) in
        views(x, mask, sliced).into_iter().zip(shown)
    {
        let data = flex_view.to_data();
        let flags: Vec<bool> = flex_mask.to_data().iter::<bool>().collect();
        assert_view_matches(view, mask, (&data, &flags), &format!("{name} {case}"));
    }
}

#[test]
fn views_are_read_where_they_lie() {
    let shape = [4, 5, 6];
    let flags = flags_with_density(4 * 5 * 6, 0.5, 21);
    let bool_dtype = DType::Bool(burn::tensor::BoolStore::Native);
    for device in devices() {
        let mask = Tensor::<3, Bool>::from_data(TensorData::new(flags.clone(), shape), &device);
        // Burn creates every dtype on every wgpu device, even those it reports no storage for
        // (8- and 16-bit integers and bf16 on WGSL, 64-bit types and f16 on OpenGL): they are
        // read as 32-bit words where the runtime cannot bind them.
        for dtype in [
            DType::F32,
            DType::F16,
            DType::BF16,
            DType::F64,
            DType::I32,
            DType::I64,
            DType::I8,
            DType::U16,
            bool_dtype,
        ] {
            let data = values_of(dtype, &shape, 7);
            let case = format!("{dtype:?} on {device:?}");
            if dtype == bool_dtype {
                let x = Tensor::<3, Bool>::from_data(data.clone(), &device);
                let on_flex = Tensor::<3, Bool>::from_data(data, &flex());
                assert_views_match(x, on_flex, &mask, &case);
            } else if dtype.is_float() {
                let x = float_tensor::<3>(data.clone(), &device);
                assert_views_match(x, float_tensor::<3>(data, &flex()), &mask, &case);
            } else {
                let x = int_tensor::<3>(data.clone(), &device);
                assert_views_match(x, int_tensor::<3>(data, &flex()), &mask, &case);
            }
        }
    }
}

/// `into_exact` of every dtype Burn creates on the device, along every axis, against the
/// oracle: the slices kept are copied as raw bits, so no kernel of the element's type has to run
/// (WGSL has no 8- or 16-bit integers and no bf16, OpenGL no 64-bit types or f16, and Burn
/// creates them all on both).
#[test]
fn into_exact_of_every_dtype_along_every_axis() {
    let dtypes = [DType::F16, DType::BF16, DType::F32, DType::F64]
        .into_iter()
        .chain(INT_DTYPES)
        .chain([DType::Bool(burn::tensor::BoolStore::Native)]);
    for device in devices() {
        for dtype in dtypes.clone() {
            let data = values_of(dtype, &[3, 4], 1);
            for axis in [0isize, 1, -1] {
                let resolved = axis.rem_euclid(2) as usize;
                let keep: Vec<bool> = (0..data.shape()[resolved]).map(|i| i != 1).collect();
                let (count, padded) = oracle(&data, resolved, &keep);
                // The padded oracle without the slices at or past `count` along the axis.
                let expected: Vec<f64> = padded
                    .iter()
                    .enumerate()
                    .filter(|(flat, _)| [flat / 4, flat % 4][resolved] < count)
                    .map(|(_, &v)| v)
                    .collect();
                let keep = condition(&keep, &device);
                let exact = match dtype {
                    DType::Bool(_) => Tensor::<2, Bool>::from_data(data.clone(), &device)
                        .compress_axis(axis, keep)
                        .into_exact()
                        .into_data(),
                    d if d.is_float() => float_tensor::<2>(data.clone(), &device)
                        .compress_axis(axis, keep)
                        .into_exact()
                        .into_data(),
                    _ => int_tensor::<2>(data.clone(), &device)
                        .compress_axis(axis, keep)
                        .into_exact()
                        .into_data(),
                };
                let case = format!("{dtype:?} axis {axis} on {device:?}");
                let mut dims = vec![3, 4];
                dims[resolved] = count;
                assert_eq!(exact.shape().to_vec(), dims, "{case}");
                assert_eq!(as_f64(&exact), expected, "{case}");
            }
        }
    }
}
