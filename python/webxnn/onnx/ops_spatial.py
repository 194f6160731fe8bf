"""ONNX ops on image coordinates: AffineGrid (a constant grid of normalized pixel centres times theta), Col2Im
(a scatter-add of patches, as a matmul with a constant 0/1 matrix) and GridSample (run-time gathers)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, text, where
from .ops_decomposed import scalar
from .refusals import LARGE_SCATTER
from .registry import onnx_op

# Col2Im's 0/1 matrix: at most this many entries (64 MB as float32)
COL2IM_MAX_ENTRIES = 1 << 24


def normalized_centres(n: int, align_corners: bool) -> np.ndarray:
    """The n pixel positions of an axis in [-1, 1] coordinates (ONNX AffineGrid/GridSample): the corner
    pixels' centres at -1 and 1 with align_corners, else the axis' outer edges there."""
    i = np.arange(n, dtype=np.float64)
    if align_corners:
        return -1.0 + 2.0 * i / (n - 1) if n > 1 else np.full(n, -1.0)
    return (2.0 * i + 1.0) / n - 1.0


def _float(ctx: Converter, node: Any, i: int) -> str:
    x = ctx.x(node, i)
    if ctx.types[x].dtype not in ("float32", "float16"):
        raise UnsupportedError(f"{node.op_type} of {ctx.types[x].dtype} (float32/float16 only)")
    return x


@onnx_op("AffineGrid")
def affine_grid(ctx: Converter, node: Any) -> None:
    theta = _float(ctx, node, 0)
    size = ctx.const_ints(node, 1, "size")
    spatial = size[2:]
    r = len(spatial)
    tshape = ctx.static_shape(node.input[0], "AffineGrid")
    if r not in (2, 3) or list(tshape) != [size[0], r, r + 1] or min(size) < 1:
        raise ValidationError(f"{where(node)}: theta {list(tshape)} does not fit size {size}")
    align = bool(int(attrs_of(node).get("align_corners", 0)))
    mesh = np.meshgrid(*[normalized_centres(n, align) for n in spatial], indexing="ij")
    # homogeneous points [x, y(, z), 1] (x runs along the last axis), one row per output position
    pts = np.stack([m.reshape(-1) for m in mesh[::-1]] + [np.ones(mesh[0].size)], axis=1)
    npdt = DTYPES[ctx.types[theta].dtype]
    base = ctx.new_const(f"{ctx.namer.of(node.output[0])}/points", pts[None].astype(npdt))
    tt = ctx.emit("transpose", [theta], {"permutation": [0, 2, 1]})
    grid = ctx.emit("matmul", [base, tt])  # [N, positions, r]
    ctx.emit("reshape", [grid], {"newShape": [size[0], *spatial, r]}, out=node.output[0])


def col2im_matrix(
    image: list[int], block: list[int], dil: list[int], pads: list[int], strides: list[int]
) -> np.ndarray:
    """M [prod(block) * L, prod(image)] with Col2Im(x) = x @ M per (batch, channel): entry 1 where patch
    element b of block position l lands (none where it lands on padding)."""
    r = len(image)
    counts = [
        (image[d] + pads[d] + pads[d + r] - dil[d] * (block[d] - 1) - 1) // strides[d] + 1 for d in range(r)
    ]
    if min(counts) < 1:
        raise UnsupportedError(f"Col2Im with no sliding blocks ({counts})")
    b_idx = np.indices(block).reshape(r, -1)  # [r, kb]
    l_idx = np.indices(counts).reshape(r, -1)  # [r, L]
    kb, n_l = b_idx.shape[1], l_idx.shape[1]
    pos = [
        l_idx[d][None, :] * strides[d] - pads[d] + b_idx[d][:, None] * dil[d] for d in range(r)
    ]  # each [kb, L]
    inside = np.all([(p >= 0) & (p < image[d]) for d, p in enumerate(pos)], axis=0)
    flat = np.ravel_multi_index([np.where(inside, p, 0) for p in pos], image)
    m = np.zeros((kb * n_l, math.prod(image)), np.float32)
    rows = np.arange(kb * n_l).reshape(kb, n_l)
    m[rows[inside], flat[inside]] = 1.0
    return m


@onnx_op("Col2Im")
def col2im(ctx: Converter, node: Any) -> None:
    x = _float(ctx, node, 0)
    image = ctx.const_ints(node, 1, "image_shape")
    block = ctx.const_ints(node, 2, "block_shape")
    r = len(image)
    a = attrs_of(node)
    dil = [int(v) for v in a.get("dilations", [1] * r)]
    pads = [int(v) for v in a.get("pads", [0] * 2 * r)]
    strides = [int(v) for v in a.get("strides", [1] * r)]
    shape = ctx.static_shape(node.input[0], "Col2Im")
    kb = math.prod(block)
    if (
        len(shape) != 3
        or len(block) != r
        or min(image + block + dil + strides) < 1
        or len(dil) != r
        or len(strides) != r
        or len(pads) != 2 * r
        or shape[1] % kb
    ):
        raise ValidationError(f"{where(node)}: input {list(shape)} does not fit image {image}, block {block}")
    entries = kb * shape[2] * math.prod(image)
    if entries > COL2IM_MAX_ENTRIES:
        raise UnsupportedError(f"Col2Im to a {image} image from {shape[2]} blocks: {LARGE_SCATTER}")
    m = col2im_matrix(image, block, dil, pads, strides)
    if m.shape[0] != kb * shape[2]:
        raise ValidationError(f"{where(node)}: {shape[2]} blocks, but image {image} has {m.shape[0] // kb}")
    n, c = shape[0], shape[1] // kb
    npdt = DTYPES[ctx.types[x].dtype]
    mat = ctx.new_const(f"{ctx.namer.of(node.output[0])}/scatter", m.astype(npdt))
    y = ctx.emit("matmul", [ctx.emit("reshape", [x], {"newShape": [n, c, kb * shape[2]]}), mat])
    ctx.emit("reshape", [y], {"newShape": [n, c, *image]}, out=node.output[0])


class Scalars:
    """0-D constants in one dtype, made once per value (GridSample, RoiAlign, DeformConv)."""

    def __init__(self, ctx: Converter, like: str) -> None:
        self.ctx, self.like = ctx, like
        self.made: dict[float, str] = {}

    def __call__(self, v: float) -> str:
        if v not in self.made:
            self.made[v] = scalar(self.ctx, v, self.like, "k")
        return self.made[v]


def flat_pixels(ctx: Converter, x: str, n: int, c: int, pixels: int) -> str:
    """X [N, C, *spatial] as [N * pixels, C], one row per pixel: what the run-time bilinear/cubic gathers read
    (the batch folded into the row index)."""
    e = ctx.emit
    return e(
        "reshape",
        [e("transpose", [e("reshape", [x], {"newShape": [n, c, pixels]})], {"permutation": [0, 2, 1]})],
        {"newShape": [n * pixels, c]},
    )


def _reflect(ctx: Converter, k: Scalars, c: str, lo: float, hi: float) -> str:
    """c folded back into [lo, hi] by reflecting at the borders as often as it takes (ONNX GridSample)."""
    e = ctx.emit
    rng = hi - lo
    if rng <= 0:
        return e("mul", [c, k(0.0)])
    below, above = e("lesser", [c, k(lo)]), e("greater", [c, k(hi)])
    dx = e("where", [below, e("sub", [k(lo), c]), e("sub", [c, k(hi)])])
    n = e("floor", [e("div", [dx, k(rng)])])
    rest = e("sub", [dx, e("mul", [n, k(rng)])])
    even = e("equal", [e("sub", [n, e("mul", [e("floor", [e("div", [n, k(2.0)])]), k(2.0)])]), k(0.0)])
    from_lo = e("where", [below, even, e("logicalNot", [even])])
    folded = e("where", [from_lo, e("add", [k(lo), rest]), e("sub", [k(hi), rest])])
    return e("where", [e("logicalOr", [below, above]), folded, c])


def _cubic_weights(ctx: Converter, k: Scalars, t: str) -> list[str]:
    """Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for the fraction t."""
    e = ctx.emit
    a = -0.75

    def outer(u: str) -> str:  # ((a u - 5a) u + 8a) u - 4a, for 1 < u < 2
        p = e("sub", [e("mul", [u, k(a)]), k(5 * a)])
        return e("sub", [e("mul", [e("add", [e("mul", [p, u]), k(8 * a)]), u]), k(4 * a)])

    def inner(u: str) -> str:  # ((a + 2) u - (a + 3)) u u + 1, for 0 <= u <= 1
        p = e("sub", [e("mul", [u, k(a + 2)]), k(a + 3)])
        return e("add", [e("mul", [e("mul", [p, u]), u]), k(1.0)])

    one_minus = e("sub", [k(1.0), t])
    return [outer(e("add", [t, k(1.0)])), inner(t), inner(one_minus), outer(e("sub", [k(2.0), t]))]


_MODES = {
    "bilinear": "linear",
    "bicubic": "cubic",
    "linear": "linear",
    "cubic": "cubic",
    "nearest": "nearest",
}


@onnx_op("GridSample")
def grid_sample(ctx: Converter, node: Any) -> None:
    """Each output position reads its taps from X with run-time gathers (X flattened to [N * pixels, C], the
    batch folded into the index) and sums them with their weights, as ONNX's reference does per pixel:
    coordinates unnormalized, rounded half to even (nearest), moved in by the padding mode when outside,
    then every tap clamped (border), reflected (reflection) or zeroed (zeros) on its own."""
    a = attrs_of(node)
    x, grid = _float(ctx, node, 0), _float(ctx, node, 1)
    xs = ctx.static_shape(node.input[0], "GridSample")
    gs = ctx.static_shape(node.input[1], "GridSample")
    r = len(xs) - 2
    if r < 1 or len(gs) != r + 2 or gs[-1] != r or gs[0] != xs[0]:
        raise ValidationError(f"{where(node)}: grid {list(gs)} does not fit X {list(xs)}")
    mode = _MODES.get(text(a.get("mode", "linear" if ctx.opset >= 20 else "bilinear")), "")
    pad = text(a.get("padding_mode", "zeros"))
    if not mode or pad not in ("zeros", "border", "reflection"):
        raise UnsupportedError(f"GridSample mode {a.get('mode')!r} padding {pad!r}")
    align = bool(int(a.get("align_corners", 0)))
    n, c, size, out = xs[0], xs[1], list(xs[2:]), list(gs[1:-1])
    p_out, p_in = math.prod(out), math.prod(size)
    e = ctx.emit
    g = e("reshape", [grid], {"newShape": [n, p_out, r]})
    k = Scalars(ctx, g)
    taps: list[list[tuple[str, str | None]]] = []  # per spatial dim: (tap position, its weight)
    for d in range(r):
        s = size[d]
        comp = e("slice", [g], {"starts": [0, 0, r - 1 - d], "sizes": [n, p_out, 1]})
        co = e("add", [e("reshape", [comp], {"newShape": [n, p_out]}), k(1.0)])
        if align:
            co = e("mul", [e("div", [co, k(2.0)]), k(float(s - 1))])
        else:
            co = e("div", [e("sub", [e("mul", [co, k(float(s))]), k(1.0)]), k(2.0)])
        if mode == "nearest":
            co = e("roundEven", [co])
        lo, hi = (0.0, s - 1.0) if align else (-0.5, s - 0.5)
        if pad == "border":
            outside = e("logicalOr", [e("lesser", [co, k(lo)]), e("greater", [co, k(hi)])])
            co = e("where", [outside, e("clamp", [co], {"minValue": 0.0, "maxValue": float(s - 1)}), co])
        elif pad == "reflection":
            co = _reflect(ctx, k, co, lo, hi)
        if mode == "nearest":  # the reference truncates the (possibly reflected) coordinate
            taps.append([(e("where", [e("lesser", [co, k(0.0)]), e("ceil", [co]), e("floor", [co])]), None)])
            continue
        f = e("floor", [co])
        t = e("sub", [co, f])
        if mode == "linear":
            taps.append([(f, e("sub", [k(1.0), t])), (e("add", [f, k(1.0)]), t)])
        else:
            w = _cubic_weights(ctx, k, t)
            taps.append([(e("add", [f, k(float(j))]), w[j + 1]) for j in (-1, 0, 1, 2)])

    def resolve(pos: str, s: int, lo: float, hi: float) -> tuple[str, str | None]:
        """(int32 index in 0..s-1, in-bounds mask for zeros padding) of a tap position."""
        valid = None
        if pad == "zeros":
            valid = e("logicalAnd", [e("greaterOrEqual", [pos, k(0.0)]), e("lesser", [pos, k(float(s))])])
        elif pad == "reflection":
            pos = _reflect(ctx, k, pos, lo, hi)
        pos = e("floor", [e("clamp", [pos], {"minValue": 0.0, "maxValue": float(s - 1)})])
        return e("cast", [pos], {"type": "int32"}), valid

    resolved = []
    for d in range(r):
        lo, hi = (0.0, size[d] - 1.0) if align else (-0.5, size[d] - 0.5)
        resolved.append([(*resolve(pos, size[d], lo, hi), w) for pos, w in taps[d]])
    strides = [math.prod(size[d + 1 :]) for d in range(r)]
    hint = ctx.namer.of(node.output[0])
    base = ctx.new_const(f"{hint}/batch", (np.arange(n, dtype=np.int32) * p_in).reshape(n, 1))
    flat_x = flat_pixels(ctx, x, n, c, p_in)
    xdt = ctx.types[x].dtype
    zero = scalar(ctx, 0.0, x, "zero")
    acc = ""
    for combo in itertools.product(*resolved):
        idx = base
        weight: str | None = None
        valid: str | None = None
        for d, (i, ok, w) in enumerate(combo):
            term = (
                i
                if strides[d] == 1
                else e("mul", [i, ctx.new_const(f"{hint}/stride", np.array(strides[d], np.int32))])
            )
            idx = e("add", [idx, term])
            if w is not None:
                weight = w if weight is None else e("mul", [weight, w])
            if ok is not None:
                valid = ok if valid is None else e("logicalAnd", [valid, ok])
        v = e("gather", [flat_x, idx], {"axis": 0})  # [n, p_out, c]
        if valid is not None:
            v = e("where", [e("reshape", [valid], {"newShape": [n, p_out, 1]}), v, zero])
        if weight is not None:
            if ctx.types[weight].dtype != xdt:
                weight = e("cast", [weight], {"type": xdt})
            v = e("mul", [v, e("reshape", [weight], {"newShape": [n, p_out, 1]})])
        acc = v if not acc else e("add", [acc, v])
    y = e("transpose", [acc], {"permutation": [0, 2, 1]})
    e("reshape", [y], {"newShape": [n, c, *out]}, out=node.output[0])
