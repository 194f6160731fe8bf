"""Pass 3, decompose: rewrite WebNN ops that have no direct XNN node into simpler WebNN ops (`@decomposes`
rules: gemm → transpose/matmul/mul/add, ...). Run `fold` afterwards to absorb constant scalings."""

from __future__ import annotations

from .ir import LGraph, is_xnn_kind
from .registry import DECOMPOSE_RULES


def decompose(lg: LGraph) -> LGraph:
    out = []
    for node in lg.nodes:
        fn = None if is_xnn_kind(node.kind) else DECOMPOSE_RULES.get(node.kind)
        out.extend([node] if fn is None else fn(lg, node))
    lg.nodes = out
    return lg
