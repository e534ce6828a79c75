//! NonZeroCoordinates against the spec on Flex (the reference bodies) and wgpu (the kernels).
//!
//! The oracle converts each element to f64 (or reads the bool) and tests it against zero, which
//! is a different route from the bit test the crate uses.

mod common;

use burn::tensor::{Bool, DType, Device, Float, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::*;
use half::{bf16, f16};
use proptest::prelude::*;

/// Which elements are non-zero, by value.
fn flags(data: &TensorData) -> Vec<bool> {
    match data.dtype() {
        DType::Bool(_) => data.iter::<bool>().collect(),
        _ => data.iter::<f64>().map(|v| v != 0.0).collect(),
    }
}

/// The expected rows: coordinates of the last `width` dims of each non-zero element, in order.
fn oracle(data: &TensorData, width: usize) -> Vec<Vec<i64>> {
    let shape = data.shape();
    let dims = &shape[shape.num_dims() - width..];
    flags(data)
        .into_iter()
        .enumerate()
        .filter(|(_, nz)| *nz)
        .map(|(flat, _)| {
            let mut rest = flat;
            let mut row = vec![0i64; width];
            for (c, &d) in row.iter_mut().zip(dims).rev() {
                *c = (rest % d) as i64;
                rest /= d;
            }
            row
        })
        .collect()
}

fn run_ranked<const D: usize>(
    data: TensorData,
    device: &Device,
    options: NonZeroOptions,
) -> Result<NonZeroCoordinates, DmlOpsError> {
    let dtype = data.dtype();
    match dtype {
        DType::Bool(_) => {
            Tensor::<D, Bool>::from_data(data, device).nonzero_coordinates_with(options)
        }
        d if d.is_float() => float_tensor::<D>(data, device).nonzero_coordinates_with(options),
        _ => int_tensor::<D>(data, device).nonzero_coordinates_with(options),
    }
}

fn run(
    data: &TensorData,
    device: &Device,
    options: NonZeroOptions,
) -> Result<NonZeroCoordinates, DmlOpsError> {
    with_rank!(
        data.shape().num_dims(),
        run_ranked(data.clone(), device, options)
    )
}

/// `(count, valid rows, padding rows)` of a result, read back.
fn read(result: NonZeroCoordinates) -> (usize, Vec<Vec<i64>>, Vec<Vec<i64>>) {
    let [rows, width] = result.coordinates.dims();
    assert_eq!(result.count.dims(), [1]);
    let count = result.count_sync();
    assert!(count <= rows, "count {count} exceeds the {rows} rows");
    let values = to_i64(&result.coordinates.into_data());
    let rows: Vec<Vec<i64>> = if width == 0 {
        vec![vec![]; rows]
    } else {
        values.chunks(width).map(<[i64]>::to_vec).collect()
    };
    let padding = rows[count..].to_vec();
    (count, rows[..count].to_vec(), padding)
}

/// Checks shapes, dtypes, count and rows against the oracle; returns the padding rows.
fn assert_matches_oracle(
    data: &TensorData,
    device: &Device,
    options: NonZeroOptions,
) -> Vec<Vec<i64>> {
    let width = options.width.unwrap_or(data.shape().num_dims());
    let out = options.out_dtype.unwrap_or(device.settings().int_dtype);
    let result = run(data, device, options)
        .unwrap_or_else(|err| panic!("{:?} on {device:?}: {err}", data.dtype()));
    assert_eq!(result.count.dtype(), DType::from(out));
    assert_eq!(result.coordinates.dtype(), DType::from(out));
    assert_eq!(result.coordinates.dims(), [data.num_elements(), width]);
    let expected = oracle(data, width);
    let (count, rows, padding) = read(result);
    assert_eq!(
        count,
        expected.len(),
        "count of {:?} {:?} on {device:?}",
        data.dtype(),
        data.shape()
    );
    assert_eq!(
        rows,
        expected,
        "rows of {:?} {:?} on {device:?}",
        data.dtype(),
        data.shape()
    );
    padding
}

#[test]
fn directml_example_with_width_3() {
    let data = TensorData::new(
        vec![1.0f32, 0.0, 0.0, 2.0, -0.0, 3.5, 0.0, -5.2],
        [1, 1, 2, 4],
    );
    for device in devices_and_default() {
        let options = NonZeroOptions {
            width: Some(3),
            ..Default::default()
        };
        let result = run(&data, &device, options).unwrap();
        assert_eq!(result.coordinates.dims(), [8, 3]);
        let (count, rows, _) = read(result);
        assert_eq!(count, 4, "on {device:?}");
        assert_eq!(
            rows,
            vec![vec![0, 0, 0], vec![0, 0, 3], vec![0, 1, 1], vec![0, 1, 3]]
        );
    }
}

#[test]
fn rows_come_in_ascending_element_order() {
    for device in devices() {
        let mut values = vec![0i32; 12];
        values[6] = 1; // {1, 0}
        values[8] = 1; // {1, 2}
        values[5] = 1; // {0, 5}
        let x = Tensor::<2, Int>::from_data(TensorData::new(values, [2, 6]), &device);
        let exact = x.nonzero_coordinates().into_exact();
        assert_eq!(exact.dims(), [3, 2]);
        assert_eq!(
            to_i64(&exact.into_data()),
            vec![0, 5, 1, 0, 1, 2],
            "on {device:?}"
        );
    }
}

#[test]
fn negative_zero_is_zero_and_nan_and_inf_are_not() {
    let values = vec![
        -0.0f32,
        0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -1e-45,
        0.0,
    ];
    for device in devices() {
        let x = Tensor::<1, Float>::from_data(
            TensorData::new(values.clone(), [7]),
            (&device, DType::F32),
        );
        let exact = x.nonzero_coordinates().into_exact();
        assert_eq!(
            to_i64(&exact.into_data()),
            vec![2, 3, 4, 5],
            "on {device:?}"
        );
        for data in [
            TensorData::new(values.iter().map(|&v| v as f64).collect(), [7]),
            TensorData::new(values.iter().map(|&v| f16::from_f32(v)).collect(), [7]),
            TensorData::new(values.iter().map(|&v| bf16::from_f32(v)).collect(), [7]),
        ] {
            assert_matches_oracle(&data, &device, NonZeroOptions::default());
        }
    }
}

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

#[test]
fn empty_all_zero_and_all_non_zero_inputs() {
    for device in devices() {
        for shape in [vec![0], vec![3, 0], vec![2, 0, 4]] {
            let data = TensorData::new(Vec::<f32>::new(), shape.clone());
            let result = run(&data, &device, NonZeroOptions::default()).unwrap();
            assert_eq!(result.coordinates.dims(), [0, shape.len()]);
            assert_eq!(result.count_sync(), 0);
            assert_eq!(result.into_exact().dims(), [0, shape.len()]);
        }
        let zeros = TensorData::new(vec![0i32; 1000], [10, 100]);
        let padding = assert_matches_oracle(
            &zeros,
            &device,
            NonZeroOptions {
                fill: Some(-1),
                ..Default::default()
            },
        );
        assert_eq!(padding, vec![vec![-1, -1]; 1000]);
        let ones = TensorData::new(vec![5i32; 1000], [10, 100]);
        let padding = assert_matches_oracle(&ones, &device, NonZeroOptions::default());
        assert!(padding.is_empty());
    }
}

#[test]
fn width_below_rank_keeps_the_last_dimensions() {
    for device in devices() {
        let data = TensorData::new(vec![0i32, 4, 0, 5, 6, 0], [1, 1, 2, 3]);
        for width in 2..=4 {
            assert_matches_oracle(
                &data,
                &device,
                NonZeroOptions {
                    width: Some(width),
                    ..Default::default()
                },
            );
        }
        // Effective rank 0: every width from 0 is allowed.
        let one = TensorData::new(vec![9i32], [1, 1, 1]);
        for width in 0..=3 {
            let (count, rows, _) = read(
                run(
                    &one,
                    &device,
                    NonZeroOptions {
                        width: Some(width),
                        ..Default::default()
                    },
                )
                .unwrap(),
            );
            assert_eq!(
                (count, rows),
                (1, vec![vec![0; width]]),
                "width {width} on {device:?}"
            );
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
fn ranks_one_to_eight() {
    for device in devices() {
        for rank in 1..=8usize {
            let shape: Vec<usize> = (0..rank).map(|d| 2 + (d % 3)).collect();
            let numel: usize = shape.iter().product();
            let values: Vec<i32> = (0..numel as i32)
                .map(|i| i32::from(i % 3 == 1 || i % 7 == 0))
                .collect();
            assert_matches_oracle(
                &TensorData::new(values, shape),
                &device,
                NonZeroOptions::default(),
            );
        }
    }
}

#[test]
fn sizes_that_straddle_tiles_at_every_density() {
    let Some(device) = gpu() else { return };
    for len in [
        255usize,
        256,
        257,
        2047,
        2049,
        8191,
        8193,
        16383,
        16385,
        65535,
        65537,
        (1 << 20) + 3,
    ] {
        for density in [0.0, 1e-4, 0.5, 1.0] {
            let data = TensorData::new(with_density(len, density, len as u64), [len]);
            assert_matches_oracle(&data, &device, NonZeroOptions::default());
        }
    }
}

#[test]
fn composes_with_burn_ops_under_fusion() {
    let Some(device) = default_device() else {
        return;
    };
    let x = Tensor::<2, Float>::from_data([[0.1, 0.9, 0.4], [0.7, 0.2, 0.8]], &device);
    // A mask computed by Burn ops, its coordinates fed to gather_nd, all recorded lazily.
    let mask = x.clone().greater_elem(0.5);
    // Padding rows filled with a valid coordinate, so gather_nd reads in bounds everywhere.
    let options = NonZeroOptions {
        fill: Some(0),
        ..Default::default()
    };
    let nz = mask.nonzero_coordinates_with(options).unwrap();
    let picked: Tensor<1, Float> = x.clone().gather_nd(nz.coordinates.clone());
    let doubled_count = nz.count.clone() * 2;
    assert_eq!(to_i64(&doubled_count.into_data()), vec![6]);
    let count = nz.count_sync();
    let picked = picked
        .narrow(0, 0, count)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    assert_eq!(picked, vec![0.9, 0.7, 0.8]);
}

#[test]
fn invalid_width_is_an_error_naming_the_range() {
    for device in devices() {
        let x = Tensor::<3, Int>::zeros([1, 2, 3], &device);
        for width in [0, 1, 4] {
            let options = NonZeroOptions {
                width: Some(width),
                ..Default::default()
            };
            let err = x.clone().nonzero_coordinates_with(options).unwrap_err();
            let message = err.to_string();
            assert!(
                matches!(err, DmlOpsError::InvalidArgument { .. }),
                "{message}"
            );
            assert!(
                message.contains(&format!("width {width}")) && message.contains("2..=3"),
                "{message}"
            );
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

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    (1usize..=8).prop_flat_map(|rank| {
        let max_dim: usize = match rank {
            1 => 3000,
            2 => 60,
            3 => 14,
            4 => 7,
            _ => 4,
        };
        prop::collection::vec(0..=max_dim, rank)
    })
}

/// One random case on `device`: the data, the width (from the effective rank up to the rank,
/// picked by `width_pick`) and the fill. Checks count and rows against the oracle and, with a
/// fill, every padding row.
fn check_random(
    device: &Device,
    shape: &[usize],
    density: f64,
    seed: u64,
    kind: usize,
    width_pick: usize,
    fill: Option<i64>,
) {
    let numel: usize = shape.iter().product();
    let values = with_density(numel, density, seed);
    let data = match kind {
        0 => TensorData::new(values, shape.to_vec()),
        1 => TensorData::new(values.iter().map(|&v| v as i32).collect(), shape.to_vec()),
        _ => TensorData::new(values.iter().map(|&v| v != 0.0).collect(), shape.to_vec()),
    };
    let rank = shape.len();
    let effective = rank - shape.iter().take_while(|&&d| d == 1).count();
    let width = effective + width_pick % (rank - effective + 1);
    let options = NonZeroOptions {
        width: Some(width),
        fill,
        ..Default::default()
    };
    let padding = assert_matches_oracle(&data, device, options);
    if let Some(fill) = fill {
        assert!(
            padding.iter().all(|row| row.iter().all(|&c| c == fill)),
            "padding rows on {device:?} are not all {fill}"
        );
    }
}

/// A random case: shape, density, seed, kind (f32, i32, bool), width pick, fill.
fn case_strategy() -> impl Strategy<Value = (Vec<usize>, f64, u64, usize, usize, Option<i64>)> {
    (
        shape_strategy(),
        prop::sample::select(vec![0.0, 0.01, 0.1, 0.5, 0.9, 1.0]),
        any::<u64>(),
        0usize..3,
        0usize..8,
        prop::option::of(-3i64..100),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Flex (the reference bodies) against the independent oracle, fills included.
    #[test]
    fn flex_matches_the_oracle((shape, density, seed, kind, width, fill) in case_strategy()) {
        check_random(&flex(), &shape, density, seed, kind, width, fill);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The kernels on wgpu against the same oracle, fills included.
    #[test]
    fn wgpu_matches_the_oracle((shape, density, seed, kind, width, fill) in case_strategy()) {
        let Some(device) = gpu() else { return Ok(()) };
        check_random(&device, &shape, density, seed, kind, width, fill);
    }
}
