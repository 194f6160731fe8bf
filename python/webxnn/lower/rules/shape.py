"""Data-movement ops: reshape, transpose, concat, slice, pad (constant mode)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnsupportedError
from ...graph import DynDim
from ..ir import NCHW_TO_NHWC, NHWC_TO_NCHW, LGraph, LNode
from ..registry import LayoutRule, RuleCtx, enum_value, folds, layout_rule, lowers, operand


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
    ctx.emit(
        "XNNStaticReshape",
        {"input_id": _input(node)},
        node.outputs[0],
        num_dims=len(new_shape),
        new_shape=new_shape,
    )


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
    operands: dict[str, Any] = {
        f"input{k + 1}_id": (inputs[k] if k < len(inputs) else None) for k in range(4)
    }
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
        ctx.emit(
            "WXSlice",
            {"input_id": x},
            node.outputs[0],
            starts=[int(s) for s in node.attrs["starts"]],
            strides=[int(s) for s in strides],
        )
        return
    out = ctx.val(node.outputs[0])
    ctx.emit(
        "XNNStaticSlice",
        {"input_id": x},
        node.outputs[0],
        num_dims=rank,
        offsets=[int(s) for s in node.attrs["starts"]],
        # a whole dynamic dim is (offset 0, size 0): XNN reads a size of 0 as "to the end"
        sizes=[0 if isinstance(d, DynDim) else int(d) for d in out.shape],
    )


@lowers("pad")
def lower_pad(ctx: RuleCtx, node: LNode) -> None:
    mode = node.attrs.get("mode") or "constant"
    value = node.attrs.get("value")
    x = _input(node)
    if mode != "constant" or ctx.val(x).dtype != "float32":
        # edge / reflection / symmetric, and integer data (whose fill value a float field cannot hold)
        ctx.emit(
            "WXPad",
            {"input_id": x},
            node.outputs[0],
            mode=enum_value("WXPadMode", mode),
            pre_paddings=[int(p) for p in node.attrs["beginningPadding"]],
            post_paddings=[int(p) for p in node.attrs["endingPadding"]],
            value=0.0 if value is None else float(value),
        )
        return
    ctx.emit(
        "XNNStaticConstantPad",
        {"input_id": _input(node)},
        node.outputs[0],
        pre_paddings=[int(p) for p in node.attrs["beginningPadding"]],
        post_paddings=[int(p) for p in node.attrs["endingPadding"]],
        padding_value=0.0 if value is None else float(value),
    )


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


# ---------------------------------------------------------------------------------------------- webxnn tables


def _split_permute(node: LNode, graph: LGraph) -> None:
    node.attrs["axis"] = NHWC_TO_NCHW[int(node.attrs.get("axis", 0))]


layout_rule(LayoutRule("permute", permute=_split_permute), "split")


@lowers("split")
def lower_split(ctx: RuleCtx, node: LNode) -> None:
    """One XNNStaticSlice per output."""
    x = _input(node)
    shape = ctx.shape(x)
    axis = int(node.attrs.get("axis", 0))
    start = 0
    for out in node.outputs:
        size = int(ctx.shape(out)[axis])
        offsets = [start if i == axis else 0 for i in range(len(shape))]
        sizes = [size if i == axis else (0 if isinstance(d, DynDim) else int(d)) for i, d in enumerate(shape)]
        ctx.emit("XNNStaticSlice", {"input_id": x}, out, num_dims=len(shape), offsets=offsets, sizes=sizes)
        start += size


@folds("split")
def fold_split(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)]
    axis = int(node.attrs.get("axis", 0))
    cuts = np.cumsum(node.attrs["splits"])[:-1]
    return list(np.split(x, cuts, axis=axis))


@lowers("expand")
def lower_expand(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    if tuple(ctx.shape(x)) == tuple(ctx.shape(node.outputs[0])):
        ctx.emit("XNNCopy", {"input_id": x}, node.outputs[0])
        return
    ctx.emit("WXExpand", {"input_id": x}, node.outputs[0])


@folds("expand")
def fold_expand(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    x = args[_input(node)]
    return [np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(node.attrs["newShape"]))).copy()]


@lowers("tile")
def lower_tile(ctx: RuleCtx, node: LNode) -> None:
    ctx.emit(
        "WXTile",
        {"input_id": _input(node)},
        node.outputs[0],
        repetitions=[int(r) for r in node.attrs["repetitions"]],
    )


@lowers("reverse")
def lower_reverse(ctx: RuleCtx, node: LNode) -> None:
    x = _input(node)
    axes = node.attrs.get("axes")
    axes = list(range(ctx.val(x).rank)) if axes is None else sorted(int(a) for a in axes)
    if not axes:
        ctx.emit("XNNCopy", {"input_id": x}, node.outputs[0])
        return
    ctx.emit("WXReverse", {"input_id": x}, node.outputs[0], axes=axes)


@lowers("cumulativeSum")
def lower_cumulative_sum(ctx: RuleCtx, node: LNode) -> None:
    ctx.emit(
        "WXCumulativeSum",
        {"input_id": _input(node)},
        node.outputs[0],
        axis=int(node.attrs["axis"]),
        exclusive=bool(node.attrs.get("exclusive")),
        reversed=bool(node.attrs.get("reversed")),
    )


@lowers("triangular")
def lower_triangular(ctx: RuleCtx, node: LNode) -> None:
    upper = node.attrs.get("upper")
    ctx.emit(
        "WXTriangular",
        {"input_id": _input(node)},
        node.outputs[0],
        upper=True if upper is None else bool(upper),
        diagonal=int(node.attrs.get("diagonal") or 0),
    )


@folds("constant")
def fold_constant(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    """The nodes-block `constant` (ONNX Constant): base64 little-endian `data`, or a fill `value`."""
    import base64

    from ...graph import DTYPES

    dtype = np.dtype(DTYPES[node.attrs["dataType"]]).newbyteorder("<")
    shape = tuple(int(d) for d in node.attrs["shape"])
    if node.attrs.get("data") is not None:
        raw = base64.b64decode(node.attrs["data"])
        count = int(np.prod(shape, dtype=np.int64))
        if len(raw) != count * dtype.itemsize:
            raise UnsupportedError(
                f"node {node.src}: constant data has {len(raw)} bytes, expected {count * dtype.itemsize}"
            )
        return [np.frombuffer(raw, dtype=dtype).reshape(shape)]
    return [np.full(shape, node.attrs.get("value") or 0, dtype=dtype)]
