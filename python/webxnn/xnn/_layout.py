"""Table layouts of `schema/xnngraph.fbs`, discovered from the flatc-generated Python modules.

The writer and the reader are generic over the schema's tables: they need, per table, each field's schema
name, vtable slot, storage kind (scalar, vector, string, table, union) and scalar format. flatc's Python
output has no reflection data, so we find them by *running* the generated code against recording stand-ins:

* `Add<Field>(builder, x)` calls `builder.Prepend<Type>Slot(slot, x, default)` — this gives the slot, the
  scalar type and the default;
* the accessor `<Field>()` / `<Field>(j)` calls `self._tab.Get(<Type>Flags, ...)`, `String`, `Union` or
  `Indirect` + `<Class>.Init` — this tells vectors, strings, unions and sub-tables apart and gives the element
  type and the sub-table's class.

So a schema change (a new node table, a new field) needs no code change here. Only this module, the writer and
the reader import flatbuffers.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import flatbuffers.number_types as nt

SCHEMA_PACKAGE = "webxnn.xnn._schema"

# Builder Prepend<Type>Slot method → struct format of the scalar
_SLOT_FORMATS = {
    "PrependBoolSlot": "<?",
    "PrependInt8Slot": "<b",
    "PrependUint8Slot": "<B",
    "PrependInt16Slot": "<h",
    "PrependUint16Slot": "<H",
    "PrependInt32Slot": "<i",
    "PrependUint32Slot": "<I",
    "PrependInt64Slot": "<q",
    "PrependUint64Slot": "<Q",
    "PrependFloat32Slot": "<f",
    "PrependFloat64Slot": "<d",
}
# number_types flags class → struct format of a vector element
_FLAG_FORMATS = {
    nt.BoolFlags: "<?",
    nt.Int8Flags: "<b",
    nt.Uint8Flags: "<B",
    nt.Int16Flags: "<h",
    nt.Uint16Flags: "<H",
    nt.Int32Flags: "<i",
    nt.Uint32Flags: "<I",
    nt.Int64Flags: "<q",
    nt.Uint64Flags: "<Q",
    nt.Float32Flags: "<f",
    nt.Float64Flags: "<d",
}

# Union members whose table has another name (`XNNAdd: _XNNNode2x1`). flatc's Python output does not record
# this, so it is spelled out here, copied from the `union XNodeUnion` declaration; members not listed use the
# table of their own name. tests/test_xnn_layout.py checks this table against schema/xnngraph.fbs.
NODE_TABLE_ALIASES: dict[str, str] = {
    **{
        k: "_XNNNode2x1"
        for k in (
            "XNNAdd",
            "XNNDiv",
            "XNNMinimum",
            "XNNMultiply",
            "XNNSubtract",
            "XNNMaximum",
            "XNNPReLU",
            "XNNBatchMatrixMultiply",
        )
    },
    **{
        k: "_XNNNode1x1"
        for k in (
            "XNNSoftmax",
            "XNNSigmoid",
            "XNNClamp",
            "XNNFloor",
            "XNNConvert",
            "XNNGlobalAvgPooling2d",
            "XNNSquareRoot",
            "XNNCeiling",
            "XNNHardswish",
            "XNNNegate",
            "XNNSquare",
            "XNNAbs",
            "XNNReciprocalSquareRoot",
            "XNNLog",
            "XNNGelu",
            "XNNTanh",
            "XNNExp",
            "XNNSin",
            "XNNCopy",
            "XNNCos",
        )
    },
    **{k: "_XNNNodeConv" for k in ("XNNConv2d", "XNNDepthwiseConv2d", "XNNConvTranspose2d")},
    **{k: "_XNNPooling2D" for k in ("XNNAvgPooling2d", "XNNMaxPooling2d")},
    **{k: "_XNNCat" for k in ("XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNConcatenate5")},
}

# The same for the value and quantization unions (their members are table names already).
VALUE_UNION = "XValueUnion"
QUANT_UNION = "XNNQuantParams"
NODE_UNION = "XNodeUnion"


@dataclass(frozen=True)
class FieldSpec:
    """One field of a table. `kind` is one of: scalar, vector (of scalars), string, strings, table, tables,
    union_type, union. `fmt` is the struct format of the scalar / vector element; `table` the sub-table
    name."""

    name: str
    slot: int
    kind: str
    fmt: str = ""
    default: Any = 0
    table: str = ""
    add: Callable[..., Any] | None = None
    start_vector: Callable[..., Any] | None = None

    @property
    def size(self) -> int:
        return struct.calcsize(self.fmt) if self.fmt else 4


@dataclass(frozen=True)
class TableSpec:
    name: str
    fields: tuple[FieldSpec, ...]
    start: Callable[..., Any]
    end: Callable[..., Any]
    num_slots: int
    by_name: dict[str, FieldSpec] = field(default_factory=dict, compare=False)


def snake(camel: str) -> str:
    """`Input1Id` → `input1_id` (the inverse of flatc's field-name conversion for our schema's names)."""
    return re.sub(r"(?<=.)([A-Z])", r"_\1", camel).lower()


class _RecordingBuilder:
    """Stands in for flatbuffers.Builder: remembers the one Prepend*/StartVector/StartObject call made."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Callable[..., int]:
        def record(*args: Any) -> int:
            self.calls.append((name, args))
            return 0

        return record


class _ProbeTable:
    """Stands in for flatbuffers.table.Table inside a generated accessor: every field is 'present'."""

    Pos = 0
    Bytes = bytearray(64)

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def Offset(self, vtable_offset: int) -> int:  # noqa: N802 - flatbuffers' API names
        return 4

    def Get(self, flags: Any, off: int) -> int:  # noqa: N802
        self.seen.append(("get", flags))
        return 0

    def Vector(self, off: int) -> int:  # noqa: N802
        self.seen.append(("vector", None))
        return 0

    def VectorLen(self, off: int) -> int:  # noqa: N802
        return 1

    def Indirect(self, off: int) -> int:  # noqa: N802
        self.seen.append(("indirect", None))
        return 0

    def String(self, off: int) -> bytes:  # noqa: N802
        self.seen.append(("string", None))
        return b""

    def Union(self, obj: Any, off: int) -> None:  # noqa: N802
        self.seen.append(("union", None))


def schema_module(name: str) -> Any:
    return importlib.import_module(f"{SCHEMA_PACKAGE}.{name}")


def _probe_field(cls: type, camel: str) -> tuple[str, str, str]:
    """(kind, element fmt, sub-table name) of a reference field, by calling its generated accessor."""
    obj = cls.__new__(cls)
    probe = _ProbeTable()
    obj._tab = probe
    accessor = getattr(cls, camel)
    is_vector = len(inspect.signature(accessor).parameters) == 2  # (self, j)
    result = accessor(obj, 0) if is_vector else accessor(obj)
    kinds = [k for k, _ in probe.seen]
    if "union" in kinds:
        return "union", "", ""
    if "string" in kinds:
        return ("strings" if is_vector else "string"), "", ""
    if "get" in kinds:
        flags = next(f for k, f in probe.seen if k == "get")
        return "vector", _FLAG_FORMATS[flags], ""
    if "indirect" in kinds and result is not None:
        return ("tables" if is_vector else "table"), "", type(result).__name__
    raise RuntimeError(f"cannot classify field {cls.__name__}.{camel}")  # a flatc output we do not know


@functools.cache
def table(name: str) -> TableSpec:
    """The layout of schema table `name` (e.g. "_XNNNodeConv", "XNNTensorValue")."""
    mod = schema_module(name)
    cls = getattr(mod, name)
    fields: list[FieldSpec] = []
    num_slots = 0
    for fname, fn in list(vars(mod).items()):
        if not (fname.startswith("Add") and callable(fn)):
            continue
        camel = fname[3:]
        rec = _RecordingBuilder()
        fn(rec, 0)
        method, args = rec.calls[0]
        slot = args[0]
        if method in _SLOT_FORMATS:
            kind, fmt, sub = (
                ("union_type" if camel.endswith("Type") and hasattr(mod, "Add" + camel[:-4]) else "scalar"),
                _SLOT_FORMATS[method],
                "",
            )
            default = args[2]
        else:  # PrependUOffsetTRelativeSlot: vector, string, table or union
            kind, fmt, sub = _probe_field(cls, camel)
            default = None
        start_vec = getattr(mod, f"Start{camel}Vector", None)
        fields.append(FieldSpec(snake(camel), slot, kind, fmt, default, sub, fn, start_vec))
    # StartObject(n) tells the slot count, including deprecated fields that have no Add function
    rec = _RecordingBuilder()
    mod.Start(rec)
    num_slots = rec.calls[0][1][0]
    fields.sort(key=lambda f: f.slot)
    spec = TableSpec(name, tuple(fields), mod.Start, mod.End, num_slots)
    spec.by_name.update({f.name: f for f in fields})
    return spec


@functools.cache
def union_members(union: str) -> dict[str, int]:
    """Member name → type value (NONE excluded) of a schema union, e.g. XNodeUnion."""
    cls = getattr(schema_module(union), union)
    return {
        k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int) and k != "NONE"
    }


@functools.cache
def union_names(union: str) -> dict[int, str]:
    return {v: k for k, v in union_members(union).items()}


def node_table(kind: str) -> TableSpec:
    """The table of XNodeUnion member `kind`."""
    return table(NODE_TABLE_ALIASES.get(kind, kind))


@functools.cache
def enum_values(enum: str) -> dict[str, int]:
    """Name → value of a schema enum (e.g. "WXUnaryOp", "XNNDatatype")."""
    cls = getattr(schema_module(enum), enum)
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


# Node fields whose type is an enum that does not follow the `<Table>.op` -> `<Table>Op` convention. The
# generated Python does not record field types; tests/test_xnn_layout.py checks this against the schema.
_FIELD_ENUMS = {
    ("WXPool2d", "op"): "WXPoolOp",
    ("WXPad", "mode"): "WXPadMode",
    ("WXResample2d", "mode"): "WXResampleMode",
}


def field_enum(table_name: str, field_name: str) -> str | None:
    """The enum type of a node field, where the schema has one (`WXUnary.op` is a `WXUnaryOp`)."""
    if (table_name, field_name) in _FIELD_ENUMS:
        return _FIELD_ENUMS[(table_name, field_name)]
    if field_name == "op":
        try:
            schema_module(table_name + "Op")
        except ImportError:
            return None
        return table_name + "Op"
    return None
