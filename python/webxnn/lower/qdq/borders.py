"""The borders between int8 and fp32, once the int8 nodes are in place.

  * dq(q) → quantizeLinear → q' (a requantization, what is left of a QDQ-wrapped data-movement op once
    `sink` moved it): q' is q itself when the parameters agree, else an XNNConvert qint8 → qint8;
  * a quantizeLinear still making a qint8 value from fp32 data: XNNConvert fp32 → qint8;
  * a dequantizeLinear still reading a qint8 value (for an fp32 reader): XNNConvert qint8 → fp32.
Then every qint8 value gets its datatype and parameters (uint8 values become int8 here: the parameters
are already in the int8 domain, and no integer of theirs was stored anywhere)."""

from __future__ import annotations

from ...xnn.ir import PerTensorQuant
from ..ir import LGraph, LNode
from .params import QParams, is_dequantize, is_quantize, node_params


def _convert(node: LNode, x: str) -> LNode:
    return LNode("XNNConvert", {"input_id": x}, list(node.outputs), {}, node.src)


def requantize_pairs(lg: LGraph, qvals: dict[str, QParams]) -> None:
    producers = lg.producers()
    out: list[LNode] = []
    for node in lg.nodes:
        dq = producers.get(node.operands.get("input_id") or "") if is_quantize(node) else None
        q = dq.operands["input_id"] if dq is not None and is_dequantize(dq) else None
        if (
            dq is None
            or q is None
            or q not in qvals
            or node_params(lg, dq) != qvals[q]
            or node.outputs[0] not in qvals
        ):
            out.append(node)
        elif qvals[q] == qvals[node.outputs[0]]:
            lg.replace_uses(node.outputs[0], q)
        else:
            out.append(_convert(node, q))
    lg.nodes = out


def convert_borders(lg: LGraph, qvals: dict[str, QParams]) -> None:
    out: list[LNode] = []
    for node in lg.nodes:
        if is_quantize(node) and node.outputs[0] in qvals:
            node = _convert(node, node.operands["input_id"])
        elif is_dequantize(node) and node.operands["input_id"] in qvals:
            node = _convert(node, node.operands["input_id"])
        out.append(node)
    lg.nodes = out
    for name, p in qvals.items():
        v = lg.values.get(name)
        if v is not None:
            v.dtype, v.quant = "int8", PerTensorQuant(p.scale, p.zero_point)
