"""Reading quantizeLinear / dequantizeLinear nodes (WXQuantize after `select`) and deciding which int8/uint8
values become qint8 values.

A value becomes **qint8** when a per-tensor quantizeLinear of fp32 data makes it, it is not a graph input
or output, and every reader is a per-tensor dequantizeLinear with the same parameters: then nothing but
the quantization pair ever looks at its integers, and the pass may compute them with int8 nodes instead.
uint8 values become qint8 with every integer and the zero point shifted by -128 (the same reals)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...xnn.reference_quant import quantize_per_tensor
from ..ir import LGraph, LNode

QUANT_DTYPES = {"int8": 0, "uint8": -128}  # stored dtype -> shift into the int8 domain


@dataclass(frozen=True)
class QParams:
    """Per-tensor parameters in the int8 domain: real = (q - zero_point) * scale."""

    scale: float  # a float32 value, kept as a Python float
    zero_point: int  # in [-128, 127]

    def quantize(self, real: np.ndarray) -> np.ndarray:
        """As XNNConvert: divided in float32, rounded half to even, saturated."""
        return quantize_per_tensor(real, self.scale, self.zero_point)


def is_quantize(node: LNode) -> bool:
    return node.kind == "WXQuantize" and node.attrs.get("op") == "quantize"


def is_dequantize(node: LNode) -> bool:
    return node.kind == "WXQuantize" and node.attrs.get("op") == "dequantize"


def node_params(lg: LGraph, node: LNode) -> QParams | None:
    """The per-tensor parameters of a Q or DQ node on int8/uint8 data, or None (per-axis, run-time
    parameters, other types, a scale that is not a positive finite number)."""
    s, z = node.operands["scale_id"], node.operands["zero_point_id"]
    int_side = node.outputs[0] if is_quantize(node) else node.operands["input_id"]
    # the zero point's type says the domain: an int8 value may be a uint8 one already moved to int8 by
    # `sink` or `borders`, still read by the dequantizeLinear the graph had
    shift = QUANT_DTYPES.get(lg.values[z].dtype)
    sv, zv = lg.values[s].const, lg.values[z].const
    if (
        shift is None
        or lg.values[int_side].dtype not in QUANT_DTYPES
        or sv is None
        or zv is None
        or sv.size != 1
        or zv.size != 1
    ):
        return None
    scale = float(np.float32(sv.reshape(-1)[0]))
    if not (np.isfinite(scale) and scale > 0):
        return None
    return QParams(scale, int(zv.reshape(-1)[0]) + shift)


def quantized_values(lg: LGraph) -> dict[str, QParams]:
    """The int8/uint8 values this pass may turn into qint8 values (see the module docstring)."""
    readers = lg.consumers()
    outputs = lg.output_values() | set(lg.inputs)
    found: dict[str, QParams] = {}
    for node in lg.nodes:
        if not is_quantize(node) or lg.values[node.operands["input_id"]].dtype != "float32":
            continue
        v = node.outputs[0]
        p = node_params(lg, node)
        if p is None or v in outputs:
            continue
        rs = readers.get(v, [])
        if all(is_dequantize(r) and r.operands["input_id"] == v and node_params(lg, r) == p for r in rs):
            found[v] = p
    return found


def dequantize_node(lg: LGraph, q: str, out: str, p: QParams, src: str) -> LNode:
    """A dequantizeLinear of the int8 value `q` with parameters `p` writing `out`."""
    scale = lg.add_const(f"{q}.scale", np.array(p.scale, np.float32), "float32")
    zp = lg.add_const(f"{q}.zero_point", np.array(p.zero_point, np.int8), "int8")
    return LNode(
        "WXQuantize",
        {"input_id": q, "scale_id": scale, "zero_point_id": zp},
        [out],
        {"op": "dequantize"},
        src,
    )
