"""Writes www/detections.json: a detector's decoded output for one 640x480 image, as the web
example reads it. Six objects, each found by a cluster of jittered candidate boxes with falling
scores, and background candidates of low score: boxes [N, 4] as (x_center, y_center, width,
height) in pixels, and scores [C, N] per class. Seeded, so the file is the same on every run;
`--check` fails when the committed file differs.
"""

import json
import random
import sys
from pathlib import Path

CLASSES = ["person", "bicycle", "dog"]
OBJECTS = [
    # class, x_center, y_center, width, height
    (0, 120.0, 250.0, 90.0, 260.0),
    (0, 190.0, 240.0, 80.0, 250.0),
    (1, 330.0, 330.0, 210.0, 140.0),
    (2, 520.0, 390.0, 130.0, 90.0),
    (0, 470.0, 200.0, 70.0, 200.0),
    (2, 560.0, 410.0, 100.0, 70.0),
]


def detections():
    rng = random.Random(2026)
    boxes, scores = [], [[] for _ in CLASSES]
    for cls, x, y, w, h in OBJECTS:
        for k in range(60):
            jitter = 0.01 + 0.002 * k
            boxes.append([
                round(x + rng.gauss(0.0, jitter * w), 2),
                round(y + rng.gauss(0.0, jitter * h), 2),
                round(w * (1.0 + rng.gauss(0.0, jitter)), 2),
                round(h * (1.0 + rng.gauss(0.0, jitter)), 2),
            ])
            confidence = max(0.0, 0.95 - 0.012 * k - rng.random() * 0.05)
            for c in range(len(CLASSES)):
                score = confidence if c == cls else rng.random() * 0.2
                scores[c].append(round(score, 4))
    for _ in range(640):
        w, h = rng.uniform(10.0, 160.0), rng.uniform(10.0, 160.0)
        boxes.append([
            round(rng.uniform(w / 2, 640.0 - w / 2), 2),
            round(rng.uniform(h / 2, 480.0 - h / 2), 2),
            round(w, 2),
            round(h, 2),
        ])
        for c in range(len(CLASSES)):
            scores[c].append(round(rng.random() * 0.3, 4))
    return {"width": 640, "height": 480, "classes": CLASSES, "boxes": boxes, "scores": scores}


def main():
    path = Path(__file__).parent / "www" / "detections.json"
    text = json.dumps(detections(), separators=(",", ":")) + "\n"
    if "--check" in sys.argv:
        if path.read_text() != text:
            sys.exit(f"{path} differs from what make_detections.py writes")
        return
    path.write_text(text)


if __name__ == "__main__":
    main()
