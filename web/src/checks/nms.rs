//! Non-maximum suppression: the documented example, the centre-format boxes whose IoU sits
//! just above a threshold (a folded `(a + h) - (a - h)` would flip it), random detections of
//! thousands of boxes per class, and the errors.

use burn::tensor::{DType, Tensor};
use burn_dml_ops::prelude::*;

use super::{Devices, check, holds, is_error, same};
use crate::inputs::{Rng, float_tensor};
use crate::report::Report;

/// Options with `iou_threshold` and `score_threshold`, the rest left at ONNX's defaults.
fn options(iou_threshold: f32, score_threshold: Option<f32>, box_format: BoxFormat) -> NmsOptions {
    NmsOptions {
        iou_threshold,
        score_threshold,
        max_per_class: None,
        box_format,
        indices_dtype: None,
    }
}

pub async fn run(devices: &Devices, report: &mut Report) {
    let (gpu, cpu) = (&devices.gpu, &devices.cpu);
    check!(
        report,
        "non_max_suppression: three corner boxes, the middle one suppressed".into(),
        async {
            let boxes = [0.0, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, 10.0, 1.0, 11.0];
            let boxes = float_tensor(&boxes, [1, 3, 4], DType::F32, gpu);
            let scores = float_tensor(&[0.9, 0.75, 0.6], [1, 1, 3], DType::F32, gpu);
            let selected = boxes
                .non_max_suppression(scores, options(0.5, None, BoxFormat::Corners))
                .map_err(|err| err.to_string())?;
            holds(
                "rows",
                selected.into_exact_async().await,
                &[0, 0, 0, 0, 0, 2],
            )
            .await
        }
    );
    check!(
        report,
        "non_max_suppression: centre boxes of IoU 0.91005 at threshold 0.91 (suppressed)".into(),
        async {
            let boxes = [1000.3, 500.1, 0.7, 0.3, 1000.31, 500.11, 0.7, 0.3];
            let boxes = float_tensor(&boxes, [1, 2, 4], DType::F32, gpu);
            let scores = float_tensor(&[0.9, 0.8], [1, 1, 2], DType::F32, gpu);
            let selected = boxes
                .non_max_suppression(scores, options(0.91, None, BoxFormat::Center))
                .map_err(|err| err.to_string())?;
            holds("rows", selected.into_exact_async().await, &[0, 0, 0]).await
        }
    );
    let mut rng = Rng::new(7);
    for (batches, classes, count) in [(2, 3, 500), (1, 80, 1000), (1, 4, 8400)] {
        let mut corners = Vec::with_capacity(batches * count * 4);
        for _ in 0..batches * count {
            let (x, y) = (rng.unit() * 600.0, rng.unit() * 600.0);
            let (w, h) = (8.0 + rng.unit() * 120.0, 8.0 + rng.unit() * 120.0);
            corners.extend([y, x, y + h, x + w]);
        }
        let scores: Vec<f32> = (0..batches * classes * count)
            .map(|_| (rng.below(1000) as f32) / 1000.0)
            .collect();
        for (iou, score) in [(0.5, Some(0.3)), (0.7, None)] {
            check!(
                report,
                format!(
                    "non_max_suppression: [{batches}, {count}, 4] boxes, {classes} classes, \
                     IoU {iou}, score threshold {score:?}"
                ),
                async {
                    let on = |device| -> Result<Selected, String> {
                        let boxes = float_tensor(&corners, [batches, count, 4], DType::F32, device);
                        let scores =
                            float_tensor(&scores, [batches, classes, count], DType::F32, device);
                        boxes
                            .non_max_suppression(scores, options(iou, score, BoxFormat::Corners))
                            .map_err(|err| err.to_string())
                    };
                    let (actual, expected) = (on(gpu)?, on(cpu)?);
                    same(
                        "rows",
                        actual.into_exact_async().await,
                        expected.into_exact_async().await,
                    )
                    .await
                }
            );
        }
    }
    check!(
        report,
        "non_max_suppression: an IoU threshold above 1 is an error".into(),
        async {
            let boxes = Tensor::<3>::zeros([1, 2, 4], gpu);
            let scores = Tensor::<3>::zeros([1, 1, 2], gpu);
            is_error(
                "IoU 1.5",
                boxes.non_max_suppression(scores, options(1.5, None, BoxFormat::Corners)),
            )
        }
    );
}
