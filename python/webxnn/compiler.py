"""`compile`: a WebNN graph → `.xnn` bytes (validate with `ops`, lower, serialize with `xnn.writer`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Union

import numpy as np

from .errors import OptionError, UnsupportedError
from .filekind import KINDS
from .graph import Graph
from .xnn.ir import XnnGraph

PathLike = Union[str, "os.PathLike[str]"]

PROFILES = ("webxnn", "executorch")
GRAPH_KINDS = ("webnn", "json", "onnx")
# union values and datatypes from 128 up are webxnn's own; ExecuTorch's runtime does not know them
_WEBXNN_ONLY = 128


def _check_profile(xg: XnnGraph, profile: str) -> None:
    if profile == "webxnn":
        return
    if profile != "executorch":
        raise UnsupportedError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    sources = xg.metadata.node_sources if xg.metadata else []
    bad: list[str] = []
    for k, n in enumerate(xg.nodes):
        if n.kind.startswith("WX"):
            bad.append(f"{sources[k] if k < len(sources) else k} → {n.kind}")
    bad_values = []
    for k, n in enumerate(xg.nodes):
        for vid in [*n.input_ids(), *n.output_ids()]:
            if int(xg.value(vid).datatype) >= _WEBXNN_ONLY:
                bad_values.append(
                    f"{sources[k] if k < len(sources) else k} uses {xg.value(vid).datatype.name} value {vid}"
                )
    for v in xg.values:
        if v.flags and int(v.datatype) >= _WEBXNN_ONLY:
            bad_values.append(f"external value {v.id} is {v.datatype.name}")
    if bad or bad_values:
        parts = []
        if bad:
            parts.append("webxnn-only nodes: " + "; ".join(bad))
        if bad_values:
            parts.append("webxnn-only datatypes: " + "; ".join(dict.fromkeys(bad_values)))
        raise UnsupportedError("profile 'executorch' cannot express this graph: " + " | ".join(parts))


def compile_graph(
    graph: Graph, weights: dict[str, np.ndarray] | None = None, profile: str = "webxnn"
) -> XnnGraph:
    """Validate `graph` and lower it to XNN IR. `weights` maps const names (or weights refs) to arrays and
    overrides the graph's own weights. `profile="executorch"` refuses webxnn-only nodes and datatypes."""
    from .lower import lower
    from .ops import bind_all

    bound = bind_all(graph)
    return apply_profile(lower(graph, bound, weights), profile)


def apply_profile(xg: XnnGraph, profile: str) -> XnnGraph:
    """`xg` (changed in place) made fit for `profile`: for `executorch` the decompositions, the check that
    no webxnn-only node or datatype is left, and the profile's rewrites. UnsupportedError if it cannot."""
    if profile not in PROFILES:
        raise UnsupportedError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    if profile == "executorch":
        from .pte.decompose import decompose

        decompose(xg)
    _check_profile(xg, profile)
    if profile == "executorch":
        from .pte.profile import apply

        apply(xg)
    return xg


def check_model_options(
    path: PathLike,
    kind: str,
    weights: object = None,
    manifest: object = None,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> None:
    """OptionError when the file at `path`, of `kind` (a filekind), is given an option its kind has no use
    for, instead of ignoring it: the ONNX import options for anything but an `.onnx` model, weights sidecars
    for anything but a `.webnn` / `.json` graph."""
    where = os.fspath(path)
    if kind != "onnx" and (override_dims or dyn_max is not None):
        why = (
            ", whose dims are fixed, or bounded with dyn(name, max), in its text"
            if kind in GRAPH_KINDS
            else ""
        )
        raise OptionError(
            f"{where}: override_dims / dyn_max (--override-dim / --dim-max) are ONNX import options, "
            f"and this is {KINDS[kind][0]}{why}"
        )
    if kind not in ("webnn", "json") and (weights is not None or manifest is not None):
        why = "it holds its weights, or names its external data files" if kind == "onnx" else ""
        raise OptionError(
            f"{where}: weights / manifest (--weights / --manifest) are the sidecars of a .webnn/.json graph, "
            f"and this is {KINDS[kind][0]}" + (f": {why}" if why else "")
        )


def read_model(
    path: PathLike,
    weights: PathLike | Mapping[str, Any] | None = None,
    manifest: PathLike | None = None,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> Graph:
    """A `.webnn` / `.json` graph (weights from `weights`/`manifest` or its sidecars) or an `.onnx` model
    (symbolic dims fixed by `override_dims` or bounded by `dyn_max`: see `webxnn.from_onnx`) as a Graph; any
    other kind of file is a FormatError saying what it is, and an option the kind has no use for an
    OptionError saying why."""
    from .filekind import expect

    kind = expect(path, GRAPH_KINDS, what="a .webnn/.json graph or an .onnx model")
    check_model_options(path, kind, weights, manifest, override_dims, dyn_max)
    if kind == "onnx":
        from .onnx import load_onnx_graph

        return load_onnx_graph(path, override_dims, dyn_max)
    from .dsl import load_graph

    return load_graph(path, weights=weights, manifest=manifest)


def compile(
    graph: Graph | PathLike,
    weights: dict[str, np.ndarray] | None = None,  # noqa: A001
    profile: str = "webxnn",
    *,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> bytes:
    """`graph` (a Graph, or the path of a `.webnn` / `.json` graph or `.onnx` model, read by `read_model`
    with `override_dims` / `dyn_max`) → the bytes of a `.xnn` blob."""
    from .xnn.writer import serialize

    if isinstance(graph, (str, os.PathLike)):
        graph = read_model(graph, override_dims=override_dims, dyn_max=dyn_max)
    elif not isinstance(graph, Graph):
        raise TypeError(f"compile() takes a Graph or a path, not {type(graph).__name__}")
    elif override_dims or dyn_max is not None:
        raise OptionError(
            "override_dims / dyn_max are ONNX import options for a path; a Graph was imported already "
            "(give them to webxnn.from_onnx)"
        )
    return serialize(compile_graph(graph, weights, profile))


__all__ = [
    "apply_profile",
    "check_model_options",
    "compile",
    "compile_graph",
    "read_model",
    "GRAPH_KINDS",
    "PROFILES",
]
