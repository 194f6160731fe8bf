"""Pass 1, normalize: bound WebNN nodes + the graph's inputs, constants and outputs → an LGraph.

Aliases and converter forms were already rewritten by `ops.bind`; this pass only moves the data over and
loads constant data (from the `weights` dict, the graph's resolved weights, or the const's inline init).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..constants import attach_weights
from ..graph import Const, DynDim, Graph
from ..ops.base import BoundNode
from .ir import LGraph, LNode


def _static_shape(shape: Any) -> tuple[int, ...]:
    return tuple(d.max_size if isinstance(d, DynDim) else int(d) for d in shape)


def with_weights(graph: Graph, weights: dict[str, np.ndarray] | None) -> Graph:
    """`graph` with `weights` (keyed by const name or weights ref) overriding its own, without touching the
    caller's graph. Resolution and checks (dtype, shape, naming the const) are `constants.attach_weights`."""
    if not weights:
        return graph
    return attach_weights(dataclasses.replace(graph, weights=dict(graph.weights)), weights)


def load_const(graph: Graph, c: Const) -> np.ndarray:
    """The data of const `c` as an array of its declared dtype and shape."""
    return np.asarray(graph.const_array(c.name))


def normalize(graph: Graph, bound: list[BoundNode], weights: dict[str, np.ndarray] | None = None) -> LGraph:
    graph = with_weights(graph, weights)
    lg = LGraph()
    for name, op in graph.inputs.items():
        lg.add_value(name, op.dtype, tuple(op.shape), exact=True)
        lg.inputs.append(name)
    for name, c in graph.consts.items():
        lg.add_value(name, c.dtype, tuple(c.shape), const=load_const(graph, c), exact=True)
    for bn in bound:
        for name, t in bn.outputs:
            lg.add_value(name, t.dtype, tuple(t.shape), exact=True)
        operands = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in bn.operands.items()}
        lg.nodes.append(
            LNode(bn.op, operands, [n for n, _ in bn.outputs], dict(bn.options), f"{bn.id}:{bn.op}")
        )
    lg.outputs = list(graph.outputs.items())
    lg.onnx_indices = set(graph.onnx_indices)
    return lg
