"""The reference interpreter's quantized nodes (qint8 activations, qcint8 / qint8 filters, qcint32 / qint32
biases), written straightforwardly in numpy: integer arithmetic where XNNPACK's is exact (accumulators,
max, data movement), then a float requantization rounding half to even and saturating to [-128, 127].

A node's fused output range (output_min_max, real units) is applied in the int8 domain like the runtime
does: lo = sat(round(min / scale) + zero_point), hi likewise. Semantics: tools/INT8_CONTRACT.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .ir import INVALID_ID, Node, PerChannelQuant, PerTensorQuant, Value

Get = Callable[[int], np.ndarray]


def _pt(v: Value) -> tuple[float, int]:
    """(scale, zero point) of a per-tensor quantized value."""
    q = v.quant
    if not isinstance(q, PerTensorQuant):
        raise NotImplementedError(f"reference interpreter: value {v.id} needs per-tensor parameters")
    return float(np.float32(q.scale)), int(q.zero_point)


def _scales(v: Value, n: int) -> np.ndarray:
    """A filter's scales as a vector over its `n` output channels."""
    q = v.quant
    if isinstance(q, PerChannelQuant):
        return np.asarray(q.scale, np.float32)
    return np.full(n, np.float32(_pt(v)[0]))


def real(v: Value, q: np.ndarray) -> np.ndarray:
    """The real numbers int8 data stands for."""
    s, z = _pt(v)
    return (q.astype(np.float64) - z) * s


def quantize(v: Value, x: np.ndarray) -> np.ndarray:
    """fp32 → qint8 into per-tensor quantized value `v`, as XNNConvert."""
    return quantize_per_tensor(x, *_pt(v))


def quantize_per_tensor(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """fp32 → int8 as XNNConvert: x / scale in float32, rounded half to even, plus the zero point,
    saturated (the lowering's constant folding uses it too, so it decides as the runtime does)."""
    return _sat(np.rint(np.asarray(x, np.float32) / np.float32(scale)).astype(np.float64) + zero_point)


def _sat(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -128, 127).astype(np.int8)


def _bounds(n: Node, out: Value) -> tuple[int, int]:
    if n.output_min_max is None:
        return -128, 127
    s, z = _pt(out)

    def bound(r: float) -> int:
        if np.isinf(r):
            return -128 if r < 0 else 127
        return int(min(127.0, max(-128.0, np.rint(r / s) + z)))

    return bound(n.output_min_max[0]), bound(n.output_min_max[1])


def _finish(n: Node, out: Value, scaled: np.ndarray) -> np.ndarray:
    """Round a result already in output-scale units, add the zero point, clamp to the node's range."""
    lo, hi = _bounds(n, out)
    return np.clip(np.rint(scaled) + _pt(out)[1], lo, hi).astype(np.int8)


def _bias(f: dict[str, Any], get: Get) -> np.ndarray | None:
    i = f.get("bias_id", INVALID_ID)
    return None if i == INVALID_ID else get(i).astype(np.int64)


def _gemm_like(n: Node, get: Get, val: Callable[[int], Value], acc: np.ndarray, w_id: int) -> np.ndarray:
    """Requantize int32 accumulators [..., O] with in_scale * w_scale[o] / out_scale (float32)."""
    f = n.fields
    b = _bias(f, get)
    if b is not None:
        acc = acc + b
    x, out = val(f["input1_id"]), val(f["output_id"])
    mult = np.float32(_pt(x)[0]) * _scales(val(w_id), acc.shape[-1]) / np.float32(_pt(out)[0])
    return _finish(n, out, acc.astype(np.float32) * mult.astype(np.float32))


def _conv(n: Node, get: Get, val: Callable[[int], Value], conv: Callable[..., np.ndarray]) -> np.ndarray:
    f = n.fields
    x, w = get(f["input1_id"]), get(f["filter_id"])
    xc = x.astype(np.int64) - _pt(val(f["input1_id"]))[1]
    # padding holds the zero point, i.e. zero after the shift; float64 sums of int products are exact here
    acc = np.rint(conv(xc, w.astype(np.int64), None, f, n.kind == "XNNDepthwiseConv2d")).astype(np.int64)
    return _gemm_like(n, get, val, acc, f["filter_id"])


def _fully_connected(n: Node, get: Get, val: Callable[[int], Value]) -> np.ndarray:
    f = n.fields
    x = get(f["input1_id"]).astype(np.int64) - _pt(val(f["input1_id"]))[1]
    w = get(f["filter_id"]).astype(np.int64)
    acc = x @ (w if f.get("flags", 0) & 1 else w.T)
    return _gemm_like(n, get, val, acc, f["filter_id"])


def _avg(n: Node, get: Get, val: Callable[[int], Value], pool: Callable[..., np.ndarray]) -> np.ndarray:
    f = n.fields
    xv, out = val(f["input_id"]), val(f["output_id"])
    xc = get(f["input_id"]).astype(np.float64) - _pt(xv)[1]
    mean = xc.mean(axis=(1, 2), keepdims=True) if n.kind == "XNNGlobalAvgPooling2d" else pool(xc, f, "avg")
    return _finish(n, out, mean * (_pt(xv)[0] / _pt(out)[0]))


def _binary(n: Node, get: Get, val: Callable[[int], Value]) -> np.ndarray:
    f = n.fields
    a, b = (real(val(f[k]), get(f[k])) for k in ("input1_id", "input2_id"))
    out = val(f["output_id"])
    y = a + b if n.kind == "XNNAdd" else a * b
    return _finish(n, out, y / _pt(out)[0])


def _table(
    n: Node, get: Get, val: Callable[[int], Value], fn: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """A unary op by its 256-entry table: every int8 input's real value through `fn`, requantized."""
    f = n.fields
    xv, out = val(f["input_id"]), val(f["output_id"])
    codes = np.arange(-128, 128)
    table = _finish(n, out, fn(real(xv, codes)) / _pt(out)[0])
    return table[get(f["input_id"]).astype(np.int64) + 128]


def convert(src: Value, dst: Value, x: np.ndarray) -> np.ndarray:
    """XNNConvert with a quantized side: fp32 → qint8, qint8 → fp32, qint8 → qint8 (requantize)."""
    if src.quant is None:
        return quantize(dst, x)
    if dst.quant is None:
        return real(src, x).astype(np.float32)
    return _sat(np.rint(real(src, x) / _pt(dst)[0]) + _pt(dst)[1])


# nodes that only move int8 values around (same parameters in and out): the float interpreter runs them
MOVEMENT = frozenset(
    ["XNNStaticTranspose", "XNNStaticReshape", "XNNStaticSlice", "XNNCopy"]
    + [f"XNNConcatenate{k}" for k in range(2, 6)]
)


def run_node(
    n: Node,
    get: Get,
    val: Callable[[int], Value],
    helpers: dict[str, Callable[..., Any]],
) -> np.ndarray | None:
    """One node with quantized inputs or output; None for the data-movement nodes the float interpreter
    runs unchanged on the integers. `helpers` are the float interpreter's conv, pool and unary functions."""
    k, f = n.kind, n.fields
    if k in MOVEMENT:
        return None
    if k == "XNNConvert":
        return convert(val(f["input_id"]), val(f["output_id"]), get(f["input_id"]))
    if k in ("XNNConv2d", "XNNDepthwiseConv2d"):
        return _conv(n, get, val, helpers["conv"])
    if k == "XNNFullyConnected":
        return _fully_connected(n, get, val)
    if k in ("XNNAdd", "XNNMultiply"):
        return _binary(n, get, val)
    if k in ("XNNAvgPooling2d", "XNNGlobalAvgPooling2d"):
        return _avg(n, get, val, helpers["pool"])
    if k in ("XNNMaxPooling2d", "XNNClamp"):
        x = get(f["input_id"])
        y = helpers["pool"](x.astype(np.float64), f, "max") if k == "XNNMaxPooling2d" else x
        lo, hi = _bounds(n, val(f["output_id"]))
        return np.clip(y, lo, hi).astype(np.int8)
    if k == "XNNStaticConstantPad":
        x, out = get(f["input_id"]), val(f["output_id"])
        pad = quantize(out, np.array(f["padding_value"]))
        return np.pad(x, list(zip(f["pre_paddings"], f["post_paddings"])), constant_values=pad)
    if k == "XNNStaticResizeBilinear2D":
        return _sat(np.rint(helpers["resize"](get(f["input_id"]), f)))
    if k == "XNNLeakyReLU":
        return _table(n, get, val, lambda r: np.where(r >= 0, r, r * f["negative_slope"]))
    if k == "XNNELU":
        return _table(n, get, val, lambda r: np.where(r >= 0, r, f["alpha"] * np.expm1(np.minimum(r, 0))))
    unary: Any = helpers["unary"]  # the float reference's unary functions, by node kind
    if k in unary and k not in ("XNNCopy", "XNNClamp"):
        return _table(n, get, val, unary[k])
    raise NotImplementedError(f"reference interpreter: no quantized {k}")
