"""Pass 2, fold: evaluate WebNN-level nodes whose inputs are all constant with numpy (ops that have a
`@folds` rule), turning their outputs into constants."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..graph import DTYPES, DynDim
from .ir import LGraph, is_xnn_kind
from .registry import FOLD_RULES

MOVES_DATA = frozenset(
    {"reshape", "transpose", "slice", "concat", "split", "expand", "tile", "reverse", "gather", "pad"}
)


def fold(lg: LGraph) -> LGraph:
    kept = []
    for node in lg.nodes:
        fn = FOLD_RULES.get(node.kind)
        ins = node.inputs
        if (
            fn is None
            or is_xnn_kind(node.kind)
            or (not ins and node.kind != "constant")
            or not all(lg.is_const(i) for i in ins)
            or any(isinstance(d, DynDim) for o in node.outputs for d in lg.values[o].shape)
        ):
            kept.append(node)
            continue
        args: dict[str, Any] = {i: lg.values[i].const for i in ins}
        with np.errstate(all="ignore"):  # inf/nan results are the op's answer, as at run time
            results = fn(node, args)
        for name, arr in zip(node.outputs, results):
            v = lg.values[name]
            arr = np.asarray(arr)
            if arr.size != int(np.prod(v.shape, dtype=np.int64)):
                raise UnsupportedError(
                    f"node {node.src}: constant folding gave shape {list(arr.shape)}, "
                    f"expected {list(v.shape)}"
                )
            v.const = np.asarray(arr.astype(DTYPES[v.dtype], copy=False).reshape(v.shape), order="C")
            # moved fp16 data is still fp16 data: keep storing it at half size
            v.half = node.kind in MOVES_DATA and all(lg.values[i].half for i in ins)
    lg.nodes = kept
    return lg
