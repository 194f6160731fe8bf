"""Data-movement ops: reshape, transpose, concat, slice, pad (constant mode)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import DynDim
from ..ir import NCHW_TO_NHWC, NHWC_TO_NCHW, LGraph, LNode
from ..registry import LayoutRule, RuleCtx, folds, layout_rule, lowers, operand


def _input(node: LNode) -> str:
    return operand(node, "input", 0)


def _perm_list(values: list[Any]) -> list[Any]:
    """A per-dim list of a logical NCHW tensor, reordered for its NHWC storage."""
    return [values[p] for p in NCHW_TO_NHWC]


# ---------------------------------------------------------------------------------------------- layout

def _concat_permute(node: LNode, graph: LGraph) -> None:
    axis = node.attrs.get("axis", 0)
    node.attrs["axis"] = NHWC_TO_NCHW[axis + 4 if axis < 0 else axis]


def _slice_permute(node: LNode, graph: LGraph) -> None:
    for key in ("starts", "sizes", "strides"):
        if node.attrs.get(key) is not None:
            node.attrs[key] = _perm_list(list(node.attrs[key]))


def _pad_permute(node: LNode, graph: LGraph) -> None:
    for key in ("beginningPadding", "endingPadding"):
        node.attrs[key] = _perm_list(list(node.attrs[key]))


def _transpose_permute(node: LNode, graph: LGraph) -> None:
    # output[i] = logical[perm[i]] and logical[j] = physical[NHWC_TO_NCHW[j]]: compose, output is plain
    rank = graph.values[_input(node)].rank
    perm = node.attrs.get("permutation") or list(reversed(range(rank)))
    node.attrs["permutation"] = [NHWC_TO_NCHW[p] for p in perm]


layout_rule(LayoutRule("permute", permute=_concat_permute), "concat")
layout_rule(LayoutRule("permute", permute=_slice_permute), "slice")
layout_rule(LayoutRule("permute", permute=_pad_permute), "pad")
layout_rule(LayoutRule("absorb", permute=_transpose_permute), "transpose")


# ---------------------------------------------------------------------------------------------- lowering

@lowers("reshape")
def lower_reshape(ctx: RuleCtx, node: LNode) -> None:
    out = ctx.val(node.outputs[0])
    dyn = [d for d in out.shape if isinstance(d, DynDim)]
    if len(dyn) > 1:
        ctx.unsupported("reshape to a shape with more than one dynamic dimension")
    new_shape = [0 if isinstance(d, DynDim) else int(d) for d in out.shape]  # 0 = inferred by XNN
    ctx.emit("XNNStaticReshape", {"input_id": _input(node)}, node.outputs[0], num_dims=len(new_shape),
             new_shape=new_shape)


@lowers("transpose")
def lower_transpose(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    rank = ctx.val(x).rank
    perm = node.attrs.get("permutation") or list(reversed(range(rank)))
    if list(perm) == list(range(rank)):
        ctx.emit("XNNCopy", {"input_id": x}, node.outputs[0])
        return
    ctx.emit("XNNStaticTranspose", {"input_id": x}, node.outputs[0], num_dims=rank, perm=list(perm))


def _concat_node(ctx: RuleCtx, axis: int, inputs: list[str], output: str) -> None:
    operands: dict[str, Any] = {f"input{k + 1}_id": (inputs[k] if k < len(inputs) else None)
                                for k in range(4)}
    if len(inputs) == 5:
        operands["input5_id"] = inputs[4]
    ctx.emit(f"XNNConcatenate{len(inputs)}", operands, output, axis=axis)


@lowers("concat")
def lower_concat(ctx: RuleCtx, node: LNode) -> None:
    inputs = list(operand(node, "inputs", 0))
    out = ctx.val(node.outputs[0])
    axis = node.attrs.get("axis", 0)
    axis = axis + out.rank if axis < 0 else axis
    if len(inputs) == 1:
        ctx.emit("XNNCopy", {"input_id": inputs[0]}, node.outputs[0])
        return
    # XNN has Concatenate2..5: concatenate five at a time, feeding each partial result into the next
    while len(inputs) > 5:
        head, inputs = inputs[:5], inputs[5:]
        shape = list(ctx.shape(head[0]))
        shape[axis] = sum(ctx.shape(h)[axis] for h in head)
        part = ctx.new_value(f"{node.outputs[0]}.part", out.dtype, shape, layout=out.layout)
        _concat_node(ctx, axis, head, part)
        inputs = [part, *inputs]
    _concat_node(ctx, axis, inputs, node.outputs[0])


@lowers("slice")
def lower_slice(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    rank = ctx.val(x).rank
    strides = node.attrs.get("strides") or [1] * rank
    if any(s != 1 for s in strides):
        ctx.unsupported(f"slice with strides {list(strides)} (only stride 1 is lowered so far)")
    out = ctx.val(node.outputs[0])
    ctx.emit("XNNStaticSlice", {"input_id": x}, node.outputs[0], num_dims=rank,
             offsets=[int(s) for s in node.attrs["starts"]],
             # a whole dynamic dim is (offset 0, size 0): XNN reads a size of 0 as "to the end"
             sizes=[0 if isinstance(d, DynDim) else int(d) for d in out.shape])


@lowers("pad")
def lower_pad(ctx: RuleCtx, node: LNode) -> None:
    mode = node.attrs.get("mode") or "constant"
    if mode != "constant":
        ctx.unsupported(f"pad mode {mode!r} (only \"constant\" is lowered so far)")
    value = node.attrs.get("value")
    ctx.emit("XNNStaticConstantPad", {"input_id": _input(node)}, node.outputs[0],
             pre_paddings=[int(p) for p in node.attrs["beginningPadding"]],
             post_paddings=[int(p) for p in node.attrs["endingPadding"]],
             padding_value=0.0 if value is None else float(value))


# ---------------------------------------------------------------------------------------------- folding

@folds("reshape")
def fold_reshape(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    return [args[_input(node)]]  # fold() reshapes every result to its output's shape


@folds("transpose")
def fold_transpose(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)]
    perm = node.attrs.get("permutation") or list(reversed(range(x.ndim)))
    return [np.transpose(x, perm)]


@folds("concat")
def fold_concat(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    return [np.concatenate([args[n] for n in operand(node, "inputs", 0)], axis=node.attrs.get("axis", 0))]


@folds("slice")
def fold_slice(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)]
    strides = node.attrs.get("strides") or [1] * x.ndim
    idx = tuple(slice(s, s + n, st) for s, n, st in zip(node.attrs["starts"], node.attrs["sizes"], strides))
    return [x[idx]]


@folds("pad")
def fold_pad(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)]
    widths = list(zip(node.attrs["beginningPadding"], node.attrs["endingPadding"]))
    mode = node.attrs.get("mode") or "constant"
    if mode == "constant":
        value = node.attrs.get("value")
        return [np.pad(x, widths, constant_values=0 if value is None else value)]
    np_mode = {"edge": "edge", "reflection": "reflect", "symmetric": "symmetric"}[mode]
    return [np.pad(x, widths, mode=np_mode)]
