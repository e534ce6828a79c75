//! The example's post-processing on Flex against a plain host NMS, and the boxes the page must
//! report (`www/expected.json`, which the browser check compares with).

use burn::tensor::Device;
use burn_dml_ops_web_example::{Detections, Kept, Settings, keep_best};

/// Polls a future whose reads are ready when first polled (Flex's) to its end.
fn ready<T>(future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut context) {
            return value;
        }
    }
}

fn detections() -> Detections {
    let text = include_str!("../www/detections.json");
    Detections::parse(text).expect("the committed detections parse")
}

/// IoU of two centre-format boxes in `f64`, 0 where an area or the intersection is empty.
fn iou(a: [f32; 4], b: [f32; 4]) -> f64 {
    let corners = |[x, y, w, h]: [f32; 4]| {
        let (x, y, w, h) = (f64::from(x), f64::from(y), f64::from(w), f64::from(h));
        (x - w / 2.0, y - h / 2.0, x + w / 2.0, y + h / 2.0)
    };
    let (a, b) = (corners(a), corners(b));
    let width = a.2.min(b.2) - a.0.max(b.0);
    let height = a.3.min(b.3) - a.1.max(b.1);
    let area = |c: (f64, f64, f64, f64)| (c.2 - c.0) * (c.3 - c.1);
    if width <= 0.0 || height <= 0.0 || area(a) <= 0.0 || area(b) <= 0.0 {
        return 0.0;
    }
    let inter = width * height;
    inter / (area(a) + area(b) - inter)
}

/// Greedy NMS per class, then the best `top` scores, ties in the NMS rows' order.
fn host_keep_best(detections: &Detections, settings: &Settings) -> Vec<Kept> {
    let mut rows = Vec::new();
    for (class, scores) in detections.scores.iter().enumerate() {
        let mut order: Vec<usize> = (0..scores.len())
            .filter(|&i| scores[i] > settings.score_threshold)
            .collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let mut kept: Vec<usize> = Vec::new();
        for index in order {
            if kept.len() == settings.max_per_class {
                break;
            }
            let suppressed = kept.iter().any(|&k| {
                iou(detections.boxes[k], detections.boxes[index])
                    > f64::from(settings.iou_threshold)
            });
            if !suppressed {
                kept.push(index);
            }
        }
        rows.extend(kept.into_iter().map(|index| Kept {
            class,
            index,
            score: scores[index],
        }));
    }
    rows.sort_by(|a, b| b.score.total_cmp(&a.score));
    rows.truncate(settings.top);
    rows
}

#[test]
fn flex_keeps_what_a_host_nms_keeps() {
    let detections = detections();
    let settings = Settings::default();
    let kept = ready(keep_best(&Device::flex(), &detections, &settings)).unwrap();
    let expected = host_keep_best(&detections, &settings);
    assert_eq!(kept.len(), settings.top, "the fixture must fill the top");
    assert_eq!(kept, expected);
}

#[test]
fn the_committed_expected_boxes_are_the_host_nms_result() {
    let detections = detections();
    let expected = host_keep_best(&detections, &Settings::default());
    let rows: Vec<_> = expected
        .iter()
        .map(|k| serde_json::json!({"class": k.class, "index": k.index}))
        .collect();
    let text = serde_json::to_string_pretty(&rows).unwrap() + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/www/expected.json");
    if std::env::var_os("BURN_DML_OPS_BLESS").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        committed, text,
        "www/expected.json is stale: rerun with BURN_DML_OPS_BLESS=1"
    );
}
