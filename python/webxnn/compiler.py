"""`compile`: a WebNN graph → `.xnn` bytes (validate with `ops`, lower, serialize with `xnn.writer`)."""

from __future__ import annotations

import numpy as np

from .errors import UnsupportedError
from .graph import Graph
from .xnn.ir import XnnGraph

PROFILES = ("webxnn", "executorch")
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
                bad_values.append(f"{sources[k] if k < len(sources) else k} uses "
                                  f"{xg.value(vid).datatype.name} value {vid}")
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


def compile_graph(graph: Graph, weights: dict[str, np.ndarray] | None = None,
                  profile: str = "webxnn") -> XnnGraph:
    """Validate `graph` and lower it to XNN IR. `weights` maps const names (or weights refs) to arrays and
    overrides the graph's own weights. `profile="executorch"` refuses webxnn-only nodes and datatypes."""
    from .lower import lower
    from .ops import bind_all

    if profile not in PROFILES:
        raise UnsupportedError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    bound = bind_all(graph)
    xg = lower(graph, bound, weights)
    _check_profile(xg, profile)
    return xg


def compile(graph: Graph, weights: dict[str, np.ndarray] | None = None,  # noqa: A001 - public API name
            profile: str = "webxnn") -> bytes:
    """`graph` → the bytes of a `.xnn` blob."""
    from .xnn.writer import serialize

    return serialize(compile_graph(graph, weights, profile))


__all__ = ["compile", "compile_graph", "PROFILES"]
