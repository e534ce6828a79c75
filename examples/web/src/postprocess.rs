//! The post-processing on the device: non-maximum suppression per class above a score
//! threshold, then the best kept boxes over all classes by top-k, read back with async reads.

use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use serde_json::{Value, json};

use crate::Detections;

/// The thresholds and limits of [`keep_best`].
#[derive(Clone, Debug)]
pub struct Settings {
    /// Boxes whose class score is not above this take no part.
    pub score_threshold: f32,
    /// A box overlapping a better box of its class by more than this IoU is suppressed.
    pub iou_threshold: f32,
    /// At most this many boxes kept per class.
    pub max_per_class: usize,
    /// At most this many boxes kept in all, the best scores first.
    pub top: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            score_threshold: 0.25,
            iou_threshold: 0.45,
            max_per_class: 20,
            top: 10,
        }
    }
}

/// One kept box: its class, its index among the detections and its class score.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    pub class: usize,
    pub index: usize,
    pub score: f32,
}

/// Keeps the best boxes of `detections` on `device`: NMS per class, then the `top` highest
/// scores among the kept (ties: the lower NMS row first). Only the `top` rows and their scores
/// are read back, with async reads, so this runs in browsers; no count is read, as padding rows
/// (box -1) rank last and are dropped on the host.
///
/// # Errors
///
/// An operator's error, or a read that fails.
pub async fn keep_best(
    device: &Device,
    detections: &Detections,
    settings: &Settings,
) -> Result<Vec<Kept>, String> {
    let (n, classes) = (detections.boxes.len(), detections.classes.len());
    let boxes = Tensor::<3>::from_data(
        TensorData::new(detections.boxes.concat(), [1, n, 4]),
        device,
    );
    let scores = Tensor::<3>::from_data(
        TensorData::new(detections.scores.concat(), [1, classes, n]),
        device,
    );
    let selected = boxes
        .non_max_suppression(
            scores.clone(),
            NmsOptions {
                iou_threshold: settings.iou_threshold,
                score_threshold: Some(settings.score_threshold),
                max_per_class: Some(settings.max_per_class),
                box_format: BoxFormat::Center,
                indices_dtype: None,
            },
        )
        .map_err(|err| err.to_string())?;
    // Each selected row's score, looked up at `class * N + box`; padding rows (-1) rank last.
    let rows = selected.selected.dims()[0];
    let class = selected.selected.clone().narrow(1, 1, 1).reshape([rows]);
    let index = selected.selected.clone().narrow(1, 2, 1).reshape([rows]);
    let padding = index.clone().lower_elem(0);
    let flat = (class * (n as i64) + index).clamp_min(0);
    let row_scores = scores
        .reshape([classes * n])
        .select(0, flat)
        .mask_fill(padding, f32::NEG_INFINITY);
    let top = row_scores.top_k(settings.top.min(rows), 0, Order::Descending);
    let best: Tensor<2, Int> = selected.selected.select(0, top.indices);
    let best = read_i64(best).await?;
    let best_scores = top
        .values
        .into_data_async()
        .await
        .map_err(|err| format!("reading the scores: {err:?}"))?
        .convert::<f32>()
        .try_into_vec::<f32>()
        .map_err(|err| format!("reading the scores: {err:?}"))?;
    Ok(best
        .chunks(3)
        .zip(best_scores)
        .filter(|(row, _)| row[2] >= 0)
        .map(|(row, score)| Kept {
            class: row[1] as usize,
            index: row[2] as usize,
            score,
        })
        .collect())
}

/// An Int tensor's values, read with the async read.
async fn read_i64<const D: usize>(tensor: Tensor<D, Int>) -> Result<Vec<i64>, String> {
    tensor
        .into_data_async()
        .await
        .map_err(|err| format!("reading the rows: {err:?}"))?
        .convert::<i64>()
        .try_into_vec::<i64>()
        .map_err(|err| format!("reading the rows: {err:?}"))
}

/// The kept boxes as the page draws them: class, label, index, score and the box.
pub fn to_json(kept: &[Kept], detections: &Detections) -> Value {
    kept.iter()
        .map(|k| {
            json!({
                "class": k.class,
                "label": detections.classes[k.class],
                "index": k.index,
                "score": k.score,
                "box": detections.boxes[k.index],
            })
        })
        .collect()
}
