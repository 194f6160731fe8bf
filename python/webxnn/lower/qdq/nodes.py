"""Compute nodes between dequantizeLinear and quantizeLinear become int8 nodes.

    dq(a) ─┐
    dq(w) ─┼─ OP ─ [clamp fused] ─ q → b      becomes      OP(a, w_qc8, bias_qc32) → b
    dq(b) ─┘

The node must read only qint8 activations (outputs of dequantizeLinear of qint8 values, or dequantized
int8/uint8 constants for add / multiply), constant quantized filters (see `weights`), and its fp32 result
must be read by one quantizeLinear alone (FullyConnected: possibly through the Add of its bias, which is how
gemm and matmul + add arrive). A fused relu / clamp stays the node's output_min_max (real units). Anything
else is left for `borders`, i.e. stays fp32."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...xnn.ir import FLAG_TRANSPOSE_WEIGHTS, PerTensorQuant
from ..ir import LGraph, LNode
from .params import QUANT_DTYPES, QParams, is_dequantize, is_quantize, node_params
from .weights import bias_values, filter_weights

FILTERED = {"XNNConv2d": 0, "XNNDepthwiseConv2d": 3, "XNNFullyConnected": 0, "XNNBatchMatrixMultiply": 0}
ACTIVATIONS = {
    "XNNAdd": ("input1_id", "input2_id"),
    "XNNMultiply": ("input1_id", "input2_id"),
    "XNNAvgPooling2d": ("input_id",),
    "XNNGlobalAvgPooling2d": ("input_id",),
    "XNNSigmoid": ("input_id",),
    "XNNTanh": ("input_id",),
    "XNNHardswish": ("input_id",),
    "XNNGelu": ("input_id",),
    "XNNLeakyReLU": ("input_id",),
    "XNNELU": ("input_id",),
    **{k: ("input1_id",) for k in FILTERED},
}


@dataclass
class _Graph:
    lg: LGraph
    qvals: dict[str, QParams]
    producers: dict[str, LNode]
    readers: dict[str, list[LNode]]
    outputs: set[str]
    absorbed: list[LNode]


def _activation(g: _Graph, name: str, const_ok: bool) -> tuple[str, QParams] | None:
    """The qint8 value a dequantized operand comes from (a new qint8 constant for a dequantized int8/uint8
    constant when `const_ok`)."""
    dq = g.producers.get(name)
    if dq is None or not is_dequantize(dq):
        return None
    q, p = dq.operands["input_id"], node_params(g.lg, dq)
    if p is None:
        return None
    if q in g.qvals and g.qvals[q] == p:
        return q, p
    v = g.lg.values[q]
    if not const_ok or v.const is None or v.dtype not in QUANT_DTYPES:
        return None
    data = (v.const.astype(np.int16) + QUANT_DTYPES[v.dtype]).astype(np.int8)
    c = g.lg.add_const(f"{q}.qs8", data, "int8", layout=v.layout)
    g.lg.values[c].quant = PerTensorQuant(p.scale, p.zero_point)
    return c, p


def _only_reader(g: _Graph, name: str) -> LNode | None:
    rs = g.readers.get(name, [])
    return rs[0] if len(rs) == 1 and name not in g.outputs else None


def _quantized_output(g: _Graph, node: LNode) -> tuple[LNode, LNode | None] | None:
    """(the quantizeLinear that takes the node's result, the bias Add in between or None)."""
    r = _only_reader(g, node.outputs[0])
    add = None
    if r is not None and node.kind in ("XNNBatchMatrixMultiply", "XNNFullyConnected") and r.kind == "XNNAdd":
        if node.output_min_max is not None or node.operands.get("bias_id") is not None:
            return None
        add, r = r, _only_reader(g, r.outputs[0])
    if r is None or not is_quantize(r) or r.outputs[0] not in g.qvals:
        return None
    return r, add


def _filter_fields(g: _Graph, node: LNode, x: QParams, add: LNode | None) -> dict[str, str] | None:
    """filter_id and bias_id of a conv / FC as quantized constants, or None."""
    lg = g.lg
    perm = None
    if node.kind == "XNNBatchMatrixMultiply":
        b = node.operands["input2_id"]
        if lg.values[b].rank != 2:
            return None
        perm = None if node.attrs.get("flags", 0) & 1 else (1, 0)  # FC wants [O, I]
    else:
        b = node.operands["filter_id"]
        if node.kind == "XNNFullyConnected" and node.attrs.get("flags", 0) & FLAG_TRANSPOSE_WEIGHTS:
            perm = (1, 0)
    w = filter_weights(lg, g.producers, b, FILTERED[node.kind], perm)
    if w is None:
        return None
    bias = node.operands.get("bias_id")
    if add is not None:
        a1, a2 = add.operands["input1_id"], add.operands["input2_id"]
        bias = a2 if a1 == node.outputs[0] else a1
    fields = {"filter_id": lg.add_const(f"{b}.qc8", w[0], "int8")}
    lg.values[fields["filter_id"]].quant = w[1]
    if bias is not None:
        bq = bias_values(lg, g.producers, bias, x.scale, w[1].scale)
        if bq is None:
            return None
        fields["bias_id"] = lg.add_const(f"{bias}.qc32", bq[0], "int32")
        lg.values[fields["bias_id"]].quant = bq[1]
    return fields


def _to_int8(g: _Graph, node: LNode) -> bool:
    roles = ACTIVATIONS[node.kind]
    acts = [_activation(g, node.operands[r], node.kind in ("XNNAdd", "XNNMultiply")) for r in roles]
    found = _quantized_output(g, node)
    if found is None or any(a is None for a in acts):
        return False
    q, add = found
    operands: dict[str, str | None] = dict(zip(roles, (a[0] for a in acts if a is not None)))
    if node.kind in FILTERED:
        fields = _filter_fields(g, node, acts[0][1], add)  # type: ignore[index]
        if fields is None:
            return False
        operands.update(fields)
        operands.setdefault("bias_id", None)
    if node.kind == "XNNBatchMatrixMultiply":
        node.kind = "XNNFullyConnected"
        node.operands = {}
    if add is not None and add.output_min_max is not None:
        node.output_min_max = add.output_min_max
    if node.kind == "XNNFullyConnected":
        node.attrs["flags"] = 0  # the filter is [O, I] now
    node.operands.update(operands)
    node.outputs = [q.outputs[0]]
    g.absorbed.extend(n for n in (q, add) if n is not None)
    return True


def int8_nodes(lg: LGraph, qvals: dict[str, QParams]) -> None:
    """Rewrite every compute node that qualifies (see the module docstring) in place; the quantizeLinear
    (and bias Add) it absorbs are left without readers for the pipeline to drop."""
    g = _Graph(lg, qvals, lg.producers(), lg.consumers(), lg.output_values(), [])
    for node in list(lg.nodes):
        if node.kind in ACTIVATIONS and _to_int8(g, node):
            g.producers[node.outputs[0]] = node
    gone = {id(n) for n in g.absorbed}
    lg.nodes = [n for n in lg.nodes if id(n) not in gone]
