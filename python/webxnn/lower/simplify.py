"""Pass 7, simplify (on XNN nodes): cheap data-movement clean-ups left over by layout and lowering.
  * a StaticTranspose that only moves size-1 dims is a StaticReshape (no data moves);
  * reshape(reshape(x)) reads x directly; transpose(transpose(x)) becomes one transpose;
  * an identity transpose, a reshape to the same shape or a copy disappears (its readers read the input;
    `emit` adds back the copies that graph outputs need).
Dead nodes are dropped afterwards by the pipeline."""

from __future__ import annotations

from ..graph import DynDim
from .ir import LGraph, LNode


def _moves_only_unit_dims(perm: list[int], in_shape: tuple) -> bool:
    order = [p for p in perm if in_shape[p] != 1]
    return order == sorted(order)


def simplify(lg: LGraph) -> LGraph:
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
                node.attrs = {"num_dims": len(out_shape),
                              "new_shape": [0 if isinstance(d, DynDim) else int(d) for d in out_shape]}
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
                    isinstance(d, DynDim) for d in lg.values[x].shape):
                _drop(lg, node, x)
                continue
        for o in node.outputs:
            producer[o] = node
    return lg


def _drop(lg: LGraph, node: LNode, x: str) -> None:
    """`node` computes the identity of `x`: its readers read `x` (the node itself dies as dead code)."""
    lg.replace_uses(node.outputs[0], x)
