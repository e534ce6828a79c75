//! NonZeroCoordinates on every input and output dtype on Flex and wgpu: types the runtime
//! cannot bind are read and written as 32-bit words, views are made contiguous first, and a
//! count an output dtype cannot hold is an error.

mod common;

use burn::tensor::{DType, Device, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::nonzero::*;
use common::*;
use half::f16;

/// Every dtype, on every device: the kernels read what the runtime cannot bind (8- and 16-bit
/// types on WGSL and OpenGL, 64-bit ones on OpenGL) as 32-bit words, so none is refused.
#[test]
fn bool_and_every_int_and_float_dtype() {
    let pattern = [0i64, 3, 0, 0, 100, 1, 0, 7, 0];
    for device in devices() {
        let bools = TensorData::new(pattern.iter().map(|&v| v != 0).collect::<Vec<_>>(), [3, 3]);
        assert_matches_oracle(&bools, &device, NonZeroOptions::default());
        for dtype in INT_DTYPES
            .into_iter()
            .chain(FLOAT_DTYPES.into_iter().filter(|d| *d != DType::Flex32))
        {
            let data = TensorData::new(pattern.to_vec(), [3, 3]).convert_dtype(dtype);
            assert_matches_oracle(&data, &device, NonZeroOptions::default());
        }
    }
}

/// Transposed views of every dtype: made contiguous first, by Burn's copy where the runtime
/// binds the type and through 32-bit words where it does not (Burn's copy cannot run there).
#[test]
fn transposed_views_of_every_dtype() {
    let pattern: Vec<i64> = (0..35).map(|i| [0, 5, 0, 1, 0, 0, 9][i % 7]).collect();
    for device in devices() {
        for dtype in INT_DTYPES
            .into_iter()
            .chain(FLOAT_DTYPES.into_iter().filter(|d| *d != DType::Flex32))
        {
            let data = TensorData::new(pattern.clone(), [5, 7]).convert_dtype(dtype);
            let on = |device: &Device| {
                let exact = if dtype.is_float() {
                    float_tensor::<2>(data.clone(), device)
                        .transpose()
                        .nonzero_coordinates()
                        .into_exact()
                } else {
                    int_tensor::<2>(data.clone(), device)
                        .transpose()
                        .nonzero_coordinates()
                        .into_exact()
                };
                to_i64(&exact.into_data())
            };
            assert_eq!(
                on(&device),
                on(&flex()),
                "transposed {dtype:?} on {device:?}"
            );
            // An empty view: nothing to gather, a count of 0.
            let empty = TensorData::new(Vec::<i64>::new(), [0, 7]).convert_dtype(dtype);
            let count = if dtype.is_float() {
                float_tensor::<2>(empty, &device)
                    .transpose()
                    .nonzero_coordinates()
                    .count_sync()
            } else {
                int_tensor::<2>(empty, &device)
                    .transpose()
                    .nonzero_coordinates()
                    .count_sync()
            };
            assert_eq!(count, 0, "empty transposed {dtype:?} on {device:?}");
        }
    }
}

/// A width below the rank into every output dtype, padded and exact, on every device, in one
/// tile and in several. Types the runtime cannot bind (8- and 16-bit ones on WGSL, 64-bit ones
/// on OpenGL) are written, and cut to the exact rows, as 32-bit words.
#[test]
fn narrow_width_into_every_output_dtype() {
    use IntDType::*;
    let cases: [(usize, &[IntDType]); 2] = [
        (7, &[I8, U8, I16, U16, I32, U32, I64, U64]),
        (70_000, &[I32, U32, I64, U64]),
    ];
    for device in devices() {
        for (n, dtypes) in cases {
            let values: Vec<f32> = (0..n)
                .map(|i| if i % 3 == 1 { i as f32 } else { 0.0 })
                .collect();
            let data = TensorData::new(values, [1, 1, n]);
            let expected: Vec<i64> = (0..n as i64).filter(|i| i % 3 == 1).collect();
            for &out in dtypes {
                for fill in [None, Some(5)] {
                    let options = NonZeroOptions {
                        width: Some(1),
                        fill,
                        out_dtype: Some(out),
                    };
                    let padding = assert_matches_oracle(&data, &device, options.clone());
                    if let Some(fill) = fill {
                        assert!(
                            padding.iter().all(|row| row == &[fill]),
                            "{out:?} {device:?}"
                        );
                    }
                    let exact = run(&data, &device, options).unwrap().into_exact();
                    assert_eq!(exact.dims(), [expected.len(), 1], "{out:?} on {device:?}");
                    assert_eq!(exact.dtype(), DType::from(out), "{out:?} on {device:?}");
                    assert_eq!(
                        to_i64(&exact.into_data()),
                        expected,
                        "{out:?} on {device:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn fill_sets_every_padding_row() {
    for device in devices() {
        let data = TensorData::new(vec![0i32, 1, 0, 0, 2, 0, 0, 0, 0, 3], [10]);
        // Every output dtype on every device: where the runtime cannot bind it (8- and 16-bit
        // ones on WGSL and OpenGL, 64-bit ones on OpenGL) the rows are stored as 32-bit words,
        // and 7 rows of 1 coordinate leave a partial last word for 8 and 16 bits.
        for (out, fill) in [
            (IntDType::I32, -7),
            (IntDType::I64, -7 - (1 << 40)),
            (IntDType::U64, 1 << 40),
            (IntDType::U32, 7),
            (IntDType::I16, -300),
            (IntDType::U16, 60_000),
            (IntDType::I8, -7),
            (IntDType::U8, 200),
        ] {
            let options = NonZeroOptions {
                fill: Some(fill),
                out_dtype: Some(out),
                ..Default::default()
            };
            let padding = assert_matches_oracle(&data, &device, options);
            assert_eq!(padding, vec![vec![fill]; 7], "{out:?} on {device:?}");
        }
    }
}

#[test]
fn counts_that_do_not_fit_the_output_dtype_are_errors() {
    let device = flex();
    let x = Tensor::<1, Int>::zeros([300], &device);
    let options = NonZeroOptions {
        out_dtype: Some(IntDType::U8),
        ..Default::default()
    };
    let err = x.clone().nonzero_coordinates_with(options).unwrap_err();
    assert!(err.to_string().contains("IntDType::I64"), "{err}");
    let options = NonZeroOptions {
        fill: Some(-1),
        out_dtype: Some(IntDType::U32),
        ..Default::default()
    };
    let err = x.nonzero_coordinates_with(options).unwrap_err();
    assert!(err.to_string().contains("fill value -1"), "{err}");
}

/// f16 of odd lengths, up to several tiles: on WGSL, which binds f16 but no u16, the kernel
/// reads the bits as 32-bit words whose last one is half past the input.
#[test]
fn f16_of_odd_lengths_where_the_device_stores_it() {
    for device in devices() {
        if !can_store(&device, DType::F16) {
            continue;
        }
        for len in [1usize, 3, 4097, 70_001] {
            let values: Vec<f16> = (0..len)
                .map(|i| match i % 7 {
                    0 => f16::from_f32(-0.0),
                    1 | 4 => f16::from_f32(0.0),
                    2 => f16::NAN,
                    _ => f16::from_f32(i as f32),
                })
                .collect();
            assert_matches_oracle(
                &TensorData::new(values, [len]),
                &device,
                NonZeroOptions::default(),
            );
        }
        // A transposed view is made contiguous (by Burn, which binds f16) before the count.
        let values: Vec<f16> = (0..15).map(|i| f16::from_f32((i % 3) as f32)).collect();
        let data = TensorData::new(values, [3, 5]);
        let on = |device: &Device| {
            let x = float_tensor::<2>(data.clone(), device).transpose();
            to_i64(&x.nonzero_coordinates().into_exact().into_data())
        };
        assert_eq!(on(&device), on(&flex()), "transposed f16 on {device:?}");
        // Slices that start one element (2 bytes) and three elements into the buffer.
        let values: Vec<f16> = (0..41).map(|i| f16::from_f32((i % 3) as f32)).collect();
        let data = TensorData::new(values, [41]);
        for start in [1, 3] {
            let on = |device: &Device| {
                let x = float_tensor::<1>(data.clone(), device).slice(start..40);
                to_i64(&x.nonzero_coordinates().into_exact().into_data())
            };
            assert_eq!(on(&device), on(&flex()), "f16[{start}..40] on {device:?}");
        }
    }
}
