#![cfg(feature = "wgpu")]
//! NonZeroCoordinates through Burn with the plane scan forced by the documented tuning variable,
//! on wgpu, against Flex.
//!
//! The kernels scan with plane operations where the runtime reports them and in shared memory
//! otherwise (the default on lavapipe, which `tests/nonzero.rs` runs). cubecl-wgpu reports no
//! planes on CPU adapters, although lavapipe has subgroups, so `BURN_DML_OPS_NONZERO_SCAN=planes`
//! forces the plane scan here. The crate reads the variable once per process, so this file (its
//! own process) sets it before anything launches; the kernel crate's `tests/compaction.rs` runs
//! each scan directly, as a launch argument.

mod common;

use burn::backend::DispatchDevice;
use burn::backend::ops::IntTensorOps;
use burn::tensor::{Device, Int, Tensor, TensorData, read_sync};
use burn_cubecl::CubeBackend;
use burn_dml_ops::prelude::*;
use common::*;
use cubecl::prelude::*;

/// Writes the plane size the runtime runs this kernel with.
#[cube(launch)]
fn plane_size(output: &mut [u32]) {
    if UNIT_POS == 0 {
        output[0] = PLANE_DIM;
    }
}

/// The plane size of the wgpu adapter, from a kernel.
fn adapter_plane_size() -> i64 {
    let DispatchDevice::Cube(device) = wgpu().as_dispatch().clone() else {
        panic!("Device::wgpu is not a Cube device");
    };
    let output = CubeBackend::int_from_data(TensorData::new(vec![0u32], [1]), &device);
    // SAFETY: the buffer holds one u32, the only element the kernel writes.
    unsafe {
        plane_size::launch(
            &output.client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(64),
            BufferArg::from_raw_parts(output.handle.clone(), 1),
        );
    }
    to_i64(&read_sync(CubeBackend::int_into_data(output)).expect("read the plane size"))[0]
}

fn run_ranked<const D: usize>(
    data: TensorData,
    width: usize,
    device: &Device,
) -> NonZeroCoordinates {
    let options = NonZeroOptions {
        width: Some(width),
        fill: Some(-1),
        ..Default::default()
    };
    Tensor::<D, Int>::from_data(data, device)
        .nonzero_coordinates_with(options)
        .expect("a valid call")
}

/// Count and rows (padding filled with -1) of `values` shaped `shape`, with the last `width`
/// dims.
fn run(values: &[i32], shape: &[usize], width: usize, device: &Device) -> (usize, Vec<i64>) {
    let data = TensorData::new(values.to_vec(), shape.to_vec());
    let result = with_rank!(shape.len(), run_ranked(data, width, device));
    let count = result.count_sync();
    (count, to_i64(&result.coordinates.into_data()))
}

#[test]
fn the_forced_plane_scan_matches_flex() {
    let planes = adapter_plane_size();
    assert!(
        planes > 1,
        "the adapter runs planes of {planes} unit(s), so the forced plane scan would test nothing"
    );
    // Tiles are 4096 vectors (16384 elements of 4 lanes, 4096 of one); a unit holds 16 vectors.
    let mut cases: Vec<Vec<usize>> = [1usize, 15, 16, 17, 4095, 4097, 16383, 16384, 16385]
        .into_iter()
        .map(|n| vec![n])
        .collect();
    cases.extend([
        vec![3 * 16384 + 7],
        vec![1, 1, 300, 219],
        vec![1, 64, 1, 257],
        vec![5, 1, 7, 3, 1, 2, 4, 9],
        vec![2, 3, 1, 4, 1, 3, 2, 1],
    ]);
    // SAFETY: the only test of this process, and nothing runs on another thread yet; the
    // plane-size probe above launched no NonZeroCoordinates, so the variable is not read yet.
    unsafe { std::env::set_var("BURN_DML_OPS_NONZERO_SCAN", "planes") };
    let (flex, wgpu) = (flex(), wgpu());
    {
        let scan = "planes";
        for shape in &cases {
            let len: usize = shape.iter().product();
            for percent in [0, 1, 50, 100] {
                let values: Vec<i32> = with_density(len, percent as f64 / 100.0, len as u64)
                    .into_iter()
                    .map(|v| i32::from(v != 0.0))
                    .collect();
                let effective = shape.len() - shape.iter().take_while(|&&d| d == 1).count();
                for width in [shape.len(), effective.max(1)] {
                    let expected = run(&values, shape, width, &flex);
                    let actual = run(&values, shape, width, &wgpu);
                    assert_eq!(
                        actual, expected,
                        "{scan}: {shape:?} at {percent}%, width {width}"
                    );
                }
            }
        }
    }
}
