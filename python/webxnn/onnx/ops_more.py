"""Smaller ONNX ops WebNN has no op for, each a short exact composition: CumProd (a log-step product scan),
Det of 2x2 and 3x3 matrices (cofactors), MaxUnpool with constant indices (a gather with a constant mask), and
ai.onnx.ml's Binarizer and ArrayFeatureExtractor."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from .convert import Converter, attrs_of, where
from .ops_decomposed import scalar
from .ops_shape import norm_axis
from .registry import contrib_op, onnx_op


@onnx_op("CumProd")
def cumprod(ctx: Converter, node: Any) -> None:
    """y_i = x_0 * ... * x_i in ceil(log2 n) steps: y *= y shifted by 1, 2, 4, ... along the axis (shifted in
    ones); exclusive shifts the input by one first, reverse gathers the axis backwards before and after."""
    a = attrs_of(node)
    shape = list(ctx.static_shape(node.input[0], "CumProd"))
    axis = norm_axis(int(ctx.const_scalar(node, 1, "axis")), len(shape))
    n = shape[axis]
    x = ctx.x(node, 0)
    name = ctx.namer.of(node.output[0])
    back = ctx.new_const(f"{name}/reversed", np.arange(n - 1, -1, -1, dtype=np.int32))
    reverse = bool(int(a.get("reverse", 0)))
    if reverse:
        x = ctx.emit("gather", [x, back], {"axis": axis})

    def shifted(v: str, s: int) -> str:
        if s >= n:
            return ctx.emit("mul", [v, scalar(ctx, 0, v, "zero")])  # all shifted out: ones after the add
        sizes = list(shape)
        sizes[axis] = n - s
        p = ctx.emit("slice", [v], {"starts": [0] * len(shape), "sizes": sizes})
        begin = [0] * len(shape)
        begin[axis] = s
        return ctx.emit(
            "pad", [p], {"beginningPadding": begin, "endingPadding": [0] * len(shape), "value": 1.0}
        )

    if int(a.get("exclusive", 0)):
        x = shifted(x, 1) if n > 1 else ctx.emit("add", [shifted(x, 1), scalar(ctx, 1, x, "one")])
    s = 1
    while s < n:
        x = ctx.emit("mul", [x, shifted(x, s)])
        s *= 2
    if reverse:
        x = ctx.emit("gather", [x, back], {"axis": axis})
    ctx.emit("identity", [x], out=node.output[0])


def _entry(ctx: Converter, x: str, shape: list[int], i: int, j: int) -> str:
    lead = shape[:-2]
    starts = [0] * len(lead) + [i, j]
    e = ctx.emit("slice", [x], {"starts": starts, "sizes": [*lead, 1, 1]})
    return ctx.emit("reshape", [e], {"newShape": lead})


@onnx_op("Det")
def det(ctx: Converter, node: Any) -> None:
    """Determinants of 2x2 and 3x3 matrices by cofactors (a pivoting LU has no static WebNN form)."""
    x = ctx.x(node, 0)
    shape = list(ctx.static_shape(node.input[0], "Det"))
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] not in (1, 2, 3):
        raise UnsupportedError(f"Det of {shape} (square matrices up to 3x3)")
    k = shape[-1]
    m = [[_entry(ctx, x, shape, i, j) for j in range(k)] for i in range(k)]
    e = ctx.emit
    if k == 1:
        e("identity", [m[0][0]], out=node.output[0])
        return

    def det2(a: str, b: str, c: str, d: str) -> str:
        return e("sub", [e("mul", [a, d]), e("mul", [b, c])])

    if k == 2:
        e("identity", [det2(m[0][0], m[0][1], m[1][0], m[1][1])], out=node.output[0])
        return
    c0 = e("mul", [m[0][0], det2(m[1][1], m[1][2], m[2][1], m[2][2])])
    c1 = e("mul", [m[0][1], det2(m[1][0], m[1][2], m[2][0], m[2][2])])
    c2 = e("mul", [m[0][2], det2(m[1][0], m[1][1], m[2][0], m[2][1])])
    e("add", [e("sub", [c0, c1]), c2], out=node.output[0])


@onnx_op("MaxUnpool")
def max_unpool(ctx: Converter, node: Any) -> None:
    """Constant indices (MaxPool's second output frozen in the model), flat over the tensor of the shape
    the pooling came from: each element there reads the input element whose index names it, or is 0; a
    larger output_shape pads that at the end (ONNX)."""
    x = ctx.x(node, 0)
    idx = np.asarray(ctx.const_input(node, 1, "indices")).astype(np.int64)
    xs = list(ctx.static_shape(node.input[0], "MaxUnpool"))
    a = attrs_of(node)
    kernel = [int(v) for v in a["kernel_shape"]]
    r = len(kernel)
    strides = [int(v) for v in a.get("strides", [1] * r)]
    pads = [int(v) for v in a.get("pads", [0] * 2 * r)]
    full = xs[:2] + [(xs[2 + d] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + r] for d in range(r)]
    out = ctx.const_ints(node, 2, "output_shape") if ctx.has(node, 2) else full
    if list(idx.shape) != xs or len(out) != len(xs) or any(o < f for o, f in zip(out, full)):
        raise ValidationError(f"{where(node)}: indices {list(idx.shape)} / output {out} do not fit X {xs}")
    n_full = math.prod(full)
    flat = idx.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= n_full):
        raise ValidationError(f"{where(node)}: an index is outside the unpooled tensor {full}")
    src = np.zeros(n_full, np.int32)
    hit = np.zeros(n_full, np.uint8)
    src[flat], hit[flat] = np.arange(flat.size), 1
    name = ctx.namer.of(node.output[0])
    g = ctx.emit(
        "gather", [ctx.emit("reshape", [x], {"newShape": [flat.size]}), ctx.new_const(f"{name}/src", src)]
    )
    y = ctx.emit("where", [ctx.new_const(f"{name}/hit", hit), g, scalar(ctx, 0.0, x, "zero")])
    if out == full:
        ctx.emit("reshape", [y], {"newShape": out}, out=node.output[0])
        return
    y = ctx.emit("reshape", [y], {"newShape": full})
    ending = [o - f for o, f in zip(out, full)]
    ctx.emit("pad", [y], {"beginningPadding": [0] * len(out), "endingPadding": ending}, out=node.output[0])


@contrib_op("ai.onnx.ml", "Binarizer")
def binarizer(ctx: Converter, node: Any) -> None:
    x = ctx.x(node, 0)
    t = float(attrs_of(node).get("threshold", 0.0))
    above = ctx.emit("greater", [x, scalar(ctx, t, x, "threshold")])
    ctx.emit("where", [above, scalar(ctx, 1, x, "one"), scalar(ctx, 0, x, "zero")], out=node.output[0])


@contrib_op("ai.onnx.ml", "ArrayFeatureExtractor")
def array_feature_extractor(ctx: Converter, node: Any) -> None:
    """The last axis gathered at constant indices (a 1-D input reads as [1, N])."""
    x = ctx.x(node, 0)
    shape = list(ctx.static_shape(node.input[0], "ArrayFeatureExtractor"))
    idx = np.asarray(ctx.const_input(node, 1, "indices")).reshape(-1).astype(np.int64)
    if not idx.size or idx.min() < 0 or idx.max() >= shape[-1]:
        raise ValidationError(f"{where(node)}: indices {idx.tolist()} outside the last axis of {shape}")
    if len(shape) == 1:
        x = ctx.emit("reshape", [x], {"newShape": [1, shape[0]]})
    ind = ctx.new_const(f"{ctx.namer.of(node.output[0])}/index", idx.astype(np.int32))
    ctx.emit("gather", [x, ind], {"axis": max(len(shape), 2) - 1}, out=node.output[0])
