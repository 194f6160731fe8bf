"""Pass 7, simplify (on XNN nodes): cheap data-movement clean-ups left over by layout and lowering.
  * a StaticTranspose that only moves size-1 dims is a StaticReshape (no data moves);
  * reshape(reshape(x)) reads x directly; transpose(transpose(x)) becomes one transpose;
  * an identity transpose, a reshape to the same shape or a copy disappears (its readers read the input;
    `emit` adds back the copies that graph outputs need).
  * BatchMatrixMultiply(a, transpose(x)) whose transpose swaps B's last two dims reads x with TRANSPOSE_B
    (flag 0x1) instead; when the transpose also moves other dims, it is rewritten to keep the innermost dim
    in place (row copies instead of an element-wise transpose) and the bmm takes TRANSPOSE_B.
    Done before transposes are merged, so q·transpose(k)ᵀ-style chains are seen as the exporter wrote them.
Dead nodes are dropped afterwards by the pipeline."""

from __future__ import annotations

from ..graph import DynDim
from .ir import LGraph, LNode


def _moves_only_unit_dims(perm: list[int], in_shape: tuple) -> bool:
    order = [p for p in perm if in_shape[p] != 1]
    return order == sorted(order)


FLAG_TRANSPOSE_B = 0x1


def fold_transpose_b(lg: LGraph) -> None:
    """BatchMatrixMultiply reading a transpose of its B: fold the last-two-dims swap into the flag."""
    producer = {o: n for n in lg.nodes for o in n.outputs}
    readers: dict[str, int] = {}
    for n in lg.nodes:
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    outputs = lg.output_values()
    for node in lg.nodes:
        if node.kind != "XNNBatchMatrixMultiply":
            continue
        b = node.operands["input2_id"]
        t = producer.get(b)
        if t is None or t.kind != "XNNStaticTranspose":
            continue
        perm = list(t.attrs["perm"])
        r = len(perm)
        if r < 2 or perm[-1] == r - 1:  # already keeps rows: nothing to gain
            continue
        swapped = [*perm[:-2], perm[-1], perm[-2]]
        x = t.operands["input_id"]
        if swapped == list(range(r)):
            node.operands["input2_id"] = x
        elif swapped[-1] == r - 1 and readers.get(b) == 1 and b not in outputs:
            t.attrs["perm"] = swapped
            v = lg.values[b]
            v.shape = (*v.shape[:-2], v.shape[-1], v.shape[-2])
        else:
            continue
        node.attrs["flags"] = node.attrs.get("flags", 0) ^ FLAG_TRANSPOSE_B


def simplify(lg: LGraph) -> LGraph:
    fold_transpose_b(lg)
    producer: dict[str, LNode] = {}
    for node in lg.nodes:
        if node.kind == "XNNStaticTranspose":
            x = node.operands["input_id"]
            perm = list(node.attrs["perm"])
            src = producer.get(x)
            if src is not None and src.kind == "XNNStaticTranspose":
                # out[i] = mid[perm[i]] = in[src_perm[perm[i]]]
                x = src.operands["input_id"]
                perm = [src.attrs["perm"][p] for p in perm]
                node.operands["input_id"] = x
                node.attrs["perm"] = perm
            shape_in = lg.values[x].shape
            if perm == sorted(perm):
                _drop(lg, node, x)
                continue
            out_shape = lg.values[node.outputs[0]].shape
            if _moves_only_unit_dims(perm, shape_in) and sum(isinstance(d, DynDim) for d in out_shape) <= 1:
                node.kind = "XNNStaticReshape"
                node.attrs = {
                    "num_dims": len(out_shape),
                    "new_shape": [0 if isinstance(d, DynDim) else int(d) for d in out_shape],
                }
        if node.kind == "XNNCopy":  # emit re-adds the copies graph outputs need
            _drop(lg, node, node.operands["input_id"])
            continue
        if node.kind == "XNNStaticReshape":
            x = node.operands["input_id"]
            src = producer.get(x)
            if src is not None and src.kind == "XNNStaticReshape":
                x = src.operands["input_id"]
                node.operands["input_id"] = x
            if lg.values[x].shape == lg.values[node.outputs[0]].shape and not any(
                isinstance(d, DynDim) for d in lg.values[x].shape
            ):
                _drop(lg, node, x)
                continue
        for o in node.outputs:
            producer[o] = node
    return lg


def _drop(lg: LGraph, node: LNode, x: str) -> None:
    """`node` computes the identity of `x`: its readers read `x` (the node itself dies as dead code)."""
    lg.replace_uses(node.outputs[0], x)
