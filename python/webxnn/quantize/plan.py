"""Which nodes of an fp32 graph become int8, and which tensors get quantization parameters.

A *layer* is one compute node that will run int8: `static` (conv2d, gemm / matmul with constant 2-D
weights, add, mul, averagePool2d, the lookup-table unaries) reads quantized activations and writes one,
after the relu / clamp that only it reads (the lowering folds those into its output range) and, for a matrix
product, after the add of a constant bias vector; `dynamic` (a matrix product with constant weights) gets
int8 weights and quantizes its input per row at run time. Data movement (reshape, transpose, max pooling,
...) needs no parameters of its own: the lowering runs it on the int8 values of its input.

`auto` picks per op: in a graph with convolutions everything static; matrix products on token sequences
(rank >= 3 inputs) and every matrix product of a graph without convolutions dynamic."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError
from ..graph import Graph, Node
from ..ops.registry import get, operand_roles

MODES = ("static", "dynamic", "auto")
MATMULS = frozenset({"gemm", "matmul"})
STATIC_OPS = frozenset(
    {"conv2d", "gemm", "matmul", "add", "mul", "averagePool2d"}
    | {"sigmoid", "tanh", "hardSwish", "gelu", "leakyRelu", "elu"}
)
PASSTHROUGH = frozenset({"reshape", "transpose", "maxPool2d", "slice", "pad", "concat", "identity"})
FOLDED = frozenset({"relu", "clamp"})
# filterLayout -> the output-channel axis of a conv2d filter
CONV_OUT_AXIS = {"oihw": 0, "ohwi": 0, "hwio": 3, "ihwo": 3}


def operand(node: Node, role: str) -> str | None:
    """The operand of `node` in `role`, given positionally or as an operand option."""
    roles = operand_roles(get(node.op))
    i = roles.index(role)
    if i < len(node.inputs) and node.inputs[i]:
        return node.inputs[i]
    v = node.options.get(role)
    return v if isinstance(v, str) else None


def set_operand(node: Node, role: str, name: str) -> None:
    roles = operand_roles(get(node.op))
    i = roles.index(role)
    if i < len(node.inputs) and node.inputs[i]:
        node.inputs[i] = name
    else:
        node.options[role] = name


@dataclass
class QLayer:
    node: str  # the compute node's id (the name --keep-fp32 and the report use)
    op: str
    mode: str  # static | dynamic
    activations: list[str]  # float operands read (static: quantized at their origin)
    weight: str | None = None  # constant filter / weight
    weight_axis: int = 0  # its output-channel axis
    bias: str | None = None  # constant bias vector
    bias_add: str | None = None  # the add node folded as the bias of a matmul / gemm
    output: str = ""  # the value quantized after the node (after folded bias / relu / clamp)
    absorbed: list[str] = field(default_factory=list)  # ids of the folded nodes


@dataclass
class Plan:
    layers: list[QLayer]
    tensors: list[str]  # static: every value that gets a quantize / dequantize pair, in graph order
    input_of: dict[str, str]  # layer node id -> the origin value of its first activation


class _Index:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.producer: dict[str, Node] = {o: n for n in graph.nodes for o in n.outputs}
        self.readers: dict[str, list[Node]] = {}
        for n in graph.nodes:
            for v in {*n.inputs, *(x for x in n.options.values() if isinstance(x, str))}:
                self.readers.setdefault(v, []).append(n)
        self.graph_outputs = set(graph.outputs.values())
        self.ranks: dict[str, int] = {}

    def is_const(self, v: str | None) -> bool:
        return v is not None and v in self.graph.consts

    def const_dtype(self, v: str) -> str:
        return self.graph.consts[v].dtype

    def only_reader(self, v: str) -> Node | None:
        rs = self.readers.get(v, [])
        return rs[0] if len(rs) == 1 and v not in self.graph_outputs else None


def _float_const(ix: _Index, v: str | None, rank: int | None = None) -> bool:
    if not ix.is_const(v) or ix.const_dtype(v) != "float32":  # type: ignore[arg-type]
        return False
    return rank is None or len(ix.graph.consts[v].shape) == rank  # type: ignore[index]


def _matmul_weight(ix: _Index, node: Node) -> tuple[str, int] | None:
    """(constant weight, its output-channel axis) of a gemm / matmul whose second operand is one."""
    b = operand(node, "b")
    if not _float_const(ix, b, 2):
        return None
    if node.op == "gemm":
        o = node.options
        if o.get("aTranspose") or o.get("alpha", 1.0) != 1.0 or o.get("beta", 1.0) != 1.0:
            return None
        return b, 0 if o.get("bTranspose") else 1  # type: ignore[return-value]
    return b, 1  # type: ignore[return-value]


def _fold_output(ix: _Index, node: Node, layer: QLayer, allow_bias: bool) -> None:
    out = node.outputs[0]
    if allow_bias and layer.bias is None:
        r = ix.only_reader(out)
        if r is not None and r.op == "add":
            other = r.inputs[1] if r.inputs[0] == out else r.inputs[0]
            n = ix.graph.consts[layer.weight].shape[layer.weight_axis] if layer.weight else -1
            if _float_const(ix, other, 1) and ix.graph.consts[other].shape == [n]:
                layer.bias, layer.bias_add = other, r.id
                layer.absorbed.append(r.id)
                out = r.outputs[0]
    r = ix.only_reader(out)
    if r is not None and r.op in FOLDED and layer.mode == "static":
        layer.absorbed.append(r.id)
        out = r.outputs[0]
    layer.output = out


def _layer(ix: _Index, node: Node, mode: str, has_conv: bool, ranks: dict[str, int]) -> QLayer | None:
    op = node.op
    if op == "conv2d":
        w = operand(node, "filter")
        if not _float_const(ix, w, 4):
            return None
        layout = node.options.get("filterLayout", "oihw")
        bias = operand(node, "bias")
        if bias is not None and not _float_const(ix, bias, 1):
            return None
        if mode == "dynamic":
            return None
        layer = QLayer(node.id, op, "static", [node.inputs[0]], w, CONV_OUT_AXIS.get(layout, 0), bias)
        _fold_output(ix, node, layer, allow_bias=False)
        return layer
    if op in MATMULS:
        found = _matmul_weight(ix, node)
        if found is None:
            return None
        c = operand(node, "c") if op == "gemm" else None
        if c is not None and not _float_const(ix, c, 1):
            return None
        x = node.inputs[0]
        chosen = mode
        if mode == "auto":
            chosen = "static" if has_conv and ranks.get(x, 2) <= 2 else "dynamic"
        layer = QLayer(node.id, op, chosen, [x], found[0], found[1], c)
        _fold_output(ix, node, layer, allow_bias=True)
        return layer
    if op not in STATIC_OPS or mode == "dynamic" or (mode == "auto" and not has_conv):
        return None
    acts = list(node.inputs[:2] if op in ("add", "mul") else node.inputs[:1])
    if any(ix.is_const(a) for a in acts):
        return None
    layer = QLayer(node.id, op, "static", acts)
    _fold_output(ix, node, layer, allow_bias=False)
    return layer


def make_plan(graph: Graph, mode: str = "auto", keep_fp32: frozenset[str] = frozenset()) -> Plan:
    """The layers of `graph` to quantize in `mode`, less those in `keep_fp32` (node ids or output names)."""
    if mode not in MODES:
        raise OptionError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    from ..ops import infer

    types = infer(graph)
    ranks = {k: len(t.shape) for k, t in types.items()}
    floats = {k for k, t in types.items() if t.dtype == "float32"}
    ix = _Index(graph)
    has_conv = any(n.op == "conv2d" for n in graph.nodes)
    layers: list[QLayer] = []
    absorbed: set[str] = set()
    for node in graph.nodes:
        if node.id in absorbed or len(node.outputs) != 1 or node.outputs[0] not in floats:
            continue
        layer = _layer(ix, node, mode, has_conv, ranks)
        if layer is None or node.id in keep_fp32 or layer.output in keep_fp32:
            continue
        if any(a not in floats for a in layer.activations):
            continue
        layers.append(layer)
        absorbed.update(layer.absorbed)
    static = [ly for ly in layers if ly.mode == "static"]
    outputs = {ly.output for ly in static}
    wanted: set[str] = set(outputs)
    input_of: dict[str, str] = {}
    for ly in static:
        for i, a in enumerate(ly.activations):
            origin = _origin(ix, a, outputs)
            wanted.add(origin)
            if i == 0:
                input_of[ly.node] = origin
    order = [*graph.inputs, *(o for n in graph.nodes for o in n.outputs)]
    return Plan(layers, [v for v in order if v in wanted], input_of)


def _origin(ix: _Index, v: str, outputs: set[str]) -> str:
    """The value whose quantization `v` inherits through data movement."""
    while v not in outputs:
        p = ix.producer.get(v)
        if p is None or p.op not in PASSTHROUGH or p.op == "concat":
            return v
        v = p.inputs[0]
    return v


def per_channel_scales(w: np.ndarray, axis: int) -> np.ndarray:
    """Symmetric int8 scales of `w` along `axis`: max |w| / 127 per channel (1 for an all-zero channel)."""
    m = np.max(np.abs(np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)), axis=1).astype(np.float32)
    return np.where(m > 0, m / np.float32(127), np.float32(1)).astype(np.float32)


def quantize_weight(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weights, float32 scales along `axis`): symmetric per channel, round half to even."""
    s = per_channel_scales(w, axis)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w.astype(np.float32) / s.reshape(shape)), -127, 127).astype(np.int8)
    return q, s


def fake_quant(w: np.ndarray, axis: int) -> np.ndarray:
    """`w` quantized and dequantized exactly as `quantize_weight` does (for bias correction)."""
    q, s = quantize_weight(w, axis)
    shape = [1] * w.ndim
    shape[axis] = -1
    return (q.astype(np.float32) * s.reshape(shape)).astype(np.float32)
