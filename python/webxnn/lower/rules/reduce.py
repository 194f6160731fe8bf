"""reduce* and argMin/argMax → WXReduce; reduceMean over the spatial dims of NHWC data with kept dims →
XNNGlobalAvgPooling2d (what ExecuTorch emits for `mean.dim([2, 3], keepdim=True)`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...xnn.reference import reduce_wx
from ..ir import NCHW_TO_NHWC, LGraph, LNode
from ..registry import LayoutRule, RuleCtx, folds, layout_rule, lowers, operand

REDUCE = {
    "reduceSum": "sum",
    "reduceMean": "mean",
    "reduceMax": "max",
    "reduceMin": "min",
    "reduceProduct": "product",
    "reduceL1": "l1",
    "reduceL2": "l2",
    "reduceLogSum": "log_sum",
    "reduceLogSumExp": "log_sum_exp",
    "reduceSumSquare": "sum_square",
}
ARG = {"argMax": "arg_max", "argMin": "arg_min"}
FLAG_KEEP_DIMS = 0x40


def _axes(node: LNode, rank: int) -> list[int]:
    axes = node.attrs.get("axes")
    return list(range(rank)) if axes is None else sorted(int(a) for a in axes)


def _reduce_permute(node: LNode, graph: LGraph) -> None:
    # logical NCHW axis a sits at physical position NCHW_TO_NHWC.index(a)
    node.attrs["axes"] = sorted(NCHW_TO_NHWC.index(a) for a in _axes(node, 4))


layout_rule(
    LayoutRule(
        "permute", permute=_reduce_permute, ok=lambda node, graph: bool(node.attrs.get("keepDimensions"))
    ),
    *REDUCE,
)


@lowers(*REDUCE)
def lower_reduce(ctx: RuleCtx, node: LNode) -> None:
    x = operand(node, "input", 0)
    v = ctx.val(x)
    axes = _axes(node, v.rank)
    keep = bool(node.attrs.get("keepDimensions"))
    if (
        node.kind == "reduceMean"
        and v.dtype == "float32"
        and v.rank == 4
        and axes == [1, 2]
        and keep
        and v.layout == "nhwc"
    ):
        ctx.emit("XNNGlobalAvgPooling2d", {"input_id": x}, node.outputs[0], flags=FLAG_KEEP_DIMS)
        return
    ctx.emit("WXReduce", {"input_id": x}, node.outputs[0], op=REDUCE[node.kind], axes=axes, keep_dims=keep)


@lowers(*ARG)
def lower_arg(ctx: RuleCtx, node: LNode) -> None:
    x = operand(node, "input", 0)
    ctx.emit(
        "WXReduce",
        {"input_id": x},
        node.outputs[0],
        op=ARG[node.kind],
        axes=[int(node.attrs["axis"])],
        keep_dims=bool(node.attrs.get("keepDimensions")),
    )


def _np_reduce(kind: str, x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    # one definition of the reductions, shared with the runtime tests
    return reduce_wx({"op": REDUCE[kind], "axes": list(axes), "keep_dims": keep}, x)


@folds(*REDUCE)
def fold_reduce(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[operand(node, "input", 0)]
    return [_np_reduce(node.kind, x, tuple(_axes(node, x.ndim)), bool(node.attrs.get("keepDimensions")))]


@folds(*ARG)
def fold_arg(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[operand(node, "input", 0)]
    fn = np.argmax if node.kind == "argMax" else np.argmin
    return [fn(x, axis=int(node.attrs["axis"]), keepdims=bool(node.attrs.get("keepDimensions")))]
