"""What the quantizer's graph transforms share (cross-layer equalization in equalize.py, bias correction
in bias.py): `Layer`, a conv2d / gemm / matmul node with constant weights seen as a canonical
[O, I/groups, kh, kw] filter with a per-output-channel bias, `find_layers`, and the graph-copy and
const-writing helpers."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Const, ConstInit, Graph, Node
from ..ops.base import BoundNode
from ..ops.graphcheck import bind_all

# ----------------------------------------------------------------------------------------- graph editing


def clone_graph(graph: Graph) -> Graph:
    """A copy whose nodes and declarations can be edited; const arrays are shared until replaced."""
    return Graph(
        name=graph.name,
        version=graph.version,
        quantized=graph.quantized,
        inputs=copy.deepcopy(graph.inputs),
        consts=copy.deepcopy(graph.consts),
        nodes=copy.deepcopy(graph.nodes),
        outputs=dict(graph.outputs),
        weights=dict(graph.weights),
        source=graph.source,
        io_names=dict(graph.io_names),
        onnx_indices=set(graph.onnx_indices),
    )


def fresh_name(graph: Graph, base: str) -> str:
    """A value/const name not yet used in `graph`, derived from `base`."""
    taken = set(graph.inputs) | set(graph.consts) | {o for n in graph.nodes for o in n.outputs}
    taken |= {n.id for n in graph.nodes} | {c.init.ref for c in graph.consts.values() if c.init.ref}
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def add_const(graph: Graph, base: str, arr: np.ndarray) -> str:
    """Declare a new float32 const holding `arr`; returns its name."""
    name = fresh_name(graph, base)
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    graph.consts[name] = Const(name, "float32", list(arr.shape), ConstInit("weights", ref=name))
    graph.weights[name] = arr
    return name


def use_counts(bound: list[BoundNode], graph: Graph) -> dict[str, int]:
    """How many operand slots (and graph outputs) read each value."""
    counts: dict[str, int] = {}
    for b in bound:
        for v in b.operands.values():
            for name in v if isinstance(v, list) else [v]:
                if name is not None:
                    counts[name] = counts.get(name, 0) + 1
    for ref in graph.outputs.values():
        counts[ref] = counts.get(ref, 0) + 1
    return counts


def set_operand(node: Node, role: str, position: int, name: str) -> None:
    """Point operand `role` of `node` (positional at `position`, or an operand option) at `name`."""
    if len(node.inputs) > position:
        node.inputs[position] = name
    else:
        node.options[role] = name


def drop_unused_consts(graph: Graph) -> None:
    """Remove consts nothing reads any more (replaced weights), so the blob does not carry them."""
    used = set(use_counts(bind_all(graph), graph))
    for name in [c for c in graph.consts if c not in used]:
        del graph.consts[name]
        graph.weights.pop(name, None)


# ------------------------------------------------------------------------------------------------ layers


@dataclass
class Layer:
    """A conv2d / gemm / matmul node with constant float32 weights, seen the same way for all three: a
    canonical filter [O, I/groups, kh, kw] (gemm and matmul: [N, K, 1, 1]) and a bias along the output
    channels (conv's `bias`, gemm's beta * c, or the const of an `add` right after a matmul)."""

    node: Node
    op: str
    input: str  # the activation operand
    weight: str  # the weight const
    layout: str  # conv filterLayout; "kn" / "nk" for gemm's and matmul's b
    groups: int
    channels_last: bool  # the input's channel axis is the last one (nhwc conv, gemm, matmul)
    bias: str | None  # the bias const, if any
    bias_node: Node | None = None  # matmul: the `add` that carries its bias
    alpha: float = 1.0
    beta: float = 1.0
    out: str = ""  # the value carrying the biased output
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def channel_axis(self) -> int:
        """Axis of the output channels in the stored weight (what per-channel quantization uses)."""
        return self.layout.index("o") if self.op == "conv2d" else self.layout.index("n")

    @property
    def input_axis(self) -> int:
        """Axis of the input operand that holds the input channels: bias correction's E[x] is the mean
        over all the other axes."""
        if self.op == "conv2d":
            return -1 if self.channels_last else 1
        return 0 if self.extra.get("aTranspose") else -1

    def canonical(self, w: np.ndarray) -> np.ndarray:
        """The stored weight as float64 [O, I/groups, kh, kw]."""
        w = np.asarray(w, dtype=np.float64)
        if self.op == "conv2d":
            return w.transpose([self.layout.index(c) for c in "oihw"])
        kn = w if self.layout == "kn" else w.T
        return kn.T[:, :, None, None]

    def stored(self, canon: np.ndarray) -> np.ndarray:
        """Inverse of `canonical`, as float32."""
        if self.op == "conv2d":
            w = canon.transpose(["oihw".index(c) for c in self.layout])
        else:
            nk = canon[:, :, 0, 0]
            w = nk.T if self.layout == "kn" else nk
        return np.ascontiguousarray(w, dtype=np.float32)

    def out_channels(self, graph: Graph) -> int:
        return dims(graph, self.weight)[self.channel_axis]

    def bias_array(self, graph: Graph) -> np.ndarray:
        """The effective bias (beta * c for gemm) as float64, its last axis the output channels."""
        n = self.out_channels(graph)
        if self.bias is None:
            return np.zeros(n)
        b = np.asarray(graph.const_array(self.bias), dtype=np.float64) * self.beta
        if self.op == "conv2d":
            return b
        shape = np.broadcast_shapes(b.shape, (n,))
        return np.broadcast_to(b, shape).copy()

    def set_bias(self, graph: Graph, eff: np.ndarray, owned: set[str]) -> None:
        """Store the effective bias `eff` (as bias_array returns it). A const that only this layer reads
        (listed in `owned`) is rewritten in place; otherwise a new const is made and hooked up."""
        node = self.node
        if self.op == "gemm" and self.beta == 0.0:
            node.options["beta"] = self.beta = 1.0  # c was ignored: nothing of it to keep
        value = eff / self.beta
        if self.bias is not None and self.bias in owned:
            c = graph.consts[self.bias]
            arr = np.ascontiguousarray(value, dtype=np.float32)
            c.shape, c.init = list(arr.shape), ConstInit("weights", ref=c.init.ref or c.name)
            graph.weights[self.bias] = arr
            return
        name = add_const(graph, f"{node.id}_bias", value)
        if self.op == "conv2d":
            set_operand(node, "bias", 2, name)
        elif self.op == "gemm":
            set_operand(node, "c", 2, name)
        elif self.bias_node is not None and self.bias is not None:
            i = self.bias_node.inputs.index(self.bias)
            self.bias_node.inputs[i] = name
        else:  # a matmul without bias: an add after it, under the matmul's output name
            inner = fresh_name(graph, f"{node.id}_nobias")
            add = Node(id=node.outputs[0], op="add", inputs=[inner, name])
            node.id, node.outputs = inner, [inner]
            graph.nodes.insert(graph.nodes.index(node) + 1, add)
            self.bias_node = add
        self.bias = name
        owned.add(name)

    def set_weight(self, graph: Graph, canon: np.ndarray, owned: set[str]) -> None:
        arr = self.stored(canon)
        if self.weight in owned:
            c = graph.consts[self.weight]
            c.init = ConstInit("weights", ref=c.init.ref or c.name)
            graph.weights[self.weight] = arr
        else:
            self.weight = add_const(graph, f"{self.node.id}_weight", arr)
            set_operand(self.node, "filter" if self.op == "conv2d" else "b", 1, self.weight)
            owned.add(self.weight)


def dims(graph: Graph, name: str) -> tuple[int, ...]:
    """A const's shape (consts have static dims: graphcheck refuses dynamic ones)."""
    return tuple(d for d in graph.consts[name].shape if isinstance(d, int))


def is_f32_const(graph: Graph, name: str | None) -> bool:
    return name is not None and name in graph.consts and graph.consts[name].dtype == "float32"


def readers_of(bound: list[BoundNode]) -> dict[str, list[BoundNode]]:
    """The nodes reading each value (a node reading it twice is listed twice)."""
    readers: dict[str, list[BoundNode]] = {}
    for b in bound:
        for v in b.operands.values():
            for name in v if isinstance(v, list) else [v]:
                if name is not None:
                    readers.setdefault(name, []).append(b)
    return readers


def single_reader(name: str, readers: dict[str, list[BoundNode]], counts: dict[str, int]) -> BoundNode | None:
    rs = readers.get(name, [])
    return rs[0] if len(rs) == 1 and counts.get(name, 0) == 1 else None


def find_layers(graph: Graph) -> tuple[list[Layer], list[BoundNode], dict[str, int]]:
    """Every conv2d / gemm / matmul with constant float32 weights; also the bound nodes and use counts."""
    bound = bind_all(graph)
    counts = use_counts(bound, graph)
    readers = readers_of(bound)
    layers = []
    for b in bound:
        ops, o = b.operands, b.options
        out = b.outputs[0][0]
        if b.op == "conv2d" and is_f32_const(graph, ops["filter"]):
            if ops["bias"] is not None and not is_f32_const(graph, ops["bias"]):
                continue
            layers.append(
                Layer(
                    b.node,
                    "conv2d",
                    ops["input"],
                    ops["filter"],
                    o["filterLayout"],
                    o["groups"],
                    o["inputLayout"] == "nhwc",
                    ops["bias"],
                    out=out,
                )
            )
        elif b.op == "gemm" and is_f32_const(graph, ops["b"]):
            if ops["c"] is not None and not is_f32_const(graph, ops["c"]):
                continue
            layers.append(
                Layer(
                    b.node,
                    "gemm",
                    ops["a"],
                    ops["b"],
                    "nk" if o["bTranspose"] else "kn",
                    1,
                    True,
                    ops["c"],
                    alpha=o["alpha"],
                    beta=o["beta"],
                    out=out,
                    extra={"aTranspose": o["aTranspose"]},
                )
            )
        elif b.op == "matmul" and is_f32_const(graph, ops["b"]) and len(graph.consts[ops["b"]].shape) == 2:
            layer = Layer(b.node, "matmul", ops["a"], ops["b"], "kn", 1, True, None, out=out)
            add = single_reader(out, readers, counts)
            if add is not None and add.op == "add":
                other = [v for v in (add.operands["a"], add.operands["b"]) if v != out]
                n = dims(graph, ops["b"])[1]
                if len(other) == 1 and is_f32_const(graph, other[0]):
                    shape = graph.consts[other[0]].shape
                    if shape and shape[-1] == n and all(d == 1 for d in shape[:-1]) and len(shape) <= 2:
                        layer.bias, layer.bias_node, layer.out = other[0], add.node, add.outputs[0][0]
            layers.append(layer)
    return layers, bound, counts


def owned_consts(layers: list[Layer], counts: dict[str, int]) -> set[str]:
    """The weight and bias consts read by exactly one slot: safe to rewrite in place."""
    names = {n for layer in layers for n in (layer.weight, layer.bias) if n is not None}
    return {n for n in names if counts.get(n, 0) == 1}
