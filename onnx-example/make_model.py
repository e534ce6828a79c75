#!/usr/bin/env python3
"""Writes model/detections.onnx, the model the example imports: boxes whose score passes a
threshold (Compress), their scores (torch's `scores[keep]` as exported: NonZero, Transpose,
GatherND) and how many boxes each class keeps (ScatterElements with `add`). Needs
`pip install onnx==1.23.2`; `--check` fails where the committed model differs."""

import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64
CLASSES = 4


def build():
    threshold = helper.make_tensor("threshold", F, [], [0.5])
    counts = helper.make_tensor("zeros", F, [CLASSES], [0.0] * CLASSES)
    one = helper.make_tensor("one", F, [], [1.0])
    nodes = [
        helper.make_node("Greater", ["scores", "threshold"], ["keep"]),
        helper.make_node("Compress", ["boxes", "keep"], ["kept_boxes"], axis=0),
        helper.make_node("NonZero", ["keep"], ["kept_at"]),
        helper.make_node("Transpose", ["kept_at"], ["kept_tuples"], perm=[1, 0]),
        helper.make_node("GatherND", ["scores", "kept_tuples"], ["kept_scores"]),
        helper.make_node("Compress", ["classes", "keep"], ["kept_classes"], axis=0),
        helper.make_node("Shape", ["kept_classes"], ["kept_shape"]),
        helper.make_node("Expand", ["one", "kept_shape"], ["ones"]),
        helper.make_node("ScatterElements", ["zeros", "kept_classes", "ones"], ["per_class"],
                         axis=0, reduction="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "detections",
        [
            helper.make_tensor_value_info("boxes", F, ["n", 4]),
            helper.make_tensor_value_info("scores", F, ["n"]),
            helper.make_tensor_value_info("classes", I64, ["n"]),
        ],
        [
            helper.make_tensor_value_info("kept_boxes", F, [None, 4]),
            helper.make_tensor_value_info("kept_scores", F, [None]),
            helper.make_tensor_value_info("per_class", F, [CLASSES]),
        ],
        initializer=[threshold, counts, one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    model.producer_name = "burn-dml-ops make_model.py"
    onnx.checker.check_model(model)
    return model.SerializeToString(deterministic=True)


def main():
    path = Path(__file__).resolve().parent / "model" / "detections.onnx"
    model = build()
    if "--check" in sys.argv[1:]:
        if not path.exists() or path.read_bytes() != model:
            sys.exit(f"{path} differs from what make_model.py writes: rerun it")
        return
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(model)


if __name__ == "__main__":
    main()
