"""Dynamic int8 through ONNX: models quantized with onnxruntime's `quantize_dynamic` (DynamicQuantizeLinear +
MatMulInteger + Cast + Mul) and the com.microsoft forms (MatMulIntegerToFloat, DynamicQuantizeMatMul) become
`dynamicQuantizedMatmul` -> XNNConvert fp32 -> qdint8 + XNNFullyConnected qcint8, and agree with onnxruntime
on the same file (webxnn quantizes per row, onnxruntime per tensor: webxnn is the closer of the two to fp32).
Chains that do not match are refused, never approximated."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

import webxnn  # noqa: E402
from test_onnx_patterns import _model as _onnx_model  # noqa: E402
from test_qdq_lowering import _cosine  # noqa: E402
from webxnn.compiler import compile_graph  # noqa: E402
from webxnn.errors import UnsupportedError  # noqa: E402


def _model(
    nodes: list[Any], x_shape: list[int], inits: dict[str, np.ndarray], opset: int = 17, ms: bool = False
) -> Any:
    return _onnx_model(nodes, x_shape, inits, opset, ms)  # opset 17: DynamicQuantizeLinear's era


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)


def _quantize(
    tmp_path: Path, m: Any, per_channel: bool, weight_type: str = "QInt8", reduce_range: bool = False
) -> Any:
    src, dst = tmp_path / "fp32.onnx", tmp_path / f"q_{per_channel}_{weight_type}_{reduce_range}.onnx"
    onnx.save(m, src)
    quantization.quantize_dynamic(
        src,
        dst,
        per_channel=per_channel,
        weight_type=getattr(quantization.QuantType, weight_type),
        reduce_range=reduce_range,
    )
    return onnx.load(dst)


def _ort(m: Any, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _webxnn(m: Any, x: np.ndarray, threads: int = 1) -> tuple[Counter, np.ndarray]:
    graph = webxnn.from_onnx(m)
    kinds = Counter(n.kind for n in compile_graph(graph).nodes)
    y = next(iter(webxnn.load(webxnn.compile(graph), threads=threads).run({"x": x}).values()))
    return kinds, y


def _exact(m: Any, x: np.ndarray) -> np.ndarray:
    """ONNX's own semantics of the quantized file (onnx.reference: per-tensor DynamicQuantizeLinear, exact
    int32 MatMulInteger)."""
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(m).run(None, {"x": x})[0]


def _check(got: np.ndarray, ref: np.ndarray, ref_fp32: np.ndarray) -> None:
    """Within 2 % of the reference's output range, cosine >= 0.999, and about as close to fp32 as the
    reference (per-row activation scales instead of per-tensor ones: usually closer)."""
    assert got.shape == ref.shape
    assert _cosine(got, ref) >= 0.999
    assert np.max(np.abs(got - ref)) <= 0.02 * float(np.ptp(ref))
    err_w, err_r = (float(np.sqrt(np.mean((r - ref_fp32) ** 2))) for r in (got, ref))
    assert err_w <= 1.25 * err_r + 1e-6


def _check_file(q: Any, m: Any, x: np.ndarray, got: np.ndarray, reduce_range: bool) -> None:
    """Against onnxruntime on the same file when its weights are 7-bit (reduce_range), else against ONNX's
    exact semantics (onnx.reference) and onnxruntime loosely: onnxruntime's AVX2 int8 kernel lets
    vpmaddubsw's int16 pair sums saturate on full 8-bit weights, so on an AVX2-only machine its own output
    strays from the exact one (cosine 0.99 seen on these small models)."""
    fp32 = _ort(m, x)
    if reduce_range:
        _check(got, _ort(q, x), fp32)
    else:
        _check(got, _exact(q, x), fp32)
        assert _cosine(got, _ort(q, x)) >= 0.98


def _dynamic_nodes(kinds: Counter, n: int) -> None:
    assert kinds["XNNFullyConnected"] == n and kinds["XNNConvert"] >= 1


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_matmul_with_constant_weights(
    tmp_path: Path, per_channel: bool, weight_type: str, reduce_range: bool
) -> None:
    rng = np.random.default_rng(0)
    m = _model(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        [2, 7, 48],
        {"W": _w(rng, 48, 40), "b": rng.standard_normal(40).astype(np.float32)},
    )
    q = _quantize(tmp_path, m, per_channel, weight_type, reduce_range)
    x = rng.standard_normal((2, 7, 48)).astype(np.float32)
    kinds, got = _webxnn(q, x)
    if weight_type == "QInt8":
        _dynamic_nodes(kinds, 1)
    # (uint8 weights spread over 0..255 are not int8 after their zero point: fp32 on the dequantized weights)
    _check_file(q, m, x, got, reduce_range)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_two_layer_mlp(tmp_path: Path, threads: int, reduce_range: bool) -> None:
    rng = np.random.default_rng(1)
    m = _model(
        [
            helper.make_node("MatMul", ["x", "W1"], ["h1"]),
            helper.make_node("Add", ["h1", "b1"], ["h2"]),
            helper.make_node("Relu", ["h2"], ["h3"]),
            helper.make_node("MatMul", ["h3", "W2"], ["h4"]),
            helper.make_node("Add", ["h4", "b2"], ["y"]),
        ],
        [5, 33],
        {"W1": _w(rng, 33, 64), "b1": 0.1 * _w(rng, 64), "W2": _w(rng, 64, 10), "b2": 0.1 * _w(rng, 10)},
    )
    q = _quantize(tmp_path, m, per_channel=True, reduce_range=reduce_range)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((5, 33)).astype(np.float32)
        kinds, got = _webxnn(q, x, threads)
        _dynamic_nodes(kinds, 2)
        _check_file(q, m, x, got, reduce_range)


def _attention(rng: np.random.Generator, seq: int = 12, hidden: int = 32, heads: int = 4) -> Any:
    dh = hidden // heads
    nodes, inits = (
        [],
        {"shape_h": np.array([1, seq, heads, dh], np.int64), "shape_o": np.array([1, seq, hidden])},
    )
    for p in "qkvo":
        inits[f"W{p}"] = _w(rng, hidden, hidden)
        inits[f"b{p}"] = 0.1 * _w(rng, hidden)
    for p in "qkv":
        nodes += [
            helper.make_node("MatMul", ["x", f"W{p}"], [f"{p}0"]),
            helper.make_node("Add", [f"{p}0", f"b{p}"], [f"{p}1"]),
            helper.make_node("Reshape", [f"{p}1", "shape_h"], [f"{p}2"]),
            helper.make_node("Transpose", [f"{p}2"], [f"{p}3"], perm=[0, 2, 1, 3]),
        ]
    inits["scale"] = np.array(1 / math.sqrt(dh), np.float32)
    nodes += [
        helper.make_node("Transpose", ["k3"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q3", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s1"]),
        helper.make_node("Softmax", ["s1"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v3"], ["c0"]),
        helper.make_node("Transpose", ["c0"], ["c1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["c1", "shape_o"], ["c2"]),
        helper.make_node("MatMul", ["c2", "Wo"], ["o0"]),
        helper.make_node("Add", ["o0", "bo"], ["o1"]),
        helper.make_node("Add", ["o1", "x"], ["y"]),
    ]
    inits["shape_o"] = inits["shape_o"].astype(np.int64)
    return _model(nodes, [1, seq, hidden], inits)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_tiny_attention_block(tmp_path: Path, per_channel: bool, reduce_range: bool) -> None:
    rng = np.random.default_rng(2)
    m = _attention(rng)
    q = _quantize(tmp_path, m, per_channel, reduce_range=reduce_range)
    for seed in range(3):
        x = np.random.default_rng(10 + seed).standard_normal((1, 12, 32)).astype(np.float32)
        kinds, got = _webxnn(q, x)
        _dynamic_nodes(kinds, 4)  # Q, K, V and the output projection; QKᵀ and PV stay fp32
        _check_file(q, m, x, got, reduce_range)


def _contrib(op: str, rng: np.random.Generator) -> tuple[Any, Any]:
    """A com.microsoft model and its fp32 twin: y = x @ dequant(W) + b."""
    w = rng.integers(-64, 65, (24, 16)).astype(np.int8)  # 7-bit: onnxruntime's AVX2 kernel is exact
    ws = rng.uniform(0.005, 0.02, 16).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    inits = {"W": w, "Ws": ws, "Wz": np.zeros(16, np.int8), "b": b}
    if op == "DynamicQuantizeMatMul":
        nodes = [helper.make_node(op, ["x", "W", "Ws", "Wz", "b"], ["y"], domain="com.microsoft")]
    else:
        nodes = [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
            helper.make_node(op, ["xq", "W", "xs", "Ws", "xz", "Wz", "b"], ["y"], domain="com.microsoft"),
        ]
    fp32 = _model(
        [helper.make_node("MatMul", ["x", "Wf"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        [3, 24],
        {"Wf": w.astype(np.float32) * ws, "b": b},
    )
    return _model(nodes, [3, 24], inits, ms=True), fp32


@pytest.mark.parametrize("op", ["DynamicQuantizeMatMul", "MatMulIntegerToFloat"])
def test_contrib_ops(op: str) -> None:
    m, fp32 = _contrib(op, np.random.default_rng(3))
    x = np.random.default_rng(4).standard_normal((3, 24)).astype(np.float32)
    kinds, got = _webxnn(m, x)
    _dynamic_nodes(kinds, 1)
    _check(got, _ort(m, x), _ort(fp32, x))


def test_non_constant_weights_are_refused() -> None:
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["wq", "ws", "wz"]),
        helper.make_node("MatMulInteger", ["xq", "wq", "xz", "wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["y"], to=TP.FLOAT),
    ]
    with pytest.raises(UnsupportedError, match="MatMulInteger"):
        webxnn.from_onnx(_model(nodes, [4, 4], {}))


def test_other_readers_of_the_quantized_values_get_onnx_semantics() -> None:
    """DynamicQuantizeLinear's outputs read outside the chain: its ONNX function body (per tensor, exact),
    while the matched chain beside it still becomes one dynamic linear layer."""
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("Cast", ["xq"], ["xqf"], to=TP.FLOAT),
        helper.make_node("MatMulInteger", ["xq", "W", "xz", "Wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TP.FLOAT),
        helper.make_node("Mul", ["xs", "Ws"], ["s"]),
        helper.make_node("Mul", ["accf", "s"], ["h"]),
        helper.make_node("ReduceSum", ["h", "axes"], ["hs"], keepdims=1),
        helper.make_node("Add", ["xqf", "hs"], ["y"]),
    ]
    rng = np.random.default_rng(7)
    inits = {
        "W": rng.integers(-127, 128, (6, 5)).astype(np.int8),
        "Wz": np.array(0, np.int8),
        "Ws": np.array(0.02, np.float32),
        "axes": np.array([1], np.int64),
    }
    m = _model(nodes, [3, 6], inits, opset=13)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    kinds, got = _webxnn(m, x)
    assert kinds["XNNFullyConnected"] == 1
    ref = _ort(m, x)
    np.testing.assert_allclose(got, ref, atol=0.05 * float(np.ptp(ref)))


def test_int32_result_read_elsewhere_is_refused() -> None:
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "W", "xz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TP.FLOAT),
        helper.make_node("Relu", ["accf"], ["y"]),
    ]
    m = _model(nodes, [2, 4], {"W": np.ones((4, 3), np.int8)})
    with pytest.raises(UnsupportedError, match="int32 result"):
        webxnn.from_onnx(m)


def test_uint8_weights_that_do_not_shift_into_int8_run_in_fp32() -> None:
    """W - zp outside int8 has no exact int8 form: an fp32 matmul on the dequantized weights."""
    w = np.arange(32, dtype=np.uint8).reshape(8, 4) * 8  # 0 .. 248, zero point 0
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "W", "xz", "Wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TP.FLOAT),
        helper.make_node("Mul", ["xs", "Ws"], ["s"]),
        helper.make_node("Mul", ["accf", "s"], ["y"]),
    ]
    m = _model(nodes, [2, 8], {"W": w, "Wz": np.array(0, np.uint8), "Ws": np.array(0.01, np.float32)})
    x = np.random.default_rng(6).standard_normal((2, 8)).astype(np.float32)
    kinds, got = _webxnn(m, x)
    assert kinds["XNNConvert"] == 0
    np.testing.assert_allclose(got, x @ (w.astype(np.float32) * 0.01), rtol=1e-5, atol=1e-5)
    assert _cosine(got, _ort(m, x)) >= 0.999


def test_scale_product_read_after_its_scale_was_materialized() -> None:
    """Regression: a scale product read outside the chain after its DynamicQuantizeLinear already has graph
    values (an earlier reader materialized them) converts too (it raised UnboundLocalError)."""
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("Mul", ["xs", "Ws"], ["s"]),
        helper.make_node("Add", ["xs", "s"], ["y"]),
    ]
    m = _model(nodes, [2, 4], {"Ws": np.array(0.5, np.float32)})
    x = np.random.default_rng(8).standard_normal((2, 4)).astype(np.float32)
    _, got = _webxnn(m, x)
    np.testing.assert_allclose(got, _exact(m, x), rtol=1e-6)
