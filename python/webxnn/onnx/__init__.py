"""ONNX → WebNN import (optional extra: `pip install webxnn[onnx]`).

    g = from_onnx("model.onnx", override_dims={"batch_size": 1})   # a Graph with weights attached
    import_onnx("model.onnx", "model.webnn")   # writes model.webnn + model.weights + model.manifest.json

The `onnx` package is imported lazily here, never by the core package. Constants are folded (shape
chains vanish), symbolic dims are fixed by `override_dims` or bounded by `dyn_max`, names are sanitized to
`.webnn` identifiers (the Graph remembers the ONNX names of its inputs and outputs), and every node that
cannot be converted is reported at once in one UnsupportedError.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Union

from ..dsl.writer import write_graph
from ..errors import InputError, ParseError, UnsupportedError, WebxnnWarning
from ..filekind import require_file
from ..graph import Graph

PathLike = Union[str, "os.PathLike[str]"]


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise UnsupportedError(
            "importing ONNX models needs the 'onnx' package: pip install 'webxnn[onnx]'"
        ) from None
    return onnx


def _load_model(model: Any) -> tuple[Any, Path | None, dict[str, Any]]:
    """(ModelProto, folder for external data, {initializer name: array mapped from the file})."""
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        return model, None, {}
    path = Path(require_file(model))
    from .mapped import load_mapped

    got = load_mapped(path)  # weights stay in the file: no copy (see mapped.py)
    if got is not None:
        return got[0], path.resolve().parent, got[1]
    try:
        # external data stays on disk: tensors.to_array memory-maps it
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf decode errors
        raise ParseError(f"{path}: not a readable ONNX model ({e})") from None
    return proto, path.resolve().parent, {}


def external_data_files(path: PathLike) -> list[Path]:
    """The files that hold external data of the ONNX model at `path` (of any tensor: initializers, sparse
    initializers, node attributes, subgraphs, functions), confined to the model's folder as the import does
    (WeightsError for one that is missing or outside it), sorted. What a content key of the model must cover
    besides the file itself."""
    from .tensors import external_path

    proto, base, _ = _load_model(path)
    found: set[Path] = set()
    for t in _all_tensors(proto):
        if t.data_location == 1:  # TensorProto.EXTERNAL
            location = {e.key: e.value for e in t.external_data}.get("location", "")
            found.add(external_path(t, base, location))
    return sorted(found)


def _all_tensors(proto: Any) -> Iterator[Any]:
    """Every TensorProto of a ModelProto: the graph's, its nodes' attributes', nested graphs', functions'."""

    def graph(g: Any) -> Iterator[Any]:
        yield from g.initializer
        for s in g.sparse_initializer:
            yield from (s.values, s.indices)
        for n in g.node:
            yield from node(n)

    def node(n: Any) -> Iterator[Any]:
        for a in n.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            sparse = [a.sparse_tensor] if a.HasField("sparse_tensor") else []
            for s in [*sparse, *a.sparse_tensors]:
                yield from (s.values, s.indices)
            if a.HasField("g"):
                yield from graph(a.g)
            for g in a.graphs:
                yield from graph(g)

    yield from graph(proto.graph)
    for f in proto.functions:
        for n in f.node:
            yield from node(n)


def from_onnx(
    model: PathLike | Any,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> Graph:
    """An ONNX model (path or onnx.ModelProto) as a WebNN Graph with its weights in `Graph.weights`.

    `override_dims` fixes symbolic input dims ({"batch_size": 1}). `dyn_max` keeps symbolic dims dynamic
    instead, each a `dyn(name, N)` input dim that may be 1..N at run time (as long as no static reshape
    needs it): {"batch_size": 256} bounds the dims it names, an int bounds every symbolic dim not fixed. A
    symbolic dim neither fixed nor bounded is dynamic up to 64 (`convert.DEFAULT_DIM_MAX`); a name the model
    lacks is a WebxnnWarning (ignored).
    Input and output names that are not `.webnn` identifiers ("0", "logits:0") get identifiers in the Graph,
    which remembers the ONNX names (`Graph.io_names`) for the compiled blob and its Program."""
    from .convert import Converter
    from .registry import load_translators

    load_translators()

    proto, base, mapped = _load_model(model)
    from .checks import check_strings

    check_strings(proto)
    for k, v in (override_dims or {}).items():
        _check_size(f"override_dims[{k!r}]", v)
    if isinstance(dyn_max, Mapping):
        for k, v in dyn_max.items():
            _check_size(f"dyn_max[{k!r}]", v)
    elif dyn_max is not None:
        _check_size("dyn_max", dyn_max)
    g = Converter(proto, override_dims, base, dyn_max=dyn_max, mapped=mapped).run()
    if not isinstance(model, type(proto)):
        g.source = os.fspath(model)
    return g


def _check_size(what: str, v: Any) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InputError(f"{what} = {v!r}: must be a positive integer")


def load_onnx_graph(
    path: PathLike,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> Graph:
    """`webxnn.load_graph` for `.onnx` files: the imported Graph, weights attached."""
    return from_onnx(path, override_dims=override_dims, dyn_max=dyn_max)


def import_onnx(
    path: PathLike,
    output: PathLike | None = None,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> list[Path]:
    """Convert an ONNX file; writes `<output>` (default: the model's name with `.webnn`) and its weight
    sidecars. Returns the written paths. Input/output names that are not identifiers are renamed in the
    text (a WebxnnWarning lists them): compile or load the `.onnx` itself to keep them."""
    g = from_onnx(path, override_dims=override_dims, dyn_max=dyn_max)
    if g.io_names:
        renamed = ", ".join(f"{name!r} -> {ident!r}" for ident, name in list(g.io_names.items())[:6])
        more = ", ..." if len(g.io_names) > 6 else ""
        warnings.warn(
            f"input/output names that are not .webnn identifiers were renamed: {renamed}{more} (compile or "
            "load the .onnx itself to keep them)",
            WebxnnWarning,
            stacklevel=2,
        )
    if output is None:
        output = Path(os.fspath(path)).with_suffix(".webnn")
    return write_graph(g, output)


def supported_ops() -> list[str]:
    """ONNX op types the importer translates."""
    from .registry import supported_ops as _s

    return _s()


__all__ = [
    "external_data_files",
    "from_onnx",
    "import_onnx",
    "load_onnx_graph",
    "write_graph",
    "supported_ops",
]
