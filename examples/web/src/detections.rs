//! A detector's decoded output, as `www/detections.json` holds it.

use serde_json::Value;

/// Boxes `[N, 4]` as `(x_center, y_center, width, height)` in pixels of a `width` x `height`
/// image, and one score per class and box, `[C, N]`.
#[derive(Clone, Debug)]
pub struct Detections {
    pub width: f32,
    pub height: f32,
    pub classes: Vec<String>,
    pub boxes: Vec<[f32; 4]>,
    pub scores: Vec<Vec<f32>>,
}

impl Detections {
    /// Reads the JSON of `www/detections.json`.
    ///
    /// # Errors
    ///
    /// A field that is missing or of the wrong kind, or scores that do not hold one row of `N`
    /// per class.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|err| format!("detections: {err}"))?;
        let number = |v: &Value| {
            v.as_f64()
                .map(|v| v as f32)
                .ok_or_else(|| format!("detections: {v} is not a number"))
        };
        let array = |v: &Value, what: &str| {
            v.as_array()
                .cloned()
                .ok_or_else(|| format!("detections: `{what}` is not an array"))
        };
        let classes = array(&value["classes"], "classes")?
            .iter()
            .map(|c| c.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("detections: a class name is not a string")?;
        let boxes = array(&value["boxes"], "boxes")?
            .iter()
            .map(|b| {
                let b = array(b, "boxes[i]")?;
                match b.as_slice() {
                    [x, y, w, h] => Ok([number(x)?, number(y)?, number(w)?, number(h)?]),
                    _ => Err("detections: a box does not have four numbers".to_string()),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let scores = array(&value["scores"], "scores")?
            .iter()
            .map(|row| array(row, "scores[c]")?.iter().map(number).collect())
            .collect::<Result<Vec<Vec<f32>>, _>>()?;
        if scores.len() != classes.len() || scores.iter().any(|row| row.len() != boxes.len()) {
            return Err(format!(
                "detections: scores must be [{}, {}], one row per class",
                classes.len(),
                boxes.len()
            ));
        }
        Ok(Self {
            width: number(&value["width"])?,
            height: number(&value["height"])?,
            classes,
            boxes,
            scores,
        })
    }
}
