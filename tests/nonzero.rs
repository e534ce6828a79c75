//! NonZeroCoordinates against the spec on Flex (the reference bodies) and wgpu (the kernels).
//!
//! The oracle converts each element to f64 (or reads the bool) and tests it against zero, which
//! is a different route from the bit test the crate uses.

mod common;

use burn::tensor::{DType, Device, Float, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::nonzero::*;
use common::*;
use half::{bf16, f16};
use proptest::prelude::*;

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
