//! Runs each of the crate's operators, NMS included, on the spec's reference inputs on `Device::default()`
//! (the Fusion-wrapped wgpu device under the default features) and prints the results.
//!
//! `cargo run --example quickstart`

mod common;

use burn::tensor::{Bool, Float, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;

fn main() {
    let device = common::device();
    println!("burn-dml-ops quickstart on {device:?}");
    println!("Each operator runs on the spec's reference input; the expected output follows it.\n");

    // BitCount: the number of set bits of each element's stored encoding.
    let x =
        Tensor::<2, Int>::from_data(TensorData::new(vec![0u32, 123, 456, 789], [2, 2]), &device);
    println!("BitCount of u32 [[0, 123], [456, 789]]  (expected [[0, 6], [4, 5]])");
    println!("  {}", x.bit_count().into_data());

    let f = Tensor::<1, Float>::from_data([1.0f32, -0.0, f32::INFINITY, f32::NAN], &device);
    println!(
        "BitCount of f32 [1.0, -0.0, inf, NaN], raw IEEE bits, as U32  (expected [7, 1, 8, 9])"
    );
    match f.bit_count_as(IntDType::U32) {
        Ok(bits) => println!("  {}", bits.into_data()),
        Err(err) => println!("  error: {err}"),
    }

    // NonZeroCoordinates: DirectML's example, a [1, 1, 2, 4] f32 input with N = 3.
    let x = Tensor::<4, Float>::from_data(
        TensorData::new(
            vec![1.0f32, 0.0, 0.0, 2.0, -0.0, 3.5, 0.0, -5.2],
            [1, 1, 2, 4],
        ),
        &device,
    );
    println!(
        "\nNonZeroCoordinates of [[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.2]] ([1, 1, 2, 4], N = 3)"
    );
    let options = NonZeroOptions {
        width: Some(3),
        fill: Some(-1),
        ..Default::default()
    };
    let nz = x
        .nonzero_coordinates_with(options)
        .expect("width 3 is within 2..=4");
    println!(
        "  padded, no host sync (fill -1): count {}",
        nz.count.clone().into_data()
    );
    println!(
        "  coordinates [8, 3]: {}",
        nz.coordinates.clone().into_data()
    );
    println!("  exact (reads the count once; expected [[0,0,0],[0,0,3],[0,1,1],[0,1,3]]):");
    println!("  {}", nz.into_exact().into_data());

    // ScatterND: the spec's examples, with negative indices and a reduction on duplicates.
    let input = Tensor::<1, Float>::from_data([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &device);
    let updates = Tensor::<1, Float>::from_data([9.0, 10.0, 11.0, 12.0], &device);
    println!("\nScatterND of [1..=8] at [[4], [3], [1], [7]] and at [[-4], [-5], [-7], [-1]]");
    println!("  (expected [1, 11, 3, 10, 9, 6, 7, 12] both times)");
    for indices in [[[4], [3], [1], [7]], [[-4], [-5], [-7], [-1]]] {
        let indices = Tensor::<2, Int>::from_data(indices, &device);
        let output = input.clone().scatter_nd_update(indices, updates.clone());
        println!("  {}", output.into_data());
    }
    let zeros = Tensor::<2, Float>::zeros([2, 3], &device);
    let indices = Tensor::<2, Int>::from_data([[0, 1], [0, 1]], &device);
    let updates = Tensor::<1, Float>::from_data([5.0, 3.0], &device);
    let options = ScatterNdOptions {
        reduction: Reduction::Add,
        ..Default::default()
    };
    println!(
        "ScatterND Add of [5, 3] at [[0, 1], [0, 1]] into zeros [2, 3]  (expected [[0, 8, 0], [0, 0, 0]])"
    );
    let output = zeros
        .try_scatter_nd(indices, updates, options)
        .expect("the shapes match");
    println!("  {}", output.into_data());
    let strict = ScatterNdOptions {
        out_of_bounds: OutOfBounds::Error,
        ..Default::default()
    };
    let bad = Tensor::<2, Int>::from_data([[8]], &device);
    let one = Tensor::<1, Float>::from_data([0.0], &device);
    println!("ScatterND with OutOfBounds::Error and index 8 into 8 elements  (expected an error)");
    match input.try_scatter_nd(bad, one, strict) {
        Ok(output) => println!("  unexpected output {}", output.into_data()),
        Err(err) => println!("  error: {err}"),
    }

    // Compress: ONNX's example along an axis, and torch's `x[mask]`.
    let x = Tensor::<2, Int>::from_data([[1, 2], [3, 4], [5, 6]], &device);
    let keep = Tensor::<1, Bool>::from_data([false, true, true], &device);
    println!("\nCompress of [[1, 2], [3, 4], [5, 6]] along axis 0 by [false, true, true]");
    let rows = x.compress_axis(0, keep);
    println!(
        "  padded, no host sync (expected [[3, 4], [5, 6], [0, 0]]): {}",
        rows.values.clone().into_data()
    );
    println!(
        "  exact (expected [[3, 4], [5, 6]]): {}",
        rows.into_exact().into_data()
    );
    let scores = Tensor::<1, Float>::from_data([0.9, 0.1, 0.4, 0.7], &device);
    println!("Compress of [0.9, 0.1, 0.4, 0.7] where > 0.5  (expected [0.9, 0.7])");
    let kept = scores.clone().compress(scores.greater_elem(0.5));
    println!("  {}", kept.into_exact().into_data());

    // TopK: DirectML's example (axis 3, K 2, DECREASING), and a stable sort with ties and NaN.
    let x = Tensor::<4, Float>::from_data(
        [[[
            [0.0, 1.0, 10.0, 11.0],
            [3.0, 2.0, 9.0, 8.0],
            [4.0, 5.0, 6.0, 7.0],
        ]]],
        &device,
    );
    println!("\nTopK k 2 along axis 3, Descending");
    let top = x.top_k(2, 3, Order::Descending);
    println!(
        "  values (expected [[[[11, 10], [9, 8], [7, 6]]]]): {}",
        top.values.into_data()
    );
    println!(
        "  indices (expected [[[[3, 2], [2, 3], [3, 2]]]]): {}",
        top.indices.into_data()
    );
    let x = Tensor::<1, Float>::from_data([2.0, f32::NAN, -1.0, 2.0], &device);
    println!("Stable sort of [2, NaN, -1, 2], Ascending  (expected indices [2, 0, 3, 1])");
    println!(
        "  {}",
        x.sort_stable(0, Order::Ascending).indices.into_data()
    );

    // NonMaxSuppression: ONNX's `suppress_by_IOU` example.
    let boxes = Tensor::<3, Float>::from_data(
        [[
            [0.0, 0.0, 1.0, 1.0],
            [0.0, 0.1, 1.0, 1.1],
            [0.0, -0.1, 1.0, 0.9],
            [0.0, 10.0, 1.0, 11.0],
            [0.0, 10.1, 1.0, 11.1],
            [0.0, 100.0, 1.0, 101.0],
        ]],
        &device,
    );
    let scores = Tensor::<3, Float>::from_data([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], &device);
    let options = NmsOptions {
        iou_threshold: 0.5,
        score_threshold: Some(0.0),
        max_per_class: Some(3),
        box_format: BoxFormat::Corners,
        indices_dtype: None,
    };
    println!("\nNonMaxSuppression of ONNX's six boxes, IoU 0.5, at most 3 per class");
    match boxes.non_max_suppression(scores, options) {
        Ok(selected) => println!(
            "  (expected [[0, 0, 3], [0, 0, 0], [0, 0, 5]]): {}",
            selected.into_exact().into_data()
        ),
        Err(err) => println!("  error: {err}"),
    }
}
