"""Read a whole ExecuTorch method: the values, the instructions, and what each instruction reads and writes.

ExecuTorch's XnnpackPartitioner leaves some operators outside the delegate (a BERT-style encoder:
`aten::native_layer_norm`, `aten::embedding`, `aten::expand_copy` between the attention's matmuls), so such a
program is several XnnpackBackend delegate calls with portable-kernel calls between them. This module reads
that method into plain Python (`Method`): every EValue index, union type, dtype and shape checked, so the
merging step (`merge.py`) works on values it can trust. Anything out of place is a FormatError naming the
value or instruction."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import FormatError, UnsupportedError
from ..xnn import _layout as L
from ..xnn.reader import _P, PteFile, _Table


def _S(name: str, slot: int, kind: str, fmt: str = "") -> L.FieldSpec:  # noqa: N802 - reads like a type
    return L.FieldSpec(name, slot, kind, fmt, 0)


# slots of the ExecuTorch program schema's fields this module reads (the rest are in xnn.reader's _PTE)
_VALUES, _INPUTS, _OUTPUTS = (
    _S("values", 2, "tables"),
    _S("inputs", 3, "vector", "<i"),
    _S("outputs", 4, "vector", "<i"),
)
_VAL_TYPE, _VAL = _S("val_type", 0, "scalar", "<B"), _S("val", 1, "table")
_T_SCALAR, _T_SIZES = _S("scalar_type", 0, "scalar", "<b"), _S("sizes", 2, "vector", "<i")
_T_DIM_ORDER, _T_BUF = _S("dim_order", 3, "vector", "<B"), _S("data_buffer_idx", 5, "scalar", "<I")
_T_ALLOC, _T_EXTRA = _S("allocation_info", 6, "table"), _S("extra_tensor_info", 9, "table")
_INT, _BOOL, _DOUBLE = (
    _S("int_val", 0, "scalar", "<q"),
    _S("bool_val", 0, "scalar", "<B"),
    _S("double_val", 0, "scalar", "<d"),
)
_INT_ITEMS, _TENSOR_ITEMS = _S("items", 0, "vector", "<q"), _S("items", 0, "vector", "<i")
_CALL_INDEX, _CALL_ARGS = _S("index", 0, "scalar", "<i"), _S("args", 1, "vector", "<i")
_CONSTANT_BUFFER, _CONSTANT_SEGMENT = _S("constant_buffer", 2, "tables"), _S("constant_segment", 5, "table")
_STORAGE = _S("storage", 0, "vector", "<B")
_SUB_SEGMENT, _SUB_OFFSETS = _S("segment_index", 0, "scalar", "<I"), _S("offsets", 1, "vector", "<Q")

# KernelTypes union members, in schema order
_KINDS = {
    1: "Null",
    2: "Int",
    3: "Bool",
    4: "Double",
    5: "Tensor",
    6: "String",
    7: "IntList",
    8: "DoubleList",
    9: "BoolList",
    10: "TensorList",
    11: "OptionalTensorList",
}
# torch ScalarType → numpy dtype, for the dtypes a method's tensors may have here
SCALAR_TYPES: dict[int, np.dtype] = {3: np.dtype("<i4"), 4: np.dtype("<i8"), 6: np.dtype("<f4")}
_SCALAR_NAMES = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    15: "bfloat16",
}


@dataclass
class Tensor:
    """A Tensor EValue: its dtype and sizes; `data` for a constant (bytes of the program), else None."""

    index: int
    dtype: np.dtype
    sizes: list[int]
    data: memoryview | None = None

    def describe(self) -> str:
        return f"value {self.index} ({self.dtype.name}{self.sizes})"


@dataclass
class Call:
    """One instruction: a KernelCall (`op` = "aten::native_layer_norm.out") or a DelegateCall (`op` = None,
    `delegate` its index). `args` are EValue indices, checked in range."""

    position: int
    args: list[int]
    op: str | None = None
    delegate: int = -1

    def describe(self) -> str:
        what = self.op if self.op is not None else f"delegate call #{self.delegate}"
        return f"instruction {self.position} ({what})"


@dataclass
class Method:
    """One execution plan, read and checked: `values[i]` is a Tensor, an int, float or bool, a list of ints,
    a list of value indices (TensorList), or None (Null)."""

    name: str
    values: list[Any]
    inputs: list[int]
    outputs: list[int]
    calls: list[Call]
    delegates: list[tuple[str, _Table]] = field(default_factory=list)

    def tensor(self, i: int, what: str) -> Tensor:
        v = self.values[i] if 0 <= i < len(self.values) else None
        if not isinstance(v, Tensor):
            raise FormatError(f"{what}: value {i} is {_kind_name(v)}, not a tensor")
        return v

    def scalar(self, i: int, kind: type, what: str) -> Any:
        v = self.values[i] if 0 <= i < len(self.values) else None
        if kind is float and isinstance(v, int) and not isinstance(v, bool):
            return float(v)
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise FormatError(f"{what}: value {i} is {_kind_name(v)}, not {kind.__name__}")
        return v

    def ints(self, i: int, what: str) -> list[int]:
        v = self.values[i] if 0 <= i < len(self.values) else None
        if not isinstance(v, IntList):
            raise FormatError(f"{what}: value {i} is {_kind_name(v)}, not a list of ints")
        return list(v)


class IntList(list):
    """An IntList EValue, resolved to its ints."""


class TensorList(list):
    """A TensorList EValue: value indices."""


def _kind_name(v: Any) -> str:
    return {
        Tensor: "a tensor",
        IntList: "a list of ints",
        TensorList: "a tensor list",
        float: "a double",
        bool: "a bool",
        int: "an int",
        type(None): "null",
    }.get(type(v), "another kind of value")


def read_method(f: PteFile, where: str) -> Method:
    """The program's one method, read and checked. UnsupportedError for programs with several methods, or
    instructions other than kernel and delegate calls (control flow, moves)."""
    plans = f.program.tables(_P("execution_plan"))
    if len(plans) != 1:
        raise UnsupportedError(
            f"{where}: webxnn runs ExecuTorch programs with one method; this one has {len(plans)}"
        )
    plan = plans[0]
    name = plan.string(_P("name")) or ""
    consts = _Constants(f, where)
    raw = plan.tables(_VALUES)
    values: list[Any] = [None] * len(raw)
    for i, ev in enumerate(raw):
        values[i] = _read_value(ev, i, consts, where)
    n = len(values)
    # IntList items name Int values; resolve them now that all values are read
    for i, v in enumerate(values):
        if isinstance(v, _IntRefs):
            out = IntList()
            for k in v:
                if not 0 <= k < n or type(values[k]) is not int:
                    raise FormatError(
                        f"{where}: value {i} (an int list) names value {k}, which is not an int"
                    )
                out.append(values[k])
            values[i] = out
    for i, v in enumerate(values):
        if isinstance(v, TensorList):
            for k in v:
                if not 0 <= k < n or not isinstance(values[k], Tensor):
                    raise FormatError(
                        f"{where}: value {i} (a tensor list) names value {k}, which is not a tensor"
                    )
    ops = [
        (o.string(_P("name")) or "?") + (f".{o.string(_P('overload'))}" if o.string(_P("overload")) else "")
        for o in plan.tables(_P("operators"))
    ]
    delegates = [(d.string(_P("id")) or "", d) for d in plan.tables(_P("delegates"))]
    calls: list[Call] = []
    for chain in plan.tables(_P("chains")):
        for ins in chain.tables(_P("instructions")):
            pos = len(calls)
            kind = ins.scalar(_P("instr_args_type"))
            body = ins.table(_P("instr_args"))
            if kind == 5:  # FreeCall: memory bookkeeping only
                continue
            if kind not in (1, 2) or body is None:
                what = {3: "MoveCall", 4: "JumpFalseCall"}.get(kind, f"instruction kind {kind}")
                raise UnsupportedError(
                    f"{where}: instruction {pos} is a {what} (control flow is not supported)"
                )
            index, args = body.scalar(_CALL_INDEX), body.scalars(_CALL_ARGS)
            bad = [a for a in args if not 0 <= a < n]
            if bad:
                raise FormatError(f"{where}: instruction {pos} names value {bad[0]}, past the {n} values")
            if kind == 1:
                if not 0 <= index < len(ops):
                    raise FormatError(f"{where}: instruction {pos} runs operator #{index} of {len(ops)}")
                calls.append(Call(pos, args, op=ops[index]))
            else:
                if not 0 <= index < len(delegates):
                    raise FormatError(
                        f"{where}: instruction {pos} calls delegate #{index} of {len(delegates)}"
                    )
                calls.append(Call(pos, args, delegate=index))
    inputs, outputs = plan.scalars(_INPUTS), plan.scalars(_OUTPUTS)
    for i in inputs + outputs:
        if not 0 <= i < n or not isinstance(values[i], Tensor):
            raise UnsupportedError(f"{where}: method input/output value {i} is not a tensor")
    return Method(name, values, inputs, outputs, calls, delegates)


class _IntRefs(list):
    """An IntList EValue before its items (value indices) are resolved."""


def _read_value(ev: _Table, i: int, consts: _Constants, where: str) -> Any:
    what = f"{where}: value {i}"
    kind = _KINDS.get(ev.scalar(_VAL_TYPE))
    body = ev.table(_VAL)
    if kind == "Null":
        return None
    if kind is None or body is None:
        raise FormatError(f"{what}: unknown or missing EValue type {ev.scalar(_VAL_TYPE)}")
    if kind == "Int":
        return int(body.scalar(_INT))
    if kind == "Bool":
        return bool(body.scalar(_BOOL))
    if kind == "Double":
        return float(body.scalar(_DOUBLE))
    if kind == "IntList":
        return _IntRefs(body.scalars(_INT_ITEMS))
    if kind == "TensorList":
        return TensorList(body.scalars(_TENSOR_ITEMS))
    if kind == "Tensor":
        return _read_tensor(body, i, consts, what)
    return kind  # a string or other list: no operator webxnn maps takes one; refused where it is used


def _read_tensor(t: _Table, i: int, consts: _Constants, what: str) -> Tensor:
    st = t.scalar(_T_SCALAR)
    if st not in SCALAR_TYPES:
        raise UnsupportedError(f"{what}: tensor of dtype {_SCALAR_NAMES.get(st, f'#{st}')} is not supported")
    sizes = t.scalars(_T_SIZES)
    if any(s < 0 for s in sizes):
        raise FormatError(f"{what}: negative size in {sizes}")
    order = t.scalars(_T_DIM_ORDER)
    if order and order != list(range(len(sizes))):
        raise UnsupportedError(f"{what}: dim order {order} (only contiguous tensors are supported)")
    if t.present(_T_EXTRA):
        raise UnsupportedError(f"{what}: the tensor's data is outside the .pte (a .ptd file?)")
    dtype = SCALAR_TYPES[st]
    data = None
    idx = t.scalar(_T_BUF)
    if idx and not t.present(_T_ALLOC):  # a constant: its bytes are in the program
        data = consts.get(idx, dtype.itemsize * math.prod(sizes), what)
    elif idx:
        raise UnsupportedError(f"{what}: a mutable buffer (state kept between runs) is not supported")
    return Tensor(i, dtype, sizes, data)


class _Constants:
    """The program's constant tensors: in the constant segment (offsets), or inline buffers (older files)."""

    def __init__(self, f: PteFile, where: str) -> None:
        self.where = where
        seg = f.program.table(_CONSTANT_SEGMENT)
        self.offsets = seg.scalars(_SUB_OFFSETS) if seg is not None else []
        self.segment = (
            f.segment(seg.scalar(_SUB_SEGMENT), f"{where}: constant segment")
            if seg is not None and self.offsets
            else None
        )
        self.buffers = f.program.tables(_CONSTANT_BUFFER) if not self.offsets else []
        self.buf = f.program.buf

    def get(self, idx: int, nbytes: int, what: str) -> memoryview:
        if self.segment is not None:
            if idx >= len(self.offsets):
                raise FormatError(f"{what}: constant #{idx} is past the {len(self.offsets)} constants")
            off = self.offsets[idx]
            if off + nbytes > len(self.segment):
                raise FormatError(
                    f"{what}: constant #{idx} ({nbytes} bytes at {off}) runs past the constant segment "
                    f"({len(self.segment)} bytes)"
                )
            return self.segment[off : off + nbytes]
        if idx >= len(self.buffers):
            raise FormatError(f"{what}: constant buffer #{idx} is past the {len(self.buffers)} buffers")
        v = self.buffers[idx].bytes_view(_STORAGE)
        start, size = v if v else (0, 0)
        if size < nbytes:
            raise FormatError(f"{what}: constant buffer #{idx} has {size} bytes, the tensor needs {nbytes}")
        return self.buf.mv[start : start + nbytes]


__all__ = ["Call", "IntList", "Method", "Tensor", "TensorList", "read_method"]
