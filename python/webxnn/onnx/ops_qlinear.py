"""ONNX's integer linear algebra written as ops the importer already has.

- QLinearMatMul / QLinearConv are DequantizeLinear on each operand → MatMul / Conv → QuantizeLinear, which
  is what they mean; with constant weights and parameters the QDQ lowering (lower/qdq) then runs them on the
  int8 kernels, as it does quantize_static's QDQ models.
- MatMulInteger / ConvInteger (int32 results; WebNN has no integer matmul or conv) are exact integer sums
  computed in float32: an operand minus its zero point is an integer of magnitude <= 255, so a product is an
  integer <= 255 * 255, and a float32 sum of such integers is exact while every partial sum stays below 2**24,
  i.e. for reductions of up to 258 products. Longer reductions are cut into slices of that length, each cast
  to int32 and added there (exact). The DynamicQuantizeLinear chain of ops_dynquant is matched first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from .convert import Converter, attrs_of
from .registry import onnx_op
from .tensors import FLOAT, INT32

# products of two 8-bit values minus their zero points (|v| <= 255) summed exactly in float32
EXACT_TERMS = (1 << 24) // (255 * 255)  # 258
# Winograd convolution (3x3, stride 1) rounds in its transforms; the kernels use it from 16 input channels per
# group on (csrc/kernels/avx2/winograd.cc, winograd_applies), so an exact integer conv keeps its slices below
# that.
_DIRECT_CHANNELS = 15


class _Body:
    """ONNX nodes standing for `node`, with fresh value names under its first output's."""

    def __init__(self, ctx: Converter, node: Any) -> None:
        self.ctx, self.node = ctx, node
        self.nodes: list[Any] = []
        self.prefix = f"{node.output[0]}/{node.op_type}/"
        self.count = 0

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"{self.prefix}{hint}{self.count}"

    def add(self, op: str, inputs: list[str], out: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        out = out or self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def const(self, hint: str, value: Any) -> str:
        name = self.fresh(hint)
        self.ctx.set_const(name, np.asarray(value))
        return name

    def run(self) -> None:
        self.ctx.translate_as(self.node, self.nodes)


def _input(node: Any, i: int) -> str:
    return node.input[i] if len(node.input) > i else ""


@onnx_op("QLinearMatMul")
def qlinear_matmul(ctx: Converter, node: Any) -> None:
    b = _Body(ctx, node)
    a = b.add("DequantizeLinear", [_input(node, k) for k in (0, 1, 2)])
    w = b.add("DequantizeLinear", [_input(node, k) for k in (3, 4, 5)])
    y = b.add("MatMul", [a, w])
    b.add("QuantizeLinear", [y, _input(node, 6), _input(node, 7)], out=node.output[0])
    b.run()


@onnx_op("QLinearConv")
def qlinear_conv(ctx: Converter, node: Any) -> None:
    b = _Body(ctx, node)
    x = b.add("DequantizeLinear", [_input(node, k) for k in (0, 1, 2)])
    # per output channel weight parameters are 1-D along the filter's dim 0
    w = b.add("DequantizeLinear", [_input(node, k) for k in (3, 4, 5)], axis=0)
    ins = [x, w]
    if _input(node, 8):  # int32 bias, quantized with scale x_scale * w_scale and zero point 0
        bias_scale = b.add("Mul", [node.input[1], node.input[4]])
        ins.append(b.add("DequantizeLinear", [node.input[8], bias_scale], axis=0))
    y = b.add("Conv", ins, **attrs_of(node))
    b.add("QuantizeLinear", [y, _input(node, 6), _input(node, 7)], out=node.output[0])
    b.run()


def _centered(b: _Body, value: str, zero_point: str, zp_shape: list[int] | None) -> str:
    """float32(value) - float32(zero_point), the zero point reshaped to `zp_shape` first when given."""
    f = b.add("Cast", [value], to=FLOAT)
    if not zero_point:
        return f
    z = b.add("Cast", [zero_point], to=FLOAT)
    if zp_shape is not None:
        z = b.add("Reshape", [z, b.const("shape", np.array(zp_shape, np.int64))])
    return b.add("Sub", [f, z])


def _exact_sum(b: _Body, n: int, step: int, part: Callable[[int, int], str], out: str) -> None:
    """int32 sum over slices [s, s + step) of 0..n of the float products `part(s, e)` (each exact)."""
    acc = ""
    for s in range(0, n, step):
        p = b.add("Cast", [part(s, min(n, s + step))], to=INT32)
        acc = p if not acc else b.add("Add", [acc, p])
    b.add("Identity", [acc], out=out)


def _sliced(b: _Body, value: str, axis: int, s: int, e: int, n: int) -> str:
    if (s, e) == (0, n):
        return value
    arr = [b.const(k, np.array([v], np.int64)) for k, v in (("start", s), ("end", e), ("axis", axis))]
    return b.add("Slice", [value, *arr])


def _check_8bit(ctx: Converter, node: Any, *idx: int) -> None:
    for i in idx:
        dt = ctx.dtype(node.input[i])
        if dt not in ("int8", "uint8"):
            raise UnsupportedError(f"{node.op_type} of {dt} (int8/uint8 only)")


def exact_matmul_integer(ctx: Converter, node: Any) -> None:
    """MatMulInteger on any operands, exact (see the module docstring)."""
    _check_8bit(ctx, node, 0, 1)
    sa, sb = (
        ctx.static_shape(node.input[0], "MatMulInteger"),
        ctx.static_shape(node.input[1], "MatMulInteger"),
    )
    b = _Body(ctx, node)
    za = _input(node, 2)
    # A's zero point is per tensor or, 1-D of A's row count, per row
    za_shape = [-1, 1] if za and len(ctx.shape(za)) == 1 and len(sa) >= 2 and ctx.shape(za)[0] != 1 else None
    a = _centered(b, node.input[0], za, za_shape)
    w = _centered(b, node.input[1], _input(node, 3), None)  # per column broadcasts as it is
    k = sa[-1]
    rb = len(sb)
    _exact_sum(
        b,
        k,
        EXACT_TERMS,
        lambda s, e: b.add("MatMul", [_sliced(b, a, -1, s, e, k), _sliced(b, w, max(rb - 2, 0), s, e, k)]),
        node.output[0],
    )
    b.run()


@onnx_op("ConvInteger")
def conv_integer(ctx: Converter, node: Any) -> None:
    _check_8bit(ctx, node, 0, 1)
    ws = ctx.static_shape(node.input[1], "ConvInteger")
    a = attrs_of(node)
    taps = int(np.prod(ws[2:]))
    if int(a.get("group", 1)) != 1 and ws[1] * taps > EXACT_TERMS:
        raise UnsupportedError(f"grouped ConvInteger summing {ws[1] * taps} > {EXACT_TERMS} products a group")
    if taps > EXACT_TERMS:
        raise UnsupportedError(f"ConvInteger with a {ws[2:]} kernel (over {EXACT_TERMS} taps a channel)")
    b = _Body(ctx, node)
    x = _centered(b, node.input[0], _input(node, 2), None)
    zw = _input(node, 3)
    zw_shape = [-1] + [1] * (len(ws) - 1) if zw and len(ctx.shape(zw)) == 1 else None
    w = _centered(b, node.input[1], zw, zw_shape)
    c = ws[1]
    step = c if int(a.get("group", 1)) != 1 else max(1, min(_DIRECT_CHANNELS, EXACT_TERMS // taps))
    _exact_sum(
        b,
        c,
        step,
        lambda s, e: b.add("Conv", [_sliced(b, x, 1, s, e, c), _sliced(b, w, 1, s, e, c)], **a),
        node.output[0],
    )
    b.run()
