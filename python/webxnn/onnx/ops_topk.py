"""ONNX TopK without a sort (WebNN has none), exactly, for a static axis length n and a constant K: each
element's rank is how many others precede it (greater, or equal at a lower index: ONNX's order for
largest=1; lesser for largest=0), and output slot r gathers the one element of rank r through a one-hot
mask. NaN ranks above +inf, as in ONNX's reference (numpy's sort order). It costs n x n comparisons per row,
so it suits the short axes TopK usually sees."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError
from .convert import Converter, attrs_of
from .ops_decomposed import scalar
from .ops_shape import norm_axis
from .registry import onnx_op

_MAX_AXIS = 4096  # n x n comparisons: beyond this the mask is too large to be a sensible graph


@onnx_op("TopK")
def top_k(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x = ctx.x(node, 0)
    shape = list(ctx.static_shape(node.input[0], "TopK"))
    r = len(shape)
    axis = norm_axis(int(a.get("axis", -1)), r)
    n = shape[axis]
    k = int(ctx.const_scalar(node, 1, "K")) if ctx.opset >= 10 else int(a["k"])
    if not 0 < k <= n:
        raise UnsupportedError(f"TopK with K={k} of an axis of {n}")
    if n > _MAX_AXIS:
        raise UnsupportedError(f"TopK over an axis of {n} (at most {_MAX_AXIS})")
    largest = bool(int(a.get("largest", 1)))
    name = ctx.namer.of(node.output[0])
    perm = [d for d in range(r) if d != axis] + [axis]
    back = [perm.index(d) for d in range(r)]
    xt = ctx.emit("transpose", [x], {"permutation": perm}) if axis != r - 1 else x
    lead = [shape[d] for d in perm[:-1]]
    xi = ctx.emit("reshape", [xt], {"newShape": [*lead, n, 1]})
    xj = ctx.emit("reshape", [xt], {"newShape": [*lead, 1, n]})
    before = ctx.emit("greater" if largest else "lesser", [xj, xi])
    same = ctx.emit("equal", [xj, xi])
    if ctx.types[x].dtype in ("float32", "float16"):
        # ONNX orders NaN above +inf (NaNs among themselves by index): comparisons with NaN are all false
        nan_i, nan_j = ctx.emit("isNaN", [xi]), ctx.emit("isNaN", [xj])
        above = nan_j if largest else nan_i  # j precedes i: j is NaN (largest) / i is NaN (smallest)
        other = nan_i if largest else nan_j
        nan_first = ctx.emit("logicalAnd", [above, ctx.emit("logicalNot", [other])])
        before = ctx.emit("logicalOr", [before, nan_first])
        same = ctx.emit("logicalOr", [same, ctx.emit("logicalAnd", [nan_i, nan_j])])
    lower = ctx.new_const(f"{name}/lower", np.tril(np.ones((n, n), np.uint8), -1))  # [i, j]: j < i
    tie = ctx.emit("logicalAnd", [same, lower])
    precedes = ctx.emit("cast", [ctx.emit("logicalOr", [before, tie])], {"type": "int32"})
    rank = ctx.emit("reduceSum", [precedes], {"axes": [r], "keepDimensions": True})  # [..., n, 1]
    slots = ctx.new_const(f"{name}/slots", np.arange(k, dtype=np.int32))
    hot = ctx.emit("equal", [rank, slots])  # [..., n, K]: one true per column
    zero = scalar(ctx, 0, x, "zero")
    values = ctx.emit("reduceSum", [ctx.emit("where", [hot, xi, zero])], {"axes": [r - 1]})
    iota = ctx.new_const(f"{name}/iota", np.arange(n, dtype=np.int32).reshape(n, 1))
    zero_i = ctx.new_const(f"{name}/z", np.array(0, np.int32))
    idx = ctx.emit("reduceSum", [ctx.emit("where", [hot, iota, zero_i])], {"axes": [r - 1]})
    outs = [(values, node.output[0]), (ctx.emit("cast", [idx], {"type": "int64"}), node.output[1])]
    for v, o in outs:
        if not o:
            continue
        if axis != r - 1:
            ctx.emit("transpose", [v], {"permutation": back}, out=o)
        else:
            ctx.emit("identity", [v], out=o)
