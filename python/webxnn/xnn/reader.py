"""Read a `.xnn` blob (or an ExecuTorch XNNPACK payload) back into the XNN IR; pull payloads out of `.pte`.

The reader takes untrusted bytes. Python's flatbuffers package has no verifier and its generated accessors
read wherever an offset points (a negative `unpack_from` offset even wraps around), so this module does not
use them for reading: it walks the buffer with its own bounds-checked table reader, using the field slots
and types that `_layout` takes from the generated modules. Anything out of place raises `FormatError` with
the byte offset and the field being read. A work budget bounds the walk, so vectors shared by many tables
cannot make reading quadratic. (The C++ runtime's flatbuffers verifier is the authority; this reader only has
to never crash, hang, or return garbage silently.)

Constants come back as memoryviews into the blob: nothing is copied.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from ..errors import FormatError
from . import _layout as L
from .ir import (
    ConstantRef,
    Datatype,
    DynDimRef,
    Header,
    Metadata,
    Node,
    PerChannelGroupQuant,
    PerChannelQuant,
    PerTensorQuant,
    PerTokenDynamicQuant,
    Value,
    XnnGraph,
)

IDENTIFIERS = (b"XN00", b"XN01")
_QUANT_CLASSES = {
    "PerTensorQuant": PerTensorQuant,
    "PerChannelQuant": PerChannelQuant,
    "PerChannelGroupQuant": PerChannelGroupQuant,
    "PerTokenDynamicQuant": PerTokenDynamicQuant,
}
_HEADER = struct.Struct("<4s4sHIIIQ")


class _Buf:
    """A flatbuffer region of a blob, with bounds-checked reads. `base` is its offset in the blob, so error
    messages give blob offsets."""

    def __init__(self, mv: memoryview, base: int, what: str = "flatbuffer") -> None:
        self.mv = mv
        self.n = len(mv)
        self.base = base
        self.what = what
        self.budget = 2 * self.n + 1024  # elements we are willing to visit

    def need(self, pos: int, size: int, what: str) -> None:
        if pos < 0 or size < 0 or pos + size > self.n:
            raise FormatError(
                f"{what}: bytes {self.base + pos}..{self.base + pos + size} are outside the "
                f"{self.what} (bytes {self.base}..{self.base + self.n})"
            )

    def spend(self, k: int, what: str) -> None:
        self.budget -= k
        if self.budget < 0:
            raise FormatError(
                f"{what}: the {self.what} references far more data than it holds (overlapping vectors?)"
            )

    def unpack(self, fmt: str, pos: int, what: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(pos, size, what)
        return struct.unpack_from(fmt, self.mv, pos)[0]


class _Table:
    """One table of a flatbuffer, checked on construction: its vtable and body lie inside the buffer."""

    def __init__(self, buf: _Buf, pos: int, what: str) -> None:
        self.buf, self.pos, self.what = buf, pos, what
        buf.spend(1, what)
        soff = buf.unpack("<i", pos, f"{what} (table at byte {buf.base + pos})")
        self.vt = pos - soff
        self.vt_len = buf.unpack("<H", self.vt, f"{what} vtable")
        self.obj_len = buf.unpack("<H", self.vt + 2, f"{what} vtable")
        if self.vt_len < 4 or self.vt_len % 2:
            raise FormatError(f"{what}: vtable at byte {buf.base + self.vt} has bad length {self.vt_len}")
        if self.obj_len < 4:
            raise FormatError(f"{what}: table at byte {buf.base + pos} has bad size {self.obj_len}")
        buf.need(self.vt, self.vt_len, f"{what} vtable")
        buf.need(pos, self.obj_len, f"{what} table body")

    def _field(self, f: L.FieldSpec, size: int) -> int:
        """Absolute position of field `f` (0 when absent), checked to lie inside the table body."""
        vo = 4 + 2 * f.slot
        if vo + 2 > self.vt_len:
            return 0
        off = struct.unpack_from("<H", self.buf.mv, self.vt + vo)[0]
        if off == 0:
            return 0
        if off < 4 or off + size > self.obj_len:
            raise FormatError(
                f"{self.what}.{f.name}: field offset {off} is outside the table "
                f"({self.obj_len} bytes at byte {self.buf.base + self.pos})"
            )
        return self.pos + off

    def present(self, f: L.FieldSpec) -> bool:
        return self._field(f, f.size if f.kind in ("scalar", "union_type") else 4) != 0

    def scalar(self, f: L.FieldSpec) -> Any:
        p = self._field(f, f.size)
        if not p:
            return f.default
        return struct.unpack_from(f.fmt, self.buf.mv, p)[0]

    def _target(self, f: L.FieldSpec) -> int | None:
        p = self._field(f, 4)
        if not p:
            return None
        return p + struct.unpack_from("<I", self.buf.mv, p)[0]

    def table(self, f: L.FieldSpec) -> _Table | None:
        t = self._target(f)
        return None if t is None else _Table(self.buf, t, f"{self.what}.{f.name}")

    def _vector(self, f: L.FieldSpec, elem: int) -> tuple[int, int] | None:
        t = self._target(f)
        if t is None:
            return None
        what = f"{self.what}.{f.name}"
        count = self.buf.unpack("<I", t, f"{what} (vector length)")
        self.buf.need(t + 4, count * elem, f"{what} ({count} elements of {elem} bytes)")
        self.buf.spend(count, what)
        return t + 4, count

    def scalars(self, f: L.FieldSpec) -> list[Any]:
        v = self._vector(f, f.size)
        if v is None:
            return []
        start, count = v
        return list(struct.unpack_from(f"<{count}{f.fmt[1]}", self.buf.mv, start))

    def bytes_view(self, f: L.FieldSpec) -> tuple[int, int] | None:
        """(start, length) of a [ubyte] vector."""
        return self._vector(f, 1)

    def string(self, f: L.FieldSpec) -> str | None:
        t = self._target(f)
        return None if t is None else _string_at(self.buf, t, f"{self.what}.{f.name}")

    def tables(self, f: L.FieldSpec) -> list[_Table]:
        return [_Table(self.buf, t, what) for t, what in self._offset_vector(f)]

    def strings(self, f: L.FieldSpec) -> list[str]:
        return [_string_at(self.buf, t, what) for t, what in self._offset_vector(f)]

    def _offset_vector(self, f: L.FieldSpec) -> list[tuple[int, str]]:
        """Targets of a vector of offsets (tables or strings), each with its path for error messages."""
        v = self._vector(f, 4)
        if v is None:
            return []
        start, count = v
        return [
            (
                start + 4 * i + struct.unpack_from("<I", self.buf.mv, start + 4 * i)[0],
                f"{self.what}.{f.name}[{i}]",
            )
            for i in range(count)
        ]


def _string_at(buf: _Buf, t: int, what: str) -> str:
    count = buf.unpack("<I", t, f"{what} (string length)")
    buf.need(t + 4, count + 1, f"{what} (string of {count} bytes)")
    buf.spend(count, what)
    if buf.mv[t + 4 + count] != 0:
        raise FormatError(f"{what}: string at byte {buf.base + t} is not NUL-terminated")
    # the runtime takes any bytes as a name; shown here escaped (\xff) like the runtime module shows them
    return bytes(buf.mv[t + 4 : t + 4 + count]).decode("utf-8", "backslashreplace")


def _root(buf: _Buf, what: str) -> _Table:
    off = buf.unpack("<I", 0, f"{what} root offset")
    return _Table(buf, off, what)


def _fields(t: _Table, spec: L.TableSpec) -> dict[str, Any]:
    """Every scalar and scalar-vector field of a table, by schema name (absent ones at their defaults)."""
    out: dict[str, Any] = {}
    for f in spec.fields:
        if f.kind == "scalar":
            out[f.name] = t.scalar(f)
        elif f.kind == "vector":
            out[f.name] = t.scalars(f)
    return out


def _F(spec: str, name: str) -> L.FieldSpec:  # noqa: N802 - reads like a type
    return L.table(spec).by_name[name]


# ---------------------------------------------------------------------------------------------------------
# XNNGraph


def _read_value(t: _Table, i: int) -> Value:
    what = f"xvalues[{i}]"
    utype = t.scalar(_F("XValue", "xvalue_union_type"))
    body = t.table(_F("XValue", "xvalue_union"))
    names = L.union_names(L.VALUE_UNION)
    if utype not in names or body is None:
        raise FormatError(f"{what}: unknown or missing value type {utype}")
    quant = None
    if names[utype] == "XNNQuantizedTensorValue":
        tensor = body.table(_F("XNNQuantizedTensorValue", "tensor_value"))
        qtype = body.scalar(_F("XNNQuantizedTensorValue", "quant_params_type"))
        qbody = body.table(_F("XNNQuantizedTensorValue", "quant_params"))
        qnames = L.union_names(L.QUANT_UNION)
        if tensor is None:
            raise FormatError(f"{what}: quantized value without tensor_value")
        if qtype not in qnames or qbody is None:
            raise FormatError(f"{what}: unknown or missing quantization type {qtype}")
        qname = qnames[qtype]
        quant = _QUANT_CLASSES[qname](**_fields(qbody, L.table(qname)))
    else:
        tensor = body
    tv = _fields(tensor, L.table("XNNTensorValue"))
    try:
        dt = Datatype(tv["datatype"])
    except ValueError:
        raise FormatError(f"{what}: unknown datatype {tv['datatype']}") from None
    return Value(
        id=tv["id_out"],
        datatype=dt,
        dims=tv["dims"],
        constant_buffer_idx=tv["constant_buffer_idx"],
        external_id=tv["external_id"],
        flags=tv["flags"],
        quant=quant,
        dq_datatype=tv["dq_datatype"],
    )


def _read_node(t: _Table, i: int) -> Node:
    utype = t.scalar(_F("XNode", "xnode_union_type"))
    kind = L.union_names(L.NODE_UNION).get(utype)
    if kind is None:
        raise FormatError(f"xnodes[{i}]: unknown node type {utype}")
    body = t.table(_F("XNode", "xnode_union"))
    if body is None:
        raise FormatError(f"xnodes[{i}] ({kind}): missing node table")
    fields = _fields(body, L.node_table(kind))
    mm = t.table(_F("XNode", "output_min_max"))
    omm = None
    if mm is not None:
        omm = (
            float(mm.scalar(_F("OutputMinMax", "output_min"))),
            float(mm.scalar(_F("OutputMinMax", "output_max"))),
        )
    return Node(
        kind=kind, fields=fields, output_min_max=omm, debug_handle=t.scalar(_F("XNode", "debug_handle"))
    )


def _parse_header(mv: memoryview) -> Header:
    if len(mv) < _HEADER.size:
        raise FormatError(f"blob has an XH00 header but is only {len(mv)} bytes (the header needs 30)")
    _, _, hlen, fb_off, fb_size, c_off, c_size = _HEADER.unpack_from(mv, 0)
    n = len(mv)
    if fb_off < _HEADER.size:
        raise FormatError(f"header: flatbuffer_offset {fb_off} (byte 10) overlaps the 30-byte header")
    if fb_size < 8:
        raise FormatError(f"header: flatbuffer_size {fb_size} (byte 14) is smaller than 8")
    if fb_off + fb_size > n:
        raise FormatError(
            f"header: flatbuffer at {fb_off}..{fb_off + fb_size} (bytes 10, 14) runs past the "
            f"end of the {n}-byte blob"
        )
    if c_off < fb_off + fb_size:
        raise FormatError(
            f"header: constant_data_offset {c_off} (byte 18) overlaps the flatbuffer "
            f"(ends at {fb_off + fb_size})"
        )
    if c_off + c_size > n:
        raise FormatError(
            f"header: constant segment at {c_off}..{c_off + c_size} (bytes 18, 22) runs past "
            f"the end of the {n}-byte blob"
        )
    return Header(fb_off, fb_size, c_off, c_size, hlen)


def read(blob: bytes | bytearray | memoryview, named_data: dict[str, bytes] | None = None) -> XnnGraph:
    """Parse a `.xnn` blob, an ExecuTorch XNNPACK payload (with or without the XH00 header), into the IR.

    `named_data` (key → bytes, e.g. from `extract_from_pte`) resolves ExecuTorch ≥ 0.6 constants that carry
    a `named_key`; without it their data is None. Raises FormatError for anything malformed."""
    try:
        mv = memoryview(blob).cast("B")
    except TypeError:
        raise FormatError(f"cannot read a blob from {type(blob).__name__}") from None
    if len(mv) < 8:
        raise FormatError(f"blob is {len(mv)} bytes, too short to be an XNNPACK payload")
    header = _parse_header(mv) if bytes(mv[4:8]) == b"XH00" else None
    if header is not None:
        buf = _Buf(
            mv[header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size],
            header.flatbuffer_offset,
        )
    else:
        buf = _Buf(mv, 0)
    ident = bytes(buf.mv[4:8])
    if ident not in IDENTIFIERS:
        raise FormatError(
            f"flatbuffer identifier at byte {buf.base + 4} is {ident!r}, expected b'XN00' or "
            "b'XN01' (not an XNNPACK payload)"
        )
    root = _root(buf, "XNNGraph")
    G = "XNNGraph"  # noqa: N806
    g = XnnGraph(identifier=ident.decode(), has_header=header is not None, header=header)
    g.version = root.string(_F(G, "version")) or ""
    g.values = [_read_value(t, i) for i, t in enumerate(root.tables(_F(G, "xvalues")))]
    g.nodes = [_read_node(t, i) for i, t in enumerate(root.tables(_F(G, "xnodes")))]
    g.num_externs = root.scalar(_F(G, "num_externs"))
    g.input_ids = root.scalars(_F(G, "input_ids"))
    g.output_ids = root.scalars(_F(G, "output_ids"))
    g.constants, g.constant_refs = _read_constants(mv, buf, root, header, named_data)
    meta = root.table(_F(G, "webxnn"))
    if meta is not None:
        M = "WXMetadata"  # noqa: N806
        g.metadata = Metadata(
            producer=meta.string(_F(M, "producer")) or "",
            input_names=meta.strings(_F(M, "input_names")),
            output_names=meta.strings(_F(M, "output_names")),
            node_sources=meta.strings(_F(M, "node_sources")),
            dyn_dims=[_read_dyn_dim(t) for t in meta.tables(_F(M, "dyn_dims"))],
        )
    _check_refs(g)
    return g


def _read_dyn_dim(t: _Table) -> DynDimRef:
    D = "WXDynDim"  # noqa: N806
    return DynDimRef(
        input=t.scalar(_F(D, "input")),
        axis=t.scalar(_F(D, "axis")),
        name=t.string(_F(D, "name")) or "",
        max_size=t.scalar(_F(D, "max_size")),
    )


def _read_constants(
    mv: memoryview, buf: _Buf, root: _Table, header: Header | None, named_data: dict[str, bytes] | None
) -> tuple[list[Any], list[ConstantRef]]:
    G, C = "XNNGraph", "ConstantDataOffset"  # noqa: N806
    entries = root.tables(_F(G, "constant_data"))
    if header is None:
        buffers = root.tables(_F(G, "constant_buffer"))
        if buffers:  # deprecated in-flatbuffer storage (no XH00 header)
            consts: list[Any] = []
            refs: list[ConstantRef] = []
            for t in buffers:
                v = t.bytes_view(_F("Buffer", "storage"))
                start, size = v if v is not None else (0, 0)
                consts.append(buf.mv[start : start + size])
                refs.append(ConstantRef(buf.base + start, size))
            return consts, refs
    consts, refs = [], []
    for i, t in enumerate(entries):
        off, size = t.scalar(_F(C, "offset")), t.scalar(_F(C, "size"))
        key = t.string(_F(C, "named_key"))
        refs.append(ConstantRef(off, size, key))
        if i == 0:  # reserved "no data"; never dereferenced
            consts.append(b"")
        elif key is not None:
            data = named_data.get(key) if named_data else None
            if data is not None:
                data = memoryview(data).cast("B")
                if len(data) < size:
                    raise FormatError(
                        f"constant_data[{i}]: named data {key!r} has {len(data)} bytes, the entry says {size}"
                    )
                data = data[:size]
            consts.append(data)
        elif header is None:
            if size:
                raise FormatError(
                    f"constant_data[{i}]: refers to a constant segment, but the blob has no XH00 header"
                )
            consts.append(b"")
        else:
            if off + size > header.constant_data_size:
                raise FormatError(
                    f"constant_data[{i}]: offset {off} + size {size} is past the constant "
                    f"segment ({header.constant_data_size} bytes at byte "
                    f"{header.constant_data_offset})"
                )
            start = header.constant_data_offset + off
            consts.append(mv[start : start + size])
    if not consts:
        consts, refs = [b""], [ConstantRef(0, 0)]
    return consts, refs


def _check_refs(g: XnnGraph) -> None:
    """Indices that point into lists of the graph must be in range (describe and the IR users index them)."""
    n = len(g.constants)
    for i, v in enumerate(g.values):
        if v.constant_buffer_idx >= n:
            raise FormatError(
                f"xvalues[{i}] (id {v.id}): constant_buffer_idx {v.constant_buffer_idx} is "
                f"past the {n} constant entries"
            )
        sb = getattr(v.quant, "scale_buffer_idx", 0)
        if sb >= n:
            raise FormatError(
                f"xvalues[{i}] (id {v.id}): scale_buffer_idx {sb} is past the {n} constant entries"
            )


# ---------------------------------------------------------------------------------------------------------
# ExecuTorch .pte

_PTE = {  # (slot, kind, fmt) of the Program fields we walk; ExecuTorch's schema/program.fbs
    "execution_plan": (1, "tables", ""),
    "backend_delegate_data": (3, "tables", ""),
    "segments": (4, "tables", ""),
    "named_data": (7, "tables", ""),
    "delegates": (7, "tables", ""),  # ExecutionPlan
    "id": (0, "string", ""),
    "processed": (1, "table", ""),  # BackendDelegate
    "location": (0, "scalar", "<b"),
    "index": (1, "scalar", "<I"),  # BackendDelegateDataReference
    "data": (0, "vector", "<B"),  # BackendDelegateInlineData
    "offset": (0, "scalar", "<Q"),
    "size": (1, "scalar", "<Q"),  # DataSegment
    "key": (0, "string", ""),
    "segment_index": (1, "scalar", "<I"),  # NamedData
    "name": (0, "string", ""),  # ExecutionPlan, Operator
    "chains": (5, "tables", ""),
    "operators": (6, "tables", ""),  # ExecutionPlan
    "overload": (1, "string", ""),  # Operator
    "instructions": (2, "tables", ""),  # Chain
    "instr_args_type": (0, "scalar", "<B"),
    "instr_args": (1, "table", ""),  # Instruction
    "op_index": (0, "scalar", "<i"),  # KernelCall
}
# InstructionArguments union members, in schema order (0 is NONE)
_INSTRUCTIONS = {1: "KernelCall", 2: "DelegateCall", 3: "MoveCall", 4: "JumpFalseCall", 5: "FreeCall"}


def _P(name: str) -> L.FieldSpec:  # noqa: N802
    slot, kind, fmt = _PTE[name]
    return L.FieldSpec(name, slot, kind, fmt, 0)


@dataclass
class PlanContents:
    """What one method of a `.pte` holds: its name, its delegates' backend ids, the operators its
    KernelCalls run ("aten::add.out"), and how many instructions of each kind it has."""

    name: str
    delegates: list[str] = field(default_factory=list)
    kernel_ops: list[str] = field(default_factory=list)
    instructions: dict[str, int] = field(default_factory=dict)


def program_contents(pte: bytes | bytearray | memoryview) -> list[PlanContents]:
    """Each method (execution plan) of an ExecuTorch `.pte`: delegates, operators and instruction kinds, so a
    caller can say what a program holds before refusing it."""
    _, program = _program(memoryview(pte).cast("B"))
    out = []
    for plan in program.tables(_P("execution_plan")):
        ops = [
            (o.string(_P("name")) or "?")
            + (f".{o.string(_P('overload'))}" if o.string(_P("overload")) else "")
            for o in plan.tables(_P("operators"))
        ]
        pc = PlanContents(
            plan.string(_P("name")) or "", [d.string(_P("id")) or "" for d in plan.tables(_P("delegates"))]
        )
        for chain in plan.tables(_P("chains")):
            for ins in chain.tables(_P("instructions")):
                kind = _INSTRUCTIONS.get(ins.scalar(_P("instr_args_type")), "unknown")
                pc.instructions[kind] = pc.instructions.get(kind, 0) + 1
                if kind == "KernelCall":
                    body = ins.table(_P("instr_args"))
                    k = body.scalar(_P("op_index")) if body is not None else -1
                    op = ops[k] if 0 <= k < len(ops) else f"operator #{k}"
                    if op not in pc.kernel_ops:
                        pc.kernel_ops.append(op)
        out.append(pc)
    return out


def _program(mv: memoryview) -> tuple[tuple[int, int | None], _Table]:
    """((program_size, segment_base_offset or None), root Program table) of a `.pte`."""
    n = len(mv)
    if n < 8 or bytes(mv[4:8]) != b"ET12":
        raise FormatError("not an ExecuTorch program: bytes 4..8 are not 'ET12'")
    program_size, segment_base = n, None
    if n >= 40 and bytes(mv[8:12]) == b"eh00":
        hlen, program_size, segment_base, seg_data_size = struct.unpack_from("<IQQQ", mv, 12)
        if hlen < 32:
            raise FormatError(f".pte extended header: length {hlen} at byte 12 is smaller than 32")
        if program_size > n or program_size < 8:
            raise FormatError(
                f".pte extended header: program_size {program_size} (byte 16) is past the end "
                f"of the {n}-byte file"
            )
        if segment_base > n:
            raise FormatError(
                f".pte extended header: segment_base_offset {segment_base} (byte 24) is past "
                f"the end of the {n}-byte file"
            )
    buf = _Buf(mv[:program_size], 0, ".pte program")
    return (program_size, segment_base), _root(buf, "Program")


@dataclass
class PteFile:
    """An ExecuTorch `.pte` opened for reading: its root Program table and its segments, range-checked."""

    mv: memoryview
    program: _Table
    segment_base: int | None

    def segment(self, idx: int, what: str) -> memoryview:
        """The bytes of segment `idx` (a view into the file)."""
        segments = self.program.tables(_P("segments"))
        if idx >= len(segments):
            raise FormatError(f"{what}: segment index {idx} is past the {len(segments)} segments")
        if self.segment_base is None:
            raise FormatError(f"{what}: data is in a segment but the .pte has no extended header")
        s = segments[idx]
        off, size = s.scalar(_P("offset")), s.scalar(_P("size"))
        start, n = self.segment_base + off, len(self.mv)
        if start + size > n:
            raise FormatError(
                f"{what}: segment {idx} at {start}..{start + size} runs past the end of the {n}-byte file"
            )
        return self.mv[start : start + size]

    def named_data(self) -> dict[str, bytes]:
        """The program's named data (key → bytes): ExecuTorch >= 0.6 keeps delegate constants there."""
        named: dict[str, bytes] = {}
        for i, nd in enumerate(self.program.tables(_P("named_data"))):
            key = nd.string(_P("key"))
            if key is None:
                raise FormatError(f"named_data[{i}]: no key")
            named[key] = bytes(self.segment(nd.scalar(_P("segment_index")), f"named_data[{i}] ({key!r})"))
        return named

    def delegate_payload(self, dele: _Table, what: str) -> bytes:
        """The processed data (payload) of one BackendDelegate table of this program."""
        ref = dele.table(_P("processed"))
        if ref is None:
            raise FormatError(f"{what}: no processed data")
        loc, idx = ref.scalar(_P("location")), ref.scalar(_P("index"))
        if loc == 0:
            inline = self.program.tables(_P("backend_delegate_data"))
            if idx >= len(inline):
                raise FormatError(
                    f"{what}: backend_delegate_data index {idx} is past the {len(inline)} entries"
                )
            v = inline[idx].bytes_view(_P("data"))
            return bytes(self.program.buf.mv[v[0] : v[0] + v[1]]) if v else b""
        if loc == 1:
            return bytes(self.segment(idx, what))
        raise FormatError(f"{what}: unknown data location {loc}")


def open_pte(pte: bytes | bytearray | memoryview) -> PteFile:
    """Open an ExecuTorch `.pte` for reading (FormatError when its header or root table is malformed)."""
    mv = memoryview(pte).cast("B")
    (_, segment_base), program = _program(mv)
    return PteFile(mv, program, segment_base)


def extract_from_pte(
    pte: bytes | bytearray | memoryview, delegate_index: int = 0
) -> tuple[bytes, dict[str, bytes]]:
    """The XnnpackBackend delegate payload (the `delegate_index`-th one) and the named data (key → bytes) of
    an ExecuTorch `.pte` program. Raises FormatError when there is none or the file is malformed."""
    f = open_pte(pte)
    found = []
    for p, plan in enumerate(f.program.tables(_P("execution_plan"))):
        for d, dele in enumerate(plan.tables(_P("delegates"))):
            if (dele.string(_P("id")) or "").lower().find("xnnpack") >= 0:
                found.append((f"execution_plan[{p}].delegates[{d}]", dele))
    if delegate_index >= len(found):
        raise FormatError(f".pte has {len(found)} XnnpackBackend delegate(s), asked for #{delegate_index}")
    what, dele = found[delegate_index]
    return f.delegate_payload(dele, what), f.named_data()
