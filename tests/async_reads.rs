//! The reads browsers need (`count_async`, `into_exact_async`) against their blocking forms on
//! every device: NonZeroCoordinates, Compress and NMS, with selections that are empty, partial
//! and whole, on operands made on the device.

mod common;

use burn::tensor::{Bool, Device, Distribution, Int, Tensor, try_read_sync};
use burn_dml_ops::prelude::*;
use common::*;

/// Runs a future to its end on this thread, as a native application's executor would.
fn wait<T>(future: impl Future<Output = T>) -> T {
    try_read_sync(future).expect("the future completes on a native device")
}

/// `x` with every element whose random value is below `density` kept, made on the device.
fn masked(device: &Device, len: usize, density: f64) -> (Tensor<1>, Tensor<1, Bool>) {
    let x = Tensor::<1>::random([len], Distribution::Uniform(0.0, 1.0), device);
    let mask = x.clone().lower_elem(density);
    (x, mask)
}

#[test]
fn async_reads_match_the_blocking_ones() {
    for device in devices_and_default() {
        for density in [0.0, 0.3, 1.0] {
            let (x, mask) = masked(&device, 1000, density);

            let nonzero = mask.clone().nonzero_coordinates();
            let count = nonzero.count_sync();
            assert_eq!(wait(nonzero.count_async()), count, "{device:?}");
            let blocking = nonzero.clone().into_exact().into_data();
            let exact = wait(nonzero.into_exact_async());
            assert_eq!(exact.dims(), [count, 1], "{device:?}");
            assert_eq!(exact.into_data(), blocking, "{device:?}");

            let compressed = x.clone().compress(mask.clone());
            assert_eq!(wait(compressed.count_async()), count, "{device:?}");
            assert_eq!(compressed.count_sync(), count, "{device:?}");
            let blocking = compressed.clone().into_exact().into_data();
            let exact = wait(compressed.into_exact_async());
            assert_eq!(exact.dims(), [count], "{device:?}");
            assert_eq!(exact.into_data(), blocking, "{device:?}");
        }

        // NMS of boxes made on the device: 50 unit boxes on a line, half of them overlapping
        // their neighbour, random scores.
        let starts = Tensor::<1, Int>::arange(0..50, &device).float() * 0.75;
        let boxes = Tensor::stack::<2>(
            vec![
                starts.zeros_like(),
                starts.clone(),
                starts.ones_like(),
                starts + 1.0,
            ],
            1,
        )
        .unsqueeze_dim::<3>(0);
        let scores = Tensor::<3>::random([1, 2, 50], Distribution::Uniform(0.0, 1.0), &device);
        let options = NmsOptions {
            iou_threshold: 0.2,
            score_threshold: Some(0.1),
            max_per_class: None,
            box_format: BoxFormat::Corners,
            indices_dtype: None,
        };
        let selected = boxes
            .non_max_suppression(scores, options)
            .expect("valid operands");
        let count = selected.count_sync();
        assert!(count > 0, "{device:?}");
        assert_eq!(wait(selected.count_async()), count, "{device:?}");
        let blocking = selected.clone().into_exact().into_data();
        let exact = wait(selected.into_exact_async());
        assert_eq!(exact.dims(), [count, 3], "{device:?}");
        assert_eq!(exact.into_data(), blocking, "{device:?}");
    }
}
