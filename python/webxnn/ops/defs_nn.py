"""Linear algebra, convolution, pooling and normalization ops."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ..dtypes import MAX_DIM
from .common import FLOAT, TT, define, dtype_in, length_is, rank_is, same_dtype, shape_is
from .registry import Ctx
from .shapes import (
    auto_pad,
    auto_pad_transpose,
    broadcast_shapes,
    conv_out_size,
    conv_transpose_out_size,
    need_int,
    norm_axes,
    norm_axis,
    pool_out_size,
    shape_str,
    unidirectional_ok,
)

AUTO_PAD = ("explicit", "same-upper", "same-lower")
INPUT_LAYOUT = ("nchw", "nhwc")
CONV_FILTER_LAYOUT = ("oihw", "hwio", "ohwi", "ihwo")
CONVT_FILTER_LAYOUT = ("iohw", "hwoi", "ohwi")

# -------------------------------------------------------------------------------------------- matmul


def _matmul(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    a, b = t["a"], t["b"]
    dt = same_dtype(ctx, {"a": a, "b": b})
    dtype_in(ctx, a, "a", FLOAT | {"int32", "uint32", "int64", "uint64", "int8", "uint8"})
    if a.rank == 0 or b.rank == 0:
        ctx.fail(f"operands must have rank >= 1, got {shape_str(a.shape)} and {shape_str(b.shape)}")
    sa = list(a.shape) if a.rank > 1 else [1, a.shape[0]]
    sb = list(b.shape) if b.rank > 1 else [b.shape[0], 1]
    if sa[-1] != sb[-2]:
        ctx.fail(f"inner dimensions differ: a is {shape_str(a.shape)}, b is {shape_str(b.shape)}")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    out = list(batch)
    if a.rank > 1:
        out.append(sa[-2])
    if b.rank > 1:
        out.append(sb[-1])
    return [TT(dt, out)]


define(
    "matmul",
    ["a", "b"],
    _matmul,
    "Matrix product of the last two dims, the leading (batch) dims broadcast numpy-style; a 1-D a gets "
    "a 1 prepended and a 1-D b a 1 appended, and those dims are dropped from the output. "
    "WebNN §7.6.22 matmul().",
)


def _gemm(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    a, b, c = t["a"], t["b"], t["c"]
    dt = same_dtype(ctx, {"a": a, "b": b, "c": c})
    dtype_in(ctx, a, "a", FLOAT)
    rank_is(ctx, a, "a", 2)
    rank_is(ctx, b, "b", 2)
    m, ka = (a.shape[1], a.shape[0]) if opts["aTranspose"] else a.shape
    kb, n = (b.shape[1], b.shape[0]) if opts["bTranspose"] else b.shape
    if ka != kb:
        ctx.fail(
            f"inner dimensions differ: a{'ᵀ' if opts['aTranspose'] else ''} is "
            f"{shape_str(a.shape)}, b{'ᵀ' if opts['bTranspose'] else ''} is {shape_str(b.shape)}"
        )
    if c is not None and not unidirectional_ok(c.shape, (m, n)):
        ctx.fail(f"operand 'c' of shape {shape_str(c.shape)} does not broadcast to {shape_str((m, n))}")
    return [TT(dt, (m, n))]


define(
    "gemm",
    ["a", "b"],
    _gemm,
    "alpha * A' @ B' + beta * C for 2-D A and B, where A' = A or its transpose (aTranspose), likewise "
    "B'; C (optional, operand option `c`) broadcasts to [M, N]. WebNN §7.6.12 gemm().",
    operand_options=["c"],
    options={
        "alpha": ("float", 1.0),
        "beta": ("float", 1.0),
        "aTranspose": ("bool", False),
        "bTranspose": ("bool", False),
    },
)

# -------------------------------------------------------------------------------------------- conv


def _nchw(ctx: Ctx, x: Any, layout: str) -> tuple:
    rank_is(ctx, x, "input", 4)
    if layout == "nchw":
        n, c, h, w = x.shape
    else:
        n, h, w, c = x.shape
    return n, c, h, w


def _out4(layout: str, n: Any, c: Any, h: Any, w: Any) -> tuple:
    return (n, c, h, w) if layout == "nchw" else (n, h, w, c)


def _spatial_padding(
    ctx: Ctx, opts: dict[str, Any], hw: tuple[int, int], k: tuple[int, int], transpose: bool = False
) -> list[int]:
    """Explicit [t, b, l, r] padding, computing it for autoPad same-upper/same-lower. Afterwards autoPad
    reads "explicit": the BoundNode carries one form only, so lowering cannot disagree with inference."""
    if opts["autoPad"] == "explicit":
        return list(opts["padding"])
    upper = opts["autoPad"] == "same-upper"
    opts["autoPad"] = "explicit"
    pads: list[int] = []
    for i in range(2):
        s, d = opts["strides"][i], opts["dilations"][i]
        if transpose and opts.get("outputSizes") is not None:
            # ONNX ConvTranspose rule: pad away what exceeds the requested size
            total = max(0, (hw[i] - 1) * s + d * (k[i] - 1) + 1 - opts["outputSizes"][i])
            small = total // 2
            pads += [small, total - small] if upper else [total - small, small]
        elif transpose:
            pads += auto_pad_transpose(hw[i], k[i], s, d, opts["outputPadding"][i], upper)
        else:
            pads += auto_pad(hw[i], k[i], s, d, upper)
    return pads


def _check_conv_opts(ctx: Ctx, opts: dict[str, Any]) -> None:
    length_is(ctx, opts, "padding", 4)
    for key in ("strides", "dilations", "windowDimensions", "outputPadding", "outputSizes"):
        length_is(ctx, opts, key, 2)
    for key in ("strides", "dilations", "windowDimensions"):
        if opts.get(key) is not None and min(opts[key]) < 1:
            ctx.fail(f"option {key!r} must be positive, got {opts[key]}")
    if min(opts["padding"]) < 0:
        ctx.fail(f"option 'padding' must not be negative, got {opts['padding']}")
    if opts.get("groups", 1) < 1:
        ctx.fail(f"option 'groups' must be positive, got {opts['groups']}")
    # The blob holds each of these in a uint32 field: larger fails here, naming the op and option, not in the
    # blob writer (a stride of 3.4e38 still gives a valid output size of 1).
    for key in ("padding", "strides", "dilations", "windowDimensions", "outputPadding", "outputSizes"):
        if opts.get(key) is not None and max(opts[key]) > MAX_DIM:
            ctx.fail(f"option {key!r} = {opts[key]} has a value above {MAX_DIM}, the largest a blob holds")
    if opts.get("groups", 1) > MAX_DIM:
        ctx.fail(f"option 'groups' = {opts['groups']} is above {MAX_DIM}, the largest a blob holds")


_CONV_OPTS = {
    "padding": ("ints", [0, 0, 0, 0]),
    "strides": ("ints", [1, 1]),
    "dilations": ("ints", [1, 1]),
    "groups": ("int", 1),
    "inputLayout": (INPUT_LAYOUT, "nchw"),
    "autoPad": (AUTO_PAD, "explicit"),
}


class _ConvOperands(NamedTuple):
    dtype: Any  # the output's
    n: Any  # the input's batch and channels (static or not)
    c: Any
    filter: Any
    o: Any  # the filter's output and input channels
    i: Any
    hw: tuple[int, int]  # input spatial size
    k: tuple[int, int]  # kernel size
    what: str  # what a channel-count error is about


def _conv_operands(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> _ConvOperands:
    """The checks conv2d and convTranspose2d share: operand dtypes, options, the filter's rank, static spatial
    and kernel sizes."""
    x, f, bias = t["input"], t["filter"], t["bias"]
    dt = same_dtype(ctx, {"input": x, "filter": f, "bias": bias})
    dtype_in(ctx, x, "input", FLOAT)
    _check_conv_opts(ctx, opts)
    n, c, h, w = _nchw(ctx, x, opts["inputLayout"])
    rank_is(ctx, f, "filter", 4)
    dims = dict(zip(opts["filterLayout"], f.shape))
    hw = (need_int(h, f"{ctx.op} spatial size"), need_int(w, f"{ctx.op} spatial size"))
    k = (need_int(dims["h"], f"{ctx.op} kernel size"), need_int(dims["w"], f"{ctx.op} kernel size"))
    return _ConvOperands(dt, n, c, f, dims["o"], dims["i"], hw, k, f"{ctx.op} channels")


def _conv2d(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dt, n, c, f, o, i, hw, k, what = _conv_operands(ctx, t, opts)
    bias, fl, g = t["bias"], opts["filterLayout"], opts["groups"]
    c_int = need_int(c, what)
    if c_int != need_int(i, what) * g:
        ctx.fail(
            f"input has {c} channels but filter ({fl} {shape_str(f.shape)}) with groups={g} expects {i}*{g}"
        )
    o_int = need_int(o, what)
    if o_int % g:
        ctx.fail(f"filter output channels {o} are not divisible by groups={g}")
    if bias is not None:
        shape_is(ctx, bias, "bias", (o,))
    pads = _spatial_padding(ctx, opts, hw, k)
    opts["padding"] = pads
    oh = conv_out_size(hw[0], k[0], opts["strides"][0], opts["dilations"][0], pads[0], pads[1])
    ow = conv_out_size(hw[1], k[1], opts["strides"][1], opts["dilations"][1], pads[2], pads[3])
    if oh < 1 or ow < 1:
        ctx.fail(f"output spatial size {oh}x{ow} is empty (input {hw[0]}x{hw[1]}, kernel {k[0]}x{k[1]})")
    return [TT(dt, _out4(opts["inputLayout"], n, o, oh, ow))]


define(
    "conv2d",
    ["input", "filter"],
    _conv2d,
    "2-D convolution (cross-correlation) over a 4-D input in inputLayout (nchw|nhwc) with a 4-D filter "
    "in filterLayout (oihw|hwio|ohwi|ihwo), groups, strides, dilations and padding [t, b, l, r] (or "
    "autoPad same-upper|same-lower, resolved by bind into `padding` with autoPad set to explicit); "
    "bias [O] is an operand option. "
    "Output spatial size floor((in + pb + pe - dil*(k-1) - 1) / stride) + 1. WebNN §7.6.7 conv2d().",
    operand_options=["bias"],
    options={**_CONV_OPTS, "filterLayout": (CONV_FILTER_LAYOUT, "oihw")},
)


def _conv_transpose2d(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dt, n, c, f, o, i, hw, k, what = _conv_operands(ctx, t, opts)
    bias, fl, g = t["bias"], opts["filterLayout"], opts["groups"]
    if need_int(c, what) != need_int(i, what):
        ctx.fail(f"input has {c} channels but filter ({fl} {shape_str(f.shape)}) expects {i}")
    if need_int(c, what) % g:
        ctx.fail(f"input channels {c} are not divisible by groups={g}")
    out_c = need_int(o, what) * g
    if bias is not None:
        shape_is(ctx, bias, "bias", (out_c,))
    s, d = opts["strides"], opts["dilations"]
    for j in range(2):
        if opts["outputPadding"][j] < 0 or opts["outputPadding"][j] >= max(s[j], d[j]):
            ctx.fail(
                f"outputPadding {opts['outputPadding']} must be non-negative and smaller than "
                f"strides {s} (or dilations)"
            )
    pads = _spatial_padding(ctx, opts, hw, k, transpose=True)
    opts["padding"] = pads
    base = [
        conv_transpose_out_size(hw[j], k[j], s[j], d[j], pads[2 * j], pads[2 * j + 1], 0) for j in range(2)
    ]
    if opts["outputSizes"] is not None:
        sizes = opts["outputSizes"]
        for j in range(2):
            if not base[j] <= sizes[j] < base[j] + s[j]:
                ctx.fail(
                    f"outputSizes {sizes} are not reachable: dimension {j} must be in "
                    f"[{base[j]}, {base[j] + s[j] - 1}]"
                )
        # lowering only needs one form: outputPadding is the extra the requested sizes imply
        opts["outputPadding"] = [sizes[j] - base[j] for j in range(2)]
    out = [base[j] + opts["outputPadding"][j] for j in range(2)]
    if min(out) < 1:
        ctx.fail(f"output spatial size {out[0]}x{out[1]} is empty")
    opts["outputSizes"] = out
    return [TT(dt, _out4(opts["inputLayout"], n, out_c, out[0], out[1]))]


define(
    "convTranspose2d",
    ["input", "filter"],
    _conv_transpose2d,
    "2-D transposed convolution over a 4-D input in inputLayout with a filter in filterLayout "
    "(iohw|hwoi|ohwi; O = output channels / groups). Output size (in-1)*stride + dil*(k-1) + 1 - pb - pe "
    "+ outputPadding, or outputSizes; bind fills both `outputSizes` and the matching `outputPadding`, "
    "and resolves autoPad into explicit `padding`. WebNN §7.6.8 convTranspose2d().",
    operand_options=["bias"],
    options={
        **_CONV_OPTS,
        "filterLayout": (CONVT_FILTER_LAYOUT, "iohw"),
        "outputPadding": ("ints", [0, 0]),
        "outputSizes": ("ints", None),
    },
)

# -------------------------------------------------------------------------------------------- pooling


def _pool(allowed: frozenset[str]):
    def infer(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
        x = t["input"]
        dtype_in(ctx, x, "input", allowed)
        _check_conv_opts(ctx, opts)
        n, c, h, w = _nchw(ctx, x, opts["layout"])
        hw = (need_int(h, f"{ctx.op} spatial size"), need_int(w, f"{ctx.op} spatial size"))
        if opts["windowDimensions"] is None:  # global pooling
            opts["windowDimensions"] = list(hw)
        k = tuple(opts["windowDimensions"])
        pads = _spatial_padding(ctx, opts, hw, k)
        opts["padding"] = pads
        s, d = opts["strides"], opts["dilations"]
        outs = {}
        for ceil in (False, True):
            outs[ceil] = [
                pool_out_size(hw[j], k[j], s[j], d[j], pads[2 * j], pads[2 * j + 1], ceil) for j in range(2)
            ]
        if opts["outputSizes"] is not None:
            sizes = list(opts["outputSizes"])
            if sizes == outs[False]:
                opts["roundingType"] = "floor"
            elif sizes == outs[True]:
                opts["roundingType"] = "ceil"
            else:
                ctx.fail(
                    f"outputSizes {sizes} match neither floor ({outs[False]}) nor ceil ({outs[True]}) "
                    "rounding"
                )
        out = outs[opts["roundingType"] == "ceil"]
        if min(out) < 1:
            ctx.fail(
                f"output spatial size {out[0]}x{out[1]} is empty (input {hw[0]}x{hw[1]}, window "
                f"{k[0]}x{k[1]})"
            )
        opts["outputSizes"] = out
        return [TT(x.dtype, _out4(opts["layout"], n, c, out[0], out[1]))]

    return infer


_POOL_OPTS = {
    "windowDimensions": ("ints", None),
    "padding": ("ints", [0, 0, 0, 0]),
    "strides": ("ints", [1, 1]),
    "dilations": ("ints", [1, 1]),
    "autoPad": (AUTO_PAD, "explicit"),
    "layout": (INPUT_LAYOUT, "nchw"),
    "roundingType": (("floor", "ceil"), "floor"),
    "outputSizes": ("ints", None),
}
for _name, _what, _allowed in (
    ("averagePool2d", "mean", FLOAT),
    ("l2Pool2d", "L2 norm", FLOAT),
    ("maxPool2d", "max", FLOAT | {"int8", "uint8"}),
):
    define(
        _name,
        ["input"],
        _pool(_allowed),
        f"Sliding-window {_what} over the spatial dims of a 4-D input in `layout` (nchw|nhwc). "
        "windowDimensions defaults to the spatial dims (global pooling); output size rounds "
        "(in + pb + pe - dil*(k-1) - 1) / stride down or up (roundingType) and adds 1. bind fills "
        "windowDimensions, explicit `padding` (autoPad resolved), `outputSizes` and the roundingType "
        "those imply. "
        "WebNN §7.6.24 Pooling operations.",
        options=dict(_POOL_OPTS),
    )

# -------------------------------------------------------------------------------------------- normalization


def _epsilon(ctx: Ctx, opts: dict[str, Any]) -> None:
    """The normalizations' epsilon: a finite number >= 0 (what the runtime accepts; an infinite or negative
    one would be refused only when the blob is loaded, without the node's name)."""
    eps = opts["epsilon"]
    if not (math.isfinite(eps) and eps >= 0):
        ctx.fail(f"option 'epsilon' = {eps!r} must be a finite non-negative number")


def _batch_norm(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    _epsilon(ctx, opts)
    x = t["input"]
    dt = same_dtype(ctx, {k: t[k] for k in ("input", "mean", "variance", "scale", "bias")})
    dtype_in(ctx, x, "input", FLOAT)
    if x.rank == 0:
        ctx.fail("input must have rank >= 1")
    axis = opts["axis"] = norm_axis(opts["axis"], x.rank)
    for role in ("mean", "variance", "scale", "bias"):
        shape_is(ctx, t[role], role, (x.shape[axis],))
    return [TT(dt, x.shape)]


define(
    "batchNormalization",
    ["input", "mean", "variance"],
    _batch_norm,
    "scale * (x - mean) / sqrt(variance + epsilon) + bias with 1-D mean/variance/scale/bias over the "
    "dimension `axis` (default 1); scale and bias are operand options. WebNN §7.6.4 batchNormalization().",
    operand_options=["scale", "bias"],
    options={"axis": ("int", 1), "epsilon": ("float", 1e-5)},
)


def _instance_norm(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    _epsilon(ctx, opts)
    x = t["input"]
    dt = same_dtype(ctx, {k: t[k] for k in ("input", "scale", "bias")})
    dtype_in(ctx, x, "input", FLOAT)
    n, c, h, w = _nchw(ctx, x, opts["layout"])
    for role in ("scale", "bias"):
        shape_is(ctx, t[role], role, (c,))
    return [TT(dt, x.shape)]


define(
    "instanceNormalization",
    ["input"],
    _instance_norm,
    "Per-sample, per-channel normalization of a 4-D input over its spatial dims: "
    "scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c]; layout nchw|nhwc. "
    "WebNN §7.6.17 instanceNormalization().",
    operand_options=["scale", "bias"],
    options={"epsilon": ("float", 1e-5), "layout": (INPUT_LAYOUT, "nchw")},
)


def _layer_norm(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    _epsilon(ctx, opts)
    x = t["input"]
    dt = same_dtype(ctx, {k: t[k] for k in ("input", "scale", "bias")})
    dtype_in(ctx, x, "input", FLOAT)
    axes = list(range(1, x.rank)) if opts["axes"] is None else opts["axes"]
    axes = opts["axes"] = norm_axes(axes, x.rank)
    for role in ("scale", "bias"):
        shape_is(ctx, t[role], role, tuple(x.shape[a] for a in axes))
    return [TT(dt, x.shape)]


define(
    "layerNormalization",
    ["input"],
    _layer_norm,
    "Normalization over the dimensions `axes` (default [1, ..., rank-1]; negative accepted): "
    "scale * (x - mean) / sqrt(var + epsilon) + bias, scale/bias shaped like the input dims at axes, "
    "given positionally or as operand options. WebNN MLGraphBuilder.layerNormalization().",
    operand_options=["scale", "bias"],
    options={"axes": ("ints", None), "epsilon": ("float", 1e-5)},
)
