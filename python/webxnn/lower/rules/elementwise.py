"""Element-wise ops: binary arithmetic, unary math, activations (relu, clamp, leakyRelu, elu, hardSwish,
gelu, sigmoid, tanh), prelu, identity, and softmax (which the layout pass treats like an element-wise op
with an axis)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...xnn.reference import int_div, int_pow
from ..ir import LGraph, LNode
from ..registry import LayoutRule, RuleCtx, folds, layout_rule, lowers, operand

INF = float("inf")

BINARY = {
    "add": "XNNAdd",
    "sub": "XNNSubtract",
    "mul": "XNNMultiply",
    "div": "XNNDiv",
    "max": "XNNMaximum",
    "min": "XNNMinimum",
}
BINARY_NP = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
}

# unary ops with a plain XNN node
UNARY = {
    "sigmoid": "XNNSigmoid",
    "tanh": "XNNTanh",
    "exp": "XNNExp",
    "log": "XNNLog",
    "abs": "XNNAbs",
    "neg": "XNNNegate",
    "floor": "XNNFloor",
    "ceil": "XNNCeiling",
    "sqrt": "XNNSquareRoot",
    "sin": "XNNSin",
    "cos": "XNNCos",
    "gelu": "XNNGelu",
    "hardSwish": "XNNHardswish",
    "identity": "XNNCopy",
}

_erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY_NP = {
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "abs": np.abs,
    "neg": np.negative,
    "floor": np.floor,
    "ceil": np.ceil,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "erf": _erf,
    "identity": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "hardSwish": lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
    "reciprocal": lambda x: 1.0 / x,
    "sign": np.sign,
    "roundEven": np.rint,
    "tan": np.tan,
    "softplus": lambda x: np.logaddexp(0.0, x),
    "softsign": lambda x: x / (1.0 + np.abs(x)),
}


def _input(node: LNode) -> str:
    return operand(node, "input", 0)


def clamp_bounds(attrs: dict[str, Any]) -> tuple[float, float]:
    lo, hi = attrs.get("minValue"), attrs.get("maxValue")
    return (-INF if lo is None else float(lo), INF if hi is None else float(hi))


# ---------------------------------------------------------------------------------------------- layout

layout_rule(
    LayoutRule("elementwise"),
    *BINARY,
    "pow",
    *UNARY,
    "relu",
    "clamp",
    "leakyRelu",
    "elu",
    "prelu",
    "erf",
    "reciprocal",
    "sign",
    "roundEven",
    "softplus",
    "softsign",
    "tan",
    "hardSigmoid",
    "linear",
)


def _softmax_permute(node: LNode, graph: LGraph) -> None:
    rank = graph.values[_input(node)].rank
    axis = node.attrs.get("axis", rank - 1)
    axis = axis + rank if axis < 0 else axis
    node.attrs["axis"] = (0, 3, 1, 2)[axis]  # logical NCHW axis → its position in NHWC


layout_rule(LayoutRule("permute", permute=_softmax_permute), "softmax")


# ---------------------------------------------------------------------------------------------- lowering

# XNN's arithmetic nodes take float32 (float16 graphs were widened); every other datatype (the integers)
# goes to the webxnn tables
WX_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "max", "min": "min", "pow": "pow"}
WX_UNARY = {
    "abs": "abs",
    "neg": "neg",
    "relu": "relu",
    "clamp": "clamp",
    "erf": "erf",
    "sign": "sign",
    "roundEven": "round_even",
    "softplus": "softplus",
    "tan": "tan",
    "reciprocal": "reciprocal",
}


def is_float(ctx: RuleCtx, name: str) -> bool:
    return ctx.val(name).dtype == "float32"


@lowers(*WX_BINARY)
def lower_binary(ctx: RuleCtx, node: LNode) -> None:
    a, b = operand(node, "a", 0), operand(node, "b", 1)
    if node.kind in BINARY and is_float(ctx, a):
        ctx.emit(BINARY[node.kind], {"input1_id": a, "input2_id": b}, node.outputs[0])
        return
    ctx.emit("WXBinary", {"input1_id": a, "input2_id": b}, node.outputs[0], op=WX_BINARY[node.kind])


@lowers(*UNARY)
def lower_unary(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    if node.kind in WX_UNARY and not is_float(ctx, x):
        ctx.emit("WXUnary", {"input_id": x}, node.outputs[0], op=WX_UNARY[node.kind])
        return
    ctx.emit(UNARY[node.kind], {"input_id": x}, node.outputs[0])


@lowers("erf", "sign", "roundEven", "softplus", "tan")
def lower_wx_unary(ctx: RuleCtx, node: LNode) -> None:
    ctx.emit("WXUnary", {"input_id": _input(node)}, node.outputs[0], op=WX_UNARY[node.kind])


@lowers("relu")
def lower_relu(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    if not is_float(ctx, x):
        ctx.emit("WXUnary", {"input_id": x}, node.outputs[0], op="relu")
        return
    ctx.emit("XNNClamp", {"input_id": x}, node.outputs[0], output_min_max=(0.0, INF))


@lowers("clamp")
def lower_clamp(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    lo, hi = clamp_bounds(node.attrs)
    if not is_float(ctx, x):
        ctx.emit("WXUnary", {"input_id": x}, node.outputs[0], op="clamp", alpha=lo, beta=hi)
        return
    ctx.emit("XNNClamp", {"input_id": x}, node.outputs[0], output_min_max=(lo, hi))


@lowers("leakyRelu")
def lower_leaky_relu(ctx: RuleCtx, node: LNode) -> None:
    alpha = node.attrs.get("alpha")
    ctx.emit(
        "XNNLeakyReLU",
        {"input_id": _input(node)},
        node.outputs[0],
        negative_slope=0.01 if alpha is None else float(alpha),
    )


@lowers("elu")
def lower_elu(ctx: RuleCtx, node: LNode) -> None:
    alpha = node.attrs.get("alpha")
    ctx.emit(
        "XNNELU", {"input_id": _input(node)}, node.outputs[0], alpha=1.0 if alpha is None else float(alpha)
    )


@lowers("prelu")
def lower_prelu(ctx: RuleCtx, node: LNode) -> None:
    x, slope = operand(node, "input", 0), operand(node, "slope", 1)
    ctx.emit("XNNPReLU", {"input1_id": x, "input2_id": slope}, node.outputs[0])


@lowers("softmax")
def lower_softmax(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    rank = ctx.val(x).rank
    axis = node.attrs.get("axis", rank - 1)
    axis = axis + rank if axis < 0 else axis
    if axis == rank - 1:
        ctx.emit("XNNSoftmax", {"input_id": x}, node.outputs[0])
        return
    # XNNSoftmax works on the last dim: swap the axis there and back (a swap is its own inverse)
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    t = ctx.transpose(x, perm)
    out = ctx.val(node.outputs[0])
    s = ctx.new_value(f"{node.outputs[0]}.softmax", out.dtype, ctx.shape(t))
    ctx.emit("XNNSoftmax", {"input_id": t}, s)
    ctx.emit("XNNStaticTranspose", {"input_id": s}, node.outputs[0], num_dims=rank, perm=perm)


# ---------------------------------------------------------------------------------------------- folding


@folds(*BINARY_NP)
def fold_binary(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    a, b = args[operand(node, "a", 0)], args[operand(node, "b", 1)]
    if np.issubdtype(a.dtype, np.integer) and node.kind in ("div", "pow"):
        return [(int_div if node.kind == "div" else int_pow)(a, b)]  # the runtime's integer rules
    return [BINARY_NP[node.kind](a, b)]


@folds(*UNARY_NP)
def fold_unary(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    return [UNARY_NP[node.kind](args[_input(node)])]


@folds("clamp")
def fold_clamp(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    lo, hi = clamp_bounds(node.attrs)
    return [np.clip(args[_input(node)], lo, hi)]


@folds("leakyRelu")
def fold_leaky_relu(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)]
    alpha = node.attrs.get("alpha")
    return [np.where(x >= 0, x, x * (0.01 if alpha is None else alpha))]


@folds("elu")
def fold_elu(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)]
    alpha = node.attrs.get("alpha")
    return [np.where(x >= 0, x, (1.0 if alpha is None else alpha) * np.expm1(np.minimum(x, 0)))]


@folds("prelu")
def fold_prelu(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x, s = args[operand(node, "input", 0)], args[operand(node, "slope", 1)]
    return [np.where(x >= 0, x, x * s)]


@folds("softmax")
def fold_softmax(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)].astype(np.float64)
    axis = node.attrs.get("axis", x.ndim - 1)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return [e / e.sum(axis=axis, keepdims=True)]
