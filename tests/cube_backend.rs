#![cfg(feature = "wgpu")]
//! The `CubeBackend` implementation called directly, without the Fusion wrapper that Burn's
//! `Device::wgpu` puts around it, so the kernels' own path is tested on its own.

mod common;

use burn::backend::{DispatchDevice, ops::IntTensorOps};
use burn::tensor::{DType, IntDType, TensorData, read_sync};
use burn_cubecl::{CubeBackend, CubeDevice};
use burn_dml_ops::DmlOps;
use common::*;

/// The wgpu device as `CubeBackend` sees it.
fn cube_device() -> Option<CubeDevice> {
    match gpu()?.as_dispatch() {
        DispatchDevice::Cube(device) => Some(device.clone()),
        other => panic!("Device::wgpu is not a Cube device: {other:?}"),
    }
}

fn bit_count_direct(device: &CubeDevice, values: Vec<i32>, out: IntDType) -> Vec<i64> {
    let n = values.len();
    let input = CubeBackend::int_from_data(TensorData::new(values, [n]), device);
    let output = <CubeBackend as DmlOps>::int_bit_count(input, out);
    let data = read_sync(CubeBackend::int_into_data(output)).expect("read the output");
    assert_eq!(data.dtype(), DType::from(out));
    to_i64(&data)
}

#[test]
fn unfused_kernel_matches_the_rule_at_every_tail_length() {
    let Some(device) = cube_device() else { return };
    // Lengths around the vector width (4 lanes for 32-bit types) and across a cube.
    for n in [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 256, 257, 1023, 1025] {
        let values: Vec<i32> = (0..n as i32)
            .map(|i| i.wrapping_mul(-1_640_531_535) ^ i)
            .collect();
        let expected: Vec<i64> = values.iter().map(|v| v.count_ones() as i64).collect();
        for out in [IntDType::I32, IntDType::U32, IntDType::I64] {
            assert_eq!(
                bit_count_direct(&device, values.clone(), out),
                expected,
                "n = {n}, {out:?}"
            );
        }
    }
}

#[test]
fn unfused_float_kernel_counts_raw_bits() {
    let Some(device) = cube_device() else { return };
    let values = vec![1.0f32, -0.0, f32::NAN, f32::INFINITY, 3.5];
    let expected: Vec<i64> = values
        .iter()
        .map(|v| v.to_bits().count_ones() as i64)
        .collect();
    let input = <CubeBackend as burn::backend::ops::FloatTensorOps<CubeBackend>>::float_from_data(
        TensorData::new(values, [5]),
        &device,
    );
    let output = <CubeBackend as DmlOps>::float_bit_count(input, IntDType::I32);
    let data = read_sync(CubeBackend::int_into_data(output)).expect("read the output");
    assert_eq!(to_i64(&data), expected);
    assert_eq!(expected, vec![7, 1, 9, 8, 3]);
}

#[test]
fn unfused_nonzero_coordinates_with_fill() {
    let Some(device) = cube_device() else { return };
    // [3, 5] with non-zeros at flat 1, 7, 13, 14.
    let mut values = vec![0i32; 15];
    for flat in [1, 7, 13, 14] {
        values[flat] = flat as i32;
    }
    let input = CubeBackend::int_from_data(TensorData::new(values, [3, 5]), &device);
    let (count, coordinates) =
        <CubeBackend as DmlOps>::int_nonzero_coordinates(input, 2, Some(-3), IntDType::I32);
    let count = read_sync(CubeBackend::int_into_data(count)).expect("read the count");
    let coordinates = read_sync(CubeBackend::int_into_data(coordinates)).expect("read the rows");
    assert_eq!(to_i64(&count), vec![4]);
    assert_eq!(coordinates.shape().to_vec(), vec![15, 2]);
    let mut expected = vec![0, 1, 1, 2, 2, 3, 2, 4];
    expected.extend([-3; 22]);
    assert_eq!(to_i64(&coordinates), expected);
}

/// ScatterND's adjoint kernel on its own: rows gathered with wrapped, clamped and skipped
/// tuples, for 32- and 64-bit indices, compared with the slices picked on the host.
#[test]
fn unfused_gather_nd_slices_resolves_like_the_scatter() {
    use burn::backend::ops::FloatTensorOps;
    use burn_dml_ops::OutOfBounds;
    let Some(device) = cube_device() else { return };
    let data: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let tuples = |min: i64, max: i64| vec![2, -1, 3, -4, -5, 0, min, max];
    let cases = [
        TensorData::new(
            tuples(i32::MIN.into(), i32::MAX.into())
                .into_iter()
                .map(|v| v as i32)
                .collect(),
            [8, 1],
        ),
        TensorData::new(tuples(i64::MIN, i64::MAX), [8, 1]),
    ];
    for indices in cases {
        let index_dtype = indices.dtype();
        // 64-bit indices on OpenGL, which binds no 64-bit type, are resolved from words.
        if gpu().is_none() {
            continue;
        }
        for out_of_range in [OutOfBounds::Skip, OutOfBounds::Clamp] {
            let input =
                CubeBackend::float_from_data(TensorData::new(data.clone(), [4, 3]), &device);
            let indices = CubeBackend::int_from_data(indices.clone(), &device);
            let output = <CubeBackend as DmlOps>::float_gather_nd_slices(
                input,
                indices,
                out_of_range,
                [8, 3].into(),
                2,
            );
            let got = read_sync(CubeBackend::float_into_data(output)).unwrap();
            let clamp = out_of_range == OutOfBounds::Clamp;
            let rows: [Option<usize>; 8] = [
                Some(2),
                Some(3),
                Some(3),
                Some(0),
                clamp.then_some(0),
                Some(0),
                clamp.then_some(0),
                clamp.then_some(3),
            ];
            let expected: Vec<f32> = rows
                .iter()
                .flat_map(|row| match row {
                    Some(r) => data[r * 3..r * 3 + 3].to_vec(),
                    None => vec![0.0; 3],
                })
                .collect();
            assert_eq!(
                got.try_to_vec::<f32>().unwrap(),
                expected,
                "{index_dtype:?} {out_of_range:?}"
            );
        }
    }
}
