//! The same small case of each operator on every device the enabled features provide, checked
//! against the spec's values, so that every device agrees with every other.
//!
//! Run with `--nocapture` to see the matrix.

#![allow(deprecated)] // Burn deprecates NdArray, which the matrix still covers.

mod common;

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use common::*;

/// Every device of the matrix, with its name. NdArray is always there: the tests enable it
/// through the crate's dev-dependency on itself.
fn matrix() -> Vec<(&'static str, Device)> {
    let mut devices = vec![("Flex", flex()), ("NdArray", Device::ndarray())];
    let gpu = default_device();
    devices.extend(gpu.clone().map(|device| ("GPU", device)));
    devices.push(("Autodiff<Flex>", flex().autodiff()));
    devices.push(("Autodiff<NdArray>", Device::ndarray().autodiff()));
    devices.extend(gpu.map(|device| ("Autodiff<GPU>", device.autodiff())));
    devices
}

/// What the matrix must hold, written out rather than derived: each name with what Burn's
/// `Debug` of the device must contain (`GPU`: the runtime under test, see [`gpu_debug_name`]).
/// The GPU rows exist where the runtime has a device (which `BURN_DML_OPS_REQUIRE_GPU=1`
/// requires).
const EXPECTED: [(&str, &[&str], bool); 6] = [
    ("Flex", &["Flex"], false),
    ("NdArray", &["NdArray"], false),
    ("GPU", &["GPU"], true),
    ("Autodiff<Flex>", &["Autodiff", "Flex"], false),
    ("Autodiff<NdArray>", &["Autodiff", "NdArray"], false),
    ("Autodiff<GPU>", &["Autodiff", "GPU"], true),
];

/// What one operator returned on one device, as i64 or f32 values.
#[derive(Debug, PartialEq)]
enum Output {
    Ints(Vec<i64>),
    Floats(Vec<f32>),
}

fn ints(data: TensorData) -> Output {
    Output::Ints(to_i64(&data))
}

fn floats(data: TensorData) -> Output {
    Output::Floats(data.convert::<f32>().try_to_vec::<f32>().unwrap())
}

/// Each operator's case, its expected values (from the spec), and what `device` returns.
fn cases(device: &Device) -> Vec<(&'static str, Output, Output)> {
    // I32 everywhere (NdArray's default Int dtype is I64, where -1 has 64 bits set).
    let int_input = int_tensor::<1>(TensorData::from([0i32, 7, -1, 255]), device);
    let float_input = tracked_on_autodiff(
        Tensor::<2>::from_data([[0.0, 1.0], [-0.0, 0.5]], device),
        device,
    );
    let mask = Tensor::<2, Int>::from_data([[0, 3, 0], [5, 0, 1]], device);
    let padded = mask
        .clone()
        .nonzero_coordinates_with(NonZeroOptions {
            fill: Some(-1),
            ..Default::default()
        })
        .unwrap();
    let exact = mask.nonzero_coordinates().into_exact();
    let line = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], device);
    let tuples = Tensor::<2, Int>::from_data([[4], [-5], [1], [7]], device);
    let rows = Tensor::<1>::from_data([9.0, 10.0, 11.0, 12.0], device);
    let counts = Tensor::<2, Int>::zeros([2, 3], device);
    let pairs = Tensor::<2, Int>::from_data([[0, 1], [0, 1]], device);
    let nms_boxes = Tensor::<3>::from_data(
        [[
            [0.0, 0.0, 1.0, 1.0],
            [0.0, 0.1, 1.0, 1.1],
            [0.0, -0.1, 1.0, 0.9],
            [0.0, 10.0, 1.0, 11.0],
            [0.0, 10.1, 1.0, 11.1],
            [0.0, 100.0, 1.0, 101.0],
        ]],
        device,
    );
    let nms_scores = Tensor::<3>::from_data([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], device);
    let add = ScatterNdOptions {
        reduction: Reduction::Add,
        ..Default::default()
    };
    vec![
        (
            "BitCount (Int)",
            Output::Ints(vec![0, 3, 32, 8]),
            ints(int_input.bit_count().into_data()),
        ),
        (
            "BitCount (Float)",
            Output::Ints(vec![0, 7, 1, 6]),
            ints(float_input.clone().bit_count().into_data()),
        ),
        (
            "NonZeroCoordinates (padded)",
            Output::Ints(vec![3, 0, 1, 1, 0, 1, 2, -1, -1, -1, -1, -1, -1]),
            Output::Ints(
                [padded.count.into_data(), padded.coordinates.into_data()]
                    .iter()
                    .flat_map(to_i64)
                    .collect(),
            ),
        ),
        (
            "NonZeroCoordinates (exact)",
            Output::Ints(vec![0, 1, 1, 0, 1, 2]),
            ints(exact.into_data()),
        ),
        (
            "NonZeroCoordinates (Float)",
            Output::Ints(vec![2]),
            ints(float_input.clone().nonzero_coordinates().count.into_data()),
        ),
        (
            "ScatterND (Assign)",
            Output::Floats(vec![1.0, 11.0, 3.0, 10.0, 9.0, 6.0, 7.0, 12.0]),
            floats(line.clone().scatter_nd_update(tuples, rows).into_data()),
        ),
        (
            "Compress (mask)",
            Output::Floats(vec![1.0, 0.5, 0.0, 0.0]),
            floats(
                float_input
                    .clone()
                    .compress(float_input.clone().not_equal_elem(0.0))
                    .values
                    .into_data(),
            ),
        ),
        (
            "Compress (axis, exact)",
            Output::Floats(vec![2.0, 4.0, 6.0, 8.0]),
            floats(
                line.reshape([4, 2])
                    .compress_axis(-1, Tensor::<1, Bool>::from_data([false, true], device))
                    .into_exact()
                    .into_data(),
            ),
        ),
        (
            "TopK (Float, Descending)",
            Output::Floats(vec![1.0, 0.0, 0.5, -0.0]),
            floats(
                float_input
                    .clone()
                    .top_k(2, 1, Order::Descending)
                    .values
                    .into_data(),
            ),
        ),
        (
            "Stable sort (Int, indices)",
            Output::Ints(vec![2, 0, 1, 3]),
            ints(
                int_tensor::<1>(TensorData::from([0i32, 7, -1, 255]), device)
                    .sort_stable(0, Order::Ascending)
                    .indices
                    .into_data(),
            ),
        ),
        (
            "NMS (ONNX's boxes)",
            Output::Ints(vec![0, 0, 3, 0, 0, 0, 0, 0, 5]),
            ints(
                tracked_on_autodiff(nms_boxes, device)
                    .non_max_suppression(
                        tracked_on_autodiff(nms_scores, device),
                        NmsOptions {
                            iou_threshold: 0.5,
                            score_threshold: Some(0.0),
                            max_per_class: Some(3),
                            box_format: BoxFormat::Corners,
                            indices_dtype: None,
                        },
                    )
                    .unwrap()
                    .into_exact()
                    .into_data(),
            ),
        ),
        (
            "ScatterND (Add, Int)",
            Output::Ints(vec![0, 8, 0, 0, 0, 0]),
            ints(
                counts
                    .try_scatter_nd(pairs, Tensor::<1, Int>::from_data([5, 3], device), add)
                    .unwrap()
                    .into_data(),
            ),
        ),
    ]
}

/// `tensor`, tracked on autodiff devices so that the Float cases run through tracked tensors.
fn tracked_on_autodiff<const D: usize>(tensor: Tensor<D>, device: &Device) -> Tensor<D> {
    if device.is_autodiff() {
        tensor.require_grad()
    } else {
        tensor
    }
}

#[test]
fn every_device_gives_the_spec_values() {
    let mut failures = Vec::new();
    let devices = matrix();
    println!(
        "| device | {} |",
        cases(&flex())
            .iter()
            .map(|c| c.0)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    for (name, device) in &devices {
        let mut row = Vec::new();
        for (case, expected, got) in cases(device) {
            if expected == got {
                row.push("ok");
            } else {
                row.push("FAILS");
                failures.push(format!(
                    "{name}: {case}: expected {expected:?}, got {got:?}"
                ));
            }
        }
        println!("| {name} | {} |", row.join(" | "));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let has_gpu = gpu().is_some();
    let expected: Vec<&str> = EXPECTED
        .iter()
        .filter(|(_, _, on_gpu)| has_gpu || !on_gpu)
        .map(|(name, _, _)| *name)
        .collect();
    let names: Vec<&str> = devices.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, expected, "the matrix's devices");
    for ((name, device), (_, parts, _)) in devices
        .iter()
        .zip(EXPECTED.iter().filter(|e| has_gpu || !e.2))
    {
        let debug = format!("{device:?}");
        let parts: Vec<&str> = parts
            .iter()
            .map(|part| {
                if *part == "GPU" {
                    gpu_debug_name()
                } else {
                    part
                }
            })
            .collect();
        assert!(
            parts.iter().all(|part| debug.contains(part)),
            "{name} is {debug}, which does not name {parts:?}"
        );
    }
}
