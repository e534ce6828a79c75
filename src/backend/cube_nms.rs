//! Non-maximum suppression on `CubeBackend`, through the kernel crate's launcher.

use burn::backend::TensorMetadata;
use burn::tensor::{DType, IntDType};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_dml_ops_kernels::nms::{
    NmsBoxFormat, NmsInput, NmsLimits, NmsOutput, NmsShape, launch_non_max_suppression,
};
use burn_dml_ops_kernels::sort::SortPlan;

use super::cube_common::{empty_output, int_elem, launch_failed};
use crate::nms_rules::BoxFormat;

/// NMS of contiguous `f32` boxes `[B, N, 4]` and scores `[B, C, N]`: `(count, selected)` in
/// `indices_dtype`, from a sort, a sweep, a scan and a row write, with nothing read back.
pub(super) fn non_max_suppression(
    boxes: CubeTensor,
    scores: CubeTensor,
    (iou_threshold, score_threshold, max_per_class): (f32, Option<f32>, usize),
    box_format: BoxFormat,
    indices_dtype: IntDType,
) -> (CubeTensor, CubeTensor) {
    let boxes = into_contiguous(boxes);
    let scores = into_contiguous(scores);
    let [batches, classes, n] = [scores.shape()[0], scores.shape()[1], scores.shape()[2]];
    let shape = NmsShape {
        batches,
        classes,
        boxes: n,
    };
    let dtype = DType::from(indices_dtype);
    let count = empty_output(&scores, [1].into(), dtype);
    let selected = empty_output(&scores, [shape.capacity(max_per_class), 3].into(), dtype);
    launch_non_max_suppression(
        &scores.client,
        &NmsInput {
            boxes: boxes.handle.clone(),
            scores: scores.handle.clone(),
        },
        &NmsOutput {
            count: count.handle.clone(),
            selected: selected.handle.clone(),
            elem: int_elem(indices_dtype),
        },
        shape,
        &NmsLimits {
            iou_threshold,
            score_threshold,
            max_per_class,
            format: match box_format {
                BoxFormat::Corners => NmsBoxFormat::Corners,
                BoxFormat::Center => NmsBoxFormat::Center,
            },
        },
        SortPlan::for_client(&scores.client),
    )
    .unwrap_or_else(|err| launch_failed("NonMaxSuppression", &scores.device, err));
    (count, selected)
}
