"""resample2d → XNNStaticResizeBilinear2D when it computes exactly WebNN's rule (linear, NHWC data, output
size = input size × scale, so XNN's half-pixel mapping (x + 0.5)·in/out − 0.5 is WebNN's
(x + 0.5)/scale − 0.5), else WXResample2d over the two axes with the effective scales."""

from __future__ import annotations

from ..ir import NCHW_TO_NHWC, LGraph, LNode
from ..registry import LayoutRule, RuleCtx, enum_value, layout_rule, lowers, operand


def _axes(node: LNode) -> list[int]:
    return [int(a) for a in (node.attrs.get("axes") or [2, 3])]


def _resample_permute(node: LNode, graph: LGraph) -> None:
    node.attrs["axes"] = [NCHW_TO_NHWC.index(a) for a in _axes(node)]


# in an NHWC region the spatial axes [2, 3] are physical [1, 2]; other axes leave the region
layout_rule(
    LayoutRule("permute", permute=_resample_permute, ok=lambda node, graph: _axes(node) == [2, 3]),
    "resample2d",
)


@lowers("resample2d")
def lower_resample2d(ctx: RuleCtx, node: LNode) -> None:
    x = operand(node, "input", 0)
    out = node.outputs[0]
    axes = _axes(node)
    in_shape, out_shape = ctx.shape(x), ctx.shape(out)
    sizes = [int(out_shape[a]) for a in axes]
    scales = [
        float(s)
        for s in (node.attrs.get("scales") or [sizes[i] / int(in_shape[a]) for i, a in enumerate(axes)])
    ]
    mode = node.attrs.get("mode") or "nearest-neighbor"
    exact = all(abs(scales[i] * int(in_shape[a]) - sizes[i]) <= 1e-6 * sizes[i] for i, a in enumerate(axes))
    if mode == "linear" and axes == [1, 2] and exact and ctx.val(x).dtype == "float32":
        ctx.emit(
            "XNNStaticResizeBilinear2D",
            {"input_id": x},
            out,
            new_height=sizes[0],
            new_width=sizes[1],
            flags=0,
        )
        return
    ctx.emit(
        "WXResample2d",
        {"input_id": x},
        out,
        mode=enum_value("WXResampleMode", mode.replace("-", "_")),
        axes=axes,
        scales=scales,
    )
