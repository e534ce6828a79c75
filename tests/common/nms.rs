//! An independent oracle of ONNX NonMaxSuppression, written after ONNX Runtime's CPU kernel
//! (`SuppressByIOU` and its per-class loop), and the box sets the NMS tests use.

/// The IoU test of ONNX Runtime, pair by pair, with its early returns: `true` where `kept`
/// suppresses `candidate`.
pub fn suppress_by_iou(candidate: [f32; 4], kept: [f32; 4], center: bool, threshold: f32) -> bool {
    let min_max = |lhs: f32, rhs: f32| if lhs >= rhs { (rhs, lhs) } else { (lhs, rhs) };
    let (x1, y1, x2, y2);
    if center {
        let half = |b: [f32; 4]| (b[2] / 2.0, b[3] / 2.0);
        let (w1, h1) = half(candidate);
        let (w2, h2) = half(kept);
        x1 = (candidate[0] - w1, candidate[0] + w1);
        x2 = (kept[0] - w2, kept[0] + w2);
        y1 = (candidate[1] - h1, candidate[1] + h1);
        y2 = (kept[1] - h2, kept[1] + h2);
    } else {
        x1 = min_max(candidate[1], candidate[3]);
        x2 = min_max(kept[1], kept[3]);
        y1 = min_max(candidate[0], candidate[2]);
        y2 = min_max(kept[0], kept[2]);
    }
    let max = |a: f32, b: f32| if a < b { b } else { a };
    let min = |a: f32, b: f32| if b < a { b } else { a };
    let (ix_min, ix_max) = (max(x1.0, x2.0), min(x1.1, x2.1));
    if ix_max <= ix_min {
        return false;
    }
    let (iy_min, iy_max) = (max(y1.0, y2.0), min(y1.1, y2.1));
    if iy_max <= iy_min {
        return false;
    }
    let intersection = (ix_max - ix_min) * (iy_max - iy_min);
    if intersection <= 0.0 {
        return false;
    }
    let area1 = (x1.1 - x1.0) * (y1.1 - y1.0);
    let area2 = (x2.1 - x2.0) * (y2.1 - y2.0);
    let union = area1 + area2 - intersection;
    if area1 <= 0.0 || area2 <= 0.0 || union <= 0.0 {
        return false;
    }
    intersection / union > threshold
}

/// What one NMS call is asked.
#[derive(Clone, Debug)]
pub struct NmsCase {
    /// `[B, N, 4]`, flat.
    pub boxes: Vec<f32>,
    /// `[B, C, N]`, flat.
    pub scores: Vec<f32>,
    pub batches: usize,
    pub classes: usize,
    pub n: usize,
    pub iou_threshold: f32,
    pub score_threshold: Option<f32>,
    pub max_per_class: Option<usize>,
    pub center: bool,
}

/// The selected rows `(batch, class, box)` and the padded row count.
pub fn expected_nms(case: &NmsCase) -> (Vec<[i64; 3]>, usize) {
    let n = case.n;
    let limit = case.max_per_class.unwrap_or(n);
    let mut rows = Vec::new();
    for b in 0..case.batches {
        let boxes = |i: usize| -> [f32; 4] {
            let at = (b * n + i) * 4;
            case.boxes[at..at + 4].try_into().unwrap()
        };
        for c in 0..case.classes {
            let scores = &case.scores[(b * case.classes + c) * n..][..n];
            // ONNX Runtime's queue: (score, index), largest score first, ties by lower index.
            let mut queue: Vec<(f32, usize)> = scores
                .iter()
                .copied()
                .enumerate()
                .filter(|(_, s)| match case.score_threshold {
                    Some(t) => *s > t,
                    None => !s.is_nan(),
                })
                .map(|(i, s)| (s, i))
                .collect();
            queue.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
            let mut kept: Vec<usize> = Vec::new();
            for (_, i) in queue {
                if kept.len() >= limit {
                    break;
                }
                let suppressed = kept
                    .iter()
                    .any(|&k| suppress_by_iou(boxes(i), boxes(k), case.center, case.iou_threshold));
                if !suppressed {
                    kept.push(i);
                    rows.push([b as i64, c as i64, i as i64]);
                }
            }
        }
    }
    (rows, case.batches * case.classes * n.min(limit))
}

/// A small deterministic generator (SplitMix64) for the box sets.
pub struct Mix(pub u64);

impl Mix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Detector-like boxes `[batches, n, 4]` in corners format: each box is one of `objects`
/// objects' boxes with a small jitter, so most of them overlap one another heavily.
pub fn clustered_boxes(batches: usize, n: usize, objects: usize, seed: u64) -> Vec<f32> {
    let mut mix = Mix(seed);
    let mut out = Vec::with_capacity(batches * n * 4);
    for _ in 0..batches {
        let centres: Vec<[f32; 4]> = (0..objects)
            .map(|_| {
                let (y, x) = (mix.unit() * 600.0, mix.unit() * 600.0);
                let (h, w) = (20.0 + mix.unit() * 100.0, 20.0 + mix.unit() * 100.0);
                [y, x, h, w]
            })
            .collect();
        for _ in 0..n {
            let [y, x, h, w] = centres[(mix.next_u64() % objects as u64) as usize];
            let jitter = |mix: &mut Mix, size: f32| (mix.unit() - 0.5) * 0.2 * size;
            let (y, x) = (y + jitter(&mut mix, h), x + jitter(&mut mix, w));
            out.extend([y, x, y + h, x + w]);
        }
    }
    out
}

/// Boxes `[batches, n, 4]` in corners format along a line, `10` apart, each of a width from 5 to
/// 15: no box overlaps another where `overlapping` is false (every box is kept); otherwise
/// neighbours overlap in part and thousands are still kept in one class.
pub fn spread_boxes(batches: usize, n: usize, overlapping: bool, seed: u64) -> Vec<f32> {
    let mut mix = Mix(seed);
    let mut out = Vec::with_capacity(batches * n * 4);
    for _ in 0..batches {
        for i in 0..n {
            let x = 10.0 * i as f32;
            let width = if overlapping {
                5.0 + 10.0 * mix.unit()
            } else {
                5.0
            };
            let row = (i % 3) as f32;
            out.extend([row, x, row + 8.0, x + width]);
        }
    }
    out
}
