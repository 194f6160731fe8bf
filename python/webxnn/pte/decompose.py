"""The `executorch` profile's decompositions: webxnn-only nodes rewritten as upstream XNN nodes that
ExecuTorch's XNNPACK delegate defines, so models such as a BERT-style encoder fit in one delegate.

WXNormalize over the trailing dims (layer normalization) becomes, with R rows of H elements:

    x4 = reshape(x, [R, 1, H, 1]);  m = GlobalAvgPooling2d(x4)          (mean over the row, kept dims)
    d = x4 - m;  v = GlobalAvgPooling2d(d * d);  r = rsqrt(v + epsilon)
    y = reshape(d * r, dims(x)) [* scale] [+ bias]

the same two-pass arithmetic as the runtime's own WXNormalize, in ten XNN nodes. ExecuTorch's own exporter
leaves `layer_norm` out of the delegate (a portable operator), so this is what makes a whole transformer
encoder one XnnpackBackend call. Other normalizations (instance norm, leading axes) stay refused.
"""

from __future__ import annotations

import math

import numpy as np

from ..xnn.ir import Datatype, Node, Value, XnnGraph

_NONE = 0xFFFFFFFF
_KEEP_DIMS = 0x40  # XNN_FLAG_KEEP_DIMS: GlobalAvgPooling2d output [N, 1, 1, C]


def decompose(xg: XnnGraph) -> XnnGraph:
    """Rewrite every WXNormalize over trailing fp32 dims in place (see the module doc)."""
    if not any(n.kind == "WXNormalize" for n in xg.nodes):
        return xg
    by_id = {v.id: v for v in xg.values}
    sources = xg.metadata.node_sources if xg.metadata else []
    keep_sources = len(sources) == len(xg.nodes)
    nodes: list[Node] = []
    new_sources: list[str] = []
    for k, n in enumerate(xg.nodes):
        out = _layer_norm(xg, n, by_id) if n.kind == "WXNormalize" else None
        out = out if out is not None else [n]
        nodes.extend(out)
        if keep_sources:
            new_sources.extend([sources[k]] * len(out))
    xg.nodes = nodes
    if keep_sources and xg.metadata is not None:
        xg.metadata.node_sources = new_sources
    return xg


class _Emitter:
    """Appends fp32 values, constants and nodes to `xg` for one rewrite."""

    def __init__(self, xg: XnnGraph, by_id: dict[int, Value]) -> None:
        self.xg, self.by_id = xg, by_id
        self.nodes: list[Node] = []
        self.next_id = max(by_id) + 1 if by_id else 0

    def value(self, dims: list[int], const: np.ndarray | None = None) -> int:
        v = Value(self.next_id, Datatype.FP32, list(dims))
        if const is not None:
            v.constant_buffer_idx = self.xg.add_constant(np.ascontiguousarray(const, dtype="<f4"))
        self.next_id += 1
        self.xg.values.append(v)
        self.by_id[v.id] = v
        return v.id

    def node(
        self, kind: str, inputs: dict[str, int], dims: list[int], out: int | None = None, **attrs: object
    ) -> int:
        out = self.value(dims) if out is None else out
        self.nodes.append(Node(kind, {"flags": 0, **attrs, **inputs, "output_id": out}))
        return out

    def reshape(self, x: int, dims: list[int], out: int | None = None) -> int:
        return self.node(
            "XNNStaticReshape", {"input_id": x}, dims, out, num_dims=len(dims), new_shape=list(dims)
        )


def _layer_norm(xg: XnnGraph, n: Node, by_id: dict[int, Value]) -> list[Node] | None:
    f = n.fields
    x, y = by_id[f["input_id"]], by_id[f["output_id"]]
    rank = len(x.dims)
    axes = sorted(int(a) for a in f.get("axes", []))
    if (
        not axes
        or axes != list(range(rank - len(axes), rank))
        or x.datatype != Datatype.FP32
        or y.datatype != Datatype.FP32
    ):
        return None
    h = math.prod(x.dims[rank - len(axes) :])
    rows = math.prod(x.dims[: rank - len(axes)])
    e = _Emitter(xg, by_id)
    row4, one4 = [rows, 1, h, 1], [rows, 1, 1, 1]
    x4 = e.reshape(x.id, row4)
    mean = e.node("XNNGlobalAvgPooling2d", {"input_id": x4}, one4, flags=_KEEP_DIMS)
    d = e.node("XNNSubtract", {"input1_id": x4, "input2_id": mean}, row4)
    var = e.node(
        "XNNGlobalAvgPooling2d",
        {"input_id": e.node("XNNSquare", {"input_id": d}, row4)},
        one4,
        flags=_KEEP_DIMS,
    )
    eps = e.value([1], np.array([f.get("epsilon", 1e-5)], np.float32))
    r = e.node(
        "XNNReciprocalSquareRoot",
        {"input_id": e.node("XNNAdd", {"input1_id": var, "input2_id": eps}, one4)},
        one4,
    )
    scale, bias = f.get("scale_id", _NONE), f.get("bias_id", _NONE)
    last = scale == _NONE and bias == _NONE
    z = e.reshape(
        e.node("XNNMultiply", {"input1_id": d, "input2_id": r}, row4), x.dims, y.id if last else None
    )
    if scale != _NONE:
        last = bias == _NONE
        z = e.node("XNNMultiply", {"input1_id": z, "input2_id": scale}, x.dims, y.id if last else None)
    if bias != _NONE:
        e.node("XNNAdd", {"input1_id": z, "input2_id": bias}, x.dims, y.id)
    e.nodes[-1].output_min_max = n.output_min_max
    return e.nodes
