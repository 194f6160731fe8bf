"""gather, gatherElements, gatherND, scatterElements, scatterND → the WXGather* / WXScatter* tables.

Indices stay in their WebNN type (int32, uint32, int64); the runtime applies WebNN's rule for
implementations: negative counts from the end, out of range is clamped. Gathers an ONNX model asked for
(`Graph.onnx_indices`) carry the checked + wrap flags instead: ids from a graph input outside [-n, n-1] are an
InputError at run time, as onnxruntime's."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...xnn.ir import FLAG_CHECKED_INDICES, FLAG_INDICES_WRAP
from ...xnn.reference import clamp_indices
from ..ir import LNode
from ..registry import RuleCtx, folds, lowers, operand


def _xi(node: LNode) -> tuple[str, str]:
    return operand(node, "input", 0), operand(node, "indices", 1)


def _flags(ctx: RuleCtx, node: LNode) -> int:
    node_id = node.src.rpartition(":")[0]  # src is "<webnn node id>:<op>"
    return FLAG_CHECKED_INDICES | FLAG_INDICES_WRAP if node_id in ctx.graph.onnx_indices else 0


@lowers("gather")
def lower_gather(ctx: RuleCtx, node: LNode) -> None:
    x, i = _xi(node)
    ctx.emit(
        "WXGather",
        {"input_id": x, "indices_id": i},
        node.outputs[0],
        axis=int(node.attrs.get("axis", 0)),
        flags=_flags(ctx, node),
    )


@lowers("gatherElements")
def lower_gather_elements(ctx: RuleCtx, node: LNode) -> None:
    x, i = _xi(node)
    ctx.emit(
        "WXGatherElements",
        {"input_id": x, "indices_id": i},
        node.outputs[0],
        axis=int(node.attrs.get("axis", 0)),
        flags=_flags(ctx, node),
    )


@lowers("gatherND")
def lower_gather_nd(ctx: RuleCtx, node: LNode) -> None:
    x, i = _xi(node)
    ctx.emit("WXGatherND", {"input_id": x, "indices_id": i}, node.outputs[0], flags=_flags(ctx, node))


@lowers("scatterElements")
def lower_scatter_elements(ctx: RuleCtx, node: LNode) -> None:
    x, i = _xi(node)
    u = operand(node, "updates", 2)
    ctx.emit(
        "WXScatterElements",
        {"input_id": x, "indices_id": i, "updates_id": u},
        node.outputs[0],
        axis=int(node.attrs.get("axis", 0)),
    )


@lowers("scatterND")
def lower_scatter_nd(ctx: RuleCtx, node: LNode) -> None:
    x, i = _xi(node)
    u = operand(node, "updates", 2)
    ctx.emit("WXScatterND", {"input_id": x, "indices_id": i, "updates_id": u}, node.outputs[0])


@folds("gather")
def fold_gather(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x, i = (args[n] for n in _xi(node))
    axis = int(node.attrs.get("axis", 0))
    return [np.take(x, clamp_indices(i, x.shape[axis]), axis=axis)]
