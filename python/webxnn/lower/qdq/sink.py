"""Data movement on quantized values: move each dequantizeLinear below the data-movement nodes that read it.

    dq(q) → transpose → …      becomes      transpose(q) → dq → …

Moving per-tensor data (transpose, reshape, slice, concat, pad, max pooling, clamp, copy, resize) commutes
with a per-tensor dequantization, so the node runs on the int8 values with the same parameters. This is
what makes the transposes the layout pass inserts, and QDQ-wrapped reshapes / max pools / concats, int8:
afterwards `dq(q) → q'` pairs are either the identity or a requantizing Convert."""

from __future__ import annotations

import numpy as np

from ..ir import LGraph, LNode
from .params import QParams, dequantize_node, is_dequantize, is_quantize, node_params

SAME_PARAMS = frozenset(
    {
        "XNNStaticTranspose",
        "XNNStaticReshape",
        "XNNStaticSlice",
        "XNNCopy",
        "XNNMaxPooling2d",
        "XNNClamp",
        "XNNStaticResizeBilinear2D",
        "XNNStaticConstantPad",
    }
)
CONCATS = frozenset(f"XNNConcatenate{k}" for k in range(2, 6))


def _source(
    lg: LGraph, producers: dict[str, LNode], qvals: dict[str, QParams], name: str | None
) -> str | None:
    """The qint8 value that `name` dequantizes, if it is the output of such a dequantizeLinear."""
    node = producers.get(name) if name is not None else None
    if node is None or not is_dequantize(node):
        return None
    q = node.operands["input_id"]
    return q if q in qvals and node_params(lg, node) == qvals[q] else None


def _concat_params(lg: LGraph, readers: dict[str, list[LNode]], node: LNode, first: QParams) -> QParams:
    """A concat's output parameters: those of the quantizeLinear that reads it, else its first input's."""
    rs = readers.get(node.outputs[0], [])
    if len(rs) == 1 and is_quantize(rs[0]):
        p = node_params(lg, rs[0])
        if p is not None:
            return p
    return first


def _pad_exact(node: LNode, p: QParams) -> bool:
    """The pad value is exactly representable with the tensor's parameters (0 always is)."""
    v = float(node.attrs.get("padding_value", 0.0))
    return float((int(p.quantize(np.asarray(v))) - p.zero_point) * np.float32(p.scale)) == v


def _requantize(lg: LGraph, out: list[LNode], qvals: dict[str, QParams], q: str, p: QParams, src: str) -> str:
    if qvals[q] == p:
        return q
    new = lg.add_value(f"{q}.rq", "int8", lg.values[q].shape, layout=lg.values[q].layout)
    qvals[new] = p
    out.append(LNode("XNNConvert", {"input_id": q}, [new], {}, src))
    return new


def sink_dequantize(lg: LGraph, qvals: dict[str, QParams]) -> None:
    producers = lg.producers()
    readers = lg.consumers()
    out: list[LNode] = []
    for node in lg.nodes:
        fields = [k for k in node.operands if node.operands[k] is not None]
        sources = [_source(lg, producers, qvals, node.operands[k]) for k in fields]
        if node.kind in SAME_PARAMS and len(fields) == 1 and sources[0] is not None:
            p = qvals[sources[0]]
            if node.kind == "XNNStaticConstantPad" and not _pad_exact(node, p):
                out.append(node)
                continue
        elif node.kind in CONCATS and sources and all(s is not None for s in sources):
            present = [s for s in sources if s is not None]  # all of them, typed without None (for mypy)
            p = _concat_params(lg, readers, node, qvals[present[0]])
            sources = [_requantize(lg, out, qvals, s, p, node.src) for s in present]
        else:
            out.append(node)
            continue
        for k, s in zip(fields, sources):
            node.operands[k] = s
        real = node.outputs[0]
        v = lg.values[real]
        moved = lg.add_value(f"{real}.q8", "int8", v.shape, layout=v.layout)
        qvals[moved] = p
        node.outputs = [moved]
        out.append(node)
        new_dq = dequantize_node(lg, moved, real, p, node.src)
        out.append(new_dq)
        producers[real] = new_dq
    lg.nodes = out
