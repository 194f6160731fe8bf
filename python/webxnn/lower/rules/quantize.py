"""quantizeLinear / dequantizeLinear → WXQuantize (scale and zero point broadcast or repeat block-wise; the
runtime expands them). int4/uint4 have no blob datatype: `emit` refuses them with UnsupportedError."""

from __future__ import annotations

import numpy as np

from ..ir import LNode
from ..registry import LayoutRule, RuleCtx, layout_rule, lowers, operand

layout_rule(LayoutRule("elementwise"), "dequantizeLinear", "quantizeLinear")


@lowers("quantizeLinear", "dequantizeLinear")
def lower_quantize(ctx: RuleCtx, node: LNode) -> None:
    x, s, z = (operand(node, r, i) for i, r in enumerate(("input", "scale", "zeroPoint")))
    for role, name in (("input", x), ("zeroPoint", z), ("output", node.outputs[0])):
        if ctx.val(name).dtype in ("int4", "uint4"):
            ctx.unsupported(f"{role} has data type {ctx.val(name).dtype} (4-bit types have no blob datatype)")
    s, z = _same_dims(ctx, s), _same_dims(ctx, z, ctx.shape(s))
    s = _same_dims(ctx, s, ctx.shape(z))
    ctx.emit(
        "WXQuantize",
        {"input_id": x, "scale_id": s, "zero_point_id": z},
        node.outputs[0],
        op="quantize" if node.kind == "quantizeLinear" else "dequantize",
    )


def _same_dims(ctx: RuleCtx, name: str, other: tuple | None = None) -> str:
    """The runtime wants scale and zero point with equal dims: broadcast one to the other's (numpy when
    constant, else WXExpand). Block-wise parameters always agree already (both tile the same blocks)."""
    if other is None or tuple(ctx.shape(name)) == tuple(other):
        return name
    try:
        target = tuple(np.broadcast_shapes(tuple(ctx.shape(name)), tuple(other)))
    except ValueError:
        return name
    if target == tuple(ctx.shape(name)):
        return name
    v = ctx.val(name)
    if v.const is not None:
        return ctx.new_const(f"{name}.b", np.broadcast_to(v.const, target).copy(), v.dtype, v.half)
    out = ctx.new_value(f"{name}.b", v.dtype, target)
    ctx.emit("WXExpand", {"input_id": name}, out)
    return out
