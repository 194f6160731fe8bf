"""Build a `graph.Graph` from one WPT-style conformance case (../shared/conformance/wpt*/<op>.json).

A case's `operators[i].arguments` is the ordered MLGraphBuilder argument list. Following the `.webnn`
conventions (DSL.md items 3-4), strings naming operands become positional inputs, method parameters that are
not operands (`axis`, `newShape`, `type`, `splits`, `steps`...) become named options, and the `options`
dictionary is copied as is (operand-valued options keep the operand's name). Constants' data goes in
`Graph.weights` under the const's name, with ConstInit("weights", ref=name).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ValidationError
from ..graph import DTYPES, Const, ConstInit, Graph, Node, Operand
from .registry import get


def case_array(desc: dict[str, Any]) -> np.ndarray:
    """The data of an input/constant/expected-output descriptor as an array of its dtype and shape (a single
    number for a multi-element shape is a fill value)."""
    dtype = DTYPES.get(desc["dataType"])
    if dtype is None:
        raise ValidationError(f"unknown data type {desc['dataType']!r}")
    shape = tuple(desc["shape"])
    data = desc["data"]
    if not isinstance(data, list):
        data = [data]
    if len(data) == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, data[0], dtype=dtype)
    return np.asarray(data, dtype=dtype).reshape(shape)


def node_from_call(
    name: str, arguments: list[dict[str, Any]], outputs: list[str], known: set[str], node_id: str
) -> Node:
    """One MLGraphBuilder call as a Node: operands positional, other parameters as named options."""
    spec = get(name)
    inputs: list[str] = []
    options: dict[str, Any] = {}
    for arg in arguments:
        if len(arg) != 1:
            raise ValidationError(f"{name}: argument {arg!r} must have exactly one key")
        ((key, value),) = arg.items()
        if key == "options":
            options.update(value or {})
        elif key in spec.options:  # a method parameter such as axis, newShape, type, steps
            options[key] = value
        elif isinstance(value, list) and value and all(isinstance(v, str) and v in known for v in value):
            inputs.extend(value)  # concat's operand sequence
        elif isinstance(value, str) and value in known:
            inputs.append(value)
        else:
            options[key] = value
    return Node(id=node_id, op=name, inputs=inputs, options=options, outputs=list(outputs))


def case_to_graph(case: dict[str, Any]) -> Graph:
    """A Graph for `case`: inputs, constants (data in Graph.weights), one node per operator call, and the
    expected outputs as graph outputs."""
    g = Graph(name=str(case.get("name", "")))
    for name, desc in case.get("inputs", {}).items():
        g.inputs[name] = Operand(name, desc["dataType"], list(desc["shape"]))
    for name, desc in (case.get("constants") or {}).items():
        g.consts[name] = Const(
            name, desc["dataType"], list(desc["shape"]), init=ConstInit("weights", ref=name)
        )
        g.weights[name] = case_array(desc)
    known = set(g.inputs) | set(g.consts)
    for i, op in enumerate(case["operators"]):
        outs = op["outputs"]
        outs = [outs] if isinstance(outs, str) else list(outs)
        node_id = outs[0] if len(outs) == 1 else f"{op['name']}_{i}"
        g.nodes.append(node_from_call(op["name"], op["arguments"], outs, known, node_id))
        known.update(outs)
    for name in case.get("expectedOutputs", {}):
        g.outputs[name] = name
    return g
