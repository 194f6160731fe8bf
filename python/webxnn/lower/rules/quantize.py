"""quantizeLinear / dequantizeLinear → WXQuantize (scale and zero point broadcast or repeat block-wise; the
runtime expands them). int4/uint4 have no blob datatype: `emit` refuses them with UnsupportedError."""

from __future__ import annotations

from ..ir import LNode
from ..registry import LayoutRule, RuleCtx, layout_rule, lowers, operand

layout_rule(LayoutRule("elementwise"), "dequantizeLinear", "quantizeLinear")


@lowers("quantizeLinear", "dequantizeLinear")
def lower_quantize(ctx: RuleCtx, node: LNode) -> None:
    x, s, z = (operand(node, r, i) for i, r in enumerate(("input", "scale", "zeroPoint")))
    for role, name in (("input", x), ("zeroPoint", z), ("output", node.outputs[0])):
        if ctx.val(name).dtype in ("int4", "uint4"):
            ctx.unsupported(f"{role} has data type {ctx.val(name).dtype} (4-bit types have no blob datatype)")
    ctx.emit("WXQuantize", {"input_id": x, "scale_id": s, "zero_point_id": z}, node.outputs[0],
             op="quantize" if node.kind == "quantizeLinear" else "dequantize")
