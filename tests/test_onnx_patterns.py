"""Exporter-written sub-graphs arriving through `from_onnx` become single nodes after lowering (older
exports' decomposed LayerNorm, PyTorch's erf GELU, BERT's scaled QKᵀ), and the runtime computes them as numpy
written here does."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import webxnn  # noqa: E402
from webxnn.compiler import compile_graph  # noqa: E402

RNG = np.random.default_rng(5)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _model(
    nodes: list[Any], x_shape: list[int], inits: dict[str, np.ndarray], opset: int = 13, ms: bool = False
) -> Any:
    """One float input "x" of `x_shape`, one output "y", `inits` as initializers; `ms`: also the com.microsoft
    domain (contrib ops)."""
    g = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TP.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TP.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = min(m.ir_version, 8)
    return m


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _run(m: Any, x: np.ndarray) -> tuple[Counter, np.ndarray]:
    graph = webxnn.from_onnx(m)
    kinds = Counter(n.kind for n in compile_graph(graph).nodes)
    y = next(iter(webxnn.load(webxnn.compile(graph)).run({"x": x}).values()))
    return kinds, y


def test_opset13_decomposed_layer_norm_is_one_normalize() -> None:
    h = 16
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["s"]),
        helper.make_node("ReduceMean", ["s"], ["v"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["v", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]),
        helper.make_node("Mul", ["n", "g"], ["gn"]),
        helper.make_node("Add", ["gn", "b"], ["y"]),
    ]
    g, b = _f(h), _f(h)
    inits = {"two": np.array(2.0, np.float32), "eps": np.array(1e-12, np.float32), "g": g, "b": b}
    x = _f(1, 6, h) * 3 + 1
    kinds, y = _run(_model(nodes, [1, 6, h], inits), x)
    assert kinds == Counter({"WXNormalize": 1})
    xd = x.astype(np.float64)
    c = xd - xd.mean(-1, keepdims=True)
    want = c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-12) * g + b
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_torch_erf_gelu_is_one_gelu() -> None:
    nodes = [
        helper.make_node("Div", ["x", "r2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["p"]),
        helper.make_node("Mul", ["x", "p"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    inits = {
        "r2": np.array(math.sqrt(2), np.float32),
        "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32),
    }
    x = _f(3, 37) * 3
    kinds, y = _run(_model(nodes, [3, 37], inits), x)
    assert kinds == Counter({"XNNGelu": 1})
    xd = x.astype(np.float64)
    np.testing.assert_allclose(y, 0.5 * xd * (1 + _erf(xd / math.sqrt(2))), rtol=1e-5, atol=1e-5)


def test_bert_scaled_scores_fold_the_scale_and_the_k_transpose() -> None:
    s, h, nh = 7, 16, 4
    dh = h // nh
    wq, bq, wk, bk = _f(h, h), _f(h), _f(h, h), _f(h)
    shape = np.array([1, s, nh, dh], np.int64)
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q0"]),
        helper.make_node("Add", ["bq", "q0"], ["q1"]),
        helper.make_node("Reshape", ["q1", "shape"], ["q2"]),
        helper.make_node("Transpose", ["q2"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["x", "wk"], ["k0"]),
        helper.make_node("Add", ["bk", "k0"], ["k1"]),
        helper.make_node("Reshape", ["k1", "shape"], ["k2"]),
        helper.make_node("Transpose", ["k2"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", "sc"], ["y"]),
    ]
    inits = {
        "wq": wq,
        "bq": bq,
        "wk": wk,
        "bk": bk,
        "shape": shape,
        "sc": np.array(math.sqrt(dh), np.float32),
    }
    x = _f(1, s, h)
    kinds, y = _run(_model(nodes, [1, s, h], inits), x)
    assert kinds["XNNDiv"] == 0 and kinds["XNNBatchMatrixMultiply"] == 1 and kinds["XNNStaticTranspose"] == 2
    xd = x.astype(np.float64)
    q = (xd @ wq + bq).reshape(1, s, nh, dh).transpose(0, 2, 1, 3)
    k = (xd @ wk + bk).reshape(1, s, nh, dh).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, q @ k / math.sqrt(dh), rtol=1e-4, atol=1e-4)
