"""ONNX RoiAlign: bilinear samples on a regular grid in each region of interest, averaged or max-pooled per
output bin. The regions are run-time values, so the samples are run-time gathers (as GridSample's); the
output shape is static: [num_rois, C, output_height, output_width]."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, text, where
from .ops_spatial import Scalars, flat_pixels
from .refusals import RUN_TIME_PARAMETER
from .registry import onnx_op


def _axis_taps(
    ctx: Converter, k: Scalars, start: str, extent: str, bins: int, grid: int, size: int, like: str
) -> list[tuple[str, str]]:
    """The two bilinear taps per sample along one axis as (int32 index [R, bins * grid], weight [R, bins *
    grid]); the weight is 0 for a sample beyond one pixel outside the image (ONNX/onnxruntime RoiAlign)."""
    e = ctx.emit
    # sample j of bin p sits at start + extent / bins * (p + (j + 0.5) / grid)
    frac = np.array(
        [p + (j + 0.5) / grid for p in range(bins) for j in range(grid)], DTYPES[ctx.types[like].dtype]
    )
    steps = ctx.new_const(f"{ctx.namer.of(ctx.node.output[0])}/steps", frac.reshape(1, -1))
    pos = e("add", [start, e("mul", [e("div", [extent, k(float(bins))]), steps])])
    inside = e("logicalAnd", [e("greaterOrEqual", [pos, k(-1.0)]), e("lesserOrEqual", [pos, k(float(size))])])
    pos = e("clamp", [pos], {"minValue": 0.0, "maxValue": float(size - 1)})
    low = e("floor", [pos])
    frac_w = e("sub", [pos, low])  # 0 at the last pixel (clamped there), as the reference's y_low >= H - 1
    high = e("clamp", [e("add", [low, k(1.0)])], {"maxValue": float(size - 1)})
    zero = k(0.0)
    w_low = e("where", [inside, e("sub", [k(1.0), frac_w]), zero])
    w_high = e("where", [inside, frac_w, zero])
    return [(e("cast", [low], {"type": "int32"}), w_low), (e("cast", [high], {"type": "int32"}), w_high)]


@onnx_op("RoiAlign")
def roi_align(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x, rois = ctx.x(node, 0), ctx.x(node, 1)
    xs = ctx.static_shape(node.input[0], "RoiAlign")
    rs = ctx.static_shape(node.input[1], "RoiAlign")
    bs = ctx.static_shape(node.input[2], "RoiAlign")
    if len(xs) != 4 or len(rs) != 2 or rs[1] != 4 or list(bs) != [rs[0]]:
        raise ValidationError(f"{where(node)}: X {list(xs)}, rois {list(rs)}, batch_indices {list(bs)}")
    if ctx.types[x].dtype not in ("float32", "float16"):
        raise UnsupportedError(f"RoiAlign of {ctx.types[x].dtype} (float32/float16 only)")
    mode = text(a.get("mode", "avg"))
    half = text(
        a.get("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    )
    if mode not in ("avg", "max") or half not in ("half_pixel", "output_half_pixel"):
        raise UnsupportedError(f"RoiAlign mode {mode!r} coordinate_transformation_mode {half!r}")
    oh, ow = int(a.get("output_height", 1)), int(a.get("output_width", 1))
    ratio = int(a.get("sampling_ratio", 0))
    scale = float(a.get("spatial_scale", 1.0))
    if oh < 1 or ow < 1 or ratio < 0:
        raise ValidationError(f"{where(node)}: output {oh}x{ow}, sampling_ratio {ratio}")
    if ratio == 0:  # ceil(roi size / output size) samples per bin: a count from the run-time rois
        raise UnsupportedError(f"RoiAlign with sampling_ratio 0: {RUN_TIME_PARAMETER}")
    n, c, h, w = xs
    r = rs[0]
    e = ctx.emit
    hint = ctx.namer.of(node.output[0])

    k = Scalars(ctx, rois)

    def coord(i: int) -> str:  # rois column i ([x1, y1, x2, y2]) in input pixels, [R, 1]
        col = e("slice", [rois], {"starts": [0, i], "sizes": [r, 1]})
        col = e("mul", [col, k(scale)])
        return e("sub", [col, k(0.5)]) if half == "half_pixel" else col

    x1, y1, x2, y2 = (coord(i) for i in range(4))
    ext_w, ext_h = e("sub", [x2, x1]), e("sub", [y2, y1])
    if half == "output_half_pixel":  # the legacy mode makes every roi at least 1 x 1
        ext_w = e("max", [ext_w, k(1.0)])
        ext_h = e("max", [ext_h, k(1.0)])
    ys = _axis_taps(ctx, k, y1, ext_h, oh, ratio, h, rois)
    xs_ = _axis_taps(ctx, k, x1, ext_w, ow, ratio, w, rois)
    p, q = oh * ratio, ow * ratio
    batch = ctx.x(node, 2)
    if ctx.types[batch].dtype != "int32":
        batch = e("cast", [batch], {"type": "int32"})
    base = e(
        "mul",
        [
            e("reshape", [batch], {"newShape": [r, 1, 1]}),
            ctx.new_const(f"{hint}/hw", np.array(h * w, np.int32)),
        ],
    )
    flat_x = flat_pixels(ctx, x, n, c, h * w)
    width = ctx.new_const(f"{hint}/w", np.array(w, np.int32))
    xdt = ctx.types[x].dtype
    acc = ""
    for yi, wy in ys:
        row = e("add", [base, e("reshape", [e("mul", [yi, width])], {"newShape": [r, p, 1]})])
        for xi, wx in xs_:
            idx = e("add", [row, e("reshape", [xi], {"newShape": [r, 1, q]})])
            wt = e(
                "mul",
                [e("reshape", [wy], {"newShape": [r, p, 1]}), e("reshape", [wx], {"newShape": [r, 1, q]})],
            )
            if ctx.types[wt].dtype != xdt:
                wt = e("cast", [wt], {"type": xdt})
            v = e(
                "mul",
                [e("gather", [flat_x, idx], {"axis": 0}), e("reshape", [wt], {"newShape": [r, p, q, 1]})],
            )
            acc = v if not acc else e("add" if mode == "avg" else "max", [acc, v])
    # [R, oh, ratio, ow, ratio, C]: reduce each bin's samples
    acc = e("reshape", [acc], {"newShape": [r, oh, ratio, ow, ratio, c]})
    red = "reduceMean" if mode == "avg" else "reduceMax"
    y = e(red, [acc], {"axes": [2, 4], "keepDimensions": False})
    e("transpose", [y], {"permutation": [0, 3, 1, 2]}, out=node.output[0])
