"""Per-op lowering knowledge, registered by the op-family modules in `lower/rules/`.

Three tables, one decorator each, so adding an op family is one new module:
  * `@lowers("conv2d")`  — turns a WebNN-level LNode into XNN nodes (the `select` pass).
  * `@folds("add")`      — evaluates the op with numpy when every input is constant (the `fold` pass).
  * `@decomposes("gemm")` — rewrites the op into simpler WebNN-level ops (the `decompose` pass).
  * `layout_rule(...)`   — how the op behaves in the NCHW→NHWC `layout` pass (sensitive / elementwise /
                           permutable with an attribute rewrite).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ..errors import UnsupportedError
from ..graph import Dim
from .ir import LGraph, LNode

LowerFn = Callable[["RuleCtx", LNode], None]
FoldFn = Callable[[LNode, dict[str, Any]], list[np.ndarray]]

LOWER_RULES: dict[str, LowerFn] = {}
FOLD_RULES: dict[str, FoldFn] = {}
DecomposeFn = Callable[[LGraph, LNode], list[LNode]]
DECOMPOSE_RULES: dict[str, DecomposeFn] = {}


def lowers(*ops: str) -> Callable[[LowerFn], LowerFn]:
    def deco(fn: LowerFn) -> LowerFn:
        for op in ops:
            if op in LOWER_RULES:
                raise RuntimeError(f"lowering rule for {op!r} registered twice")
            LOWER_RULES[op] = fn
        return fn

    return deco


def folds(*ops: str) -> Callable[[FoldFn], FoldFn]:
    def deco(fn: FoldFn) -> FoldFn:
        for op in ops:
            FOLD_RULES[op] = fn
        return fn

    return deco


def decomposes(*ops: str) -> Callable[[DecomposeFn], DecomposeFn]:
    """A rewrite of one WebNN-level node into simpler WebNN-level nodes (the `decompose` pass). The
    function returns the replacement nodes; the last ones must define the original node's outputs."""

    def deco(fn: DecomposeFn) -> DecomposeFn:
        for op in ops:
            DECOMPOSE_RULES[op] = fn
        return fn

    return deco


# ---------------------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class LayoutRule:
    """How an op takes part in NHWC regions.

    kind "sensitive": runs on NHWC data; `option` names its layout option and `nchw` the value that means
        the op's logical layout is NCHW (so its data input must be converted and its output is NHWC-tagged);
        `data_role` is the role of the activation input (other operands, e.g. filters, are left alone).
    kind "elementwise": every operand broadcasts against the output; constants are permuted at compile time.
    kind "permute": like elementwise for data flow, but `permute(node, graph)` rewrites the node's
        attributes (axis, paddings, starts, ...) for NHWC data, and `ok(node, graph)` may refuse.
    """

    kind: str
    option: str = ""
    nchw: str = "nchw"
    data_role: str = "input"
    permute: Callable[[LNode, LGraph], None] | None = None
    ok: Callable[[LNode, LGraph], bool] | None = None
    # "permute" only: just the `data_role` operand follows the data into NHWC; the other operands (e.g.
    # instanceNormalization's per-channel scale) keep their shape and the rule's `permute` adapts the node
    data_only: bool = False


LAYOUT_RULES: dict[str, LayoutRule] = {}


def layout_rule(rule: LayoutRule, *ops: str) -> None:
    for op in ops:
        LAYOUT_RULES[op] = rule


# ---------------------------------------------------------------------------------------------- context


class RuleCtx:
    """What a lowering rule gets: the graph and helpers that append XNN nodes tagged with the source node."""

    def __init__(self, graph: LGraph, out: list[LNode]) -> None:
        self.graph = graph
        self.out = out
        self.src = ""

    # values
    def val(self, name: str):  # -> LValue
        return self.graph.values[name]

    def shape(self, name: str) -> tuple[Dim, ...]:
        return self.graph.values[name].shape

    def const(self, name: str | None) -> np.ndarray | None:
        return None if name is None else self.graph.values[name].const

    def new_value(
        self, hint: str, dtype: str, shape: tuple[Dim, ...] | list[Dim], layout: str | None = None
    ) -> str:
        return self.graph.add_value(hint, dtype, shape, layout=layout)

    def new_const(self, hint: str, data: np.ndarray, dtype: str, half: bool = False) -> str:
        # views stay views (permuted filters): the writer makes each constant contiguous as it writes it,
        # so compiling never holds a second full copy of the weights
        return self.graph.add_const(hint, np.asarray(data), dtype, half=half)

    # nodes
    def emit(
        self,
        kind: str,
        operands: dict[str, Any],
        outputs: list[str] | str,
        output_min_max: tuple[float, float] | None = None,
        **attrs: Any,
    ) -> LNode:
        node = LNode(
            kind,
            operands,
            [outputs] if isinstance(outputs, str) else list(outputs),
            attrs,
            self.src,
            output_min_max,
        )
        self.out.append(node)
        return node

    def transpose(self, name: str, perm: list[int] | tuple[int, ...], hint: str = "t") -> str:
        """`name` transposed by `perm` (folded when constant)."""
        v = self.val(name)
        shape = tuple(v.shape[p] for p in perm)
        if list(perm) == list(range(len(perm))):
            return name
        if v.const is not None:
            return self.new_const(f"{name}.{hint}", np.transpose(v.const, perm), v.dtype, v.half)
        out = self.new_value(f"{name}.{hint}", v.dtype, shape)
        self.emit("XNNStaticTranspose", {"input_id": name}, out, num_dims=len(perm), perm=list(perm))
        return out

    def reshape(self, name: str, shape: list[int] | tuple[int, ...], hint: str = "r") -> str:
        v = self.val(name)
        if tuple(v.shape) == tuple(shape):
            return name
        if v.const is not None:
            return self.new_const(f"{name}.{hint}", v.const.reshape(shape), v.dtype, v.half)
        out = self.new_value(f"{name}.{hint}", v.dtype, tuple(shape))
        self.emit(
            "XNNStaticReshape",
            {"input_id": name},
            out,
            num_dims=len(shape),
            new_shape=[int(d) for d in shape],
        )
        return out

    def unsupported(self, msg: str) -> NoReturn:
        raise UnsupportedError(f"node {self.src.rsplit(':', 1)[0]!r} ({self.src.rsplit(':', 1)[-1]}): {msg}")


def enum_value(enum: str, name: str) -> int:
    """A schema enum member's value. Fields whose enum the writer cannot infer from the field name (it knows
    `<Table>.op` → `<Table>Op` only; WXPool2d.op is a WXPoolOp, WXPad.mode a WXPadMode, ...) are given as
    integers."""
    from ..xnn import _layout as L

    return L.enum_values(enum)[name]


def operand(node: LNode, role: str, index: int | None = None) -> Any:
    """The operand of `node` for `role`; falls back to position `index` among the roles, so a rule keeps
    working if the registry names a role differently (e.g. prelu's "slope" vs "x")."""
    if role in node.operands:
        return node.operands[role]
    if index is not None:
        vals = list(node.operands.values())
        if index < len(vals):
            return vals[index]
    return None
