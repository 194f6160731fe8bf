"""ONNX ops WebNN has no op for, written as a few WebNN ops: activations (Swish, Selu, Celu, Mish, Shrink,
ThresholdedRelu, tanh Gelu), hyperbolic functions, LpNormalization, RMSNormalization and EyeLike."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..graph import DTYPES
from .convert import Converter, attrs_of, text
from .ops_shape import norm_axis
from .refusals import DATA_SHAPED, FLOAT_MOD
from .registry import onnx_op


def scalar(ctx: Converter, value: float, like: str, hint: str) -> str:
    """A 0-D constant `value` in the dtype of WebNN value `like`."""
    dt = ctx.types[like].dtype
    return ctx.new_const(f"{ctx.namer.of(ctx.node.output[0])}/{hint}", np.array(value, DTYPES[dt]))


def _float_input(ctx: Converter, node: Any) -> str:
    x = ctx.x(node, 0)
    if ctx.types[x].dtype not in ("float32", "float16"):
        raise UnsupportedError(f"{node.op_type} of {ctx.types[x].dtype} (float32/float16 only)")
    return x


@onnx_op("Swish")
def swish(ctx: Converter, node: Any) -> None:
    x = _float_input(ctx, node)
    alpha = float(attrs_of(node).get("alpha", 1.0))
    sx = ctx.emit("mul", [x, scalar(ctx, alpha, x, "alpha")]) if alpha != 1.0 else x
    ctx.emit("mul", [x, ctx.emit("sigmoid", [sx])], out=node.output[0])


@onnx_op("Selu")
def selu(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x = _float_input(ctx, node)
    e = ctx.emit("elu", [x], {"alpha": float(a.get("alpha", 1.67326319217681884765625))})
    ctx.emit(
        "mul",
        [e, scalar(ctx, float(a.get("gamma", 1.05070102214813232421875)), x, "gamma")],
        out=node.output[0],
    )


@onnx_op("Celu")
def celu(ctx: Converter, node: Any) -> None:
    x = _float_input(ctx, node)
    alpha = float(attrs_of(node).get("alpha", 1.0))
    if alpha == 1.0:
        ctx.emit("elu", [x], {"alpha": 1.0}, out=node.output[0])
        return
    # celu(x) = alpha * elu(x / alpha)
    e = ctx.emit("elu", [ctx.emit("div", [x, scalar(ctx, alpha, x, "alpha")])], {"alpha": 1.0})
    ctx.emit("mul", [e, scalar(ctx, alpha, x, "alpha")], out=node.output[0])


@onnx_op("Mish")
def mish(ctx: Converter, node: Any) -> None:
    x = _float_input(ctx, node)
    ctx.emit("mul", [x, ctx.emit("tanh", [ctx.emit("softplus", [x])])], out=node.output[0])


@onnx_op("ThresholdedRelu")
def thresholded_relu(ctx: Converter, node: Any) -> None:
    x = _float_input(ctx, node)
    alpha = float(attrs_of(node).get("alpha", 1.0))
    above = ctx.emit("greater", [x, scalar(ctx, alpha, x, "alpha")])
    ctx.emit("where", [above, x, scalar(ctx, 0.0, x, "zero")], out=node.output[0])


@onnx_op("Shrink")
def shrink(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x = ctx.x(node, 0)
    if ctx.types[x].dtype not in ("float32", "float16", "int32", "int8"):
        raise UnsupportedError(f"Shrink of {ctx.types[x].dtype}")
    lambd, bias = float(a.get("lambd", 0.5)), float(a.get("bias", 0.0))
    lo = ctx.emit("lesser", [x, scalar(ctx, -lambd, x, "minus_lambd")])
    hi = ctx.emit("greater", [x, scalar(ctx, lambd, x, "lambd")])
    b = scalar(ctx, bias, x, "bias")
    inner = ctx.emit("where", [hi, ctx.emit("sub", [x, b]), scalar(ctx, 0, x, "zero")])
    ctx.emit("where", [lo, ctx.emit("add", [x, b]), inner], out=node.output[0])


@onnx_op("Sinh", "Cosh")
def sinh_cosh(ctx: Converter, node: Any) -> None:
    x = _float_input(ctx, node)
    ep, em = ctx.emit("exp", [x]), ctx.emit("exp", [ctx.emit("neg", [x])])
    s = ctx.emit("sub" if node.op_type == "Sinh" else "add", [ep, em])
    ctx.emit("mul", [s, scalar(ctx, 0.5, x, "half")], out=node.output[0])


@onnx_op("Asinh", "Acosh")
def asinh_acosh(ctx: Converter, node: Any) -> None:
    # log(x + sqrt(x^2 ± 1))
    x = _float_input(ctx, node)
    one = scalar(ctx, 1.0, x, "one")
    sq = ctx.emit("add" if node.op_type == "Asinh" else "sub", [ctx.emit("mul", [x, x]), one])
    ctx.emit("log", [ctx.emit("add", [x, ctx.emit("sqrt", [sq])])], out=node.output[0])


@onnx_op("Atanh")
def atanh(ctx: Converter, node: Any) -> None:
    # 0.5 * log((1 + x) / (1 - x))
    x = _float_input(ctx, node)
    one = scalar(ctx, 1.0, x, "one")
    q = ctx.emit("div", [ctx.emit("add", [one, x]), ctx.emit("sub", [one, x])])
    ctx.emit("mul", [ctx.emit("log", [q]), scalar(ctx, 0.5, x, "half")], out=node.output[0])


@onnx_op("LpNormalization")
def lp_normalization(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x = _float_input(ctx, node)
    p = int(a.get("p", 2))
    if p not in (1, 2):
        raise UnsupportedError(f"LpNormalization p={p} (1 or 2)")
    axis = norm_axis(int(a.get("axis", -1)), ctx.rank(node.input[0]))
    norm = ctx.emit("reduceL2" if p == 2 else "reduceL1", [x], {"axes": [axis], "keepDimensions": True})
    # a zero vector stays zero (ONNX), not 0/0: divide it by 1
    zero = ctx.emit("equal", [norm, scalar(ctx, 0.0, x, "zero")])
    norm = ctx.emit("where", [zero, scalar(ctx, 1.0, x, "one"), norm])
    ctx.emit("div", [x, norm], out=node.output[0])


@onnx_op("RMSNormalization")
def rms_normalization(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x = _float_input(ctx, node)
    rank = ctx.rank(node.input[0])
    axes = list(range(norm_axis(int(a.get("axis", -1)), rank), rank))
    ms = ctx.emit("reduceMean", [ctx.emit("mul", [x, x])], {"axes": axes, "keepDimensions": True})
    rms = ctx.emit("sqrt", [ctx.emit("add", [ms, scalar(ctx, float(a.get("epsilon", 1e-5)), x, "eps")])])
    ctx.emit("mul", [ctx.emit("div", [x, rms]), ctx.x(node, 1)], out=node.output[0])


@onnx_op("EyeLike")
def eye_like(ctx: Converter, node: Any) -> None:
    from .tensors import NP_OF_ONNX

    a = attrs_of(node)
    shape = ctx.static_shape(node.input[0], "EyeLike")
    to = int(a.get("dtype", 0))
    dt = NP_OF_ONNX.get(to) if to else DTYPES[ctx.dtype(node.input[0])]
    if dt is None:
        raise UnsupportedError(f"EyeLike to ONNX type {to}")
    ctx.set_const(node.output[0], np.eye(shape[0], shape[1], int(a.get("k", 0)), dtype=dt))


def gelu_tanh(ctx: Converter, node: Any) -> None:
    """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    x = _float_input(ctx, node)
    x3 = ctx.emit("mul", [ctx.emit("mul", [x, x]), x])
    inner = ctx.emit("add", [x, ctx.emit("mul", [x3, scalar(ctx, 0.044715, x, "c")])])
    t = ctx.emit("tanh", [ctx.emit("mul", [inner, scalar(ctx, math.sqrt(2 / math.pi), x, "k")])])
    half_x = ctx.emit("mul", [x, scalar(ctx, 0.5, x, "half")])
    ctx.emit("mul", [half_x, ctx.emit("add", [t, scalar(ctx, 1.0, x, "one")])], out=node.output[0])


@onnx_op("Mod")
def mod(ctx: Converter, node: Any) -> None:
    """Integers, exactly: r = x - trunc(x / y) * y (WebNN integer div truncates), plus y where ONNX's
    default (fmod=0) wants a non-zero remainder signed like the divisor. Floats are refused: without an
    exact product (no FMA in WebNN) x - q * y rounds to the wrong side of a multiple of y, an error of up
    to |y| (6 mod 0.1 would be 0, not 0.0999999)."""
    x, y = ctx.x(node, 0), ctx.x(node, 1)
    dt = ctx.types[x].dtype
    if dt not in ("int8", "uint8", "int32", "uint32", "int64", "uint64"):
        raise UnsupportedError(f"Mod of {dt}: {FLOAT_MOD}")
    zero = scalar(ctx, 0, x, "zero")
    r = ctx.emit("sub", [x, ctx.emit("mul", [ctx.emit("div", [x, y]), y])])
    if int(attrs_of(node).get("fmod", 0)) or dt.startswith("uint"):
        ctx.emit("identity", [r], out=node.output[0])
        return
    off = ctx.emit(
        "logicalAnd",
        [
            ctx.emit("notEqual", [r, zero]),
            ctx.emit("notEqual", [ctx.emit("lesser", [r, zero]), ctx.emit("lesser", [y, zero])]),
        ],
    )
    ctx.emit("add", [r, ctx.emit("where", [off, y, zero])], out=node.output[0])


@onnx_op("Hardmax")
def hardmax(ctx: Converter, node: Any) -> None:
    """1 at the first largest element along `axis`, 0 elsewhere: argMax compared with the axis's indices
    (before opset 13: over the input flattened to 2-D at `axis`)."""
    x = _float_input(ctx, node)
    shape = ctx.static_shape(node.input[0], "Hardmax")
    rank = len(shape)
    axis = norm_axis(int(attrs_of(node).get("axis", -1 if ctx.opset >= 13 else 1)), rank)
    src, src_shape = x, list(shape)
    if ctx.opset < 13:
        src_shape = [math.prod(shape[:axis]), math.prod(shape[axis:])]
        src, axis = ctx.emit("reshape", [x], {"newShape": src_shape}), 1
    am = ctx.emit("argMax", [src], {"axis": axis, "keepDimensions": True, "outputDataType": "int32"})
    iota_shape = [1] * len(src_shape)
    iota_shape[axis] = src_shape[axis]
    iota = ctx.new_const(
        f"{ctx.namer.of(node.output[0])}/iota", np.arange(src_shape[axis], dtype=np.int32).reshape(iota_shape)
    )
    y = ctx.emit(
        "cast",
        [ctx.emit("equal", [am, iota])],
        {"type": ctx.types[x].dtype},
        out=None if ctx.opset < 13 else node.output[0],
    )
    if ctx.opset < 13:
        ctx.emit("reshape", [y], {"newShape": list(shape)}, out=node.output[0])


@onnx_op("BitShift")
def bit_shift(ctx: Converter, node: Any) -> None:
    """Shifts as integer arithmetic, exactly: x << b = x * 2^b (wrapping, as WebNN integer mul does),
    x >> b = floor(x / 2^b) (truncating div, one less for a negative remainder); 2^b read from a table.
    A shift outside [0, width) gives 0, or -1 for a negative x shifted right (ONNX)."""
    x, b = ctx.x(node, 0), ctx.x(node, 1)
    dt = ctx.types[x].dtype
    if dt not in ("int8", "uint8", "int32", "uint32", "int64", "uint64"):
        raise UnsupportedError(f"BitShift of {dt}")
    right = text(attrs_of(node).get("direction", "LEFT")) == "RIGHT"
    npdt = DTYPES[dt]
    width = npdt.itemsize * 8
    signed = dt.startswith("int")
    # a signed right shift by width - 1 is the sign fill too (and 2^(width-1) does not fit)
    usable = width - 1 if signed and right else width
    powers = np.array([1 << i for i in range(usable)], dtype=f"u{npdt.itemsize}").view(npdt)
    table = ctx.new_const(f"{ctx.namer.of(node.output[0])}/powers", powers)
    # compared in b's own type: a cast to int32 first would wrap 2^32 + 3 to 3
    zero_b, top = scalar(ctx, 0, b, "zero_b"), scalar(ctx, usable - 1, b, "top")
    idx = ctx.emit("min", [ctx.emit("max", [b, zero_b]), top])
    if ctx.types[b].dtype != "int32":
        idx = ctx.emit("cast", [idx], {"type": "int32"})
    p = ctx.emit("gather", [table, idx], {"axis": 0})
    outside = ctx.emit("logicalOr", [ctx.emit("lesser", [b, zero_b]), ctx.emit("greater", [b, top])])
    zero = scalar(ctx, 0, x, "zero")
    if not right:
        ctx.emit("where", [outside, zero, ctx.emit("mul", [x, p])], out=node.output[0])
        return
    q = ctx.emit("div", [x, p])
    fill = zero
    if signed:
        r = ctx.emit("sub", [x, ctx.emit("mul", [q, p])])
        q = ctx.emit("sub", [q, ctx.emit("cast", [ctx.emit("lesser", [r, zero])], {"type": dt})])
        fill = ctx.emit("where", [ctx.emit("lesser", [x, zero]), scalar(ctx, -1, x, "minus_one"), zero])
    ctx.emit("where", [outside, fill, q], out=node.output[0])


@onnx_op("LRN")
def lrn(ctx: Converter, node: Any) -> None:
    """x / (bias + alpha / size * sum of x^2 over a window of channels)^beta; the channel-window sum is a
    1x1 convolution of x^2 with a band of ones."""
    a = attrs_of(node)
    x = _float_input(ctx, node)
    shape = ctx.static_shape(node.input[0], "LRN")
    if len(shape) != 4:
        raise UnsupportedError(f"LRN of a rank-{len(shape)} tensor (4-D only)")
    size = int(a["size"])
    c = shape[1]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    band = np.zeros((c, c, 1, 1), DTYPES[ctx.types[x].dtype])
    for o in range(c):
        band[o, max(0, o - lo) : min(c, o + hi + 1)] = 1
    sums = ctx.emit(
        "conv2d", [ctx.emit("mul", [x, x]), ctx.new_const(f"{ctx.namer.of(node.output[0])}/band", band)]
    )
    k = ctx.emit(
        "add",
        [
            ctx.emit("mul", [sums, scalar(ctx, float(a.get("alpha", 1e-4)) / size, x, "alpha")]),
            scalar(ctx, float(a.get("bias", 1.0)), x, "bias"),
        ],
    )
    ctx.emit(
        "div",
        [x, ctx.emit("pow", [k, scalar(ctx, float(a.get("beta", 0.75)), x, "beta")])],
        out=node.output[0],
    )


@onnx_op("OneHot")
def one_hot(ctx: Converter, node: Any) -> None:
    """where(indices (negatives wrapped once, ONNX) == iota along the new axis, on, off); an index outside
    [-depth, depth) matches nothing, so its row is all off, as ONNX."""
    if not ctx.is_const(node.input[1]):
        raise UnsupportedError(f"OneHot with a depth computed at run time (the output size): {DATA_SHAPED}")
    depth = int(np.asarray(ctx.const(node.input[1])).reshape(-1)[0])
    if depth < 1:
        raise UnsupportedError(f"OneHot depth {depth}")
    idx = ctx.x(node, 0)
    shape = list(ctx.static_shape(node.input[0], "OneHot"))
    axis = norm_axis(int(attrs_of(node).get("axis", -1)), len(shape) + 1)
    if ctx.types[idx].dtype not in ("int32", "float32", "float16"):
        # clamp in its own type first, so the int32 cast cannot wrap a far index into range
        idx = ctx.emit("clamp", [idx], {"minValue": float(-depth - 1), "maxValue": float(depth)})
    if ctx.types[idx].dtype != "int32":
        idx = ctx.emit("cast", [idx], {"type": "int32"})  # float indices truncate, as ONNX casts them
    name = ctx.namer.of(node.output[0])
    dep = ctx.new_const(f"{name}/depth", np.array(depth, np.int32))
    zero = ctx.new_const(f"{name}/zero", np.array(0, np.int32))
    idx = ctx.emit("where", [ctx.emit("lesser", [idx, zero]), ctx.emit("add", [idx, dep]), idx])
    idx = ctx.emit("reshape", [idx], {"newShape": shape[:axis] + [1] + shape[axis:]})
    iota_shape = [1] * (len(shape) + 1)
    iota_shape[axis] = depth
    iota = ctx.new_const(f"{name}/iota", np.arange(depth, dtype=np.int32).reshape(iota_shape))
    values = ctx.x(node, 2)
    off, on = (
        ctx.emit("reshape", [ctx.emit("slice", [values], {"starts": [i], "sizes": [1]})], {"newShape": []})
        for i in (0, 1)
    )
    ctx.emit("where", [ctx.emit("equal", [idx, iota]), on, off], out=node.output[0])


# atan(t) = t + t^3 P(t^2) on |t| <= tan(pi/8), P fitted here (least squares in relative error on
# Chebyshev points; 8e-8 relative error in float32, about 1 ulp)
_ATAN_P = (-0.33332931995391846, 0.19977137446403503, -0.13872233033180237, 0.08037785440683365)


def atan_of(ctx: Converter, x: str, out: str | None = None) -> str:
    """atan(x): |x| reduced to |t| <= tan(pi/8) (t = |x|, (|x| - 1) / (|x| + 1) plus pi/4, or -1/|x| plus
    pi/2), the polynomial, the sign restored."""
    e = ctx.emit

    def k(v: float) -> str:
        return scalar(ctx, v, x, "atan")

    a = e("abs", [x])
    big = e("greater", [a, k(math.tan(3 * math.pi / 8))])
    mid = e("greater", [a, k(math.tan(math.pi / 8))])
    t = e("where", [mid, e("div", [e("sub", [a, k(1.0)]), e("add", [a, k(1.0)])]), a])
    t = e("where", [big, e("neg", [e("reciprocal", [a])]), t])
    off = e("where", [big, k(math.pi / 2), e("where", [mid, k(math.pi / 4), k(0.0)])])
    z = e("mul", [t, t])
    p = k(_ATAN_P[-1])
    for c in reversed(_ATAN_P[:-1]):
        p = e("add", [e("mul", [p, z]), k(c)])
    r = e("add", [off, e("add", [t, e("mul", [e("mul", [t, z]), p])])])
    return e("where", [e("lesser", [x, k(0.0)]), e("neg", [r]), r], out=out)


@onnx_op("Atan", "Asin", "Acos")
def inverse_trig(ctx: Converter, node: Any) -> None:
    """WebNN has no inverse trigonometric functions: atan as atan_of; asin(x) = atan(x / sqrt((1 - x)(1 + x)))
    and acos(x) = 2 atan(sqrt((1 - x) / (1 + x))), both accurate up to |x| = 1 (NaN beyond, as ONNX)."""
    x = _float_input(ctx, node)
    one = scalar(ctx, 1.0, x, "one")
    lo, hi = ctx.emit("sub", [one, x]), ctx.emit("add", [one, x])
    if node.op_type == "Atan":
        arg = x
    elif node.op_type == "Asin":
        arg = ctx.emit("div", [x, ctx.emit("sqrt", [ctx.emit("mul", [lo, hi])])])
    else:
        arg = ctx.emit("sqrt", [ctx.emit("div", [lo, hi])])
    if node.op_type != "Acos":
        atan_of(ctx, arg, out=node.output[0])
        return
    ctx.emit("mul", [atan_of(ctx, arg), scalar(ctx, 2.0, x, "two")], out=node.output[0])
