"""The compile-time warning: a graph with quantize/dequantize nodes whose convolutions and matrix products
mostly stay fp32 (the int8 speed-up does not happen), naming the ops that stayed fp32."""

from __future__ import annotations

import warnings
from collections import defaultdict

from ...errors import WebxnnWarning
from ...xnn.describe import precision_label
from ..emit import DATATYPES
from ..ir import LGraph, LNode

HEAVY = frozenset(
    {"XNNConv2d", "XNNDepthwiseConv2d", "XNNFullyConnected", "XNNBatchMatrixMultiply", "XNNConvTranspose2d"}
)


def warn_if_mostly_fp32(lg: LGraph) -> None:
    quantized = any(n.kind == "WXQuantize" for n in lg.nodes) or any(
        v.quant is not None for v in lg.values.values()
    )
    heavy = [n for n in lg.nodes if n.kind in HEAVY]
    # int8 when any operand is quantized: a dynamically quantized FC reads qdint8 and writes fp32
    fp32 = [n for n in heavy if precision_of(lg, n) != "int8"]
    if not quantized or not heavy or 2 * len(fp32) <= len(heavy):
        return
    by_op: dict[str, list[str]] = defaultdict(list)
    for n in fp32:
        node_id, _, op = n.src.rpartition(":")
        by_op[op or n.kind].append(node_id)
    ops = "; ".join(
        f"{op} ×{len(ids)} ({', '.join(repr(i) for i in ids[:4])}{', …' if len(ids) > 4 else ''})"
        for op, ids in sorted(by_op.items())
    )
    warnings.warn(
        f"the graph has quantize/dequantize nodes but {len(fp32)} of its {len(heavy)} convolutions and "
        f"matrix products stay fp32: {ops} (an int8 node needs per-tensor quantized input and output and "
        f"int8 weights with zero point 0)",
        WebxnnWarning,
        stacklevel=2,
    )


def precision_by_op(lg: LGraph) -> dict[str, dict[str, int]]:
    """For `inspect` of a graph: how many XNN nodes of each WebNN op compute int8 or fp32 ("convert" for
    the Converts at the borders), e.g. {"int8": {"conv2d": 52}, "fp32": {"softmax": 1}, ...}."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for n in lg.nodes:
        counts[precision_of(lg, n)][n.src.rpartition(":")[2] or n.kind] += 1
    return {k: dict(sorted(v.items())) for k, v in sorted(counts.items())}


def precision_of(lg: LGraph, n: LNode) -> str:
    """How lowered node `n` will compute, labelled as `describe` labels the compiled node."""
    q_in = any(lg.values[i].quant is not None for i in n.inputs)
    q_out = any(lg.values[o].quant is not None for o in n.outputs)
    out = lg.values[n.outputs[0]].dtype if n.outputs else None
    return precision_label(n.kind, q_in, q_out, DATATYPES.get(out, out) if out else None)
