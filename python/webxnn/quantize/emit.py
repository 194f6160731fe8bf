"""The QDQ graph: quantizeLinear / dequantizeLinear pairs written into a copy of the fp32 graph, in the form
the compiler's QDQ lowering turns into int8 nodes (and any WebNN implementation runs as is).

- every static tensor t: `t__q = quantizeLinear(t)`, `t__dq = dequantizeLinear(t__q)` (int8, per tensor,
  zero point from the range) right after t is made; every reader of t reads `t__dq` (a graph output t is
  made as `t__f` and its dequantized value keeps the name t);
- every weight: int8 per output channel, symmetric (zero point 0), read through a dequantizeLinear;
- every bias of a static layer: int32 with scale in_scale * w_scale[o], zero point 0, dequantized;
- a dynamic layer (matmul / gemm [+ bias add]) becomes `dynamicQuantizedMatmul(x, int8 [K, N], scales [N],
  bias)`: its input is quantized per row at run time.
Names are the originals plus `__q`, `__dq`, `__q8`, ...; the order follows the graph: same input, same
bytes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..graph import Const, ConstInit, Graph, Node
from .layers import drop_unused_consts
from .plan import Plan, QLayer, quantize_weight, set_operand

INT32 = np.iinfo(np.int32)


@dataclass(frozen=True)
class ActParams:
    scale: float  # float32 value
    zero_point: int  # int8

    @staticmethod
    def from_range(lo: float, hi: float) -> ActParams:
        """Asymmetric int8 parameters whose grid holds [lo, hi] (0 exactly)."""
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        scale = np.float32((hi - lo) / 255.0)
        if not (scale > 0 and np.isfinite(scale)):
            return ActParams(1.0, 0)
        zp = int(np.clip(np.rint(-128.0 - lo / float(scale)), -128, 127))
        return ActParams(float(scale), zp)


class _Builder:
    def __init__(self, graph: Graph) -> None:
        self.g = dataclasses.replace(
            graph,
            consts=dict(graph.consts),
            nodes=[],
            outputs=dict(graph.outputs),
            inputs=dict(graph.inputs),
        )
        self.g.weights = dict(graph.weights)
        self.src = graph

    def const(self, name: str, arr: np.ndarray) -> str:
        arr = np.ascontiguousarray(arr)
        self.g.consts[name] = Const(name, str(arr.dtype), list(arr.shape), ConstInit("weights", ref=name))
        self.g.weights[name] = arr
        return name

    def node(self, op: str, inputs: list[str], out: str) -> Node:
        n = Node(out, op, inputs)
        self.g.nodes.append(n)
        return n

    def dequantized(self, base: str, q: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> str:
        """dequantizeLinear of the constant integers `q` (one node; its output name returned)."""
        qn = self.const(f"{base}__q{8 if q.dtype == np.int8 else 32}", q)
        sn = self.const(f"{base}__s", scale.astype(np.float32))
        zn = self.const(f"{base}__zp", zp)
        self.node("dequantizeLinear", [qn, sn, zn], f"{base}__dq")
        return f"{base}__dq"


def _weight(b: _Builder, ly: QLayer) -> tuple[str, np.ndarray]:
    """The layer's weight as a dequantized int8 constant, and its per-channel scales."""
    assert ly.weight is not None
    w = b.src.const_array(ly.weight)
    q, s = quantize_weight(w, ly.weight_axis)
    shape = [1] * w.ndim
    shape[ly.weight_axis] = -1
    return b.dequantized(ly.weight, q, s.reshape(shape), np.zeros(s.reshape(shape).shape, np.int8)), s


def _bias(b: _Builder, name: str, in_scale: float, w_scales: np.ndarray) -> str:
    scale = np.float32(in_scale) * w_scales.astype(np.float32)
    real = b.src.const_array(name).astype(np.float64)
    q = np.clip(np.rint(real / scale.astype(np.float64)), INT32.min, INT32.max).astype(np.int32)
    return b.dequantized(name, q, scale, np.zeros(q.shape, np.int32))


def _dynamic(b: _Builder, node: Node, ly: QLayer) -> Node:
    """matmul / gemm [+ bias add] -> dynamicQuantizedMatmul with int8 [K, N] weights."""
    assert ly.weight is not None
    w = b.src.const_array(ly.weight)
    if ly.weight_axis == 0:  # gemm with bTranspose: [N, K]
        w = w.T
    q, s = quantize_weight(np.ascontiguousarray(w), 1)
    qn = b.const(f"{ly.weight}__q8", q)
    sn = b.const(f"{ly.weight}__s", s)
    opts = {"bias": ly.bias} if ly.bias is not None else {}
    return Node(ly.output, "dynamicQuantizedMatmul", [node.inputs[0], qn, sn], opts)


def dequantized_name(v: str, graph_outputs: set[str]) -> str:
    """The name of quantized tensor v's dequantized value: a graph output keeps its name (`.webnn` text
    names each output by its value), anything else is `v__dq`."""
    return v if v in graph_outputs else f"{v}__dq"


def raw_name(v: str, graph_outputs: set[str]) -> str:
    """The name of the value a quantized tensor v is made from (renamed `v__f` for a graph output)."""
    return f"{v}__f" if v in graph_outputs else v


def emit_qdq(graph: Graph, plan: Plan, params: dict[str, ActParams]) -> Graph:
    """The QDQ form of `graph` for `plan` with activation parameters `params` (see the module docstring)."""
    b = _Builder(graph)
    layers = {ly.node: ly for ly in plan.layers}
    skip = {nid for ly in plan.layers if ly.mode == "dynamic" for nid in ly.absorbed}
    bias_adds = {ly.bias_add: ly for ly in plan.layers if ly.bias_add is not None and ly.mode == "static"}
    renamed: dict[str, str] = {}
    w_scales: dict[str, np.ndarray] = {}

    graph_outputs = set(graph.outputs.values())

    def quantize_value(v: str) -> None:
        p = params.get(v)
        if p is None:  # not calibrated (a layer kept fp32 made it): left fp32, so are the layers reading it
            return
        s = b.const(f"{v}__qs", np.array(p.scale, np.float32))
        z = b.const(f"{v}__qzp", np.array(p.zero_point, np.int8))
        b.node("quantizeLinear", [raw_name(v, graph_outputs), s, z], f"{v}__q")
        b.node("dequantizeLinear", [f"{v}__q", s, z], dequantized_name(v, graph_outputs))
        renamed[v] = dequantized_name(v, graph_outputs)

    wanted = set(plan.tensors)
    for v in graph.inputs:
        if v in wanted:
            quantize_value(v)
    for src in graph.nodes:
        if src.id in skip:
            continue
        node = dataclasses.replace(
            src,
            inputs=[renamed.get(i, i) for i in src.inputs],
            options=dict(src.options),
            outputs=list(src.outputs),
        )
        for k, v in node.options.items():
            if isinstance(v, str) and v in renamed:
                node.options[k] = renamed[v]
        ly = layers.get(src.id)
        if ly is not None and ly.mode == "dynamic":
            node = _dynamic(b, node, ly)
        elif ly is not None and ly.weight is not None:
            role = {"conv2d": "filter"}.get(ly.op, "b")
            dq, s = _weight(b, ly)
            set_operand(node, role, dq)
            w_scales[ly.node] = s
            in_p = params.get(plan.input_of[ly.node])  # None: the input stays fp32, so does the bias
            if ly.bias is not None and ly.bias_add is None and in_p is not None:
                set_operand(node, "bias" if ly.op == "conv2d" else "c", _bias(b, ly.bias, in_p.scale, s))
        elif src.id in bias_adds:
            bl = bias_adds[src.id]
            in_p = params.get(plan.input_of[bl.node])
            if bl.bias is not None and in_p is not None:
                dq = _bias(b, bl.bias, in_p.scale, w_scales[bl.node])
                node.inputs = [dq if i == bl.bias else i for i in node.inputs]
        if node.outputs[0] in wanted and node.outputs[0] in graph_outputs:
            node.id = node.outputs[0] = raw_name(node.outputs[0], graph_outputs)
        b.g.nodes.append(node)
        for o in src.outputs:
            if o in wanted:
                quantize_value(o)
    drop_unused_consts(b.g)
    return b.g
