//! Runs each of the crate's operators on the spec's reference inputs on `Device::default()`
//! (the Fusion-wrapped wgpu device under the default features) and prints the results.
//!
//! `cargo run --release --example quickstart`

use burn::tensor::{Device, Float, Int, IntDType, Tensor, TensorData};
use burn_dml_ops::prelude::*;

fn main() {
    let device = Device::default();
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
}
