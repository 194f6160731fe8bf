"""conv2d → XNNConv2d / XNNDepthwiseConv2d, convTranspose2d → XNNConvTranspose2d.

After the layout pass the activation input is NHWC (physically), whatever the op's inputLayout. Filters are
brought to XNN's layouts here: OHWI for convolutions, 1HWO for depthwise, per-group OHWI for transposed
convolutions — by numpy at compile time when constant, else by a StaticTranspose node.
"""

from __future__ import annotations

from typing import Any

from ...ops.shapes import need_int
from ..ir import LNode
from ..registry import LayoutRule, RuleCtx, layout_rule, lowers, operand

layout_rule(
    LayoutRule("sensitive", option="inputLayout", nchw="nchw", data_role="input"), "conv2d", "convTranspose2d"
)

# filterLayout → permutation that makes it OHWI ([out, kh, kw, in/groups])
CONV_FILTER_TO_OHWI = {"oihw": (0, 2, 3, 1), "hwio": (3, 0, 1, 2), "ohwi": (0, 1, 2, 3), "ihwo": (3, 1, 2, 0)}
# convTranspose2d filterLayout → permutation that makes it IOHW ([in, out/groups, kh, kw])
DECONV_FILTER_TO_IOHW = {"iohw": (0, 1, 2, 3), "hwoi": (3, 2, 0, 1), "ohwi": (3, 0, 1, 2)}


def pair(v: Any, default: int) -> tuple[int, int]:
    if v is None:
        return default, default
    return int(v[0]), int(v[1])


def padding(node: LNode) -> tuple[int, int, int, int]:
    """(top, bottom, left, right): `ops.bind` resolved autoPad into explicit `padding` already."""
    t, b, left, r = node.attrs.get("padding") or (0, 0, 0, 0)
    return int(t), int(b), int(left), int(r)


def _bias(ctx: RuleCtx, node: LNode) -> str | None:
    return operand(node, "bias", 2)


def _conv_fields(
    pads: tuple[int, int, int, int],
    k: tuple[int, int],
    s: tuple[int, int],
    d: tuple[int, int],
    gic: int,
    goc: int,
    groups: int,
    adj: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    t, b, left, r = pads
    return dict(
        padding_top=t,
        padding_right=r,
        padding_bottom=b,
        padding_left=left,
        kernel_height=k[0],
        kernel_width=k[1],
        subsampling_height=s[0],
        subsampling_width=s[1],
        dilation_height=d[0],
        dilation_width=d[1],
        group_input_channels=gic,
        group_output_channels=goc,
        groups=groups,
        adjustment_height=adj[0],
        adjustment_width=adj[1],
        flags=0,
    )


@lowers("conv2d")
def lower_conv2d(ctx: RuleCtx, node: LNode) -> None:
    x, w = operand(node, "input", 0), operand(node, "filter", 1)
    n, h, wd, cin = ctx.shape(x)
    groups = int(node.attrs.get("groups") or 1)
    layout = node.attrs.get("filterLayout") or "oihw"
    w = ctx.transpose(w, CONV_FILTER_TO_OHWI[layout], "ohwi")
    o, kh, kw, gic = (int(d) for d in ctx.shape(w))
    strides, dils = pair(node.attrs.get("strides"), 1), pair(node.attrs.get("dilations"), 1)
    need_int(h, "conv2d input height"), need_int(wd, "conv2d input width")  # XNN convs have static geometry
    pads = padding(node)
    goc = o // groups
    bias = _bias(ctx, node)
    operands = {"input1_id": x, "filter_id": w, "bias_id": bias}
    if groups > 1 and gic == 1 and groups == cin:
        # depthwise: XNN wants the filter as [1, kh, kw, C·multiplier] (1HWO)
        operands["filter_id"] = ctx.transpose(w, (3, 1, 2, 0), "1hwo")
        ctx.emit(
            "XNNDepthwiseConv2d",
            operands,
            node.outputs[0],
            **_conv_fields(pads, (kh, kw), strides, dils, 1, goc, groups),
        )
        return
    ctx.emit(
        "XNNConv2d",
        operands,
        node.outputs[0],
        **_conv_fields(pads, (kh, kw), strides, dils, gic, goc, groups),
    )


@lowers("convTranspose2d")
def lower_conv_transpose2d(ctx: RuleCtx, node: LNode) -> None:
    x, w = operand(node, "input", 0), operand(node, "filter", 1)
    n, h, wd, cin = ctx.shape(x)
    groups = int(node.attrs.get("groups") or 1)
    layout = node.attrs.get("filterLayout") or "iohw"
    w = ctx.transpose(w, DECONV_FILTER_TO_IOHW[layout], "iohw")
    i, goc, kh, kw = (int(d) for d in ctx.shape(w))
    gic = i // groups
    # [g·gic, goc, kh, kw] → per group OHWI → [g·goc, kh, kw, gic]
    if groups == 1:
        w = ctx.transpose(w, (1, 2, 3, 0), "ohwi")
    else:
        # [g, gic, goc, kh, kw] → [g, goc, kh, kw, gic]: numpy when constant, else reshape/transpose nodes
        # (a filter that is a graph input is packed by the runtime on every run)
        w = ctx.reshape(w, (groups, gic, goc, kh, kw), "grouped")
        w = ctx.transpose(w, (0, 2, 3, 4, 1), "gohwi")
        w = ctx.reshape(w, (groups * goc, kh, kw, gic), "ohwi")
    strides, dils = pair(node.attrs.get("strides"), 1), pair(node.attrs.get("dilations"), 1)
    in_hw = (need_int(h, "convTranspose2d input height"), need_int(wd, "convTranspose2d input width"))
    pads = padding(node)
    # the output size (from outputSizes or outputPadding) decides XNN's adjustment
    _, oh, ow, _ = ctx.shape(node.outputs[0])
    adj = []
    for size, out, k, s, d, pb, pe in (
        (in_hw[0], oh, kh, strides[0], dils[0], pads[0], pads[1]),
        (in_hw[1], ow, kw, strides[1], dils[1], pads[2], pads[3]),
    ):
        base = (size - 1) * s + d * (k - 1) + 1 - pb - pe
        a = int(out) - base
        if not 0 <= a < max(s, 1) and not (a == 0):
            ctx.unsupported(
                f"convTranspose2d output size {out} needs an output padding of {a}, "
                f"which must be below the stride {s}"
            )
        adj.append(a)
    ctx.emit(
        "XNNConvTranspose2d",
        {"input1_id": x, "filter_id": w, "bias_id": _bias(ctx, node)},
        node.outputs[0],
        **_conv_fields(pads, (kh, kw), strides, dils, gic, goc, groups, tuple(adj)),
    )
