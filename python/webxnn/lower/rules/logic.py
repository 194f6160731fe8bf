"""Comparisons, logical ops, isNaN/isInfinite, where and cast → WXBinary / WXUnary / WXWhere.

XNNPACK has no node for any of them; they output uint8 0/1 (cast: the target type)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import DTYPES
from ...xnn.reference import convert
from ..ir import LNode
from ..registry import LayoutRule, RuleCtx, folds, layout_rule, lowers, operand

COMPARE = {
    "equal": "equal",
    "notEqual": "not_equal",
    "greater": "greater",
    "greaterOrEqual": "greater_or_equal",
    "lesser": "lesser",
    "lesserOrEqual": "lesser_or_equal",
}
LOGICAL = {"logicalAnd": "logical_and", "logicalOr": "logical_or", "logicalXor": "logical_xor"}
UNARY = {"logicalNot": "logical_not", "isNaN": "is_nan", "isInfinite": "is_infinite"}

_NP_BINARY = {
    "equal": np.equal,
    "notEqual": np.not_equal,
    "greater": np.greater,
    "greaterOrEqual": np.greater_equal,
    "lesser": np.less,
    "lesserOrEqual": np.less_equal,
}
_NP_LOGICAL = {"logicalAnd": np.logical_and, "logicalOr": np.logical_or, "logicalXor": np.logical_xor}
_NP_UNARY = {"logicalNot": lambda x: x == 0, "isNaN": np.isnan, "isInfinite": np.isinf}

layout_rule(LayoutRule("elementwise"), *COMPARE, *LOGICAL, *UNARY, "where", "cast")


@lowers(*COMPARE, *LOGICAL)
def lower_compare(ctx: RuleCtx, node: LNode) -> None:
    a, b = operand(node, "a", 0), operand(node, "b", 1)
    op = COMPARE.get(node.kind) or LOGICAL[node.kind]
    ctx.emit("WXBinary", {"input1_id": a, "input2_id": b}, node.outputs[0], op=op)


@lowers(*UNARY)
def lower_logic_unary(ctx: RuleCtx, node: LNode) -> None:
    ctx.emit("WXUnary", {"input_id": operand(node, "input", 0)}, node.outputs[0], op=UNARY[node.kind])


@lowers("where")
def lower_where(ctx: RuleCtx, node: LNode) -> None:
    c, t, f = (operand(node, r, i) for i, r in enumerate(("condition", "trueValue", "falseValue")))
    ctx.emit("WXWhere", {"condition_id": c, "true_id": t, "false_id": f}, node.outputs[0])


@lowers("cast")
def lower_cast(ctx: RuleCtx, node: LNode) -> None:
    x = operand(node, "input", 0)
    if ctx.val(x).dtype == ctx.val(node.outputs[0]).dtype:
        ctx.emit("XNNCopy", {"input_id": x}, node.outputs[0])
        return
    ctx.emit("WXUnary", {"input_id": x}, node.outputs[0], op="cast")


@folds(*COMPARE, *LOGICAL)
def fold_compare(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    a, b = args[operand(node, "a", 0)], args[operand(node, "b", 1)]
    if node.kind in _NP_LOGICAL:
        return [_NP_LOGICAL[node.kind](a != 0, b != 0).astype(np.uint8)]
    return [_NP_BINARY[node.kind](a, b).astype(np.uint8)]


@folds(*UNARY)
def fold_logic_unary(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    return [_NP_UNARY[node.kind](args[operand(node, "input", 0)]).astype(np.uint8)]


@folds("where")
def fold_where(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    c, t, f = (args[operand(node, r, i)] for i, r in enumerate(("condition", "trueValue", "falseValue")))
    return [np.where(c != 0, t, f)]


@folds("cast")
def fold_cast(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    # the runtime's conversion rule (truncate, saturate)
    return [convert(args[operand(node, "input", 0)], np.dtype(DTYPES[node.attrs["type"]]))]
