"""webxnn's own op for dynamically quantized linear layers (not a WebNN op): what the ONNX importer makes of
`DynamicQuantizeLinear` + `MatMulInteger` (+ its scales), `MatMulIntegerToFloat` and `DynamicQuantizeMatMul`,
and what the lowering turns into XNNConvert fp32 -> qdint8 + XNNFullyConnected (qcint8 weights, fp32 out)."""

from __future__ import annotations

from typing import Any

from .common import TT, define, dtype_in, rank_is
from .registry import Ctx
from .shapes import shape_str


def _dynamic_quantized_matmul(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, w, s, b = t["input"], t["weight"], t["weightScale"], t["bias"]
    dtype_in(ctx, x, "input", frozenset({"float32"}))
    dtype_in(ctx, w, "weight", frozenset({"int8"}))
    dtype_in(ctx, s, "weightScale", frozenset({"float32"}))
    rank_is(ctx, w, "weight", 2)
    if x.rank < 1 or x.shape[-1] != w.shape[0]:
        ctx.fail(f"inner dimensions differ: input is {shape_str(x.shape)}, weight is {shape_str(w.shape)}")
    n = w.shape[1]
    if s.rank > 1 or (s.rank == 1 and s.shape[0] not in (1, n)):
        ctx.fail(f"weightScale {shape_str(s.shape)} must be a scalar or have {n} elements")
    if b is not None:
        dtype_in(ctx, b, "bias", frozenset({"float32"}))
        if b.rank != 1 or b.shape[0] != n:
            ctx.fail(f"bias {shape_str(b.shape)} must have shape [{n}]")
    return [TT("float32", [*x.shape[:-1], n])]


define(
    "dynamicQuantizedMatmul",
    ["input", "weight", "weightScale"],
    _dynamic_quantized_matmul,
    "Not a WebNN op (webxnn's, from ONNX dynamic quantization): input [..., K] float32 quantized to int8 at "
    "run time per row (zero point so that 0 is exact, round half to even), times weight int8 [K, N] (zero "
    "point 0) scaled by weightScale ([] or [N], per output column), plus bias [N]; float32 [..., N] out.",
    operand_options=["bias"],
)
