"""Whole-graph checks: `validate(graph)`, `infer(graph)` and `bind_all(graph)`.

One walk does all three: declarations are checked (dtype names, positive or dynamic dims, unique names),
then every node is bound in order, so a reference to a value defined later is an error, and finally the
graph outputs must name defined values. The limits of the blob format are checked here too, for declarations
and for every node's outputs: a dim must fit a uint32 (MAX_DIM) and a tensor must hold at most
MAX_TENSOR_BYTES, the runtime's limit, so a graph that validates also serializes and loads, and the error
names the node, not a value id of the blob.
"""

from __future__ import annotations

import math

from ..dtypes import MAX_DIM, MAX_TENSOR_BYTES, MAX_TENSOR_ELEMENTS, dtype_size
from ..errors import ValidationError
from ..graph import DTYPES, DynDim, Graph
from .base import BoundNode, TensorType
from .registry import bind


def _where(graph: Graph) -> str:
    return f"{graph.source}: " if graph.source else ""


def _declared_type(
    graph: Graph, kind: str, name: str, dtype: str, shape: list, allow_dyn: bool
) -> TensorType:
    if dtype not in DTYPES:
        raise ValidationError(
            f"{_where(graph)}{kind} {name!r}: unknown data type {dtype!r} (known: {', '.join(DTYPES)})"
        )
    for d in shape:
        if isinstance(d, DynDim):
            if not allow_dyn:
                raise ValidationError(
                    f"{_where(graph)}{kind} {name!r}: constants cannot have dynamic dimensions ({d.name!r})"
                )
            if d.max_size < 1:
                raise ValidationError(
                    f"{_where(graph)}{kind} {name!r}: dynamic dimension {d.name!r} "
                    f"needs a positive maximum, got {d.max_size}"
                )
        elif isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValidationError(
                f"{_where(graph)}{kind} {name!r}: dimension {d!r} in shape {shape} must be a positive integer"
            )
    t = TensorType(dtype, tuple(shape))
    _check_limits(graph, f"{kind} {name!r}", t)
    return t


def _check_limits(graph: Graph, what: str, t: TensorType) -> None:
    """The blob format's limits: each dim (a dynamic one by its maximum) fits a uint32, the tensor's bytes
    fit MAX_TENSOR_BYTES and its elements MAX_TENSOR_ELEMENTS. Dims that are not numbers yet (symbolic) are
    checked when they are."""
    dims = [d.max_size if isinstance(d, DynDim) else d for d in t.shape]
    for d in dims:
        if isinstance(d, int) and d > MAX_DIM:
            raise ValidationError(
                f"{_where(graph)}{what}: dimension {d} in shape {list(t.shape)} is larger than {MAX_DIM}, "
                "the largest a blob can hold (uint32)"
            )
    if t.dtype in DTYPES and all(isinstance(d, int) for d in dims):
        numel = math.prod(dims)
        nbytes = numel * dtype_size(t.dtype)
        if nbytes > MAX_TENSOR_BYTES:
            raise ValidationError(
                f"{_where(graph)}{what}: shape {list(t.shape)} of {t.dtype} holds {nbytes} bytes, more than "
                f"the runtime's limit of {MAX_TENSOR_BYTES} bytes per tensor"
            )
        if numel > MAX_TENSOR_ELEMENTS:
            raise ValidationError(
                f"{_where(graph)}{what}: shape {list(t.shape)} holds {numel} elements, more than the "
                f"runtime's limit of {MAX_TENSOR_ELEMENTS} elements per tensor"
            )


def _walk(graph: Graph) -> tuple[dict[str, TensorType], list[BoundNode]]:
    types: dict[str, TensorType] = {}
    defined_by: dict[str, str] = {}

    def define(name: str, what: str) -> None:
        if name in defined_by:
            raise ValidationError(f"{_where(graph)}{what} {name!r} is already defined by {defined_by[name]}")
        defined_by[name] = what

    for name, op in graph.inputs.items():
        define(name, "input")
        types[name] = _declared_type(graph, "input", name, op.dtype, op.shape, allow_dyn=True)
    for name, c in graph.consts.items():
        define(name, "const")
        types[name] = _declared_type(graph, "const", name, c.dtype, c.shape, allow_dyn=False)
    bound: list[BoundNode] = []
    for node in graph.nodes:
        b = bind(node, types, graph)
        for out_name, t in b.outputs:
            define(out_name, f"node {node.id!r}")
            _check_limits(graph, f"node {node.id!r} ({node.op}): output {out_name!r}", t)
            types[out_name] = t
        bound.append(b)
    for out, ref in graph.outputs.items():
        if ref not in types:
            raise ValidationError(f"{_where(graph)}output {out!r} refers to {ref!r}, which is not defined")
    return types, bound


def validate(graph: Graph) -> None:
    """Raise ValidationError (naming node, op and option) if `graph` is not a valid WebNN graph."""
    _walk(graph)


def infer(graph: Graph) -> dict[str, TensorType]:
    """The dtype and shape of every value: inputs, consts and node outputs."""
    return _walk(graph)[0]


def bind_all(graph: Graph) -> list[BoundNode]:
    """Every node bound, in graph order (what `lower` consumes)."""
    return _walk(graph)[1]
