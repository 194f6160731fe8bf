"""Serialize an XNN IR graph (`ir.XnnGraph`) to a `.xnn` blob, exactly as FORMAT.md lays it out.

    [0, 30)   XH00 header: 00000000 'XH00' u16 30, u32 flatbuffer_offset = 32, u32 flatbuffer_size,
              u32 constant_data_offset = 32 + align16(flatbuffer_size), u64 constant_data_size
    [30, 32)  zero
    [32, ..)  XNNGraph flatbuffer, file identifier XN00, zero padded to a multiple of 16
    [.., end) constant segment: every constant 16-aligned relative to the segment, each padded to 16

The writer is also a checker: `validate` (run by `serialize`) rejects an IR that would make an inconsistent
blob (extern numbering, flags, dangling ids, constant sizes, quantization/datatype pairs, ...) with
`InvalidIRError` naming the value or node.

Rank-0 tensors are written with an empty `dims` vector (true rank 0; WebNN has scalars). ExecuTorch writes
them as `[1]`; our runtime accepts both.

Node tables are written generically: `Node.kind` picks the XNodeUnion member and `Node.fields` the table's
fields by schema name, using the table layouts that `_layout` reads off the flatc-generated modules.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from typing import Any

import flatbuffers
import numpy as np

from ..errors import FormatError
from . import _layout as L
from .ir import (
    CHECKED_GATHER_KINDS,
    ELEMENT_SIZE,
    GATHER_FLAGS,
    INVALID_ID,
    Datatype,
    Node,
    PerChannelGroupQuant,
    PerChannelQuant,
    PerTensorQuant,
    PerTokenDynamicQuant,
    Value,
    XnnGraph,
    constant_nbytes,
)

HEADER_MAGIC = b"XH00"
HEADER_LENGTH = 30
FLATBUFFER_OFFSET = 32
CONSTANT_ALIGNMENT = 16
FILE_IDENTIFIER = b"XN00"
_HEADER = struct.Struct("<4s4sHIIIQ")  # 30 bytes, no padding with "<"

# which quantization table goes with which datatype (reference §3)
_QUANT_FOR_DATATYPE: dict[Datatype, type] = {
    Datatype.QINT8: PerTensorQuant,
    Datatype.QUINT8: PerTensorQuant,
    Datatype.QINT32: PerTensorQuant,
    Datatype.QCINT8: PerChannelQuant,
    Datatype.QCINT32: PerChannelQuant,
    Datatype.QCINT4: PerChannelQuant,
    Datatype.QBINT4: PerChannelGroupQuant,
    Datatype.QDINT8: PerTokenDynamicQuant,
}
_QUANT_TABLE = {
    PerTensorQuant: "PerTensorQuant",
    PerChannelQuant: "PerChannelQuant",
    PerChannelGroupQuant: "PerChannelGroupQuant",
    PerTokenDynamicQuant: "PerTokenDynamicQuant",
}
# node fields that name an optional input: absent from Node.fields means "no such input"
_OPTIONAL_IDS = {"bias_id", "input3_id", "input4_id", "input5_id"}
# datatypes whose constant byte size follows from the dims
_SIZED_TYPES = set(ELEMENT_SIZE) | {Datatype.QCINT4, Datatype.QBINT4}


class InvalidIRError(FormatError, ValueError):
    """The IR handed to the writer would not make a consistent blob. A FormatError (so callers that handle
    webxnn errors catch it) and a ValueError (it is a bug in whoever built the IR)."""


def align16(n: int) -> int:
    return (n + CONSTANT_ALIGNMENT - 1) & ~(CONSTANT_ALIGNMENT - 1)


def encode_header(
    flatbuffer_offset: int, flatbuffer_size: int, constant_data_offset: int, constant_data_size: int
) -> bytes:
    """The 30-byte XH00 header (without the 2 bytes of padding that follow it in a blob)."""
    try:
        return _HEADER.pack(
            b"\0\0\0\0",
            HEADER_MAGIC,
            HEADER_LENGTH,
            flatbuffer_offset,
            flatbuffer_size,
            constant_data_offset,
            constant_data_size,
        )
    except struct.error as e:
        raise InvalidIRError(f"header field out of range: {e}") from None


# ---------------------------------------------------------------------------------------------------------
# checks


def node_inputs(node: Node) -> list[int]:
    """Value ids a node reads (see `Node.input_ids`)."""
    return node.input_ids()


def _check_uint(x: Any, what: str, bits: int = 32) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= int(x) < (1 << bits):
        raise InvalidIRError(f"{what} = {x!r} is not a uint{bits}")


def _check_value(g: XnnGraph, v: Value) -> None:
    where = f"value {v.id}"
    _check_uint(v.id, f"{where}: id")
    if v.id == INVALID_ID:
        raise InvalidIRError(f"{where}: id 0xFFFFFFFF is reserved for 'no value'")
    try:
        dt = Datatype(v.datatype)
    except ValueError:
        raise InvalidIRError(f"{where}: unknown datatype {v.datatype!r}") from None
    if dt == Datatype.INVALID:
        raise InvalidIRError(f"{where}: datatype is invalid (0)")
    for i, d in enumerate(v.dims):
        _check_uint(d, f"{where}: dims[{i}]")
    if v.flags not in (0, 1, 2):
        raise InvalidIRError(f"{where}: flags {v.flags!r} must be 0, 1 (input) or 2 (output)")
    _check_uint(v.external_id, f"{where}: external_id")
    if v.flags == 0 and v.external_id != INVALID_ID:
        raise InvalidIRError(f"{where}: internal value has external_id {v.external_id} (must be 0xFFFFFFFF)")
    if v.flags != 0 and v.external_id == INVALID_ID:
        raise InvalidIRError(f"{where}: external value has no external_id")
    if v.dq_datatype not in (0, Datatype.QINT8):
        raise InvalidIRError(f"{where}: dq_datatype {v.dq_datatype!r} must be 0 or qint8")
    _check_uint(v.constant_buffer_idx, f"{where}: constant_buffer_idx")
    if v.constant_buffer_idx:
        if v.constant_buffer_idx >= len(g.constants):
            raise InvalidIRError(
                f"{where}: constant_buffer_idx {v.constant_buffer_idx} is past the "
                f"{len(g.constants)} constants"
            )
        if v.flags:
            raise InvalidIRError(f"{where}: a constant cannot be an external input/output")
        data = g.constants[v.constant_buffer_idx]
        if data is not None and dt in _SIZED_TYPES:
            want = constant_nbytes(dt, list(v.dims))
            got = _nbytes(data)
            if got != want:
                raise InvalidIRError(
                    f"{where}: constant {v.constant_buffer_idx} has {got} bytes, "
                    f"{dt.name} {list(v.dims)} needs {want}"
                )
    _check_quant(g, v, dt, where)


def _check_quant(g: XnnGraph, v: Value, dt: Datatype, where: str) -> None:
    want = _QUANT_FOR_DATATYPE.get(dt)
    q = v.quant
    if dt == Datatype.QPINT8:  # packed int8 (XNNPACK-internal); no fixed pairing
        return
    if want is None:
        if q is not None:
            raise InvalidIRError(
                f"{where}: {dt.name} takes no quantization parameters, got {type(q).__name__}"
            )
        return
    if not isinstance(q, want):
        raise InvalidIRError(f"{where}: {dt.name} needs {want.__name__}, got {type(q).__name__}")
    if isinstance(q, (PerChannelQuant, PerChannelGroupQuant)):
        rank = len(v.dims)
        if not 0 <= q.channel_dim < max(rank, 1):
            raise InvalidIRError(f"{where}: channel_dim {q.channel_dim} out of range for rank {rank}")
        _check_uint(q.scale_buffer_idx, f"{where}: scale_buffer_idx")
        _check_uint(q.num_scales, f"{where}: num_scales")
        if q.scale_buffer_idx:
            if q.scale_buffer_idx >= len(g.constants):
                raise InvalidIRError(f"{where}: scale_buffer_idx {q.scale_buffer_idx} is past the constants")
            if q.num_scales == 0:
                raise InvalidIRError(f"{where}: scale_buffer_idx set but num_scales is 0")
        elif isinstance(q, PerChannelQuant) and rank and len(q.scale) != v.dims[q.channel_dim]:
            raise InvalidIRError(
                f"{where}: {len(q.scale)} scales for {v.dims[q.channel_dim]} channels (dim {q.channel_dim})"
            )
        if isinstance(q, PerChannelGroupQuant):
            if q.group_size <= 0:
                raise InvalidIRError(f"{where}: group_size {q.group_size} must be positive")
            if rank == 2 and not q.scale_buffer_idx:
                if v.dims[1] % q.group_size:
                    raise InvalidIRError(
                        f"{where}: input dim {v.dims[1]} is not a multiple of group_size {q.group_size}"
                    )
                n = v.dims[0] * v.dims[1] // q.group_size
                if len(q.scale) != n:
                    raise InvalidIRError(f"{where}: {len(q.scale)} group scales, expected {n}")
    if isinstance(q, PerTokenDynamicQuant) and v.constant_buffer_idx:
        raise InvalidIRError(f"{where}: a dynamically quantized value cannot be a constant")


def validate(g: XnnGraph) -> None:
    """Raise InvalidIRError if `g` would not serialize to a consistent blob."""
    if not isinstance(g.version, str):
        raise InvalidIRError(f"version must be a string, got {g.version!r}")
    if not g.constants or _nbytes(g.constants[0] if g.constants[0] is not None else b"") != 0:
        raise InvalidIRError("constants[0] is the reserved 'no data' entry and must be empty")
    for i, c in enumerate(g.constants[1:], 1):
        if c is None:
            raise InvalidIRError(f"constants[{i}] has no data (named data that was not provided?)")
    by_id: dict[int, Value] = {}
    for v in g.values:
        _check_value(g, v)
        if v.id in by_id:
            raise InvalidIRError(f"value {v.id}: id used twice")
        by_id[v.id] = v
    _check_externs(g)
    _check_nodes(g, by_id)
    if g.metadata is not None:
        m = g.metadata
        if len(m.input_names) != len(g.input_ids) or len(m.output_names) != len(g.output_ids):
            raise InvalidIRError(
                f"metadata has {len(m.input_names)} input / {len(m.output_names)} output "
                f"names for {len(g.input_ids)} inputs / {len(g.output_ids)} outputs"
            )
        if m.node_sources and len(m.node_sources) != len(g.nodes):
            raise InvalidIRError(f"metadata has {len(m.node_sources)} node sources for {len(g.nodes)} nodes")
        inputs = sorted((v for v in g.values if v.flags == 1), key=lambda v: v.external_id)
        for d in m.dyn_dims:
            if d.input >= len(inputs) or d.axis >= len(inputs[d.input].dims):
                raise InvalidIRError(
                    f"metadata dyn dim {d.name!r}: input {d.input} axis {d.axis} does not exist"
                )
            if inputs[d.input].dims[d.axis] != d.max_size or d.max_size < 1:
                raise InvalidIRError(
                    f"metadata dyn dim {d.name!r}: max_size {d.max_size} but input "
                    f"{d.input} has dims {list(inputs[d.input].dims)}"
                )


def _check_externs(g: XnnGraph) -> None:
    ins = sorted((v for v in g.values if v.flags == 1), key=lambda v: v.external_id)
    outs = sorted((v for v in g.values if v.flags == 2), key=lambda v: v.external_id)
    for k, v in enumerate(ins):
        if v.external_id != k:
            raise InvalidIRError(
                f"value {v.id}: input external ids must be 0..{len(ins) - 1}, got "
                f"{[w.external_id for w in ins]}"
            )
    for k, v in enumerate(outs, len(ins)):
        if v.external_id != k:
            raise InvalidIRError(
                f"value {v.id}: output external ids must follow the inputs "
                f"({len(ins)}..{len(ins) + len(outs) - 1}), "
                f"got {[w.external_id for w in outs]}"
            )
    if g.num_externs != len(ins) + len(outs):
        raise InvalidIRError(f"num_externs {g.num_externs} != {len(ins)} inputs + {len(outs)} outputs")
    if list(g.input_ids) != [v.id for v in ins]:
        raise InvalidIRError(
            f"input_ids {list(g.input_ids)} != ids of the flagged inputs in extern order "
            f"{[v.id for v in ins]}"
        )
    if list(g.output_ids) != [v.id for v in outs]:
        raise InvalidIRError(
            f"output_ids {list(g.output_ids)} != ids of the flagged outputs in extern order "
            f"{[v.id for v in outs]}"
        )


def _check_nodes(g: XnnGraph, by_id: dict[int, Value]) -> None:
    members = L.union_members(L.NODE_UNION)
    defined = {v.id for v in g.values if v.flags == 1 or v.constant_buffer_idx}
    for i, n in enumerate(g.nodes):
        where = f"node {i} ({n.kind})"
        if n.kind not in members:
            raise InvalidIRError(f"{where}: unknown node kind")
        _node_field_values(n, where)  # field names and types
        if n.output_min_max is not None and len(n.output_min_max) != 2:
            raise InvalidIRError(f"{where}: output_min_max must be (min, max)")
        _check_uint(n.debug_handle, f"{where}: debug_handle")
        if n.kind in CHECKED_GATHER_KINDS and n.fields.get("flags", 0) not in GATHER_FLAGS:
            raise InvalidIRError(f"{where}: flags {n.fields['flags']!r} must be one of {list(GATHER_FLAGS)}")
        for vid in node_inputs(n):
            if vid not in by_id:
                raise InvalidIRError(f"{where}: reads unknown value {vid}")
            if vid not in defined:
                raise InvalidIRError(f"{where}: reads value {vid} before any node produces it")
        for vid in n.output_ids():
            if vid not in by_id:
                raise InvalidIRError(f"{where}: writes unknown value {vid}")
            if vid in defined:
                raise InvalidIRError(
                    f"{where}: writes value {vid}, which is an input, a constant or already produced"
                )
            defined.add(vid)
    for vid in g.output_ids:
        if vid not in defined:
            raise InvalidIRError(f"output value {vid} is not produced by any node")


def _node_field_values(n: Node, where: str) -> dict[str, Any]:
    """The node's fields, completed (num_dims, absent optional inputs) and checked against its table."""
    spec = L.node_table(n.kind)
    fields = dict(n.fields)
    for name, val in fields.items():
        f = spec.by_name.get(name)
        if f is None or f.kind not in ("scalar", "vector"):
            raise InvalidIRError(f"{where}: {spec.name} has no field {name!r}")
        enum = L.field_enum(spec.name, name)
        if enum and isinstance(val, str):
            if val not in L.enum_values(enum):
                raise InvalidIRError(f"{where}: {name} = {val!r} is not a {enum}")
            fields[name] = L.enum_values(enum)[val]
        elif f.kind == "vector":
            if isinstance(val, (str, bytes)) or not hasattr(val, "__len__"):
                raise InvalidIRError(f"{where}: {name} must be a list")
            for k, x in enumerate(val):
                _check_scalar(f.fmt, x, f"{where}: {name}[{k}]")
        else:
            _check_scalar(f.fmt, val, f"{where}: {name}")
    vectors = [f for f in spec.fields if f.kind == "vector"]
    if "num_dims" in spec.by_name and vectors:
        n_dims = len(fields.get(vectors[0].name, []))
        if "num_dims" not in fields:
            fields["num_dims"] = n_dims
        elif fields["num_dims"] != n_dims:
            raise InvalidIRError(f"{where}: num_dims {fields['num_dims']} != len({vectors[0].name}) {n_dims}")
    for f in spec.fields:
        if f.name.endswith("_id") and f.name not in fields:
            if f.name in _OPTIONAL_IDS:
                fields[f.name] = INVALID_ID
            else:
                raise InvalidIRError(f"{where}: missing field {f.name!r}")
    return fields


def _check_scalar(fmt: str, x: Any, what: str) -> None:
    if fmt in ("<f", "<d"):
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise InvalidIRError(f"{what} = {x!r} is not a number")
        return
    if fmt == "<?":
        if not isinstance(x, (bool, np.bool_)) and x not in (0, 1):
            raise InvalidIRError(f"{what} = {x!r} is not a bool")
        return
    if not isinstance(x, (int, np.integer)) or isinstance(x, bool):
        raise InvalidIRError(f"{what} = {x!r} is not an integer")
    bits = struct.calcsize(fmt) * 8
    lo, hi = (0, 1 << bits) if fmt[1].isupper() else (-(1 << (bits - 1)), 1 << (bits - 1))
    if not lo <= int(x) < hi:
        raise InvalidIRError(f"{what} = {x} does not fit in {bits} bits")


# ---------------------------------------------------------------------------------------------------------
# constants


def _as_bytes(data: Any, where: str) -> memoryview:
    """A flat byte view of a constant: bytes-likes as they are, numpy arrays as little-endian C-order bytes.
    No copy unless the array is not C-contiguous or not little-endian."""
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in "biufc":
            raise InvalidIRError(f"{where}: cannot store a numpy array of dtype {data.dtype}")
        if data.dtype.byteorder == ">" or (data.dtype.byteorder == "=" and not _little_endian()):
            data = data.astype(data.dtype.newbyteorder("<"))
        data = np.asarray(data, order="C")
        return memoryview(data.reshape(-1).view(np.uint8))
    try:
        mv = memoryview(data)
    except TypeError:
        raise InvalidIRError(
            f"{where}: constant data must be bytes-like or a numpy array, got {type(data).__name__}"
        ) from None
    if not mv.c_contiguous:
        raise InvalidIRError(f"{where}: constant data is not contiguous")
    return mv.cast("B") if (mv.format != "B" or mv.ndim != 1) else mv


def _little_endian() -> bool:
    return sys.byteorder == "little"


def _nbytes(data: Any) -> int:
    if isinstance(data, np.ndarray):
        return int(data.nbytes)
    try:
        return memoryview(data).nbytes
    except TypeError:
        raise InvalidIRError(
            f"constant data must be bytes-like or a numpy array, got {type(data).__name__}"
        ) from None


# ---------------------------------------------------------------------------------------------------------
# flatbuffer


def _write_table(b: flatbuffers.Builder, spec: L.TableSpec, values: dict[str, Any], where: str) -> int:
    """Write one table. Scalars, scalar vectors, strings and string vectors are given as Python values;
    table/union fields as offsets already built."""
    refs: dict[str, int] = {}
    for name, val in values.items():
        f = spec.by_name.get(name)
        if f is None:
            raise InvalidIRError(f"{where}: {spec.name} has no field {name!r}")
        if f.kind == "vector":
            refs[name] = b.CreateNumpyVector(np.asarray(val, dtype=np.dtype(f.fmt)).reshape(-1))
        elif f.kind == "string":
            refs[name] = b.CreateString(val)
        elif f.kind == "strings":
            refs[name] = _offset_vector(b, [b.CreateString(s) for s in val])
    spec.start(b)
    for name, val in values.items():
        f = spec.by_name[name]
        if name in refs:
            f.add(b, refs[name])
        elif f.kind == "scalar" or f.kind == "union_type":
            if f.fmt in ("<f", "<d"):
                val = float(val)
            elif f.fmt == "<?":
                val = bool(val)
            else:
                val = int(val)
            f.add(b, val)
        else:  # pre-built table / union / vector-of-tables offset
            f.add(b, val)
    return spec.end(b)


def _offset_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _write_value(b: flatbuffers.Builder, v: Value) -> int:
    where = f"value {v.id}"
    tensor = _write_table(
        b,
        L.table("XNNTensorValue"),
        {
            "datatype": int(v.datatype),
            "num_dims": len(v.dims),
            "dims": list(v.dims),
            "constant_buffer_idx": v.constant_buffer_idx,
            "external_id": v.external_id,
            "flags": v.flags,
            "id_out": v.id,
            "dq_datatype": v.dq_datatype,
        },
        where,
    )
    vu = L.union_members(L.VALUE_UNION)
    if v.quant is None:
        utype, uoff = vu["XNNTensorValue"], tensor
    else:
        qname = _QUANT_TABLE[type(v.quant)]
        qfields = dict(vars(v.quant))
        if "scale" in qfields and isinstance(v.quant, (PerChannelQuant, PerChannelGroupQuant)):
            qfields["scale"] = list(qfields["scale"])  # always written, even empty
        qoff = _write_table(b, L.table(qname), qfields, where)
        uoff = _write_table(
            b,
            L.table("XNNQuantizedTensorValue"),
            {
                "tensor_value": tensor,
                "quant_params_type": L.union_members(L.QUANT_UNION)[qname],
                "quant_params": qoff,
            },
            where,
        )
        utype = vu["XNNQuantizedTensorValue"]
    return _write_table(b, L.table("XValue"), {"xvalue_union_type": utype, "xvalue_union": uoff}, where)


def _write_node(b: flatbuffers.Builder, i: int, n: Node) -> int:
    where = f"node {i} ({n.kind})"
    fields = _node_field_values(n, where)
    body = _write_table(b, L.node_table(n.kind), fields, where)
    xnode: dict[str, Any] = {
        "xnode_union_type": L.union_members(L.NODE_UNION)[n.kind],
        "xnode_union": body,
        "debug_handle": n.debug_handle,
    }
    if n.output_min_max is not None:
        lo, hi = n.output_min_max
        xnode["output_min_max"] = _write_table(
            b, L.table("OutputMinMax"), {"output_min": lo, "output_max": hi}, where
        )
    return _write_table(b, L.table("XNode"), xnode, where)


def _build_flatbuffer(g: XnnGraph, entries: list[tuple[int, int]]) -> bytes:
    b = flatbuffers.Builder(4096 + 96 * (len(g.values) + len(g.nodes)))
    values = [_write_value(b, v) for v in g.values]
    nodes = [_write_node(b, i, n) for i, n in enumerate(g.nodes)]
    cdo = L.table("ConstantDataOffset")
    consts = [
        _write_table(b, cdo, {"offset": off, "size": size}, f"constant {k}")  # never named_key
        for k, (off, size) in enumerate(entries)
    ]
    root: dict[str, Any] = {
        "version": g.version,
        "xnodes": _offset_vector(b, nodes),
        "xvalues": _offset_vector(b, values),
        "num_externs": g.num_externs,
        "input_ids": list(g.input_ids),
        "output_ids": list(g.output_ids),
        "constant_data": _offset_vector(b, consts),
    }
    if g.metadata is not None:
        m = g.metadata
        meta: dict[str, Any] = {
            "producer": m.producer,
            "input_names": list(m.input_names),
            "output_names": list(m.output_names),
            "node_sources": list(m.node_sources),
        }
        if m.dyn_dims:
            dyn_spec = L.table("WXDynDim")
            meta["dyn_dims"] = _offset_vector(
                b,
                [
                    _write_table(
                        b,
                        dyn_spec,
                        {"input": d.input, "axis": d.axis, "name": d.name, "max_size": d.max_size},
                        f"metadata dyn_dims[{k}]",
                    )
                    for k, d in enumerate(m.dyn_dims)
                ],
            )
        root["webxnn"] = _write_table(b, L.table("WXMetadata"), meta, "metadata")
    graph = _write_table(b, L.table("XNNGraph"), root, "graph")
    b.Finish(graph, file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


def _parts(g: XnnGraph) -> Iterator[bytes | memoryview]:
    """The blob as a sequence of byte strings: header, flatbuffer, padding, then each constant and its
    padding. The constants are views of the caller's data, so joining or writing the parts is the only
    copy."""
    validate(g)
    entries = [(0, 0)]
    seg = 0
    for c in g.constants[1:]:
        entries.append((seg, _nbytes(c)))
        seg += align16(_nbytes(c))
    fb = _build_flatbuffer(g, entries)
    const_off = FLATBUFFER_OFFSET + align16(len(fb))
    yield encode_header(FLATBUFFER_OFFSET, len(fb), const_off, seg) + b"\0\0"
    yield fb
    yield bytes(const_off - FLATBUFFER_OFFSET - len(fb))
    zeros = bytes(CONSTANT_ALIGNMENT)
    for i, c in enumerate(g.constants[1:], 1):
        d = _as_bytes(c, f"constants[{i}]")  # one at a time: a non-contiguous view is laid out only here
        yield d
        if d.nbytes % CONSTANT_ALIGNMENT:
            yield zeros[: align16(d.nbytes) - d.nbytes]


def serialize(g: XnnGraph) -> bytes:
    """The `.xnn` blob of `g`. Raises InvalidIRError for an inconsistent IR."""
    return b"".join(_parts(g))


def serialize_to_file(g: XnnGraph, path: str | os.PathLike[str]) -> int:
    """Write the blob of `g` to `path`, streaming the constants (the whole blob is never in memory).
    Returns the number of bytes written."""
    parts = _parts(g)
    first = next(parts)  # validates and builds the flatbuffer before the file is touched
    total = 0
    from ..atomic import atomic_open

    with atomic_open(path, "wb") as f:  # a failed write leaves the old blob whole (and any map of it valid)
        total += f.write(first)
        for p in parts:
            total += f.write(p)
    return total
