#!/usr/bin/env python3
"""Writes the imported-model tests of burn-dml-ops-onnx: ONNX's own node tests of the operators
that the overrides cover, and this crate's cases, as models (models/*.onnx), their inputs and
expected outputs (cases/*.json), and the Rust glue that runs them (src/cases.rs,
tests/imported.rs). Needs `pip install onnx==1.23.2 numpy onnxruntime==1.32.0`; `--check` fails
where the committed files differ from what it would write (CI runs it so).

Expected outputs of ONNX's node tests are ONNX's own; this crate's cases take them from onnx's
numpy reference evaluator (sequential, so repeated indices reduce in index order), or from the
skip rule below where an index is out of range (ONNX Runtime returns an error there).
Multinomial's draws come from ONNX Runtime: the tests compare with them in distribution only.
"""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.backend.test.case.node import collect_testcases
from onnx.reference import ReferenceEvaluator

ONNX_VERSION = "1.23.2"
ORT_VERSION = "1.32.0"
HERE = Path(__file__).resolve().parent
NODE_TEST_PREFIXES = (
    "test_scatternd",
    "test_scatter_elements_",
    "test_gathernd_",
    "test_nonzero_",
    "test_compress_",
    "test_top_k",
    "test_nonmaxsuppression_",
)
F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


def encode(array):
    """A tensor as JSON: dtype, shape and flat values (non-finite floats as strings)."""
    array = np.asarray(array)
    if array.dtype.name == "bfloat16" or str(array.dtype) == "bfloat16":
        dtype, values = "bfloat16", array.astype(np.float32).ravel().tolist()
    else:
        dtype, values = array.dtype.name, array.ravel().tolist()
    if dtype.startswith("float") or dtype == "bfloat16":
        values = [v if np.isfinite(v) else repr(float(v)) for v in values]
    return {"dtype": dtype, "shape": list(array.shape), "data": values}


def node_tests():
    """ONNX's node tests of the covered operators: (name, model, inputs, outputs)."""
    with warnings.catch_warnings():
        # Collecting runs every node test's numpy code, some of which overflows on purpose.
        warnings.simplefilter("ignore")
        every = collect_testcases(None)
    cases = [c for c in every if c.name.startswith(NODE_TEST_PREFIXES)]
    assert len(cases) == 40, f"expected 40 node tests, found {len(cases)}"
    for case in sorted(cases, key=lambda c: c.name):
        (inputs, outputs), = case.data_sets
        yield case.name, case.model, list(inputs), list(outputs)


def model(name, nodes, inputs, outputs, opset=18, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.producer_name = "burn-dml-ops make_cases.py"
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return proto


def value(name, elem, rank):
    return helper.make_tensor_value_info(name, elem, [None] * rank)


def reference(proto, feeds):
    return [np.asarray(o) for o in ReferenceEvaluator(proto).run(None, feeds)]


def static(proto, inputs):
    """`proto` with its inputs' shapes set to those of `inputs`, as exporters write them (the
    importer needs GatherND's index tuple size, for one)."""
    for graph_input, array in zip(proto.graph.input, inputs):
        dims = graph_input.type.tensor_type.shape.dim
        for dim, size in zip(dims, np.shape(array)):
            dim.ClearField("dim_param")
            dim.dim_value = size
    onnx.checker.check_model(proto)
    return proto


def wrap(index, dim):
    index = index + dim if index < 0 else index
    return index if 0 <= index < dim else None


def scatter_nd_skipping(data, indices, updates):
    """ScatterND (`none`) whose index tuples still out of range after wrapping are dropped."""
    out = data.copy()
    k = indices.shape[-1]
    rows = updates.reshape((-1,) + data.shape[k:])
    for tuple_, row in zip(indices.reshape(-1, k), rows):
        target = [wrap(int(i), d) for i, d in zip(tuple_, data.shape)]
        if None not in target:
            out[tuple(target)] = row
    return out


def gather_nd_zero_rows(data, indices):
    """GatherND (batch_dims 0) whose tuples out of range give rows of zeros."""
    k = indices.shape[-1]
    slice_shape = data.shape[k:]
    rows = []
    for tuple_ in indices.reshape(-1, k):
        target = [wrap(int(i), d) for i, d in zip(tuple_, data.shape)]
        rows.append(np.zeros(slice_shape, data.dtype) if None in target else data[tuple(target)])
    return np.stack(rows).reshape(indices.shape[:-1] + slice_shape)


def top_k_expected(x, k, axis, largest):
    """TopK by the contract (ONNX's tie rule): per sequence along `axis`, the `k` first of a
    stable sort in which NaN ranks above everything, -0.0 equals +0.0 and ties keep increasing
    index in both directions."""
    moved = np.moveaxis(x, axis, -1)
    values = np.empty(moved.shape[:-1] + (k,), x.dtype)
    indices = np.empty(moved.shape[:-1] + (k,), np.int64)
    sign = -1 if largest else 1
    for position in np.ndindex(moved.shape[:-1]):
        row = moved[position]

        def rank(i):
            if x.dtype.kind == "f" and np.isnan(row[i]):
                return (sign, 0, i)
            value = int(row[i]) if x.dtype.kind in "iu" else float(row[i]) + 0.0
            return (0, sign * value, i)
        chosen = sorted(range(len(row)), key=rank)[:k]
        values[position] = row[chosen]
        indices[position] = chosen
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


def own(proto, feeds, outputs=None):
    """One of this crate's cases: `feeds` (a dict for the reference evaluator, or the inputs in
    order with their `outputs`) with the model's input shapes made static."""
    inputs = list(feeds.values()) if isinstance(feeds, dict) else feeds
    if outputs is None:
        outputs = reference(proto, feeds)
    return proto.graph.name, static(proto, inputs), inputs, outputs


def own_cases():
    """This crate's cases: what ONNX's node tests leave out. Every model that holds a Compress
    node has `compress` in its name (Burn's built-ins cannot import those)."""
    rng = np.random.default_rng(49)

    for reduction in ("add", "mul", "max", "min"):
        data = rng.integers(-4, 5, (8, 3)).astype(np.float32)
        indices = rng.choice([0, 2, -3], size=(64, 1)).astype(np.int64)
        if reduction == "mul":
            updates = rng.choice([1.0, -1.0, 2.0, 0.5], size=(64, 3)).astype(np.float32)
        else:
            updates = rng.integers(-50, 50, (64, 3)).astype(np.float32)
        proto = model(
            f"own_scatternd_duplicates_{reduction}",
            [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"],
                              reduction=reduction)],
            [value("data", F, 2), value("indices", I64, 2), value("updates", F, 2)],
            [value("y", F, 2)],
        )
        feeds = {"data": data, "indices": indices, "updates": updates}
        yield own(proto, feeds)

        data = rng.integers(-4, 5, (4, 6)).astype(np.float32)
        indices = rng.choice([0, 1, -1], size=(4, 32)).astype(np.int64)
        updates = (rng.choice([1.0, -1.0, 2.0, 0.5], size=(4, 32)) if reduction == "mul"
                   else rng.integers(-50, 50, (4, 32))).astype(np.float32)
        proto = model(
            f"own_scatter_elements_duplicates_{reduction}",
            [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["y"], axis=1,
                              reduction=reduction)],
            [value("data", F, 2), value("indices", I64, 2), value("updates", F, 2)],
            [value("y", F, 2)],
        )
        feeds = {"data": data, "indices": indices, "updates": updates}
        yield own(proto, feeds)

    # Negative indices, rank 3, ScatterElements along a negative axis.
    data = rng.standard_normal((2, 3, 4)).astype(np.float32)
    indices = np.array([[[-1, 0], [1, -4], [2, -2]], [[0, -3], [3, 1], [-1, -2]]], np.int64)
    updates = rng.standard_normal((2, 3, 2)).astype(np.float32)
    proto = model(
        "own_scatter_elements_rank3_negative_axis",
        [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["y"], axis=-1)],
        [value("data", F, 3), value("indices", I64, 3), value("updates", F, 3)],
        [value("y", F, 3)],
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    yield own(proto, feeds)

    data = rng.standard_normal((3, 4, 2)).astype(np.float32)
    indices = np.array([[-1, 0], [1, -4], [-3, 3]], np.int64)
    proto = model(
        "own_gathernd_negative_indices",
        [helper.make_node("GatherND", ["data", "indices"], ["y"])],
        [value("data", F, 3), value("indices", I64, 2)],
        [value("y", F, 2)],
    )
    feeds = {"data": data, "indices": indices}
    yield own(proto, feeds)

    data = rng.standard_normal((5, 4)).astype(np.float32)
    indices = np.array([[-1], [-5], [2]], np.int64)
    updates = rng.standard_normal((3, 4)).astype(np.float32)
    proto = model(
        "own_scatternd_negative_indices",
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])],
        [value("data", F, 2), value("indices", I64, 2), value("updates", F, 2)],
        [value("y", F, 2)],
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    yield own(proto, feeds)

    # int64 data, beyond 32 bits, with duplicates.
    data = (np.arange(6, dtype=np.int64) << 40) + 7
    indices = np.array([[1], [4], [1], [-2], [1]], np.int64)
    updates = np.array([1 << 33, -5, (1 << 35) + 3, 9, -(1 << 41)], np.int64)
    proto = model(
        "own_scatternd_int64_data_add",
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction="add")],
        [value("data", I64, 1), value("indices", I64, 2), value("updates", I64, 1)],
        [value("y", I64, 1)],
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    yield own(proto, feeds)

    data = (np.arange(12, dtype=np.int64).reshape(4, 3) << 36) - 11
    indices = np.array([[3, -1], [0, 0], [-4, 2]], np.int64)
    proto = model(
        "own_gathernd_int64_data",
        [helper.make_node("GatherND", ["data", "indices"], ["y"])],
        [value("data", I64, 2), value("indices", I64, 2)],
        [value("y", I64, 1)],
    )
    feeds = {"data": data, "indices": indices}
    yield own(proto, feeds)

    # An LLM's KV-cache write: cache [batch, heads, seq, dim], this step's keys at (b, h, pos).
    cache = rng.standard_normal((2, 2, 6, 4)).astype(np.float32)
    position = 4
    indices = np.array([[[[b, h, position]] for h in range(2)] for b in range(2)], np.int64)
    keys = rng.standard_normal((2, 2, 1, 4)).astype(np.float32)
    proto = model(
        "own_kv_cache_write",
        [helper.make_node("ScatterND", ["cache", "indices", "keys"], ["y"])],
        [value("cache", F, 4), value("indices", I64, 4), value("keys", F, 4)],
        [value("y", F, 4)],
    )
    feeds = {"cache": cache, "indices": indices, "keys": keys}
    yield own(proto, feeds)

    # torch's x[mask] as exported, the mask made on the device by a comparison.
    x = rng.standard_normal((3, 4)).astype(np.float32)
    threshold = helper.make_tensor("threshold", F, [], [0.25])
    proto = model(
        "own_mask_select_chain",
        [
            helper.make_node("Greater", ["x", "threshold"], ["mask"]),
            helper.make_node("NonZero", ["mask"], ["coordinates"]),
            helper.make_node("Transpose", ["coordinates"], ["tuples"], perm=[1, 0]),
            helper.make_node("GatherND", ["x", "tuples"], ["y"]),
        ],
        [value("x", F, 2)],
        [value("y", F, 1)],
        initializers=[threshold],
    )
    feeds = {"x": x}
    yield own(proto, feeds)

    # data[mask] = source[mask] * 2: indices made by NonZero, updates by GatherND and Mul.
    data = rng.standard_normal((3, 5)).astype(np.float32)
    source = rng.standard_normal((3, 5)).astype(np.float32)
    mask = rng.random((3, 5)) < 0.4
    two = helper.make_tensor("two", F, [], [2.0])
    proto = model(
        "own_masked_assign_chain",
        [
            helper.make_node("NonZero", ["mask"], ["coordinates"]),
            helper.make_node("Transpose", ["coordinates"], ["tuples"], perm=[1, 0]),
            helper.make_node("GatherND", ["source", "tuples"], ["picked"]),
            helper.make_node("Mul", ["picked", "two"], ["doubled"]),
            helper.make_node("ScatterND", ["data", "tuples", "doubled"], ["y"]),
        ],
        [value("data", F, 2), value("source", F, 2), value("mask", B, 2)],
        [value("y", F, 2)],
        initializers=[two],
    )
    feeds = {"data": data, "source": source, "mask": mask}
    yield own(proto, feeds)

    # Compress whose condition is made on the device, shorter than the axis.
    x = rng.standard_normal((5, 3)).astype(np.float32)
    scores = np.array([0.9, -0.2, 0.4], np.float32)
    zero = helper.make_tensor("zero", F, [], [0.0])
    proto = model(
        "own_compress_short_condition_made_on_device",
        [
            helper.make_node("Greater", ["scores", "zero"], ["keep"]),
            helper.make_node("Compress", ["x", "keep"], ["y"], axis=0),
        ],
        [value("x", F, 2), value("scores", F, 1)],
        [value("y", F, 2)],
        initializers=[zero],
    )
    feeds = {"x": x, "scores": scores}
    yield own(proto, feeds)

    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    condition = np.array([True, False, True, True], bool)
    proto = model(
        "own_compress_int32_last_axis",
        [helper.make_node("Compress", ["x", "condition"], ["y"], axis=-1)],
        [value("x", I32, 3), value("condition", B, 1)],
        [value("y", I32, 3)],
    )
    feeds = {"x": x, "condition": condition}
    yield own(proto, feeds)

    # Out of range after wrapping: dropped (ONNX Runtime returns an error).
    data = rng.standard_normal((4, 3)).astype(np.float32)
    indices = np.array([[7], [1], [-9], [4], [-4]], np.int64)
    updates = rng.standard_normal((5, 3)).astype(np.float32)
    proto = model(
        "own_scatternd_out_of_range_skipped",
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])],
        [value("data", F, 2), value("indices", I64, 2), value("updates", F, 2)],
        [value("y", F, 2)],
    )
    yield own(proto, [data, indices, updates], [scatter_nd_skipping(data, indices, updates)])

    data = rng.standard_normal((4, 3)).astype(np.float32)
    indices = np.array([[2, 1], [4, 0], [-1, -4], [0, 2]], np.int64)
    proto = model(
        "own_gathernd_out_of_range_zero_rows",
        [helper.make_node("GatherND", ["data", "indices"], ["y"])],
        [value("data", F, 2), value("indices", I64, 2)],
        [value("y", F, 1)],
    )
    yield own(proto, [data, indices], [gather_nd_zero_rows(data, indices)])

    # Bool and Int data.
    data = np.array([True, False, True, False, False, True])
    indices = np.array([[1], [-2], [0]], np.int64)
    updates = np.array([True, True, False])
    proto = model(
        "own_scatternd_bool",
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])],
        [value("data", B, 1), value("indices", I64, 2), value("updates", B, 1)],
        [value("y", B, 1)],
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    yield own(proto, feeds)

    data = rng.random((2, 3, 4)) < 0.5
    indices = np.array([[[1, 2], [0, -1]], [[2, 0], [-3, 3]]], np.int64)
    proto = model(
        "own_gathernd_bool_batch_dims1",
        [helper.make_node("GatherND", ["data", "indices"], ["y"], batch_dims=1)],
        [value("data", B, 3), value("indices", I64, 3)],
        [value("y", B, 2)],
    )
    feeds = {"data": data, "indices": indices}
    yield own(proto, feeds)

    data = rng.standard_normal((2, 2, 3, 4)).astype(np.float32)
    indices = np.array([[[[2], [0]], [[1], [-1]]], [[[0], [0]], [[-3], [1]]]], np.int64)
    proto = model(
        "own_gathernd_batch_dims2",
        [helper.make_node("GatherND", ["data", "indices"], ["y"], batch_dims=2)],
        [value("data", F, 4), value("indices", I64, 4)],
        [value("y", F, 4)],
    )
    feeds = {"data": data, "indices": indices}
    yield own(proto, feeds)

    x = rng.integers(-1, 2, (2, 3, 4)).astype(np.int32)
    proto = model(
        "own_nonzero_int32_rank3",
        [helper.make_node("NonZero", ["x"], ["y"])],
        [value("x", I32, 3)],
        [value("y", I64, 2)],
    )
    feeds = {"x": x}
    yield own(proto, feeds)

    x = np.array([[0.0, -0.0, np.nan], [np.inf, 1e-40, 0.0]], np.float32)
    proto = model(
        "own_nonzero_float_signed_zero_nan",
        [helper.make_node("NonZero", ["x"], ["y"])],
        [value("x", F, 2)],
        [value("y", I64, 2)],
    )
    feeds = {"x": x}
    yield own(proto, feeds)

    # Older opsets: ScatterND without reductions (11), the deprecated Scatter (10).
    data = rng.standard_normal((4, 2)).astype(np.float32)
    indices = np.array([[3], [0]], np.int64)
    updates = rng.standard_normal((2, 2)).astype(np.float32)
    proto = model(
        "own_scatternd_opset11",
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])],
        [value("data", F, 2), value("indices", I64, 2), value("updates", F, 2)],
        [value("y", F, 2)],
        opset=11,
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    yield own(proto, feeds)

    data = np.zeros((3, 3), np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], np.float32)
    proto = model(
        "own_scatter_deprecated_opset10",
        [helper.make_node("Scatter", ["data", "indices", "updates"], ["y"], axis=0)],
        [value("data", F, 2), value("indices", I64, 2), value("updates", F, 2)],
        [value("y", F, 2)],
        opset=10,
    )
    expected = data.copy()
    for i in range(2):
        for j in range(3):
            expected[indices[i, j], j] = updates[i, j]
    yield own(proto, [data, indices, updates], [expected])

    # Constant int64 indices (they load as int64 on every device, OpenGL included).
    data = rng.standard_normal((3, 4)).astype(np.float32)
    indices = np.array([[1, -1], [0, 2], [3, 3]], np.int64)
    updates = rng.standard_normal((3, 2)).astype(np.float32)
    proto = model(
        "own_scatter_elements_constant_indices",
        [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["y"], axis=1,
                          reduction="add")],
        [value("data", F, 2), value("updates", F, 2)],
        [value("y", F, 2)],
        initializers=[helper.make_tensor("indices", I64, [3, 2], indices.ravel().tolist())],
    )
    yield own(proto, {"data": data, "updates": updates})
    data = rng.standard_normal((2, 3, 4)).astype(np.float32)
    indices = np.array([[[2], [0]], [[1], [-1]]], np.int64)
    proto = model(
        "own_gathernd_batch_constant_indices",
        [helper.make_node("GatherND", ["data", "indices"], ["y"], batch_dims=1)],
        [value("data", F, 3)],
        [value("y", F, 3)],
        initializers=[helper.make_tensor("indices", I64, [2, 2, 1], indices.ravel().tolist())],
    )
    yield own(proto, {"data": data})

    yield from top_k_cases(rng)
    yield from nms_cases(rng)
    yield from multinomial_cases()


def top_k_cases(rng):
    """TopK: ties in both directions, NaN and signed zeros, int64 data past 32 bits, k equal to
    the axis, a K made on the device, and the older opsets (K an attribute, K an input)."""
    def top_k_model(name, elem, rank, k=None, opset=18, **attributes):
        inputs = [value("x", elem, rank)]
        initializers = []
        if k is not None:
            initializers.append(helper.make_tensor("k", I64, [1], [k]))
        node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], **attributes)
        return model(name, [node], inputs, [value("values", elem, rank),
                                            value("indices", I64, rank)],
                     opset=opset, initializers=initializers)

    ties = rng.integers(0, 3, (3, 10)).astype(np.float32)
    for largest in (1, 0):
        name = f"own_topk_ties_{'largest' if largest else 'smallest'}"
        proto = top_k_model(name, F, 2, k=6, axis=1, largest=largest)
        yield own(proto, [ties], list(top_k_expected(ties, 6, 1, largest)))

    special = np.array([[1.0, np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan, 0.0],
                        [-0.0, 2.0, np.nan, -1.0, 0.0, 2.0, -np.inf, 1.0]], np.float32)
    for largest in (1, 0):
        name = f"own_topk_nan_signed_zero_{'largest' if largest else 'smallest'}"
        proto = top_k_model(name, F, 2, k=5, axis=-1, largest=largest)
        yield own(proto, [special], list(top_k_expected(special, 5, 1, largest)))

    wide = rng.integers(-(1 << 40), 1 << 40, (2, 7)).astype(np.int64)
    wide[0, 3] = wide[0, 5]
    proto = top_k_model("own_topk_int64_data", I64, 2, k=4, axis=1)
    yield own(proto, [wide], list(top_k_expected(wide, 4, 1, True)))

    cube = rng.standard_normal((4, 2, 3)).astype(np.float32)
    proto = top_k_model("own_topk_k_equals_axis", F, 3, k=4, axis=0, largest=0)
    yield own(proto, [cube], list(top_k_expected(cube, 4, 0, False)))

    # K counts the elements above 0.5: a one-element int64 tensor computed on the device.
    scores = rng.random(12).astype(np.float32)
    half = helper.make_tensor("half", F, [], [0.5])
    proto = model(
        "own_topk_runtime_k_made_on_device",
        [
            helper.make_node("Greater", ["x", "half"], ["above"]),
            helper.make_node("Cast", ["above"], ["flags"], to=I64),
            helper.make_node("ReduceSum", ["flags"], ["k"], keepdims=1),
            helper.make_node("TopK", ["x", "k"], ["values", "indices"]),
        ],
        [value("x", F, 1)],
        [value("values", F, 1), value("indices", I64, 1)],
        initializers=[half],
    )
    k = int((scores > 0.5).sum())
    yield own(proto, [scores], list(top_k_expected(scores, k, 0, True)))

    rows = rng.standard_normal((3, 5)).astype(np.float32)
    node = helper.make_node("TopK", ["x"], ["values", "indices"], axis=1, k=2)
    proto = model("own_topk_opset1", [node], [value("x", F, 2)],
                  [value("values", F, 2), value("indices", I64, 2)], opset=1)
    yield own(proto, [rows], list(top_k_expected(rows, 2, 1, True)))
    proto = top_k_model("own_topk_opset10", F, 2, k=3, opset=10, axis=0)
    yield own(proto, [rows], list(top_k_expected(rows, 3, 0, True)))


def multinomial_cases():
    """Multinomial: rows with one drawable class (the draws are then known, with or without a
    seed, the logits made on the device), and a distribution case whose expected outputs are
    ONNX Runtime's draws (`distribution` in the name: compared in distribution only)."""
    import onnxruntime
    if onnxruntime.__version__ != ORT_VERSION:
        sys.exit(f"make_cases.py needs onnxruntime=={ORT_VERSION}, "
                 f"found {onnxruntime.__version__}")

    def ort(proto, feeds):
        session = onnxruntime.InferenceSession(proto.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        return [np.asarray(o) for o in session.run(None, feeds)]

    inf = np.float32(np.inf)
    one_hot = np.array([[0.0, -inf, -inf, -inf], [-inf, -inf, -inf, 2.5],
                        [-inf, 40.0, -60.0, -60.0]], np.float32)
    proto = model(
        "own_multinomial_one_class_per_row",
        [helper.make_node("Multinomial", ["x"], ["y"], sample_size=5, seed=1.5,
                          dtype=TensorProto.INT64)],
        [value("x", F, 2)],
        [value("y", I64, 2)],
    )
    expected = np.repeat(np.argmax(one_hot, axis=1)[:, None], 5, axis=1).astype(np.int64)
    assert (ort(proto, {"x": one_hot})[0] == expected).all()
    yield own(proto, [one_hot], [expected])

    # No seed, and a mask added on the device (what a sampler's vocabulary mask is).
    logits = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]], np.float32)
    mask = np.array([[-inf, 0.0, -inf], [-inf, -inf, 0.0]], np.float32)
    proto = model(
        "own_multinomial_unseeded_mask_made_on_device",
        [helper.make_node("Add", ["logits", "mask"], ["masked"]),
         helper.make_node("Multinomial", ["masked"], ["y"], sample_size=3)],
        [value("logits", F, 2), value("mask", F, 2)],
        [value("y", TensorProto.INT32, 2)],
    )
    expected = np.array([[1, 1, 1], [2, 2, 2]], np.int32)
    assert (ort(proto, {"logits": logits, "mask": mask})[0] == expected).all()
    yield own(proto, [logits, mask], [expected])

    # Two rows (one with a class that is never drawable), 4,000 draws each, int32 by default.
    probabilities = np.array([[0.05, 0.1, 0.15, 0.2, 0.2, 0.3],
                              [0.5, 0.25, 0.125, 0.0, 0.0625, 0.0625]])
    with np.errstate(divide="ignore"):
        logits = (np.log(probabilities) + 3.0).astype(np.float32)
    proto = model(
        "own_multinomial_distribution",
        [helper.make_node("Multinomial", ["x"], ["y"], sample_size=4000, seed=7.0)],
        [value("x", F, 2)],
        [value("y", TensorProto.INT32, 2)],
    )
    draws = ort(proto, {"x": logits})[0]
    assert draws.shape == (2, 4000) and not (draws[1] == 3).any()
    yield own(proto, [logits], [draws])


def clustered_boxes(rng, batches, n, objects):
    """Detector-like corner boxes [batches, n, 4]: each one of `objects` boxes, jittered."""
    out = np.empty((batches, n, 4), np.float32)
    for b in range(batches):
        y, x = rng.uniform(0, 600, objects), rng.uniform(0, 600, objects)
        h, w = rng.uniform(20, 120, objects), rng.uniform(20, 120, objects)
        pick = rng.integers(0, objects, n)
        dy = (rng.random(n) - 0.5) * 0.2 * h[pick]
        dx = (rng.random(n) - 0.5) * 0.2 * w[pick]
        out[b, :, 0], out[b, :, 1] = y[pick] + dy, x[pick] + dx
        out[b, :, 2], out[b, :, 3] = out[b, :, 0] + h[pick], out[b, :, 1] + w[pick]
    return out


def nms_cases(rng):
    """NonMaxSuppression: two batches of three classes with a score threshold, identical boxes
    with identical scores, one box per class, the centre format, the optional inputs as
    constants and absent, opset 10, and a YOLO-sized graph whose scores a Sigmoid makes on the
    device."""
    def nms_model(name, constants=None, opset=18, inputs=5, **attributes):
        names = ["boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                 "score_threshold"][:inputs]
        graph_inputs = [value("boxes", F, 3), value("scores", F, 3)]
        initializers = []
        for i, input_name in enumerate(names[2:], start=2):
            elem = I64 if i == 2 else F
            if constants is not None:
                initializers.append(helper.make_tensor(input_name, elem, [1],
                                                       [constants[i - 2]]))
            else:
                graph_inputs.append(value(input_name, elem, 1))
        node = helper.make_node("NonMaxSuppression", names, ["selected"], **attributes)
        return model(name, [node], graph_inputs, [value("selected", I64, 2)], opset=opset,
                     initializers=initializers)

    def fed(proto, arrays):
        return own(proto, {i.name: a for i, a in zip(proto.graph.input, arrays)})

    def limits(max_output, iou, score):
        return [np.array([max_output], np.int64), np.array([iou], np.float32),
                np.array([score], np.float32)]

    boxes = clustered_boxes(rng, 2, 40, 6)
    scores = rng.choice([0.9, 0.5, 0.3, 0.1], (2, 3, 40)).astype(np.float32)
    scores += rng.random((2, 3, 40)).astype(np.float32) * (rng.random((2, 3, 40)) < 0.5)
    proto = nms_model("own_nms_two_batches_three_classes_score_threshold")
    yield fed(proto, [boxes, scores] + limits(10, 0.4, 0.35))

    same = np.tile(np.array([[[0.0, 0.0, 1.0, 1.0]]], np.float32), (1, 8, 1))
    proto = nms_model("own_nms_identical_boxes_and_scores")
    yield fed(proto, [same, np.full((1, 2, 8), 0.7, np.float32)] + limits(8, 0.5, 0.0))

    proto = nms_model("own_nms_one_per_class")
    yield fed(proto, [boxes, scores] + limits(1, 0.5, 0.0))

    centres = boxes.copy()
    centres[..., 2:] = boxes[..., 2:] - boxes[..., :2]
    centres[..., :2] = boxes[..., :2] + centres[..., 2:] / 2
    proto = nms_model("own_nms_center_format", center_point_box=1)
    yield fed(proto, [centres[..., [1, 0, 3, 2]], scores] + limits(5, 0.3, 0.2))

    proto = nms_model("own_nms_constant_limits", constants=[4, 0.45, 0.25])
    yield own(proto, {"boxes": boxes, "scores": scores})

    # ONNX's default `max_output_boxes_per_class` is 0: nothing is selected. (The reference
    # evaluator cannot run a node without its optional inputs.)
    proto = nms_model("own_nms_absent_limits", inputs=2)
    yield own(proto, [boxes, scores], [np.zeros((0, 3), np.int64)])

    proto = nms_model("own_nms_opset10", opset=10, inputs=4)
    yield fed(proto, [boxes, scores] + limits(3, 0.5, 0.0)[:2])

    # YOLO-sized: 8,400 boxes, 80 classes. The logits are a MatMul of small dyadic numbers
    # (exact in f32 on any device), and distinct ones lie far enough apart, and from the
    # threshold's logit, that every runtime's Sigmoid orders and thresholds them alike.
    n, classes = 8400, 80
    yolo_boxes = np.round(clustered_boxes(rng, 1, n, 40) * 4) / 4  # shorter case files
    embedding = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], (1, classes, 8)).astype(np.float32)
    features = (rng.integers(-8, 9, (1, 8, n)) / 8).astype(np.float32)
    bias = helper.make_tensor("bias", F, [], [-2.0])
    constants = [helper.make_tensor("max_output_boxes_per_class", I64, [1], [100]),
                 helper.make_tensor("iou_threshold", F, [1], [0.45]),
                 helper.make_tensor("score_threshold", F, [1], [0.25])]
    proto = model(
        "own_nms_yolo_sigmoid_made_on_device",
        [
            helper.make_node("MatMul", ["embedding", "features"], ["products"]),
            helper.make_node("Add", ["products", "bias"], ["logits"]),
            helper.make_node("Sigmoid", ["logits"], ["scores"]),
            helper.make_node("NonMaxSuppression",
                             ["boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                              "score_threshold"], ["selected"]),
        ],
        [value("boxes", F, 3), value("embedding", F, 3), value("features", F, 3)],
        [value("selected", I64, 2)],
        initializers=[bias] + constants,
    )
    yield own(proto, {"boxes": yolo_boxes, "embedding": embedding, "features": features})


def bench_models():
    """The benchmark's models (benches/imported.rs), of sizes chosen when they run."""
    half = helper.make_tensor("half", F, [], [0.5])
    yield model(
        "bench_nonzero",
        [helper.make_node("NonZero", ["x"], ["y"])],
        [value("x", F, 1)],
        [value("y", I64, 2)],
    )
    yield model(
        "bench_mask_select",
        [
            helper.make_node("Greater", ["x", "half"], ["mask"]),
            helper.make_node("NonZero", ["mask"], ["coordinates"]),
            helper.make_node("Transpose", ["coordinates"], ["tuples"], perm=[1, 0]),
            helper.make_node("GatherND", ["x", "tuples"], ["y"]),
        ],
        [value("x", F, 1)],
        [value("y", F, 1)],
        initializers=[half],
    )
    yield model(
        "bench_nms",
        [helper.make_node("NonMaxSuppression",
                          ["boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                           "score_threshold"], ["selected"])],
        [value("boxes", F, 3), value("scores", F, 3)],
        [value("selected", I64, 2)],
        initializers=[helper.make_tensor("max_output_boxes_per_class", I64, [1], [100]),
                      helper.make_tensor("iou_threshold", F, [1], [0.45]),
                      helper.make_tensor("score_threshold", F, [1], [0.25])],
    )
    yield model(
        "bench_scatternd_add",
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction="add")],
        [value("data", F, 1), value("indices", I64, 2), value("updates", F, 1)],
        [value("y", F, 1)],
    )


def bad_models():
    """Models the overrides must refuse at build time, naming the node (onnx/tests)."""
    yield model(
        "bad_scatternd_bool_add",
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction="add",
                          name="bool_sum")],
        [value("data", B, 1), value("indices", I64, 2), value("updates", B, 1)],
        [value("y", B, 1)],
    )
    yield model(
        "bad_compress_condition_rank2",
        [helper.make_node("Compress", ["x", "condition"], ["y"], axis=0, name="square_mask")],
        [value("x", F, 2), value("condition", B, 2)],
        [value("y", F, 2)],
    )
    yield model(
        "bad_multinomial_float_dtype",
        [helper.make_node("Multinomial", ["x"], ["y"], dtype=TensorProto.FLOAT,
                          name="float_draws")],
        [value("x", F, 2)],
        [value("y", F, 2)],
    )
    yield model(
        "bad_nonzero_of_shape",
        [
            helper.make_node("Shape", ["x"], ["dims"]),
            helper.make_node("NonZero", ["dims"], ["y"], name="nonzero_dims"),
        ],
        [value("x", F, 2)],
        [value("y", I64, 2)],
    )


def rust_kind(elem_type):
    if elem_type in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
                     TensorProto.BFLOAT16):
        return "float"
    return "bool" if elem_type == TensorProto.BOOL else "int"


def rust_runner(module, name, proto):
    """A function that runs `module::name::Model`, its constants loaded from the importer's weight
    file as a user's `Model::default()` loads them, on inputs of the model's kinds and ranks."""
    args = []
    for i, graph_input in enumerate(proto.graph.input):
        tensor_type = graph_input.type.tensor_type
        rank = len(tensor_type.shape.dim)
        args.append(f"input.{rust_kind(tensor_type.elem_type)}::<{rank}>({i})")
    outputs = len(proto.graph.output)
    bindings = "output" if outputs == 1 else "(" + ", ".join(f"o{i}" for i in range(outputs)) + ")"
    collected = ("vec![output.into_data()]" if outputs == 1 else
                 "vec![" + ", ".join(f"o{i}.into_data()" for i in range(outputs)) + "]")
    return (
        f"fn {module}_{name.lower()}(input: &Inputs) -> Vec<TensorData> {{\n"
        f"    let weights = concat!(env!(\"OUT_DIR\"), \"/{module}/{name}.bpk\");\n"
        f"    let model = {module}::{name.lower()}::Model::from_file(weights, input.device());\n"
        f"    let {bindings} = model.forward({', '.join(args)});\n"
        f"    {collected}\n"
        f"}}\n"
    )


def rustfmt(source):
    """`source` as `cargo fmt` leaves it, so that the formatting check passes on it."""
    done = subprocess.run(["rustfmt", "--edition", "2024", "--emit", "stdout"],
                          input=source.encode(), capture_output=True, check=True)
    return done.stdout


def importable_by_burn(name):
    """Whether Burn 0.22 imports the model alone: not with a Compress or Multinomial node."""
    return "compress" not in name and "multinomial" not in name


def write_all(out, cases):
    """Every file this script makes, as {path: contents}."""
    names = []
    modules = {"dml": [], "builtin": []}
    runners = []
    for name, proto, inputs, outputs in cases:
        names.append(name)
        out[HERE / "models" / f"{name}.onnx"] = proto.SerializeToString(deterministic=True)
        case = {"inputs": [encode(a) for a in inputs], "outputs": [encode(a) for a in outputs]}
        out[HERE / "cases" / f"{name}.json"] = (json.dumps(case, indent=None) + "\n").encode()
        builtin = importable_by_burn(name)
        for module in ("dml", "builtin") if builtin else ("dml",):
            modules[module].append(name)
            runners.append((module, name, rust_runner(module, name, proto)))
    for proto in bad_models():
        path = HERE.parent / "onnx" / "tests" / "models" / f"{proto.graph.name}.onnx"
        out[path] = proto.SerializeToString(deterministic=True)
    for proto in bench_models():
        name = proto.graph.name
        out[HERE / "models" / f"{name}.onnx"] = proto.SerializeToString(deterministic=True)
        modules["dml"].append(name)
        modules["builtin"].append(name)
    source = [
        "// @generated by make_cases.py: the imported models and what runs them.\n\n",
        "use burn::tensor::TensorData;\n\nuse crate::{Case, Inputs};\n",
    ]
    for module, members in modules.items():
        if module == "dml":
            source.append("\n/// The models imported with the overrides.\n")
        else:
            source.append(
                "\n/// The models imported by Burn alone (the `builtin` feature: burn-onnx's own\n"
                "/// lowering, which the workspace's lints do not hold to).\n"
                "#[cfg(feature = \"builtin\")]\n"
            )
        source.append(f"pub mod {module} {{\n")
        for name in members:
            source.append(
                f"    pub mod {name.lower()} {{\n"
                f"        include!(concat!(env!(\"OUT_DIR\"), \"/{module}/{name}.rs\"));\n"
                f"    }}\n"
            )
        source.append("}\n")
    source.append("\n")
    for module, name, runner in runners:
        if module == "builtin":
            source.append("#[cfg(feature = \"builtin\")]\n")
        source.append(runner + "\n")
    source.append("\n/// Every case, with its runner for the model imported with the overrides.\n")
    source.append("pub const CASES: &[Case] = &[\n")
    for name in names:
        source.append(f"    Case {{ name: \"{name}\", run: dml_{name.lower()} }},\n")
    source.append("];\n")
    source.append("\n/// The cases Burn can import alone, with their runners for those models.\n")
    source.append("#[cfg(feature = \"builtin\")]\n")
    source.append("pub const BUILTIN: &[Case] = &[\n")
    for name in names:
        if importable_by_burn(name):
            source.append(f"    Case {{ name: \"{name}\", run: builtin_{name.lower()} }},\n")
    source.append("];\n")
    out[HERE / "src" / "cases.rs"] = rustfmt("".join(source))
    tests = [
        "// @generated by make_cases.py: one test per imported model, on Flex and on wgpu.\n",
        "\nuse burn_dml_ops_onnx_tests::{check_case, check_distribution};\n",
    ]
    for name in names:
        check = "check_distribution" if "distribution" in name else "check_case"
        tests.append(f"\n#[test]\nfn {name.lower()}() {{\n    {check}(\"{name}\");\n}}\n")
    out[HERE / "tests" / "imported.rs"] = rustfmt("".join(tests))


def main():
    if onnx.__version__ != ONNX_VERSION:
        sys.exit(f"make_cases.py needs onnx=={ONNX_VERSION}, found {onnx.__version__}")
    check = "--check" in sys.argv[1:]
    out = {}
    write_all(out, list(node_tests()) + list(own_cases()))
    stale = [path for path, contents in out.items()
             if not path.exists() or path.read_bytes() != contents]
    known = {path for path in out}
    folders = (HERE / "models", HERE / "cases", HERE.parent / "onnx" / "tests" / "models")
    extra = [path for folder in folders for path in folder.glob("*") if path not in known]
    if check:
        if stale or extra:
            sys.exit("make_cases.py: these files differ from what it writes (rerun it): "
                     + ", ".join(str(p.relative_to(HERE.parent)) for p in stale + extra))
        print(f"make_cases.py: {len(out)} files as committed")
        return
    for path in extra:
        path.unlink()
    for path, contents in out.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(contents)
    print(f"make_cases.py: wrote {len(out)} files")


if __name__ == "__main__":
    main()
