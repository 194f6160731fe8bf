"""dynamicQuantizedMatmul → XNNConvert fp32 → qdint8 + XNNFullyConnected (qcint8 weights, fp32 bias, fp32
out): ExecuTorch's dynamically quantized linear, XNNPACK's qd8-f32-qc8w. The activations get a zero point and
scale per row at run time (PerTokenDynamicQuant, num_nonbatch_dims 1); the weights keep their [K, N] bytes
(TRANSPOSE_WEIGHTS, per-channel scales along dim 1, a per-tensor scale repeated per channel)."""

from __future__ import annotations

import numpy as np

from ...xnn.ir import FLAG_TRANSPOSE_WEIGHTS, PerChannelQuant, PerTokenDynamicQuant
from ..ir import LNode
from ..registry import RuleCtx, lowers, operand


def _quantized(ctx: RuleCtx, x: str) -> str:
    """x as qdint8: the Convert already emitted for it (Q, K and V read one input), else a new one."""
    for n in ctx.out:
        if n.kind == "XNNConvert" and n.operands.get("input_id") == x:
            if isinstance(ctx.val(n.outputs[0]).quant, PerTokenDynamicQuant):
                return n.outputs[0]
    q = ctx.new_value(f"{x}.qd8", "int8", ctx.shape(x))
    ctx.val(q).quant = PerTokenDynamicQuant(num_nonbatch_dims=1)
    ctx.emit("XNNConvert", {"input_id": x}, q)
    return q


@lowers("dynamicQuantizedMatmul")
def lower_dynamic_quantized_matmul(ctx: RuleCtx, node: LNode) -> None:
    x, w, s = (operand(node, r, i) for i, r in enumerate(("input", "weight", "weightScale")))
    bias = node.operands.get("bias")
    wv, sv = ctx.val(w), ctx.val(s)
    if wv.const is None or sv.const is None or (bias is not None and ctx.val(bias).const is None):
        ctx.unsupported("the weight, its scale and the bias must be constants (they are packed at load)")
    k, n = wv.shape
    scales = np.broadcast_to(sv.const.astype(np.float32).reshape(-1), (n,))
    if not np.all(np.isfinite(scales) & (scales > 0)):
        ctx.unsupported("weight scales must be finite and positive")
    q = _quantized(ctx, x)
    filt = ctx.new_const(f"{w}.qc8", wv.const, "int8")
    ctx.val(filt).quant = PerChannelQuant(scale=[float(v) for v in scales], channel_dim=1)
    ctx.emit(
        "XNNFullyConnected",
        {"input1_id": q, "filter_id": filt, "bias_id": bias},
        node.outputs[0],
        flags=FLAG_TRANSPOSE_WEIGHTS,
    )
