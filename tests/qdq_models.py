"""Small ONNX models and their `quantize_static` QDQ versions, for the int8 lowering tests.

Each builder returns an fp32 ModelProto with one input "x" (NCHW, float32) and one output "y"; `qdq` runs
onnxruntime's static quantizer on it with a tiny seeded calibration set."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

onnx = __import__("pytest").importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

_RNG_SEED = 7


class _Reader:
    """A CalibrationDataReader over a fixed list of inputs."""

    def __init__(self, samples: list[np.ndarray]) -> None:
        self.it = iter([{"x": s} for s in samples])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.it, None)

    def rewind(self) -> None:  # older quantizers never call it; newer ones may
        pass


def calibration(shape: tuple[int, ...], n: int = 8, seed: int = _RNG_SEED) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def qdq(
    model: Any,
    path: Path,
    shape: tuple[int, ...],
    *,
    per_channel: bool = True,
    activation: str = "QUInt8",
    symmetric: bool = False,
    weights: str = "QInt8",
    extra: dict[str, Any] | None = None,
) -> Path:
    """`model` quantized by onnxruntime.quantization.quantize_static (QDQ format) into `path`."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    fp32 = path.with_suffix(".fp32.onnx")
    onnx.save(model, fp32)
    quantize_static(
        str(fp32),
        str(path),
        _Reader(calibration(shape)),
        quant_format=QuantFormat.QDQ,
        per_channel=per_channel,
        activation_type=getattr(QuantType, activation),
        weight_type=getattr(QuantType, weights),
        extra_options={"ActivationSymmetric": symmetric, **(extra or {})},
    )
    return path


def _w(rng: np.random.Generator, name: str, *shape: int, scale: float = 0.3) -> Any:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _model(nodes: list[Any], inits: list[Any], in_shape: tuple[int, ...], out_shape: list[Any]) -> Any:
    g = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _conv(
    rng: np.random.Generator,
    name: str,
    x: str,
    cin: int,
    cout: int,
    k: int = 3,
    group: int = 1,
    stride: int = 1,
) -> tuple[Any, list[Any]]:
    w, b = _w(rng, f"{name}.w", cout, cin // group, k, k), _w(rng, f"{name}.b", cout, scale=0.1)
    node = helper.make_node(
        "Conv", [x, w.name, b.name], [name], group=group, pads=[k // 2] * 4, strides=[stride, stride]
    )
    return node, [w, b]


IN = (1, 8, 10, 10)


def conv_relu() -> Any:
    rng = np.random.default_rng(1)
    c1, i1 = _conv(rng, "c1", "x", 8, 16)
    return _model([c1, helper.make_node("Relu", ["c1"], ["y"])], i1, IN, [1, 16, 10, 10])


def _one_conv(seed: int, group: int, stride: int) -> Any:
    c1, i1 = _conv(np.random.default_rng(seed), "y", "x", 8, 12, group=group, stride=stride)
    return _model([c1], i1, IN, [1, 12, 10 // stride, 10 // stride])


def conv_plain() -> Any:
    return _one_conv(2, group=1, stride=2)


def depthwise() -> Any:
    rng = np.random.default_rng(3)
    c1, i1 = _conv(rng, "c1", "x", 8, 8, group=8)
    c2, i2 = _conv(rng, "c2", "c1r", 8, 16, k=1)
    return _model(
        [
            c1,
            helper.make_node("Clip", ["c1", "lo", "hi"], ["c1r"]),
            c2,
            helper.make_node("Relu", ["c2"], ["y"]),
        ],
        i1
        + i2
        + [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")],
        IN,
        [1, 16, 10, 10],
    )


def grouped() -> Any:
    return _one_conv(4, group=2, stride=1)


def residual() -> Any:
    rng = np.random.default_rng(5)
    c1, i1 = _conv(rng, "c1", "x", 8, 8)
    c2, i2 = _conv(rng, "c2", "c1r", 8, 8)
    return _model(
        [
            c1,
            helper.make_node("Relu", ["c1"], ["c1r"]),
            c2,
            helper.make_node("Add", ["c2", "x"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        i1 + i2,
        IN,
        [1, 8, 10, 10],
    )


def pools_gemm() -> Any:
    """conv → maxpool → conv → global average pool → flatten → gemm."""
    rng = np.random.default_rng(6)
    c1, i1 = _conv(rng, "c1", "x", 8, 16)
    c2, i2 = _conv(rng, "c2", "p1", 16, 16)
    fw, fb = _w(rng, "fc.w", 10, 16), _w(rng, "fc.b", 10, scale=0.1)
    nodes = [
        c1,
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        c2,
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], transB=1),
    ]
    return _model(nodes, i1 + i2 + [fw, fb], IN, [1, 10])


def concat_reshape() -> Any:
    rng = np.random.default_rng(7)
    c1, i1 = _conv(rng, "c1", "x", 8, 8, k=1)
    c2, i2 = _conv(rng, "c2", "x", 8, 8)
    shape = numpy_helper.from_array(np.array([1, 16, 100], np.int64), "shape")
    nodes = [
        c1,
        c2,
        helper.make_node("Concat", ["c1", "c2"], ["cat"], axis=1),
        helper.make_node("Reshape", ["cat", "shape"], ["y"]),
    ]
    return _model(nodes, i1 + i2 + [shape], IN, [1, 16, 100])


def activations_softmax() -> Any:
    """conv → sigmoid → conv → hardswish → GAP → flatten → gemm → softmax (softmax stays fp32)."""
    rng = np.random.default_rng(8)
    c1, i1 = _conv(rng, "c1", "x", 8, 8)
    c2, i2 = _conv(rng, "c2", "s1", 8, 8, k=1)
    fw, fb = _w(rng, "fc.w", 10, 8), _w(rng, "fc.b", 10, scale=0.1)
    nodes = [
        c1,
        helper.make_node("Sigmoid", ["c1"], ["s1"]),
        c2,
        helper.make_node("HardSwish", ["c2"], ["h2"]),
        helper.make_node("GlobalAveragePool", ["h2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["z"], transB=1),
        helper.make_node("Softmax", ["z"], ["y"], axis=1),
    ]
    return _model(nodes, i1 + i2 + [fw, fb], IN, [1, 10])


def movement() -> Any:
    """conv → average pool → resize (linear ×2) → slice → pad → conv → transpose. (The pool has no padding:
    a padded window's mean of 4 or 6 values often ends in exactly .5 steps, where the QDQ graph's float32
    arithmetic lands on either side of the tie and int8 arithmetic rounds it to even.)"""
    rng = np.random.default_rng(9)
    c1, i1 = _conv(rng, "c1", "x", 8, 8)
    c2, i2 = _conv(rng, "c2", "pd", 8, 8)
    consts = [
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        numpy_helper.from_array(np.array([1, 1], np.int64), "starts"),
        numpy_helper.from_array(np.array([15, 13], np.int64), "ends"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
        numpy_helper.from_array(np.array([0, 0, 1, 2, 0, 0, 0, 1], np.int64), "pads"),
    ]
    nodes = [
        c1,
        helper.make_node("AveragePool", ["c1"], ["ap"], kernel_shape=[3, 3]),
        helper.make_node("Resize", ["ap", "", "scales"], ["rs"], mode="linear"),
        helper.make_node("Slice", ["rs", "starts", "ends", "axes"], ["sl"]),
        helper.make_node("Pad", ["sl", "pads"], ["pd"]),
        c2,
        helper.make_node("Transpose", ["c2"], ["y"], perm=[0, 2, 3, 1]),
    ]
    return _model(nodes, i1 + i2 + consts, IN, [1, 15, 15, 8])


MODELS: dict[str, Callable[[], Any]] = {
    "conv_relu": conv_relu,
    "conv_plain": conv_plain,
    "depthwise": depthwise,
    "grouped": grouped,
    "residual": residual,
    "pools_gemm": pools_gemm,
    "concat_reshape": concat_reshape,
    "activations_softmax": activations_softmax,
    "movement": movement,
}
