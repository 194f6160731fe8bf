"""ONNX Resize / Upsample → WebNN resample2d when it computes the same thing, else exact gathers.

resample2d maps output x to input (x + 0.5) / scale - 0.5 (nearest: floor((x + 0.5) / scale); linear:
half-pixel). When ONNX's coordinate transformation and nearest rounding pick other pixels, each resized
axis becomes a gather of the input indices ONNX picks (nearest), or two gathers blended with constant
weights (linear) — ONNX's own arithmetic, any rank and any axes; cubic, antialiased and tf_crop_and_resize
(constant roi) Resize are a matmul per axis with ONNX's filter as a constant matrix. Scales or sizes computed
at run time are refused by design (the output shape would depend on the data).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, text, where
from .ops_shape import norm_axis
from .refusals import DATA_SHAPED, ZERO_SIZED
from .registry import onnx_op


@onnx_op("Resize", "Upsample")
def resize(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    shape = list(ctx.static_shape(node.input[0], node.op_type))
    rank = len(shape)
    mode = text(a.get("mode", "nearest"))
    _no_runtime_shape(ctx, node)
    if node.op_type == "Upsample" or ctx.opset < 11:
        scales = ctx.const_input(node, 1, "scales") if ctx.has(node, 1) else np.array(a["scales"])
        sizes, coord, nearest = None, "asymmetric", "floor"
    else:
        scales = ctx.opt_const(node, 2, "scales")
        sizes = ctx.opt_const(node, 3, "sizes")
        coord = text(a.get("coordinate_transformation_mode", "half_pixel"))
        nearest = text(a.get("nearest_mode", "round_prefer_floor"))
    antialias = bool(int(a.get("antialias", 0))) and mode != "nearest"
    if mode not in ("nearest", "linear", "cubic"):
        raise UnsupportedError(f"Resize mode {mode!r}")
    roi = None
    if coord == "tf_crop_and_resize":
        if not ctx.has(node, 1):
            raise ValidationError(f"{where(node)}: tf_crop_and_resize without a roi")
        roi = np.asarray(ctx.const_input(node, 1, "roi"), np.float64).reshape(-1)
    scales = None if scales is None or scales.size == 0 else scales
    sizes = None if sizes is None or sizes.size == 0 else sizes
    axes = [norm_axis(int(v), rank) for v in a["axes"]] if a.get("axes") is not None else list(range(rank))
    out, scl = _sizes_and_scales(a, shape, axes, scales, sizes)
    x = ctx.x(node, 0)
    if (
        rank == 4
        and mode != "cubic"
        and not antialias
        and roi is None
        and out[:2] == shape[:2]
        and (_webnn_computes(mode, coord, nearest, shape, out, scl))
    ):
        opts: dict[str, Any] = {"mode": "linear" if mode == "linear" else "nearest-neighbor"}
        if sizes is not None:
            opts["sizes"] = out[2:]
        else:
            opts["scales"] = scl[2:]
        ctx.emit("resample2d", [x], opts, out=node.output[0])
        return
    moved = [i for i in range(rank) if out[i] != shape[i] or scl[i] != 1.0]
    if mode != "nearest" and ctx.types[x].dtype not in ("float32", "float16"):
        raise UnsupportedError(f"{mode} Resize of {ctx.types[x].dtype}")
    if roi is not None and len(roi) != 2 * len(axes):
        raise ValidationError(f"{where(node)}: roi of {len(roi)} values for {len(axes)} axes")
    for k, i in enumerate(moved):
        dest = node.output[0] if k == len(moved) - 1 else None
        if roi is not None or mode == "cubic" or antialias:
            box = None if roi is None else (roi[axes.index(i)], roi[axes.index(i) + len(axes)])
            pos = _onnx_coords(shape[i], out[i], scl[i], coord, box)
            w, fill = filter_matrix(pos, shape[i], scl[i], mode, antialias, a, box)
            x = _apply_matrix(ctx, x, w, fill, i, rank, dest)
            continue
        pos = _onnx_coords(shape[i], out[i], scl[i], coord)
        if mode == "nearest":
            x = _gather(ctx, x, _round(pos, nearest, shape[i]), i, dest)
        else:
            x = _lerp(ctx, x, pos, shape[i], i, rank, dest)
    if not moved:
        ctx.alias(node.output[0], node.input[0])


def _no_runtime_shape(ctx: Converter, node: Any) -> None:
    """Scales or sizes computed at run time would make the output's shape depend on the data."""
    named = {1: "scales"} if node.op_type == "Upsample" or ctx.opset < 11 else {2: "scales", 3: "sizes"}
    for i, what in named.items():
        if ctx.has(node, i) and not ctx.is_const(node.input[i]):
            raise UnsupportedError(
                f"{node.op_type} by run-time {what}: the output shape depends on the data: {DATA_SHAPED}"
            )


def _sizes_and_scales(
    a: dict[str, Any], shape: list[int], axes: list[int], scales: np.ndarray | None, sizes: np.ndarray | None
) -> tuple[list[int], list[float]]:
    """Every axis's output size and the scale ONNX maps coordinates with."""
    rank = len(shape)
    out, scl = list(shape), [1.0] * rank
    if sizes is not None:
        got = [int(v) for v in sizes.reshape(-1)]
        if len(got) != len(axes):
            raise UnsupportedError(f"Resize sizes {got} for axes {axes}")
        ratios = [g / shape[ax] for g, ax in zip(got, axes)]
        policy = text(a.get("keep_aspect_ratio_policy", "stretch"))
        if policy != "stretch":  # one scale for every axis, sizes rounded from it (ONNX)
            s = {"not_larger": min, "not_smaller": max}[policy](ratios)
            ratios = [s] * len(axes)
            got = [int(s * shape[ax] + 0.5) for ax in axes]
        for ax, g, r in zip(axes, got, ratios):
            out[ax], scl[ax] = g, r
    elif scales is not None:
        got_s = [float(v) for v in scales.reshape(-1)]
        if len(got_s) != len(axes):
            raise UnsupportedError(f"Resize scales {got_s} for axes {axes}")
        for ax, s in zip(axes, got_s):
            out[ax], scl[ax] = int(math.floor(shape[ax] * s)), s
    else:
        raise UnsupportedError("Resize without scales or sizes")
    if min(out) < 1:
        raise UnsupportedError(f"Resize to {out}: {ZERO_SIZED}")
    return out, scl


def _webnn_computes(
    mode: str, coord: str, nearest: str, shape: list[int], out: list[int], scl: list[float]
) -> bool:
    """Whether resample2d over axes 2, 3 (its scale = out / in, or the given scales) is ONNX's Resize."""
    for i in (2, 3):
        webnn_scale = float(np.float32(scl[i]))
        if abs(out[i] / shape[i] - scl[i]) > 1e-6 * scl[i]:
            return False  # ONNX maps with a scale that is not out / in: keep its arithmetic
        if mode == "nearest":
            want = _round(_onnx_coords(shape[i], out[i], scl[i], coord), nearest, shape[i])
            got = np.floor((np.arange(out[i], dtype=np.float64) + 0.5) / webnn_scale)
            if not np.array_equal(want, np.clip(got, 0, shape[i] - 1).astype(np.int64)):
                return False
        elif not (coord == "half_pixel" or (coord == "pytorch_half_pixel" and out[i] > 1)):
            return False
    return True


def _onnx_coords(
    n_in: int, n_out: int, scale: float, coord: str, roi: tuple[float, float] | None = None
) -> np.ndarray:
    """ONNX's input coordinate of each output index along one axis (float64)."""
    o = np.arange(n_out, dtype=np.float64)
    if coord == "tf_crop_and_resize" and roi is not None:
        lo, hi = roi
        if n_out == 1:
            return np.full(1, (hi - lo) * (n_in - 1) / 2 + lo * (n_in - 1))
        return o * (hi - lo) * (n_in - 1) / (n_out - 1) + lo * (n_in - 1)
    if coord == "asymmetric":
        return o / scale
    if coord == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if coord == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(o)
    if coord == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    if coord == "align_corners":
        return o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(o)
    if coord == "half_pixel_symmetric":
        adjust = n_out / (scale * n_in)
        center = n_in / 2
        return center * (1 - adjust) + (o + 0.5) / scale - 0.5
    raise UnsupportedError(f"Resize coordinate_transformation_mode {coord!r}")


def _round(pos: np.ndarray, nearest: str, n_in: int) -> np.ndarray:
    if nearest == "floor":
        r = np.floor(pos)
    elif nearest == "ceil":
        r = np.ceil(pos)
    elif nearest == "round_prefer_ceil":
        r = np.floor(pos + 0.5)
    elif nearest == "round_prefer_floor":
        r = np.ceil(pos - 0.5)
    else:
        raise UnsupportedError(f"Resize nearest_mode {nearest!r}")
    return np.clip(r, 0, n_in - 1).astype(np.int64)


def _gather(ctx: Converter, x: str, idx: np.ndarray, axis: int, dest: str | None) -> str:
    ind = ctx.new_const(f"{ctx.namer.of(ctx.node.output[0])}/index{axis}", idx.astype(np.int32))
    return ctx.emit("gather", [x, ind], {"axis": axis}, out=dest)


def _lerp(ctx: Converter, x: str, pos: np.ndarray, n_in: int, axis: int, rank: int, dest: str | None) -> str:
    """Linear interpolation along one axis: the two neighbours (indices clamped into the input, as ONNX's
    edge padding does) blended by the fractional part."""
    lo = np.floor(pos)
    frac = (pos - lo).reshape([-1 if i == axis else 1 for i in range(rank)])
    i0, i1 = (np.clip(v, 0, n_in - 1).astype(np.int64) for v in (lo, lo + 1))
    a, b = _gather(ctx, x, i0, axis, None), _gather(ctx, x, i1, axis, None)
    dt = DTYPES[ctx.types[x].dtype]
    hint = f"{ctx.namer.of(ctx.node.output[0])}/weight{axis}"
    w1 = ctx.new_const(hint, frac.astype(dt))
    # a + (b - a) * w1 would differ from ONNX's a * (1 - w) + b * w in the last bit: use ONNX's form
    w0 = ctx.new_const(hint, (1.0 - frac).astype(dt))
    return ctx.emit("add", [ctx.emit("mul", [a, w0]), ctx.emit("mul", [b, w1])], out=dest)


def _coeffs(ratio: float, scale: float, mode: str, antialias: bool, cubic_a: float) -> np.ndarray:
    """ONNX's filter taps for a fractional position `ratio` in (0, 1] past the left neighbour (Keys' cubic
    with coefficient `cubic_a`, or linear; antialiased: stretched by 1 / scale when downsampling and
    normalized)."""
    s = min(scale, 1.0) if antialias else 1.0

    def cubic(u: np.ndarray) -> np.ndarray:
        u = np.abs(u)
        near = ((cubic_a + 2) * u - (cubic_a + 3)) * u * u + 1
        far = ((cubic_a * u - 5 * cubic_a) * u + 8 * cubic_a) * u - 4 * cubic_a
        return np.where(u <= 1, near, np.where(u < 2, far, 0.0))

    support = 2 if mode == "cubic" else 1
    start = int(np.floor(-support / s) + 1)
    offsets = np.arange(start, 2 - start, dtype=np.float64)  # taps relative to the left neighbour + 1
    u = (offsets - ratio) * s
    c = cubic(u) if mode == "cubic" else np.clip(1 - np.abs(u), 0, 1)
    return c / c.sum() if antialias else c


def filter_matrix(
    pos: np.ndarray, n_in: int, scale: float, mode: str, antialias: bool, a: dict[str, Any], roi: Any
) -> tuple[np.ndarray, np.ndarray | None]:
    """(W [n_out, n_in], fill) with Resize along one axis = W @ x + fill: ONNX's taps at each position (the
    nearest ones, the left preferred; edge-clamped, or dropped and renormalized with exclude_outside), and
    for tf_crop_and_resize positions outside the input the extrapolation value (fill, else None)."""
    cubic_a = float(a.get("cubic_coeff_a", -0.75))
    exclude = bool(int(a.get("exclude_outside", 0)))
    w = np.zeros((len(pos), n_in), np.float64)
    fill = np.zeros(len(pos), np.float64)
    outside = np.zeros(len(pos), bool)
    for o, x in enumerate(pos):
        if roi is not None and (x < 0 or x > n_in - 1):
            outside[o] = True
            fill[o] = float(a.get("extrapolation_value", 0.0))
            continue
        ratio = 1.0 if float(x).is_integer() else x - np.floor(x)
        c = _coeffs(ratio, scale, mode, antialias, cubic_a)
        taps = int(np.ceil(x)) - len(c) // 2 + np.arange(len(c))
        if exclude:
            c = np.where((taps >= 0) & (taps < n_in), c, 0.0)
            c = c / c.sum()
        np.add.at(w[o], np.clip(taps, 0, n_in - 1), c)
    return w, (fill if outside.any() else None)


def _apply_matrix(
    ctx: Converter, x: str, w: np.ndarray, fill: np.ndarray | None, axis: int, rank: int, dest: str | None
) -> str:
    """W @ x along `axis` (+ fill): the axis moved last, a matmul with W^T, moved back."""
    dt = DTYPES[ctx.types[x].dtype]
    hint = f"{ctx.namer.of(ctx.node.output[0])}/filter{axis}"
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank)]
    t = ctx.emit("transpose", [x], {"permutation": perm}) if axis != rank - 1 else x
    y = ctx.emit("matmul", [t, ctx.new_const(hint, w.T.astype(dt))])
    if fill is not None:
        y = ctx.emit("add", [y, ctx.new_const(f"{hint}/fill", fill.astype(dt))])
    if axis == rank - 1:
        return ctx.emit("identity", [y], out=dest) if dest else y
    return ctx.emit("transpose", [y], {"permutation": back}, out=dest)
