"""Pass 4, layout: NCHW → NHWC.

WebNN defaults to NCHW; XNN's convolutions and pools are NHWC. Walking the nodes in order, each value gets a
tag: None (stored as its logical shape) or "nhwc" (a logical NCHW tensor stored as NHWC). Then:
  * a layout-sensitive op (conv, pool) whose layout option is NCHW reads NHWC data and makes NHWC data;
  * element-wise and axis-permutable ops (add, relu, clamp, concat, slice, pad, softmax, ...) stay in NHWC
    when one of their computed inputs is NHWC and every computed input is rank 4 (constants are reshaped to
    rank 4 and permuted at compile time); their axis/padding attributes are rewritten for NHWC;
  * transpose absorbs the layout into its permutation;
  * every other reader (reshape, matmul, graph outputs, unknown ops) gets its data back as NCHW.
A value is converted at most once per direction (XNNStaticTranspose [0,2,3,1] on the way in, [0,3,1,2] on
the way out), so a chain of convs and element-wise ops is one NHWC region with one transpose at each end.
After this pass every value's `shape` is its physical shape.
"""

from __future__ import annotations

import numpy as np

from .ir import NCHW_TO_NHWC, NHWC_TO_NCHW, LGraph, LNode, is_xnn_kind
from .registry import LAYOUT_RULES

NHWC = "nhwc"


class _Converter:
    """Makes (and remembers) the NHWC or plain twin of a value."""

    def __init__(self, lg: LGraph, out: list[LNode]) -> None:
        self.lg = lg
        self.out = out
        self.cache: dict[tuple[str, str | None], str] = {}

    def to(self, name: str, layout: str | None, src: str) -> str:
        v = self.lg.values[name]
        if v.layout == layout:
            return name
        key = (name, layout)
        if key in self.cache:
            return self.cache[key]
        perm = NCHW_TO_NHWC if layout == NHWC else NHWC_TO_NCHW
        if v.const is not None:
            data = v.const
            if layout == NHWC and data.ndim < 4:  # broadcastable constant: align to rank 4 first
                data = data.reshape((1,) * (4 - data.ndim) + data.shape)
            data = np.transpose(data, perm)  # a view: the writer lays it out when it writes the blob
            new = self.lg.add_const(f"{name}.{layout or 'nchw'}", data, v.dtype, layout=layout, half=v.half)
        else:
            shape = tuple(v.shape[p] for p in perm)
            new = self.lg.add_value(f"{name}.{layout or 'nchw'}", v.dtype, shape, layout=layout)
            self.out.append(
                LNode(
                    "XNNStaticTranspose", {"input_id": name}, [new], {"num_dims": 4, "perm": list(perm)}, src
                )
            )
        self.cache[key] = new
        return new


def _set_input(node: LNode, old: str, new: str) -> None:
    if old != new:
        node.replace_input(old, new)


def _tag_outputs(lg: LGraph, node: LNode, layout: str | None) -> None:
    for o in node.outputs:
        v = lg.values[o]
        if layout == NHWC and v.layout != NHWC:
            v.shape = tuple(v.shape[p] for p in NCHW_TO_NHWC)
        v.layout = layout


def layout(lg: LGraph) -> LGraph:
    out: list[LNode] = []
    conv = _Converter(lg, out)

    def require(node: LNode, names: list[str], layout_: str | None) -> None:
        for name in dict.fromkeys(names):
            _set_input(node, name, conv.to(name, layout_, node.src))

    for node in lg.nodes:
        rule = None if is_xnn_kind(node.kind) else LAYOUT_RULES.get(node.kind)
        ins = node.inputs
        if rule is None:
            require(node, ins, None)
            _tag_outputs(lg, node, None)
        elif rule.kind == "sensitive":
            data = node.operands.get(rule.data_role)
            nchw = (node.attrs.get(rule.option) or rule.nchw) == rule.nchw
            require(node, [i for i in ins if i != data], None)
            if data is not None:
                require(node, [data], NHWC if nchw else None)
            _tag_outputs(lg, node, NHWC if nchw else None)
        elif rule.kind == "absorb":
            # (transpose) takes either layout; NHWC input folds into its attributes
            x = ins[0]
            if lg.values[x].layout == NHWC and not lg.is_const(x):
                assert rule.permute is not None
                rule.permute(node, lg)
            else:
                require(node, ins, None)
            _tag_outputs(lg, node, None)
        else:  # elementwise / permute
            follow = [node.operands[rule.data_role]] if rule.data_only else ins
            computed = [i for i in follow if not lg.is_const(i)]
            go = (
                any(lg.values[i].layout == NHWC for i in computed)
                and all(lg.values[i].rank == 4 for i in computed)
                and all(lg.values[o].rank == 4 for o in node.outputs)
                and all(lg.values[i].rank <= 4 for i in follow)
                and (rule.ok is None or rule.ok(node, lg))
            )
            if go:
                require(node, follow, NHWC)
                require(node, [i for i in ins if i not in follow], None)
                if rule.permute is not None:
                    rule.permute(node, lg)
                _tag_outputs(lg, node, NHWC)
            else:
                require(node, ins, None)
                _tag_outputs(lg, node, None)
        out.append(node)

    # graph outputs leave in their logical layout
    lg.outputs = [(o, conv.to(v, None, f"{o}:output")) for o, v in lg.outputs]
    lg.nodes = out
    return lg
