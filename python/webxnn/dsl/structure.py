"""Structural checks shared by the text and JSON readers (no op semantics here).

These are webnn-graph 0.3's `validate_graph` rules plus the places where 0.3 is silently wrong and webxnn is
loud: every value name defined once, nodes only use values defined before them, outputs name known values,
`@scalar` values representable in the const's dtype, `@bytes` the right length. The caller supplies `fail`,
which turns a message and a location key into an exception carrying line:col (text) or a JSON path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from ..dtypes import MAX_TENSOR_BYTES, dtype_size, scalar_problem
from ..graph import Const, DynDim, Graph

TEXT_DTYPES: dict[str, str] = {
    "f32": "float32",
    "f16": "float16",
    "i4": "int4",
    "u4": "uint4",
    "i32": "int32",
    "u32": "uint32",
    "i64": "int64",
    "u64": "uint64",
    "i8": "int8",
    "u8": "uint8",
}
DTYPE_TEXT: dict[str, str] = {v: k for k, v in TEXT_DTYPES.items()}

# Location keys passed to `fail`: ("input", name) ("const", name) ("node", i) ("node_input", i, j)
# ("node_output", i, j) ("output", name) ("graph",)
Key = tuple[str | int, ...]
Fail = Callable[[str, Key], NoReturn]


def numel(shape: list[Any]) -> int:
    n = 1
    for d in shape:
        n *= d.max_size if isinstance(d, DynDim) else d
    return n


def const_problem(c: Const) -> str | None:
    """Why the const's inline data does not fit its declaration, or None."""
    for d in c.shape:
        if isinstance(d, DynDim):
            return "constant shapes must be static (dyn() is only allowed in input shapes)"
    size = numel(c.shape) * dtype_size(c.dtype)
    if size > MAX_TENSOR_BYTES:
        return (
            f"{DTYPE_TEXT.get(c.dtype, c.dtype)}{list(c.shape)} is {size} bytes, more than a .xnn blob "
            f"can hold in one tensor ({MAX_TENSOR_BYTES} bytes)"
        )
    init = c.init
    if init.kind == "scalar":
        return scalar_problem(c.dtype, init.value)
    if init.kind == "bytes":
        data = init.data if init.data is not None else b""
        want = numel(c.shape) * dtype_size(c.dtype)
        if len(data) != want:
            return (
                f"@bytes has {len(data)} bytes but {DTYPE_TEXT.get(c.dtype, c.dtype)}"
                f"{list(c.shape)} needs {want} ({numel(c.shape)} x {dtype_size(c.dtype)})"
            )
    elif init.kind == "weights":
        if not isinstance(init.ref, str):
            return "weights const needs a string ref"
    else:
        return f"unknown const init kind {init.kind!r}"
    return None


def check_graph(g: Graph, fail: Fail) -> None:
    """Raise (through `fail`) on the first structural problem, in a deterministic order."""
    if g.version not in (1, 2):
        fail(f"unsupported graph version {g.version}; webnn-graph graphs are v1 or v2", ("version",))
    defined: dict[str, str] = {}
    for name in g.inputs:
        defined[name] = "input"
    for name, c in g.consts.items():
        if name in defined:
            fail(f"'{name}' is declared both as an input and as a const", ("const", name))
        defined[name] = "const"
        problem = const_problem(c)
        if problem:
            fail(f"const '{name}': {problem}", ("const", name))
    ids: set[str] = set()
    for i, node in enumerate(g.nodes):
        for j, ref in enumerate(node.inputs):
            if ref not in defined:
                fail(
                    f"node '{node.id}' ({node.op}) uses '{ref}', which is not an input, a const or an "
                    "output of an earlier node",
                    ("node_input", i, j),
                )
        if not node.outputs:
            fail(f"node '{node.id}' has no outputs", ("node", i))
        for j, out in enumerate(node.outputs):
            if out in defined:
                article = "an" if defined[out] == "input" else "a"
                fail(
                    f"'{out}' is defined twice (it is already {article} {defined[out]})",
                    ("node_output", i, j),
                )
            defined[out] = "node output"
        # After the outputs: in text the id is the first output, and "defined twice" says more.
        if node.id in ids:
            fail(f"duplicate node id '{node.id}'", ("node", i))
        ids.add(node.id)
    if not g.outputs:
        fail("graph has no outputs", ("graph",))
    for name, ref in g.outputs.items():
        if ref not in defined:
            fail(f"output '{name}' refers to '{ref}', which is not defined", ("output", name))
