"""ONNX DeformConv (2-D): each kernel tap reads X at its own run-time offset position, bilinearly (ONNX
defines it as GridSample with zeros padding and align_corners), times the optional mask; the sampled
columns [N, P, C * K] then meet the filter in one matmul."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, where
from .ops_spatial import Scalars, flat_pixels
from .registry import onnx_op


@onnx_op("DeformConv")
def deform_conv(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x, wgt, off = ctx.x(node, 0), ctx.x(node, 1), ctx.x(node, 2)
    xs = ctx.static_shape(node.input[0], "DeformConv")
    ws = ctx.static_shape(node.input[1], "DeformConv")
    os_ = ctx.static_shape(node.input[2], "DeformConv")
    if len(xs) != 4:
        raise UnsupportedError(f"{len(xs) - 2}-D DeformConv (2-D only)")
    if ctx.types[x].dtype not in ("float32", "float16"):
        raise UnsupportedError(f"DeformConv of {ctx.types[x].dtype} (float32/float16 only)")
    n, c, h, w = xs
    oc, kh, kw = ws[0], ws[2], ws[3]
    group, og = int(a.get("group", 1)), int(a.get("offset_group", 1))
    k = kh * kw
    if len(ws) != 4 or len(os_) != 4 or c != ws[1] * group or c % og or os_[1] != 2 * og * k or os_[0] != n:
        raise ValidationError(f"{where(node)}: X {list(xs)}, W {list(ws)}, offset {list(os_)}, group {group}")
    pads = [int(v) for v in a.get("pads", [0, 0, 0, 0])]
    sh, sw = (int(v) for v in a.get("strides", [1, 1]))
    dh, dw = (int(v) for v in a.get("dilations", [1, 1]))
    oh, ow = os_[2], os_[3]
    p = oh * ow
    e = ctx.emit
    hint = ctx.namer.of(node.output[0])
    npdt = DTYPES[ctx.types[x].dtype]

    one = Scalars(ctx, x)

    # tap positions without offsets: [1, 1, K, P] per axis
    ki, kj = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    oi, oj = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    base_h = (ki.reshape(-1, 1) * dh + oi.reshape(1, -1) * sh - pads[0]).astype(npdt).reshape(1, 1, k, p)
    base_w = (kj.reshape(-1, 1) * dw + oj.reshape(1, -1) * sw - pads[1]).astype(npdt).reshape(1, 1, k, p)
    off = e("reshape", [off], {"newShape": [n, og, k, 2, p]})

    def axis(i: int, base: np.ndarray) -> str:
        part = e("slice", [off], {"starts": [0, 0, 0, i, 0], "sizes": [n, og, k, 1, p]})
        part = e("reshape", [part], {"newShape": [n, og, k, p]})
        return e("add", [part, ctx.new_const(f"{hint}/base", base)])

    def taps(pos: str, size: int) -> list[tuple[str, str]]:
        """(int32 index clamped into 0..size-1, weight that is 0 for a tap outside) of both taps."""
        lo = e("floor", [pos])
        t = e("sub", [pos, lo])
        out = []
        for tap, wt in ((lo, e("sub", [one(1.0), t])), (e("add", [lo, one(1.0)]), t)):
            inside = e(
                "logicalAnd", [e("greaterOrEqual", [tap, one(0.0)]), e("lesser", [tap, one(float(size))])]
            )
            idx = e(
                "cast", [e("clamp", [tap], {"minValue": 0.0, "maxValue": float(size - 1)})], {"type": "int32"}
            )
            out.append((idx, e("where", [inside, wt, one(0.0)])))
        return out

    ys, xs_ = taps(axis(0, base_h), h), taps(axis(1, base_w), w)
    batch = ctx.new_const(f"{hint}/batch", (np.arange(n, dtype=np.int32) * h * w).reshape(n, 1, 1, 1))
    width = ctx.new_const(f"{hint}/w", np.array(w, np.int32))
    flat_x = flat_pixels(ctx, x, n, c, h * w)
    mask = None
    if ctx.has(node, 4):
        mask = e("reshape", [ctx.x(node, 4)], {"newShape": [n, og, k, p]})
    acc = ""
    for yi, wy in ys:
        row = e("add", [batch, e("mul", [yi, width])])
        for xi, wx in xs_:
            wt = e("mul", [wy, wx])
            if mask is not None:
                wt = e("mul", [wt, mask])
            v = e("gather", [flat_x, e("add", [row, xi])], {"axis": 0})  # [N, G, K, P, C]
            v = e("mul", [v, e("reshape", [wt], {"newShape": [n, og, k, p, 1]})])
            acc = v if not acc else e("add", [acc, v])
    if og > 1:  # offset group g samples only its own channels: keep the diagonal g == channel's group
        pick = np.zeros((1, og, 1, 1, og, 1), npdt)
        pick[0, np.arange(og), 0, 0, np.arange(og), 0] = 1
        acc = e("reshape", [acc], {"newShape": [n, og, k, p, og, c // og]})
        acc = e("mul", [acc, ctx.new_const(f"{hint}/pick", pick)])
        acc = e("reduceSum", [acc], {"axes": [1], "keepDimensions": False})  # [N, K, P, og, C / og]
        acc = e("reshape", [acc], {"newShape": [n, k, p, c]})
    else:
        acc = e("reshape", [acc], {"newShape": [n, k, p, c]})
    cols = e("reshape", [e("transpose", [acc], {"permutation": [0, 2, 3, 1]})], {"newShape": [n, p, c * k]})
    if group == 1:
        mat = e("transpose", [e("reshape", [wgt], {"newShape": [oc, c * k]})], {"permutation": [1, 0]})
    elif ctx.is_const(node.input[1]):  # a block-diagonal filter matrix: group g's channels to its outputs
        wc = ctx.const(node.input[1]).reshape(oc, c // group * k)
        full = np.zeros((c * k, oc), npdt)
        cg, ocg = c // group * k, oc // group
        for g in range(group):
            full[g * cg : (g + 1) * cg, g * ocg : (g + 1) * ocg] = wc[g * ocg : (g + 1) * ocg].T
        mat = ctx.new_const(f"{hint}/filter", full)
    else:
        raise UnsupportedError("DeformConv with group > 1 and a run-time filter")
    y = e("matmul", [cols, mat])  # [N, P, oC]
    if ctx.has(node, 3):
        y = e("add", [y, e("reshape", [ctx.x(node, 3)], {"newShape": [1, 1, oc]})])
    y = e("transpose", [y], {"permutation": [0, 2, 1]})
    e("reshape", [y], {"newShape": [n, oc, oh, ow]}, out=node.output[0])
