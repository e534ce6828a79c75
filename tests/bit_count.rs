//! BitCount against the spec's rule on Flex (the reference bodies) and wgpu (the CubeCL kernel).
//!
//! The oracle here computes each count from typed values (`to_bits().count_ones()`), which is a
//! different route from the byte-wise reference in the crate, and the edge-value tables state the
//! expected counts outright.

mod common;

use burn::tensor::{DType, Device, Distribution, Float, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::*;
use half::{bf16, f16};
use proptest::prelude::*;

/// The popcount of each element, computed from its typed value.
fn oracle(data: &TensorData) -> Vec<i64> {
    macro_rules! count {
        ($t:ty, $bits:expr) => {
            data.as_slice::<$t>()
                .unwrap()
                .iter()
                .map(|v| $bits(*v).count_ones() as i64)
                .collect()
        };
    }
    match data.dtype() {
        DType::I8 => count!(i8, |v: i8| v),
        DType::I16 => count!(i16, |v: i16| v),
        DType::I32 => count!(i32, |v: i32| v),
        DType::I64 => count!(i64, |v: i64| v),
        DType::U8 => count!(u8, |v: u8| v),
        DType::U16 => count!(u16, |v: u16| v),
        DType::U32 => count!(u32, |v: u32| v),
        DType::U64 => count!(u64, |v: u64| v),
        DType::F16 => count!(f16, |v: f16| v.to_bits()),
        DType::BF16 => count!(bf16, |v: bf16| v.to_bits()),
        DType::F32 => count!(f32, |v: f32| v.to_bits()),
        DType::F64 => count!(f64, |v: f64| v.to_bits()),
        other => panic!("no oracle for {other:?}"),
    }
}

/// BitCount of `data` (any rank, Int or Float dtype) on `device`, output in `out`.
fn bit_count_ranked<const D: usize>(
    data: TensorData,
    device: &Device,
    out: IntDType,
) -> Result<TensorData, DmlOpsError> {
    let result = if data.dtype().is_float() {
        float_tensor::<D>(data, device).bit_count_as(out)
    } else {
        int_tensor::<D>(data, device).bit_count_as(out)
    };
    result.map(|t| t.into_data())
}

fn bit_count_data(
    data: &TensorData,
    device: &Device,
    out: IntDType,
) -> Result<TensorData, DmlOpsError> {
    with_rank!(
        data.shape().num_dims(),
        bit_count_ranked(data.clone(), device, out)
    )
}

/// Runs BitCount and checks dtype, shape and every count against the oracle.
fn assert_matches_oracle(data: &TensorData, device: &Device, out: IntDType) {
    let actual = bit_count_data(data, device, out)
        .unwrap_or_else(|err| panic!("{:?} on {device:?}: {err}", data.dtype()));
    assert_eq!(
        actual.dtype(),
        DType::from(out),
        "output dtype on {device:?}"
    );
    assert_eq!(actual.shape(), data.shape(), "output shape on {device:?}");
    assert_eq!(
        to_i64(&actual),
        oracle(data),
        "{:?} {:?} on {device:?}",
        data.dtype(),
        data.shape()
    );
}

#[test]
fn spec_example_u32() {
    for device in devices_and_default() {
        let x = int_tensor::<2>(TensorData::new(vec![0u32, 123, 456, 789], [2, 2]), &device);
        let bits = x.bit_count();
        assert_eq!(bits.dtype(), DType::from(device.settings().int_dtype));
        assert_eq!(bits.dims(), [2, 2]);
        assert_eq!(to_i64(&bits.into_data()), vec![0, 6, 4, 5], "on {device:?}");
    }
}

/// `0, 1, -1, min, max` of each Int dtype, with the counts the two's-complement rule gives.
fn int_edge_values(dtype: DType) -> (TensorData, Vec<i64>) {
    macro_rules! edges {
        ($t:ty, $bits:expr, $signed:expr) => {{
            let values: Vec<$t> = vec![0, 1, (0 as $t).wrapping_sub(1), <$t>::MIN, <$t>::MAX];
            let expected = if $signed {
                vec![0, 1, $bits, 1, $bits - 1]
            } else {
                vec![0, 1, $bits, 0, $bits]
            };
            (TensorData::new(values, [5]), expected)
        }};
    }
    match dtype {
        DType::I8 => edges!(i8, 8, true),
        DType::I16 => edges!(i16, 16, true),
        DType::I32 => edges!(i32, 32, true),
        DType::I64 => edges!(i64, 64, true),
        DType::U8 => edges!(u8, 8, false),
        DType::U16 => edges!(u16, 16, false),
        DType::U32 => edges!(u32, 32, false),
        DType::U64 => edges!(u64, 64, false),
        other => panic!("{other:?} is not an Int dtype"),
    }
}

#[test]
fn int_dtypes_edge_values() {
    // Every Int dtype is counted on every device: the word-wise kernel reads 8- and 16-bit
    // tensors on WGSL, which binds no such types.
    for device in devices() {
        for dtype in INT_DTYPES {
            let (data, expected) = int_edge_values(dtype);
            let actual = bit_count_data(&data, &device, IntDType::I32)
                .unwrap_or_else(|err| panic!("{dtype:?} on {device:?}: {err}"));
            assert_eq!(to_i64(&actual), expected, "{dtype:?} on {device:?}");
        }
    }
}

#[test]
fn float_special_values() {
    let f32s = vec![
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::from_bits(1), // smallest subnormal
        f32::MAX,
        0.1,
    ];
    let cases = [
        TensorData::new(f32s.clone(), [11]),
        TensorData::new(f32s.iter().map(|&v| v as f64).collect(), [11]),
        TensorData::new(f32s.iter().map(|&v| f16::from_f32(v)).collect(), [11]),
        TensorData::new(f32s.iter().map(|&v| bf16::from_f32(v)).collect(), [11]),
    ];
    for device in devices() {
        for data in &cases {
            let dtype = data.dtype();
            let actual = bit_count_data(data, &device, IntDType::I32)
                .unwrap_or_else(|err| panic!("{dtype:?} on {device:?}: {err}"));
            assert_eq!(to_i64(&actual), oracle(data), "{dtype:?} on {device:?}");
        }
        // The spec's stated values.
        let x = Tensor::<1, Float>::from_data([1.0f32, -0.0], (&device, DType::F32));
        assert_eq!(
            to_i64(&x.bit_count().into_data()),
            vec![7, 1],
            "on {device:?}"
        );
    }
    let x =
        Tensor::<1, Float>::from_data(TensorData::new(vec![f16::ONE], [1]), (&flex(), DType::F16));
    assert_eq!(to_i64(&x.bit_count().into_data()), vec![4]);
}

#[test]
fn every_output_dtype() {
    let data = TensorData::new(vec![0i64, -1, 1, i64::MIN, 0x0F0F], [5]);
    for device in devices() {
        for out in INT_DTYPES {
            let actual = bit_count_data(&data, &device, int_dtype(out))
                .unwrap_or_else(|err| panic!("{out:?} on {device:?}: {err}"));
            assert_eq!(actual.dtype(), out);
            assert_eq!(
                to_i64(&actual),
                vec![0, 64, 1, 1, 8],
                "{out:?} on {device:?}"
            );
        }
    }
}

#[test]
fn ranks_and_odd_sizes() {
    let shapes: &[&[usize]] = &[
        &[0],
        &[1],
        &[3],
        &[5],
        &[7],
        &[4097],
        &[2, 0, 3],
        &[3, 5],
        &[2, 3, 5],
        &[1, 2, 3, 5],
        &[2, 1, 3, 1, 5],
        &[1, 2, 1, 3, 1, 3],
        &[2, 2, 2, 2, 2, 2, 3],
        &[1, 1, 2, 1, 3, 1, 1, 5],
        &[2, 2, 2, 2, 2, 2, 2, 0],
    ];
    for device in devices() {
        for shape in shapes {
            let numel: usize = shape.iter().product();
            let values: Vec<i32> = (0..numel as i32)
                .map(|i| i.wrapping_mul(-1_640_531_535))
                .collect();
            assert_matches_oracle(
                &TensorData::new(values, shape.to_vec()),
                &device,
                IntDType::I32,
            );
            let values: Vec<f32> = (0..numel).map(|i| i as f32 * -0.37).collect();
            assert_matches_oracle(
                &TensorData::new(values, shape.to_vec()),
                &device,
                IntDType::U32,
            );
        }
    }
}

#[test]
fn large_input_spans_many_cubes() {
    let numel = (1 << 20) + 3;
    let values: Vec<u32> = (0..numel as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let data = TensorData::new(values, [numel]);
    let Some(device) = gpu() else { return };
    assert_matches_oracle(&data, &device, IntDType::I32);
}

#[test]
fn non_contiguous_inputs() {
    for device in devices() {
        let x = Tensor::<2, Int>::from_data(
            [[1, 2, 3, 4, 5], [-1, -2, -3, -4, -5], [7, 8, 9, 10, 11]],
            &device,
        );
        let host = x.to_data();
        // Transposed.
        let t = x.clone().transpose();
        let expected = oracle(&t.to_data());
        assert_eq!(
            to_i64(&t.bit_count().into_data()),
            expected,
            "transposed on {device:?}"
        );
        // The counts of a transposed input keep its layout (it is counted in memory order):
        // later ops, fused or not, read them as any strided tensor.
        let sums: Vec<i64> = expected.chunks(3).map(|row| row.iter().sum()).collect();
        let counts = x.clone().transpose().bit_count();
        assert_eq!(to_i64(&counts.clone().sum_dim(1).into_data()), sums);
        assert_eq!(
            to_i64(&(counts.clone() + 1).reshape([15]).into_data()),
            expected.iter().map(|c| c + 1).collect::<Vec<_>>(),
            "on {device:?}"
        );
        // A permuted rank-3 view.
        let cube = Tensor::<3, Int>::from_data(
            TensorData::new(
                (0..60).map(|i| i * 7919 - 100).collect::<Vec<i32>>(),
                [3, 4, 5],
            ),
            &device,
        );
        let permuted = cube.permute([2, 0, 1]);
        assert_eq!(
            to_i64(&permuted.clone().bit_count().into_data()),
            oracle(&permuted.to_data()),
            "permuted on {device:?}"
        );
        // A slice that starts inside the buffer.
        let s = x.clone().slice([1..3, 1..4]);
        let expected = oracle(&s.to_data());
        assert_eq!(
            to_i64(&s.bit_count().into_data()),
            expected,
            "sliced on {device:?}"
        );
        // A broadcast view with zero strides.
        let row = x.clone().slice([1..2, 0..5]).expand([4, 5]);
        let expected = oracle(&row.to_data());
        assert_eq!(expected.len(), 20);
        assert_eq!(
            to_i64(&row.bit_count().into_data()),
            expected,
            "expanded on {device:?}"
        );
        assert_eq!(x.into_data(), host, "the input is left as it was");
    }
}

#[test]
fn hamming_distance_in_a_burn_graph() {
    let Some(device) = default_device() else {
        return;
    };
    let a_host = [[0b1011i32, -1, 7], [0, 1, 2]];
    let b_host = [[0b0001i32, 0, 7], [-1, 1, 5]];
    let a = Tensor::<2, Int>::from_data(a_host, &device);
    let b = Tensor::<2, Int>::from_data(b_host, &device);
    let distance = a.bitwise_xor(b).bit_count().sum_dim(1);
    let expected: Vec<i64> = a_host
        .iter()
        .zip(&b_host)
        .map(|(ra, rb)| {
            ra.iter()
                .zip(rb)
                .map(|(x, y)| (x ^ y).count_ones() as i64)
                .sum()
        })
        .collect();
    assert_eq!(to_i64(&distance.into_data()), expected);
    assert_eq!(expected, vec![2 + 32, 32 + 3]);
}

#[test]
fn the_input_survives_and_composes_with_later_ops() {
    let Some(device) = default_device() else {
        return;
    };
    let x = Tensor::<1, Float>::from_data([1.0f32, 2.0, -0.0, 0.5], &device);
    let bits = x.clone().bit_count();
    let scaled = x.clone() * 2.0;
    let as_float = bits.float() + scaled;
    assert_eq!(
        as_float.into_data().try_to_vec::<f32>().unwrap(),
        vec![7.0 + 2.0, 1.0 + 4.0, 1.0 - 0.0, 6.0 + 1.0]
    );
    assert_eq!(
        x.into_data().try_to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, -0.0, 0.5]
    );
}

/// Operands made on the device, as models feed them: random floats, a fused chain of
/// arithmetic with a comparison, integers from arithmetic and from a cast, a comparison's
/// result as integers, and a transposed view of one of them. Each count is the popcount of the
/// operand as read back.
#[test]
fn device_made_operands_match_the_oracle() {
    for device in devices() {
        let noise = Tensor::<2, Float>::random([37, 53], Distribution::Normal(0.0, 1e4), &device);
        let fused = noise
            .clone()
            .mul_scalar(3.0)
            .add_scalar(0.25)
            .mask_fill(noise.clone().lower_elem(-1e4), -0.0);
        let ints = Tensor::<1, Int>::arange(0..37 * 53, &device)
            .mul_scalar(7919)
            .sub_scalar(100_000)
            .reshape([37, 53]);
        let cast = noise.clone().int();
        let mask = noise.clone().greater_elem(0.0).int();
        let view = ints.clone().transpose();
        for (name, counts, operand) in [
            ("random floats", noise.clone().bit_count(), noise.to_data()),
            ("a fused chain", fused.clone().bit_count(), fused.to_data()),
            ("integers", ints.clone().bit_count(), ints.to_data()),
            ("a cast", cast.clone().bit_count(), cast.to_data()),
            ("a comparison", mask.clone().bit_count(), mask.to_data()),
            ("a view", view.clone().bit_count(), view.to_data()),
        ] {
            assert_eq!(
                to_i64(&counts.into_data()),
                oracle(&operand),
                "{name} on {device:?}"
            );
        }
    }
}

/// Narrow dtypes on the default wgpu path (WGSL binds no 8- or 16-bit types): counted through
/// the word-wise kernel, with odd lengths so that the last word is partly outside the tensor,
/// and views that start or stride inside a word.
#[test]
fn narrow_dtypes_with_odd_lengths_and_views() {
    let Some(device) = gpu() else { return };
    for len in [1usize, 2, 3, 5, 6, 7, 9] {
        let values: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(97) ^ 0xA5).collect();
        let data = TensorData::new(values.clone(), [len]);
        for out in [IntDType::U8, IntDType::I16, IntDType::I32, IntDType::I64] {
            assert_matches_oracle(&data, &device, out);
        }
        let halves: Vec<f16> = values
            .iter()
            .map(|&v| f16::from_bits((v as u16).wrapping_mul(515)))
            .collect();
        let data = TensorData::new(halves, [len]);
        for out in [IntDType::U8, IntDType::U16, IntDType::I32] {
            assert_matches_oracle(&data, &device, out);
        }
    }
    // Views of an 8-bit and an f16 tensor: expected values from the host, since the device
    // cannot copy such a tensor into a contiguous one. Rows of 256 bytes keep the row slice a
    // view (Burn copies a slice that starts off its memory alignment, with a kernel that binds
    // the element type, which WGSL lacks for 8-bit types).
    let host: Vec<i8> = (0..3 * 256)
        .map(|i: i32| (i.wrapping_mul(37) - 60) as i8)
        .collect();
    let x = Tensor::<2, Int>::from_data(
        TensorData::new(host.clone(), [3, 256]),
        (&device, DType::I8),
    );
    let count = |v: i8| v.count_ones() as i64;
    let transposed: Vec<i64> = (0..256)
        .flat_map(|c| (0..3).map(move |r| (r, c)))
        .map(|(r, c)| count(host[r * 256 + c]))
        .collect();
    assert_eq!(
        to_i64(&x.clone().transpose().bit_count().into_data()),
        transposed
    );
    let sliced: Vec<i64> = host[256..].iter().map(|&v| count(v)).collect();
    assert_eq!(
        to_i64(&x.clone().slice([1..3, 0..256]).bit_count().into_data()),
        sliced
    );
    let row: Vec<i64> = (0..4)
        .flat_map(|_| host[256..512].iter().map(|&v| count(v)))
        .collect();
    assert_eq!(
        to_i64(
            &x.slice([1..2, 0..256])
                .expand([4, 256])
                .bit_count_as(IntDType::U8)
                .unwrap()
                .into_data()
        ),
        row
    );
    let halves: Vec<f16> = (0..6).map(|i| f16::from_f32(i as f32 - 2.5)).collect();
    let h = Tensor::<2, Float>::from_data(
        TensorData::new(halves.clone(), [2, 3]),
        (&device, DType::F16),
    );
    let expected: Vec<i64> = [0, 3, 1, 4, 2, 5]
        .iter()
        .map(|&i| halves[i].to_bits().count_ones() as i64)
        .collect();
    assert_eq!(to_i64(&h.transpose().bit_count().into_data()), expected);
}

/// Random bytes of `numel` elements of `dtype`.
fn random_data(shape: Vec<usize>, dtype: DType, bytes: Vec<u8>) -> TensorData {
    let numel: usize = shape.iter().product();
    let mut bytes = bytes;
    bytes.resize(numel * dtype.size(), 0);
    TensorData::from_bytes_vec(bytes, shape, dtype)
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    (1usize..=8).prop_flat_map(|rank| {
        // Keep the element count small at high ranks.
        let max_dim: usize = match rank {
            1 => 300,
            2 => 40,
            3 => 12,
            4 => 7,
            _ => 4,
        };
        prop::collection::vec(0..=max_dim, rank)
    })
}

/// The dtype of a random case: every Int dtype, then F16, BF16, F32, F64.
fn any_dtype(index: usize) -> DType {
    INT_DTYPES
        .iter()
        .chain(&[DType::F16, DType::BF16, DType::F32, DType::F64])
        .copied()
        .nth(index)
        .unwrap()
}

/// BitCount of random bytes on `device` against the oracle: dtype, shape and every count.
fn check_random(device: &Device, shape: Vec<usize>, dtype: DType, out: IntDType, bytes: Vec<u8>) {
    let data = random_data(shape, dtype, bytes);
    let actual = bit_count_data(&data, device, out)
        .unwrap_or_else(|err| panic!("{dtype:?} on {device:?}: {err}"));
    assert_eq!(actual.dtype(), DType::from(out));
    assert_eq!(actual.shape(), data.shape());
    assert_eq!(
        to_i64(&actual),
        oracle(&data),
        "{dtype:?} {:?} on {device:?}",
        data.shape()
    );
}

/// A random case: shape (ranks 1 to 8), input dtype, output dtype, bytes.
fn case_strategy() -> impl Strategy<Value = (Vec<usize>, DType, IntDType, Vec<u8>)> {
    (
        shape_strategy(),
        0usize..INT_DTYPES.len() + 4,
        0usize..INT_DTYPES.len(),
        prop::collection::vec(any::<u8>(), 0..(300 * 8)),
    )
        .prop_map(|(shape, dtype, out, bytes)| {
            (shape, any_dtype(dtype), int_dtype(INT_DTYPES[out]), bytes)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Flex against the oracle on random shapes, dtypes, output dtypes and bits.
    #[test]
    fn flex_matches_the_oracle((shape, dtype, out, bytes) in case_strategy()) {
        check_random(&flex(), shape, dtype, out, bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The kernels on wgpu against the same oracle: every dtype runs there.
    #[test]
    fn wgpu_matches_the_oracle((shape, dtype, out, bytes) in case_strategy()) {
        let Some(device) = gpu() else { return Ok(()) };
        check_random(&device, shape, dtype, out, bytes);
    }
}

/// A quantized tensor's elements share a scale and have no encoding of their own: the one dtype
/// BitCount refuses, with an error that says what to do.
#[test]
fn quantized_tensors_are_an_error() {
    use burn::tensor::quantization::QuantScheme;
    let x = Tensor::<1, Float>::from_data([1.0f32, -2.0, 3.0], &flex())
        .quantize_dynamic(&QuantScheme::default());
    let err = x.clone().bit_count_as(IntDType::I32).unwrap_err();
    assert!(
        matches!(
            err,
            DmlOpsError::UnsupportedDType {
                operator: "BitCount",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("dequantize"), "{err}");
    let panic = std::panic::catch_unwind(|| x.bit_count()).unwrap_err();
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("dequantize"), "{message}");
}
