"""webxnn: WebNN graphs to compact XNNGraph (.xnn) blobs, and a fast CPU runtime for them.

import webxnn
g = webxnn.load_graph("head.webnn")        # finds head.weights + head.manifest.json beside it
blob = webxnn.compile(g)                   # bytes of a .xnn
prog = webxnn.load(blob, threads=2)        # or a path
out = prog.run({"x": x})                   # {"probs": ndarray}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    FileError,
    FormatError,
    InputError,
    ParseError,
    UnsupportedError,
    ValidationError,
    WebxnnError,
    WeightsError,
)
from .graph import Const, ConstInit, DynDim, Graph, Node, Operand

if TYPE_CHECKING:
    import os

    import numpy as np

    from .ops.base import TensorType
    from .runtime import Program

    PathLike = str | os.PathLike[str]

__version__ = "0.1.0"


def parse(text: str, file: str | None = None) -> Graph:
    """Parse `.webnn` text into a Graph (ParseError with file:line:col on bad text)."""
    from .dsl import parse as _parse

    return _parse(text, file=file)


def parse_json(text: str, file: str | None = None) -> Graph:
    """Parse the canonical GraphJson ("webnn-graph-json") into a Graph."""
    from .dsl import parse_json as _parse_json

    return _parse_json(text, file=file)


def load_graph(
    path: PathLike, weights: PathLike | dict[str, np.ndarray] | None = None, manifest: PathLike | None = None
) -> Graph:
    """Read a `.webnn` or `.json` graph; weights come from `weights`/`manifest` or the sidecars beside it."""
    from .dsl import load_graph as _load_graph

    return _load_graph(path, weights=weights, manifest=manifest)


def validate(graph: Graph) -> None:
    """Check every node's op, operands and options; ValidationError names node, op and option."""
    from .ops import validate as _validate

    _validate(graph)


def infer(graph: Graph) -> dict[str, TensorType]:
    """Every value's dtype and shape, as {name: TensorType}."""
    from .ops import infer as _infer

    return _infer(graph)


def compile(
    graph: Graph | PathLike,
    weights: dict[str, np.ndarray] | None = None,  # noqa: A001
    profile: str = "webxnn",
) -> bytes:
    """Lower and serialize `graph` (a Graph, or a `.webnn` / `.json` / `.onnx` path) into `.xnn` bytes.
    `profile="executorch"` emits only upstream XNNPACK node types and fails naming every op it cannot
    express that way."""
    from .compiler import compile as _compile

    return _compile(graph, weights=weights, profile=profile)


def load(
    blob_or_path: bytes | bytearray | memoryview | PathLike, threads: int | None = None, mmap: bool = True
) -> Program:
    """Verify and load a `.xnn` blob (bytes) or file (memory-mapped; `mmap=False` reads it into memory) into
    a runnable `Program`; a `.webnn`, `.json` or `.onnx` path is compiled on the fly."""
    from .runtime import load as _load

    return _load(blob_or_path, threads=threads, mmap=mmap)


def from_onnx(model: Any, override_dims: dict[str, int] | None = None) -> Graph:
    """Import an ONNX model (path or ModelProto) as a Graph with its weights attached (needs webxnn[onnx])."""
    from .onnx import from_onnx as _from_onnx

    return _from_onnx(model, override_dims=override_dims)


def cpu_info() -> dict[str, Any]:
    """What this CPU offers and which kernel table the runtime chose."""
    from .cpuinfo import cpu_info as _cpu_info

    return _cpu_info()


def __getattr__(name: str) -> Any:
    # Program is defined by the runtime module; import it lazily so `import webxnn` stays light.
    if name == "Program":
        from .runtime import Program

        return Program
    raise AttributeError(f"module 'webxnn' has no attribute {name!r}")


__all__ = [
    "WebxnnError",
    "FileError",
    "ParseError",
    "ValidationError",
    "WeightsError",
    "FormatError",
    "UnsupportedError",
    "InputError",
    "Graph",
    "Node",
    "Operand",
    "Const",
    "ConstInit",
    "DynDim",
    "parse",
    "parse_json",
    "load_graph",
    "from_onnx",
    "validate",
    "infer",
    "compile",
    "load",
    "cpu_info",
    "Program",
    "__version__",
]
