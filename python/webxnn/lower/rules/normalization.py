"""Ops that decompose into element-wise ones: linear, hardSigmoid, reciprocal, batchNormalization.

With constant statistics, batchNormalization becomes (x - mean)·k + bias per channel, which the fuse pass
then folds into a preceding convolution's filter and bias."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import DTYPES
from ..ir import LGraph, LNode
from ..registry import LayoutRule, RuleCtx, decomposes, layout_rule, lowers, operand


class _Builder:
    """Emits WebNN-level nodes that replace `node`; the one written with `out=True` defines its output."""

    def __init__(self, graph: LGraph, node: LNode) -> None:
        self.graph, self.node, self.nodes = graph, node, []
        self.dtype = graph.values[node.outputs[0]].dtype

    def const(self, value: Any, shape: tuple[int, ...] | None = None) -> str:
        arr = np.asarray(value, dtype=DTYPES[self.dtype])
        if shape is not None:
            arr = arr.reshape(shape)
        return self.graph.add_const(f"{self.node.outputs[0]}.k", np.asarray(arr, order="C"), self.dtype)

    def op(
        self,
        kind: str,
        operands: dict[str, Any],
        *,
        out: bool = False,
        shape: tuple | None = None,
        **attrs: Any,
    ) -> str:
        if out:
            name = self.node.outputs[0]
        else:
            shape = shape if shape is not None else self.graph.values[self.node.outputs[0]].shape
            name = self.graph.add_value(f"{self.node.outputs[0]}.{kind}", self.dtype, shape)
        self.nodes.append(LNode(kind, operands, [name], attrs, self.node.src))
        return name


@decomposes("linear")
def decompose_linear(graph: LGraph, node: LNode) -> list[LNode]:
    b = _Builder(graph, node)
    x = operand(node, "input", 0)
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 0.0))
    y = b.op("mul", {"a": x, "b": b.const(alpha)}, out=beta == 0.0)
    if beta != 0.0:
        b.op("add", {"a": y, "b": b.const(beta)}, out=True)
    return b.nodes


@decomposes("hardSigmoid")
def decompose_hard_sigmoid(graph: LGraph, node: LNode) -> list[LNode]:
    b = _Builder(graph, node)
    x = operand(node, "input", 0)
    alpha, beta = float(node.attrs.get("alpha", 0.2)), float(node.attrs.get("beta", 0.5))
    y = b.op("mul", {"a": x, "b": b.const(alpha)})
    y = b.op("add", {"a": y, "b": b.const(beta)})
    b.op("clamp", {"input": y}, out=True, minValue=0.0, maxValue=1.0)
    return b.nodes


@decomposes("reciprocal")
def decompose_reciprocal(graph: LGraph, node: LNode) -> list[LNode]:
    b = _Builder(graph, node)
    b.op("div", {"a": b.const(1.0), "b": operand(node, "input", 0)}, out=True)
    return b.nodes


@decomposes("batchNormalization")
def decompose_batch_norm(graph: LGraph, node: LNode) -> list[LNode]:
    """(x - mean) / sqrt(variance + epsilon) · scale + bias, the 1-D operands broadcast along `axis`."""
    b = _Builder(graph, node)
    x = operand(node, "input", 0)
    rank = graph.values[x].rank
    axis = int(node.attrs.get("axis", 1))
    axis = axis + rank if axis < 0 else axis
    eps = float(node.attrs.get("epsilon", 1e-5))
    roles = {r: operand(node, r, i) for i, r in enumerate(("input", "mean", "variance", "scale", "bias"))}
    c = graph.values[roles["mean"]].shape[0]
    bshape = tuple(c if i == axis else 1 for i in range(rank))
    if all(roles[r] is None or graph.is_const(roles[r]) for r in ("mean", "variance", "scale", "bias")):

        def data(role: str, default: float) -> np.ndarray:
            name = roles[role]
            return np.full(c, default) if name is None else graph.values[name].const.astype(np.float64)

        # (x - mean)·k + bias rather than x·k + (bias - mean·k): the latter loses precision when x is
        # close to the mean; after a convolution all three fold into its filter and bias anyway
        k = data("scale", 1.0) / np.sqrt(data("variance", 0.0) + eps)
        y = b.op("sub", {"a": x, "b": b.const(data("mean", 0.0), bshape)})
        y = b.op("mul", {"a": y, "b": b.const(k, bshape)}, out=roles["bias"] is None)
        if roles["bias"] is not None:
            b.op("add", {"a": y, "b": b.const(data("bias", 0.0), bshape)}, out=True)
        return b.nodes

    def bcast(role: str) -> str:
        return b.op("reshape", {"input": roles[role]}, shape=bshape, newShape=list(bshape))

    y = b.op("sub", {"a": x, "b": bcast("mean")})
    sd = b.op(
        "sqrt",
        {"input": b.op("add", {"a": bcast("variance"), "b": b.const(eps)}, shape=bshape)},
        shape=bshape,
    )
    last = roles["scale"] is None and roles["bias"] is None
    y = b.op("div", {"a": y, "b": sd}, out=last)
    if roles["scale"] is not None:
        y = b.op("mul", {"a": y, "b": bcast("scale")}, out=roles["bias"] is None)
    if roles["bias"] is not None:
        b.op("add", {"a": y, "b": bcast("bias")}, out=True)
    return b.nodes


@decomposes("softsign")
def decompose_softsign(graph: LGraph, node: LNode) -> list[LNode]:
    """x / (1 + |x|): three XNN nodes, so the blob stays ExecuTorch-compatible."""
    b = _Builder(graph, node)
    x = operand(node, "input", 0)
    d = b.op("add", {"a": b.op("abs", {"input": x}), "b": b.const(1.0)})
    b.op("div", {"a": x, "b": d}, out=True)
    return b.nodes


# ---------------------------------------------------------------------------------------------- WXNormalize


def _instance_norm_permute(node: LNode, graph: LGraph) -> None:
    node.attrs["layout"] = "nhwc"  # the data is now NHWC; scale and bias stay per-channel vectors


layout_rule(
    LayoutRule(
        "permute",
        permute=_instance_norm_permute,
        data_only=True,
        ok=lambda node, graph: (node.attrs.get("layout") or "nchw") == "nchw",
    ),
    "instanceNormalization",
)


def _broadcastable(ctx: RuleCtx, name: str | None, rank: int, axes: list[int]) -> str | None:
    """scale/bias given over `axes` (in that order) → a tensor that broadcasts against the input."""
    if name is None:
        return None
    order = sorted(range(len(axes)), key=lambda k: axes[k])
    name = ctx.transpose(name, order, "sorted")
    dims = dict(zip(sorted(axes), ctx.shape(name)))
    first = min(axes) if axes else rank
    return ctx.reshape(name, [dims.get(i, 1) for i in range(first, rank)], "bcast")


@lowers("layerNormalization")
def lower_layer_norm(ctx: RuleCtx, node: LNode) -> None:
    x = operand(node, "input", 0)
    rank = ctx.val(x).rank
    axes = node.attrs.get("axes")
    axes = list(range(1, rank)) if axes is None else [int(a) for a in axes]
    scale = _broadcastable(ctx, operand(node, "scale", 1), rank, axes)
    bias = _broadcastable(ctx, operand(node, "bias", 2), rank, axes)
    ctx.emit(
        "WXNormalize",
        {"input_id": x, "scale_id": scale, "bias_id": bias},
        node.outputs[0],
        axes=sorted(axes),
        epsilon=float(node.attrs.get("epsilon", 1e-5)),
    )


@lowers("instanceNormalization")
def lower_instance_norm(ctx: RuleCtx, node: LNode) -> None:
    x = operand(node, "input", 0)
    nhwc = (node.attrs.get("layout") or "nchw") == "nhwc"
    axes, channel = ([1, 2], 3) if nhwc else ([2, 3], 1)
    scale = _broadcastable(ctx, operand(node, "scale", 1), 4, [channel])
    bias = _broadcastable(ctx, operand(node, "bias", 2), 4, [channel])
    ctx.emit(
        "WXNormalize",
        {"input_id": x, "scale_id": scale, "bias_id": bias},
        node.outputs[0],
        axes=axes,
        epsilon=float(node.attrs.get("epsilon", 1e-5)),
    )
