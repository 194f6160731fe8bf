"""matmul → XNNFullyConnected (constant 2-D B) or XNNBatchMatrixMultiply; gemm is decomposed into
transpose / matmul / mul / add first (constant scalings then fold into the weights)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import DTYPES
from ...xnn.ir import FLAG_TRANSPOSE_WEIGHTS
from ..ir import LGraph, LNode
from ..registry import RuleCtx, decomposes, folds, lowers, operand


@lowers("matmul")
def lower_matmul(ctx: RuleCtx, node: LNode) -> None:
    a, b = operand(node, "a", 0), operand(node, "b", 1)
    out = node.outputs[0]
    if ctx.val(a).dtype != "float32":
        ctx.unsupported(f"matmul on {ctx.val(a).dtype} (only floating-point matmul is lowered)")
    # 1-D operands: WebNN prepends (a) / appends (b) a 1 and drops it from the result
    if ctx.val(a).rank == 1 or ctx.val(b).rank == 1:
        if ctx.val(a).rank == 1:
            a = ctx.reshape(a, (1, ctx.shape(a)[0]))
        if ctx.val(b).rank == 1:
            b = ctx.reshape(b, (ctx.shape(b)[0], 1))
        sa, sb = ctx.shape(a), ctx.shape(b)
        batch = np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]))
        full = ctx.new_value(f"{out}.mm", ctx.val(out).dtype, (*batch, sa[-2], sb[-1]))
        _matmul(ctx, a, b, full)
        ctx.emit(
            "XNNStaticReshape",
            {"input_id": full},
            out,
            num_dims=ctx.val(out).rank,
            new_shape=[int(d) for d in ctx.shape(out)],
        )
        return
    _matmul(ctx, a, b, out)


def _matmul(ctx: RuleCtx, a: str, b: str, out: str) -> None:
    va, vb = ctx.val(a), ctx.val(b)
    # a constant B whose leading dims are all 1 is a fully connected layer; the input's leading dims become
    # XNN's batch. The filter keeps the bytes it has, so compiling never copies a weight: B [K, N] goes in as
    # is with TRANSPOSE_WEIGHTS (ExecuTorch's `mm`), and a B that is a transposed view of an [N, K] array
    # (gemm bTranspose, torch's Linear) goes in as that array with flags 0 (ExecuTorch's `linear`).
    if vb.const is not None and vb.rank >= 2 and va.rank >= vb.rank and all(d == 1 for d in vb.shape[:-2]):
        k, n = vb.shape[-2], vb.shape[-1]
        data = vb.const.reshape(k, n)
        if data.T.flags.c_contiguous and not data.flags.c_contiguous:
            w = ctx.new_const(f"{b}.fc", data.T, vb.dtype, vb.half)
            flags = 0
        else:
            w = ctx.new_const(f"{b}.fc", data, vb.dtype, vb.half)
            flags = FLAG_TRANSPOSE_WEIGHTS
        ctx.emit("XNNFullyConnected", {"input1_id": a, "filter_id": w, "bias_id": None}, out, flags=flags)
        return
    # batch matmul: give both operands the same rank (XNN broadcasts batch dims, not ranks)
    rank = max(va.rank, vb.rank)
    if va.rank < rank:
        a = ctx.reshape(a, (1,) * (rank - va.rank) + tuple(va.shape))
    if vb.rank < rank:
        b = ctx.reshape(b, (1,) * (rank - vb.rank) + tuple(vb.shape))
    ctx.emit("XNNBatchMatrixMultiply", {"input1_id": a, "input2_id": b}, out, flags=0)


@folds("matmul")
def fold_matmul(node: LNode, args: dict[str, Any]) -> list[np.ndarray]:
    return [np.matmul(args[operand(node, "a", 0)], args[operand(node, "b", 1)])]


@decomposes("gemm")
def decompose_gemm(graph: LGraph, node: LNode) -> list[LNode]:
    """gemm(a, b, c, alpha, beta, aTranspose, bTranspose) = alpha·op(a)·op(b) + beta·c, as WebNN-level
    transpose/mul/matmul/add nodes. Scalings go on a constant operand when there is one, so `fold` absorbs
    them into the weights."""
    a, b, c = operand(node, "a", 0), operand(node, "b", 1), operand(node, "c", 2)
    at = node.attrs
    alpha = 1.0 if at.get("alpha") is None else float(at["alpha"])
    beta = 1.0 if at.get("beta") is None else float(at["beta"])
    out = node.outputs[0]
    dtype = graph.values[out].dtype
    nodes: list[LNode] = []

    def new(kind: str, operands: dict[str, Any], shape: tuple, hint: str, **attrs: Any) -> str:
        name = graph.add_value(f"{out}.{hint}", dtype, shape)
        nodes.append(LNode(kind, operands, [name], attrs, node.src))
        return name

    def scalar(v: float) -> str:
        return graph.add_const(f"{out}.scalar", np.array(v, dtype=DTYPES[dtype]), dtype)

    def transposed(x: str) -> str:
        v = graph.values[x]
        if v.const is not None:  # constant now, so the alpha scaling below can land on it
            return graph.add_const(f"{x}.t", v.const.T, v.dtype, half=v.half)  # a view: no copy
        return new("transpose", {"input": x}, (v.shape[1], v.shape[0]), "t", permutation=[1, 0])

    if at.get("aTranspose"):
        a = transposed(a)
    if at.get("bTranspose"):
        b = transposed(b)
    post_scale = False
    if alpha != 1.0:
        if graph.is_const(b):
            b = new("mul", {"a": b, "b": scalar(alpha)}, graph.values[b].shape, "alpha")
        elif graph.is_const(a):
            a = new("mul", {"a": a, "b": scalar(alpha)}, graph.values[a].shape, "alpha")
        else:
            post_scale = True
    out_shape = graph.values[out].shape
    has_c = c is not None and beta != 0.0
    last = not post_scale and not has_c
    y = out if last else new("matmul", {"a": a, "b": b}, out_shape, "mm")
    if last:
        nodes.append(LNode("matmul", {"a": a, "b": b}, [out], {}, node.src))
    if post_scale:
        if has_c:
            y = new("mul", {"a": y, "b": scalar(alpha)}, out_shape, "alpha")
        else:
            nodes.append(LNode("mul", {"a": y, "b": scalar(alpha)}, [out], {}, node.src))
    if has_c:
        if beta != 1.0:
            c = new("mul", {"a": c, "b": scalar(beta)}, graph.values[c].shape, "beta")
        nodes.append(LNode("add", {"a": y, "b": c}, [out], {}, node.src))
    return nodes
