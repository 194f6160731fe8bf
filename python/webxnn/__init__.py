"""webxnn: WebNN graphs to compact XNNGraph (.xnn) blobs, and a fast CPU runtime for them.

import webxnn
g = webxnn.load_graph("head.webnn")        # finds head.weights + head.manifest.json beside it
blob = webxnn.compile(g)                   # bytes of a .xnn
prog = webxnn.load(blob, threads=2)        # or a path
out = prog.run({"x": x})                   # {"probs": ndarray}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import (
    FileError,
    FormatError,
    InputError,
    OptionError,
    ParseError,
    UnsupportedError,
    ValidationError,
    WebxnnError,
    WebxnnWarning,
    WeightsError,
)
from .graph import Const, ConstInit, DynDim, Graph, Node, Operand

if TYPE_CHECKING:
    import os

    import numpy as np

    from .ops.base import TensorType
    from .runtime import Pool, Program

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
    *,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> bytes:
    """Lower and serialize `graph` (a Graph, or a `.webnn` / `.json` / `.onnx` path) into `.xnn` bytes.
    `profile="executorch"` emits only upstream XNNPACK node types and fails naming every op it cannot
    express that way. `override_dims` / `dyn_max`: for an `.onnx` path, as in `from_onnx`."""
    from .compiler import compile as _compile

    return _compile(graph, weights=weights, profile=profile, override_dims=override_dims, dyn_max=dyn_max)


def to_pte(
    model: Graph | PathLike | bytes,
    weights: dict[str, np.ndarray] | None = None,
    inline: bool = False,
) -> bytes:
    """An ExecuTorch `.pte` program running `model` (a Graph, a `.webnn` / `.json` / `.onnx` path, or a `.xnn`
    blob or path) as its XnnpackBackend delegate, compiled with the `executorch` profile. The payload goes
    in a segment after the program, or inside it with `inline`. Needs neither torch nor executorch."""
    from .pte.writer import to_pte as _to_pte

    return _to_pte(model, weights=weights, inline=inline)


def load(
    blob_or_path: bytes | bytearray | memoryview | PathLike,
    threads: int | None = None,
    mmap: bool = True,
    *,
    spin_us: int | None = None,
    pool: Pool = "own",
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
    weights: PathLike | None = None,
    manifest: PathLike | None = None,
    cache: bool | PathLike = False,
) -> Program:
    """Verify and load a `.xnn` blob (bytes) or file (memory-mapped) into a runnable `Program`; a `.webnn`,
    `.json` or `.onnx` path is compiled on the fly; an ExecuTorch `.pte` runs its XnnpackBackend payload.
    `spin_us`: how long idle pool threads poll before sleeping; `pool="shared"`: use the process's shared pool
    (see `set_threads`); `mmap=False` reads a file into memory instead of mapping it.
    For an `.onnx` path, `override_dims` / `dyn_max` as in `from_onnx`; for a `.webnn` / `.json` path,
    `weights` / `manifest` as in `load_graph`. `cache=True` keeps the compiled blob in an on-disk cache keyed
    by content (`$WEBXNN_CACHE_DIR`, else `$XDG_CACHE_HOME/webxnn`, else `~/.cache/webxnn`; or a folder
    path), so the next load of the same model and options skips the compile."""
    from .runtime import load as _load

    return _load(
        blob_or_path,
        threads=threads,
        mmap=mmap,
        spin_us=spin_us,
        pool=pool,
        override_dims=override_dims,
        dyn_max=dyn_max,
        weights=weights,
        manifest=manifest,
        cache=cache,
    )


def set_threads(threads: int | None = None, spin_us: int | None = None) -> None:
    """Size the process's shared thread pool (None or 0 threads = one per core), which Programs loaded with
    `pool="shared"` share instead of oversubscribing the cores: one run at a time uses all its threads, runs
    arriving meanwhile run on their own thread beside it (up to one per thread), further ones wait."""
    from .runtime import set_threads as _set_threads

    _set_threads(threads, spin_us)


def from_onnx(
    model: Any,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> Graph:
    """Import an ONNX model (path or ModelProto) as a Graph with its weights attached (needs webxnn[onnx]).
    `override_dims` fixes symbolic dims ({"batch_size": 1}); `dyn_max` keeps them dynamic up to a bound
    ({"batch_size": 64}, or an int for every one not fixed). ONNX input/output names are kept for the
    compiled blob and its Program, even those that are not `.webnn` identifiers."""
    from .onnx import from_onnx as _from_onnx

    return _from_onnx(model, override_dims=override_dims, dyn_max=dyn_max)


def cpu_info() -> dict[str, Any]:
    """What this CPU offers and which kernel table the runtime chose."""
    from .cpuinfo import cpu_info as _cpu_info

    return _cpu_info()


def __getattr__(name: str) -> Any:
    # Program is defined by the runtime module; import it lazily so `import webxnn` stays light.
    if name == "Program":
        from .runtime import Program

        return Program
    if name == "quantize":  # the package webxnn.quantize, callable as webxnn.quantize(graph, data, ...)
        import importlib

        return importlib.import_module(".quantize", __name__)
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
    "OptionError",
    "WebxnnWarning",
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
    "to_pte",
    "load",
    "set_threads",
    "cpu_info",
    "Program",
    "quantize",
    "__version__",
]
