//! Training with ScatterND in the forward pass: three learnable embedding rows are written into
//! a fixed buffer of ten slots at given positions (one of them negative, counting from the end),
//! a fixed linear read-out scores every slot, and plain SGD fits the scores to a target. The
//! gradient reaches the rows through `scatter_nd_update`'s backward pass.
//!
//! `cargo run --release --example train_scatter` (on `Device::default()` under autodiff: wgpu
//! when a GPU driver, or lavapipe, is installed). Pass `flex` to run on the CPU backend instead.

mod common;

use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;

const SLOTS: usize = 10;
const FEATURES: usize = 4;
const STEPS: usize = 25;
const LEARNING_RATE: f64 = 0.5;

fn main() {
    let device = match std::env::args().nth(1).as_deref() {
        Some("flex") => Device::flex(),
        _ => common::device(),
    }
    .autodiff();
    println!("training on {device:?}");

    // The frame the rows are written into, and a read-out that scores each slot.
    let frame = Tensor::<2>::from_data(
        TensorData::new(
            (0..SLOTS * FEATURES)
                .map(|i| ((i * 7) % 5) as f32 * 0.1)
                .collect(),
            [SLOTS, FEATURES],
        ),
        &device,
    );
    let readout = Tensor::<2>::from_data([[0.5], [-1.0], [0.25], [1.0]], &device);
    let positions = Tensor::<2, Int>::from_data([[2], [5], [-1]], &device);
    let target = Tensor::<2>::from_data(
        TensorData::new(
            (0..SLOTS).map(|i| (i as f32 * 0.3).sin()).collect(),
            [SLOTS, 1],
        ),
        &device,
    );

    let mut rows = Tensor::<2>::zeros([3, FEATURES], &device).require_grad();
    for step in 0..STEPS {
        let buffer = frame
            .clone()
            .scatter_nd_update(positions.clone(), rows.clone());
        let scores = buffer.matmul(readout.clone());
        let loss = (scores - target.clone()).powi_scalar(2).mean();
        let grads = loss.backward();
        let value: f32 = loss.into_scalar();
        println!("step {step:2}: loss {value:.6}");
        let grad = rows.grad(&grads).expect("the rows are tracked");
        rows = (rows.inner() - grad * LEARNING_RATE)
            .autodiff()
            .require_grad();
    }
    println!("learned rows: {}", rows.inner());
}
