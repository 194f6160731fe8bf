"""The lowering IR: a small mutable graph the passes rewrite in place.

Nodes start as WebNN ops (`kind` = the op name, e.g. "conv2d", operands by WebNN role) and end as XNN nodes
(`kind` = the XNodeUnion member, e.g. "XNNConv2d", operands by schema field name, e.g. "input1_id").
Both kinds may coexist between passes: `select` turns the first into the second and passes XNN nodes through.

Values are named. After the `layout` pass a value's `shape` is its *physical* shape: a value tagged
`layout="nhwc"` holds a logical NCHW tensor stored as NHWC (perm [0, 2, 3, 1]).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Dim

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)


def is_xnn_kind(kind: str) -> bool:
    """True for nodes already in XNN form (XNodeUnion member names)."""
    return kind.startswith(("XNN", "WX"))


@dataclass
class LValue:
    name: str
    dtype: str  # WebNN dtype name
    shape: tuple[Dim, ...]
    const: np.ndarray | None = None  # constant data (physical layout), None for computed values
    layout: str | None = None  # None = stored as its logical shape; "nhwc" = logical NCHW stored NHWC
    # a float32 constant that came from float16 data (exactly representable): `emit` stores it as FP16
    # followed by an XNNConvert, so an fp16 graph's weights take half the bytes
    half: bool = False
    # an `xnn.ir` Quant: a quantized value that `emit` writes with the XNN datatype its dtype and params name
    # (int8 + PerTensorQuant -> qint8, PerChannelQuant -> qcint8, PerTokenDynamicQuant -> qdint8; int32 ->
    # qint32 / qcint32); set by the qdq pass and the dynamic-quantization rule
    quant: Any = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_const(self) -> bool:
        return self.const is not None


@dataclass
class LNode:
    """One op. `operands` maps role (WebNN) or field name (XNN) to a value name, a list of names (variadic
    roles), or None (absent optional input). `outputs` lists defined value names; XNN nodes name the output
    fields in `attrs["output_fields"]` when it is not just ["output_id"]. `src` is "<webnn node id>:<op>"."""

    kind: str
    operands: dict[str, Any]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    src: str = ""
    output_min_max: tuple[float, float] | None = None

    @property
    def inputs(self) -> list[str]:
        """Every value name this node reads, in role order, absent optionals skipped."""
        out: list[str] = []
        for v in self.operands.values():
            if v is None:
                continue
            if isinstance(v, (list, tuple)):
                out.extend(x for x in v if x is not None)
            else:
                out.append(v)
        return out

    def replace_input(self, old: str, new: str) -> None:
        for k, v in self.operands.items():
            if isinstance(v, list):
                self.operands[k] = [new if x == old else x for x in v]
            elif v == old:
                self.operands[k] = new


@dataclass
class LGraph:
    values: dict[str, LValue] = field(default_factory=dict)
    nodes: list[LNode] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # graph input value names, declaration order
    outputs: list[tuple[str, str]] = field(default_factory=list)  # (output name, value name)
    onnx_indices: set[str] = field(default_factory=set)  # Graph.onnx_indices: ids of gathers that check
    _counter: Iterator[int] = field(default_factory=itertools.count, repr=False)

    # ------------------------------------------------------------------------------------------ values

    def fresh_name(self, hint: str) -> str:
        while True:
            name = f"{hint}#{next(self._counter)}"
            if name not in self.values:
                return name

    def add_value(
        self,
        hint: str,
        dtype: str,
        shape: tuple[Dim, ...] | list[Dim],
        *,
        const: np.ndarray | None = None,
        layout: str | None = None,
        exact: bool = False,
    ) -> str:
        """A new value; its name is `hint` when `exact`, otherwise a fresh name derived from it."""
        name = hint if exact else self.fresh_name(hint)
        if name in self.values:
            raise KeyError(f"value {name!r} defined twice")
        self.values[name] = LValue(name, dtype, tuple(shape), const, layout)
        return name

    def add_const(
        self, hint: str, data: np.ndarray, dtype: str, layout: str | None = None, half: bool = False
    ) -> str:
        name = self.add_value(hint, dtype, data.shape, const=data, layout=layout)
        self.values[name].half = half
        return name

    def is_const(self, name: str | None) -> bool:
        return name is not None and self.values[name].const is not None

    # ------------------------------------------------------------------------------------------ uses

    def producers(self) -> dict[str, LNode]:
        return {o: n for n in self.nodes for o in n.outputs}

    def consumers(self) -> dict[str, list[LNode]]:
        uses: dict[str, list[LNode]] = {}
        for n in self.nodes:
            for i in n.inputs:
                uses.setdefault(i, []).append(n)
        return uses

    def output_values(self) -> set[str]:
        return {v for _, v in self.outputs}

    def replace_uses(self, old: str, new: str) -> None:
        """Make every reader of `old` (nodes and graph outputs) read `new` instead."""
        for n in self.nodes:
            n.replace_input(old, new)
        self.outputs = [(o, new if v == old else v) for o, v in self.outputs]

    def remove_dead(self) -> None:
        """Drop nodes whose outputs nobody reads, then values nobody mentions (inputs always stay)."""
        live = self.output_values()
        kept: list[LNode] = []
        for n in reversed(self.nodes):
            if any(o in live for o in n.outputs):
                kept.append(n)
                live.update(n.inputs)
        kept.reverse()
        self.nodes = kept
        mentioned = live | set(self.inputs) | {o for n in kept for o in n.outputs}
        self.values = {k: v for k, v in self.values.items() if k in mentioned}
