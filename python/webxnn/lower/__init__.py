"""Lowering: a validated WebNN graph → XNN IR, as a pipeline of small passes over `ir.LGraph`.

    normalize → widen → fold → decompose → fold → patterns → layout → select → fuse → simplify → qdq → narrow
    → emit

Per-op knowledge lives in `rules/` (one module per op family, registered with `@lowers`, `@folds`,
`@decomposes` and `layout_rule`); the passes themselves are op-agnostic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..graph import Graph
from ..ops.base import BoundNode
from ..xnn.ir import XnnGraph
from . import rules  # noqa: F401  (registers the lowering rules)
from .decompose import decompose
from .emit import emit
from .fold import fold
from .fuse import fuse
from .ir import LGraph, LNode, LValue
from .layout import layout
from .normalize import normalize
from .patterns import patterns
from .qdq import qdq
from .registry import LOWER_RULES, lowers
from .select import select
from .simplify import simplify
from .widen import narrow, widen

# the passes between normalize and emit, in order; each takes and returns the LGraph
PASSES: list[tuple[str, Callable[[LGraph], LGraph]]] = [
    ("fold", fold),
    ("decompose", decompose),
    ("fold", fold),
    ("patterns", patterns),
    ("layout", layout),
    ("select", select),
    ("fuse", fuse),
    ("simplify", simplify),
    ("qdq", qdq),
    ("narrow", narrow),
]


def lower_to_lgraph(
    graph: Graph, bound: list[BoundNode], weights: dict[str, np.ndarray] | None = None
) -> LGraph:
    lg = widen(normalize(graph, bound, weights))
    for _, p in PASSES:
        lg = p(lg)
        lg.remove_dead()
    return lg


def lower(graph: Graph, bound: list[BoundNode], weights: dict[str, np.ndarray] | None = None) -> XnnGraph:
    """Bound nodes of a validated graph → XnnGraph."""
    xg = emit(lower_to_lgraph(graph, bound, weights))
    if graph.io_names and xg.metadata is not None:  # the model's own input/output names, where they differ
        md = xg.metadata
        md.input_names = [graph.io_names.get(n, n) for n in md.input_names]
        md.output_names = [graph.io_names.get(n, n) for n in md.output_names]
    return xg


__all__ = [
    "lower",
    "lower_to_lgraph",
    "normalize",
    "fold",
    "decompose",
    "layout",
    "select",
    "fuse",
    "patterns",
    "simplify",
    "qdq",
    "emit",
    "widen",
    "narrow",
    "LGraph",
    "LNode",
    "LValue",
    "PASSES",
    "LOWER_RULES",
    "lowers",
]
