//! `NmsExt`: ONNX NonMaxSuppression on the device, batched over batches and classes, with a
//! fixed-size result and a device count.

use burn::backend::Dispatch;
use burn::tensor::{DType, Device, FloatDType, Int, IntDType, Tensor};

use super::nonzero::max_value;
use super::support::{check_encoding, leading_rows, read_count, read_count_async};
use crate::nms_rules::BoxFormat;
use crate::{DmlOps, DmlOpsError};

const OPERATOR: &str = "NonMaxSuppression";

/// Options of [`NmsExt::non_max_suppression`] (ONNX NonMaxSuppression's inputs and attribute).
#[derive(Clone, Debug)]
pub struct NmsOptions {
    /// A box is suppressed by a higher-ranked kept box of its class whose IoU with it is
    /// strictly greater than this; from 0 to 1.
    pub iou_threshold: f32,
    /// Only boxes whose score is strictly greater take part; `None` = all (a NaN score never
    /// does).
    pub score_threshold: Option<f32>,
    /// At most this many kept boxes per (batch, class); `None` = no limit.
    pub max_per_class: Option<usize>,
    /// How each box's four numbers are laid out.
    pub box_format: BoxFormat,
    /// The dtype of `count` and `selected`, a signed one (padding rows are -1); `None` = the
    /// device's default Int dtype.
    pub indices_dtype: Option<IntDType>,
}

/// The result of [`NmsExt::non_max_suppression`], in a fixed shape like
/// [`NonZeroCoordinates`](crate::NonZeroCoordinates): both tensors stay on the device and
/// nothing has been read back.
#[derive(Clone, Debug)]
pub struct Selected {
    /// `[1]`: how many rows of `selected` are real.
    pub count: Tensor<1, Int>,
    /// `[B * C * min(N, max_per_class), 3]`: rows `(batch, class, box)`, by batch, then class,
    /// then decreasing score (ties: lower box index first); then padding rows of -1.
    pub selected: Tensor<2, Int>,
}

impl Selected {
    /// The number of selected boxes. Reads `count` back to the host: one synchronisation.
    pub fn count_sync(&self) -> usize {
        read_count(self.count.clone())
    }

    /// The selected rows without padding: `[count, 3]`. Reads `count` back to the host: one
    /// synchronisation.
    pub fn into_exact(self) -> Tensor<2, Int> {
        let rows = self.count_sync();
        leading_rows(self.selected, rows)
    }

    /// [`count_sync`](Self::count_sync) without blocking, for browsers (where a blocking read
    /// cannot run): the same value once the device has run.
    pub async fn count_async(&self) -> usize {
        read_count_async(self.count.clone()).await
    }

    /// [`into_exact`](Self::into_exact) without blocking, for browsers: the same tensor.
    pub async fn into_exact_async(self) -> Tensor<2, Int> {
        let rows = self.count_async().await;
        leading_rows(self.selected, rows)
    }
}

/// Non-maximum suppression (ONNX `NonMaxSuppression`) on the device, batched over batches and
/// classes, with one fixed-size result for all of them.
///
/// For each (batch, class), the boxes whose score is strictly above the score threshold (a NaN
/// score never) are visited in decreasing score, ties by lower box index; a box is kept unless
/// an already kept box of that (batch, class) has IoU strictly greater than the IoU threshold
/// with it, and at most `max_per_class` are kept. IoU is computed in `f32` as ONNX Runtime
/// does, and is 0 where the intersection or either area is not positive. Nothing is read back:
/// the thresholds and limits are launch arguments, and only [`Selected::count_sync`] or
/// [`Selected::into_exact`] reads the count.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use burn_dml_ops::prelude::*;
///
/// let device = Device::flex();
/// // [B = 1, N = 3, 4] corners [y1, x1, y2, x2]; [B = 1, C = 1, N = 3] scores.
/// let boxes = Tensor::<3>::from_data(
///     [[[0.0, 0.0, 1.0, 1.0], [0.0, 0.1, 1.0, 1.1], [0.0, 10.0, 1.0, 11.0]]],
///     &device,
/// );
/// let scores = Tensor::<3>::from_data([[[0.9, 0.75, 0.6]]], &device);
/// let options = NmsOptions {
///     iou_threshold: 0.5,
///     score_threshold: None,
///     max_per_class: None,
///     box_format: BoxFormat::Corners,
///     indices_dtype: None,
/// };
/// let selected = boxes.non_max_suppression(scores, options).unwrap();
/// assert_eq!(selected.selected.dims(), [3, 3]); // B * C * N rows, padded with -1
/// let rows = selected.into_exact(); // reads the count back once
/// assert_eq!(rows.to_data().convert::<i64>().try_to_vec::<i64>().unwrap(), vec![0, 0, 0, 0, 0, 2]);
/// ```
pub trait NmsExt {
    /// `self`: boxes `[B, N, 4]`; `scores`: `[B, C, N]`. Float boxes and scores of any dtype
    /// are computed in `f32`. On Autodiff devices they may be tracked; the result is indices
    /// only, with no gradient.
    ///
    /// # Errors
    ///
    /// [`DmlOpsError::InvalidArgument`] for shapes that do not match, an IoU threshold outside
    /// `0..=1`, an unsigned or too narrow `indices_dtype`, or more than `u32::MAX / 5` scores;
    /// [`DmlOpsError::UnsupportedDType`] for a quantized input.
    fn non_max_suppression(
        self,
        scores: Tensor<3>,
        options: NmsOptions,
    ) -> Result<Selected, DmlOpsError>;
}

impl NmsExt for Tensor<3> {
    fn non_max_suppression(
        self,
        scores: Tensor<3>,
        options: NmsOptions,
    ) -> Result<Selected, DmlOpsError> {
        let device = self.device();
        let (max_per_class, indices_dtype) = check(&device, &self, &scores, &options)?;
        let boxes = to_f32(self);
        let scores = to_f32(scores);
        let (count, selected) = <Dispatch as DmlOps>::float_non_max_suppression(
            boxes.into_dispatch(),
            scores.into_dispatch(),
            options.iou_threshold,
            options.score_threshold,
            max_per_class,
            options.box_format,
            indices_dtype,
        );
        Ok(Selected {
            count: Tensor::from_dispatch(count),
            selected: Tensor::from_dispatch(selected),
        })
    }
}

/// `tensor` in `f32`, the dtype the IoU is computed in.
fn to_f32(tensor: Tensor<3>) -> Tensor<3> {
    if tensor.dtype() == DType::F32 {
        tensor
    } else {
        tensor.cast(FloatDType::F32)
    }
}

/// The most boxes kept per (batch, class), `min(N, max_per_class)`, on every device: the
/// kernels' sweep tests each block against the kept boxes within one launch's bounded loop.
const MAX_KEPT_PER_CLASS: usize = 1 << 21;

/// Checks shapes, dtypes and options; returns the per-class limit and the indices' dtype.
fn check(
    device: &Device,
    boxes: &Tensor<3>,
    scores: &Tensor<3>,
    options: &NmsOptions,
) -> Result<(usize, IntDType), DmlOpsError> {
    let invalid = |detail: String| DmlOpsError::InvalidArgument {
        operator: OPERATOR,
        detail,
    };
    let [batches, n, four] = boxes.dims();
    let [score_batches, classes, score_n] = scores.dims();
    if four != 4 || score_batches != batches || score_n != n {
        return Err(invalid(format!(
            "boxes of shape {:?} and scores of shape {:?} do not match: boxes are [B, N, 4] and \
             scores [B, C, N]",
            boxes.dims(),
            scores.dims()
        )));
    }
    let threshold = options.iou_threshold;
    if !(0.0..=1.0).contains(&threshold) {
        return Err(invalid(format!(
            "iou_threshold {threshold} is outside 0..=1"
        )));
    }
    check_encoding(OPERATOR, device, boxes.dtype())?;
    check_encoding(OPERATOR, device, scores.dtype())?;
    let max_per_class = options.max_per_class.unwrap_or(n);
    let dtype = options
        .indices_dtype
        .unwrap_or_else(|| device.settings().int_dtype);
    if matches!(
        dtype,
        IntDType::U8 | IntDType::U16 | IntDType::U32 | IntDType::U64
    ) {
        return Err(invalid(format!(
            "indices_dtype {dtype:?} is unsigned, but padding rows are -1: use a signed dtype"
        )));
    }
    let scores_len = batches
        .checked_mul(classes)
        .and_then(|s| s.checked_mul(n))
        .filter(|&len| len <= u32::MAX as usize / 5)
        .ok_or_else(|| {
            invalid(format!(
                "scores of shape {:?} are more than the {} that 32-bit offsets cover",
                scores.dims(),
                u32::MAX / 5
            ))
        })?;
    let kept = n.min(max_per_class);
    if kept > MAX_KEPT_PER_CLASS {
        return Err(invalid(format!(
            "{n} boxes with max_per_class {:?} may keep {kept} per (batch, class), more than the \
             {MAX_KEPT_PER_CLASS} swept; set max_per_class to at most that",
            options.max_per_class
        )));
    }
    let capacity = scores_len / n.max(1) * kept;
    let largest = capacity.max(batches).max(classes).max(n);
    if largest as i128 > max_value(dtype) {
        return Err(invalid(format!(
            "boxes {:?} and scores {:?} make up to {largest} rows and indices, more than \
             indices_dtype {dtype:?} holds; pass `indices_dtype: Some(IntDType::I64)`",
            boxes.dims(),
            scores.dims()
        )));
    }
    Ok((max_per_class, dtype))
}
