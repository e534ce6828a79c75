//! `launch_scatter_nd` float `Min`/`Max` against the crate's rule, bit for bit: an update
//! replaces a value only when it compares strictly smaller (larger), so a NaN update never
//! replaces, a NaN value stays, and `-0.0` and `+0.0` never replace each other. Run on wgpu's
//! default adapter (Vulkan: lavapipe here) and on its OpenGL backend where this machine has one
//! (Mesa's llvmpipe through EGL, whose compiler turned a compare-and-select into `min`).

mod common;

use burn_dml_ops_kernels::scatter_nd::{
    OutOfRange, ReduceOp, ScatterNdLayout, ScatterReduction, ScatterStrategy, launch_scatter_nd,
    scatter_strategy,
};
use common::client;
use cubecl::ir::{ElemType, FloatKind, IntKind};
use cubecl::prelude::*;

/// `(value, update)` pairs and what `Min` and `Max` leave, as f32 bit patterns.
fn cases() -> Vec<(f32, f32, f32, f32)> {
    let nan = f32::NAN;
    vec![
        // value, update, min, max
        (0.0, -0.0, 0.0, 0.0),
        (-0.0, 0.0, -0.0, -0.0),
        (1.0, nan, 1.0, 1.0),
        (nan, 1.0, nan, nan),
        (nan, -1.0, nan, nan),
        (-2.0, nan, -2.0, -2.0),
        (1.0, -3.0, -3.0, 1.0),
        (1.0, 5.0, 1.0, 5.0),
        (
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::INFINITY,
        ),
    ]
}

/// Scatters each case's update onto its own element with `op` and returns the output bits.
fn run(client: &Client, op: ReduceOp, strategy: ScatterStrategy) -> Vec<u32> {
    let cases = cases();
    let values: Vec<f32> = cases.iter().map(|c| c.0).collect();
    let updates: Vec<f32> = cases.iter().map(|c| c.1).collect();
    let indices: Vec<i32> = (0..cases.len() as i32).collect();
    let output = client.create_from_slice(f32::as_bytes(&values));
    launch_scatter_nd(
        client,
        output.clone(),
        ElemType::Float(FloatKind::F32),
        client.create_from_slice(i32::as_bytes(&indices)),
        ElemType::Int(IntKind::I32),
        client.create_from_slice(f32::as_bytes(&updates)),
        ScatterNdLayout {
            dims: &[cases.len()],
            rows: cases.len(),
            slice: 1,
        },
        ScatterReduction::Reduce(op),
        OutOfRange::Skip,
        strategy,
    )
    .expect("the launch is valid");
    let bytes = client.read_one(output).expect("read the output");
    f32::from_bytes(&bytes)
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

fn check(client: &Client, backend: &str) {
    let f32_elem = ElemType::Float(FloatKind::F32);
    for (op, pick) in [(ReduceOp::Min, 2), (ReduceOp::Max, 3)] {
        // Native float atomics follow the hardware's rule: floats always take the lists.
        let strategy = scatter_strategy(client, f32_elem, ScatterReduction::Reduce(op));
        assert_eq!(strategy, ScatterStrategy::Lists, "{op:?} on {backend}");
        let expected: Vec<u32> = cases()
            .iter()
            .map(|c| if pick == 2 { c.2 } else { c.3 }.to_bits())
            .collect();
        assert_eq!(
            run(client, op, strategy),
            expected,
            "{op:?} on {backend} (bits of: value, update -> result per element)"
        );
    }
}

#[test]
fn min_and_max_keep_nan_and_signed_zero_rules() {
    check(&client(), "the default adapter");
}

#[test]
fn min_and_max_keep_the_rules_on_opengl_too() {
    match cubecl::Device::gl(Default::default()) {
        Ok(device) => check(&device.client(), "OpenGL"),
        // Not every machine has EGL; the default adapter's test above always runs.
        Err(err) => println!("no OpenGL adapter, not run: {err}"),
    }
}
