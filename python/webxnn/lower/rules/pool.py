"""maxPool2d / averagePool2d → XNNMaxPooling2d / XNNAvgPooling2d / XNNGlobalAvgPooling2d (NHWC input).

The output size (floor or ceil rounding, or outputSizes) is taken from the inferred output type; any rows or
columns that ceil rounding adds become extra bottom/right padding. Both WebNN (webnn-baseline and WPT cases)
and XNN leave padding out of the average's divisor, so padded average pools lower directly.
"""

from __future__ import annotations

from ...graph import DynDim
from ...ops.shapes import need_int
from ..ir import LNode
from ..registry import LayoutRule, RuleCtx, enum_value, layout_rule, lowers, operand
from .conv import padding, pair

layout_rule(
    LayoutRule("sensitive", option="layout", nchw="nchw", data_role="input"),
    "maxPool2d",
    "averagePool2d",
    "l2Pool2d",
)

FLAG_KEEP_DIMS = 0x40


def _lower_pool(ctx: RuleCtx, node: LNode, kind: str) -> None:
    x, y = operand(node, "input", 0), node.outputs[0]
    dt = ctx.val(x).dtype
    if kind == "XNNMaxPooling2d" and dt in ("int8", "uint8"):
        # Plain 8-bit values (quantized ones are float32 here: the qdq pass makes their pool an int8
        # XNNMaxPooling2d later): the kernels pool floats, and every 8-bit value is exact in float32.
        xf, yf = (
            ctx.new_value(f"{v}.f32", "float32", ctx.shape(v), layout=ctx.val(v).layout) for v in (x, y)
        )
        ctx.emit("WXUnary", {"input_id": x}, xf, op="cast")
        _pool(ctx, node, kind, xf, yf)
        ctx.emit("WXUnary", {"input_id": yf}, y, op="cast")
        return
    _pool(ctx, node, kind, x, y)


def _pool(ctx: RuleCtx, node: LNode, kind: str, x: str, y: str) -> None:
    """Pool `x` into `y` with `node`'s window attributes."""
    _, h, w, _ = ctx.shape(x)
    _, oh, ow, _ = ctx.shape(y)
    win = node.attrs.get("windowDimensions")
    global_window = win is None
    if win is None:
        kh, kw = need_int(h, "pool input height"), need_int(w, "pool input width")
    else:
        kh, kw = pair(win, 1)
    strides, dils = pair(node.attrs.get("strides"), 1), pair(node.attrs.get("dilations"), 1)
    t, b, left, r = padding(node)
    if isinstance(h, DynDim) or isinstance(w, DynDim):
        ctx.unsupported("pooling over a dynamic spatial dimension")
    whole = global_window or (kh, kw) == (h, w)
    if (
        kind == "XNNAvgPooling2d"
        and whole
        and ctx.val(x).dtype == "float32"
        and (t, b, left, r) == (0, 0, 0, 0)
        and dils == (1, 1)
    ):
        ctx.emit("XNNGlobalAvgPooling2d", {"input_id": x}, y, flags=FLAG_KEEP_DIMS)
        return
    # ceil rounding / outputSizes: pad the bottom/right so that XNN's floor rounding gives the same size
    b += max(0, (int(oh) - 1) * strides[0] + dils[0] * (kh - 1) + 1 - (h + t + b))
    r += max(0, (int(ow) - 1) * strides[1] + dils[1] * (kw - 1) + 1 - (w + left + r))
    if kind == "WXPool2d" or (kind == "XNNAvgPooling2d" and dils != (1, 1)) or ctx.val(x).dtype != "float32":
        # l2 pooling, dilated average pooling and other integer pooling: XNNPACK has no node for them
        op = {"XNNMaxPooling2d": "max", "XNNAvgPooling2d": "average"}.get(kind, "l2")
        ctx.emit(
            "WXPool2d",
            {"input_id": x},
            y,
            op=enum_value("WXPoolOp", op),
            padding_top=t,
            padding_right=r,
            padding_bottom=b,
            padding_left=left,
            pooling_height=kh,
            pooling_width=kw,
            stride_height=strides[0],
            stride_width=strides[1],
            dilation_height=dils[0],
            dilation_width=dils[1],
            flags=0,
        )
        return
    if (kh, kw) == (1, 1) and strides == (1, 1) and (t, b, left, r) == (0, 0, 0, 0):
        ctx.emit("XNNCopy", {"input_id": x}, y)  # XNN rejects 1x1 pooling windows
        return
    if max(t, b) >= kh or max(left, r) >= kw:
        # the runtime refuses it at load (a window of padding only has nothing to pool): say so here
        ctx.unsupported(
            f"padding [{t}, {b}, {left}, {r}] (ceil rounding's included) is not smaller than the "
            f"{kh}x{kw} window"
        )
    ctx.emit(
        kind,
        {"input_id": x},
        y,
        padding_top=t,
        padding_right=r,
        padding_bottom=b,
        padding_left=left,
        pooling_height=kh,
        pooling_width=kw,
        stride_height=strides[0],
        stride_width=strides[1],
        dilation_height=dils[0] if kind == "XNNMaxPooling2d" else 0,
        dilation_width=dils[1] if kind == "XNNMaxPooling2d" else 0,
        flags=0,
    )


@lowers("maxPool2d")
def lower_max_pool(ctx: RuleCtx, node: LNode) -> None:
    _lower_pool(ctx, node, "XNNMaxPooling2d")


@lowers("averagePool2d")
def lower_avg_pool(ctx: RuleCtx, node: LNode) -> None:
    _lower_pool(ctx, node, "XNNAvgPooling2d")


@lowers("l2Pool2d")
def lower_l2_pool(ctx: RuleCtx, node: LNode) -> None:
    _lower_pool(ctx, node, "WXPool2d")
