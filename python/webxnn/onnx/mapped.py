"""Open an ONNX file without copying its weights: initializer bytes stay in a memory map of the file.

`onnx.load` reads the whole file into a bytes object and parses it into protobuf memory, and reading an
initializer's `raw_data` copies it once more, so a 100 MB model briefly costs 200-300 MB of private memory
and keeps 100 MB after the import. Here the file is memory-mapped and scanned at the protobuf wire level:
ModelProto.graph (field 7) → GraphProto.initializer (field 5) → TensorProto.raw_data (field 9). The
protobuf actually parsed is a skeleton with those raw_data fields cut out (a few KB for most models), and
each initializer becomes a read-only numpy view of the mapped file. The pages are file-backed: the OS
shares them with its page cache and can drop them under pressure, and only what is read is ever loaded.

The views keep the map open for as long as the Graph holds them; like external data (also mapped), the
file must not be rewritten in place while they live: `onnx.save` over it truncates it, and reading a
truncated map is a SIGBUS. Write a new file and rename it over the old one instead.

Anything unexpected in the wire data (groups, truncation, a repeated graph field) makes `load_mapped`
return None, and the caller falls back to `onnx.load`, which reports real corruption properly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import WeightsError
from .tensors import BOOL, NP_OF_ONNX, numel

# Field numbers from onnx.proto (stable: protobuf field numbers never change).
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_DIMS, _TENSOR_DATA_TYPE, _TENSOR_RAW_DATA = 1, 2, 9
_LEN = 2  # wire type of length-delimited fields

# Smaller raw_data stays inline: not worth a view, and shape-chain constants are tiny.
_MIN_MAPPED_BYTES = 256


class _Irregular(Exception):
    """The wire data is not what this scanner handles; fall back to onnx.load."""


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Irregular("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, field start, value start, value end) of each field in buf[start:end]."""
    pos = start
    while pos < end:
        tag, vpos = _varint(buf, pos, end)
        fno, wt = tag >> 3, tag & 7
        if wt == 0:
            _, vend = _varint(buf, vpos, end)
        elif wt == 1:
            vend = vpos + 8
        elif wt == 5:
            vend = vpos + 4
        elif wt == _LEN:
            n, vpos = _varint(buf, vpos, end)
            vend = vpos + n
        else:  # groups (3/4) are not used by ONNX
            raise _Irregular(f"wire type {wt}")
        if vend > end or fno == 0:
            raise _Irregular("field past its message")
        yield fno, wt, pos, vpos, vend
        pos = vend


def _encode_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _len_field(fno: int, payload: bytes) -> bytes:
    return _encode_varint((fno << 3) | _LEN) + _encode_varint(len(payload)) + payload


def _tensor(buf: memoryview, start: int, end: int) -> tuple[bytes, tuple[int, int] | None]:
    """The TensorProto in buf[start:end] without its raw_data when that is worth mapping, and the
    (offset, length) of the raw_data cut out."""
    data_type = 0
    raw: tuple[int, int, int] | None = None  # field start, value start, value end
    for fno, wt, fs, vs, ve in _fields(buf, start, end):
        if fno == _TENSOR_DATA_TYPE and wt == 0:
            data_type = _varint(buf, vs, ve)[0]
        elif fno == _TENSOR_RAW_DATA and wt == _LEN:
            raw = (fs, vs, ve)  # the last one wins, as in protobuf
    if raw is None or raw[2] - raw[1] < _MIN_MAPPED_BYTES or data_type not in NP_OF_ONNX or data_type == BOOL:
        return bytes(buf[start:end]), None
    kept = b"".join(
        bytes(buf[fs:ve])
        for fno, wt, fs, vs, ve in _fields(buf, start, end)
        if not (fno == _TENSOR_RAW_DATA and wt == _LEN)
    )
    return kept, (raw[1], raw[2] - raw[1])


def _graph(buf: memoryview, start: int, end: int) -> tuple[bytes, list[tuple[int, int] | None]]:
    pieces: list[bytes] = []
    ranges: list[tuple[int, int] | None] = []
    copy_from = start  # runs of untouched fields are copied in one slice
    for fno, wt, fs, vs, ve in _fields(buf, start, end):
        if fno == _GRAPH_INITIALIZER and wt == _LEN:
            pieces.append(bytes(buf[copy_from:fs]))
            kept, rng = _tensor(buf, vs, ve)
            pieces.append(_len_field(fno, kept))
            ranges.append(rng)
            copy_from = ve
    pieces.append(bytes(buf[copy_from:end]))
    return b"".join(pieces), ranges


def _skeleton(buf: memoryview) -> tuple[bytes, list[tuple[int, int] | None]]:
    pieces: list[bytes] = []
    ranges: list[tuple[int, int] | None] | None = None
    for fno, wt, fs, vs, ve in _fields(buf, 0, len(buf)):
        if fno == _MODEL_GRAPH and wt == _LEN:
            if ranges is not None:
                raise _Irregular("two graph fields")  # protobuf would merge them
            graph, ranges = _graph(buf, vs, ve)
            pieces.append(_len_field(fno, graph))
        else:
            pieces.append(bytes(buf[fs:ve]))
    return b"".join(pieces), ranges or []


def load_mapped(path: Path) -> tuple[Any, dict[str, np.ndarray]] | None:
    """(ModelProto without the mapped raw_data, {initializer name: read-only array view of the file}),
    or None when the file is not plain binary protobuf this scanner understands."""
    import onnx

    if os.path.getsize(path) == 0:
        return None
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    try:
        skeleton, ranges = _skeleton(memoryview(mm))
        proto = onnx.ModelProto()
        proto.ParseFromString(skeleton)
    except Exception:  # _Irregular, or protobuf refusing the skeleton: let onnx.load judge the file
        return None
    inits = proto.graph.initializer
    if len(inits) != len(ranges):
        return None
    arrays: dict[str, np.ndarray] = {}
    for t, rng in zip(inits, ranges):
        if rng is None:
            continue
        off, length = rng
        dt = NP_OF_ONNX[t.data_type]
        shape = tuple(int(d) for d in t.dims)
        if length != numel(t, shape) * dt.itemsize:
            raise WeightsError(
                f"initializer {t.name!r}: raw_data holds {length} bytes, but "
                f"{dt}{list(shape)} needs {numel(t, shape) * dt.itemsize}"
            )
        # a view of the map (unaligned offsets are fine for numpy); it keeps the map open
        arrays[t.name] = mm[off : off + length].view(dt).reshape(shape)
    return proto, arrays
