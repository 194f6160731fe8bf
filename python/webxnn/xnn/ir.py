"""XNN IR: plain dataclasses mirroring `schema/xnngraph.fbs`, one level above the bytes.

A node is its union member name (`kind`, e.g. "XNNConv2d") and the fields of its table by their schema names
(`input1_id`, `padding_top`, `perm`, ...). Field names ending in `_id` refer to values by `Value.id`
(the serialized `id_out`); `INVALID_ID` marks an absent optional input such as a bias.
The writer (`writer.py`) and the reader (`reader.py`) are the only code that touches flatbuffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

INVALID_ID = 0xFFFFFFFF
FLAG_EXTERNAL_INPUT = 0x1
FLAG_EXTERNAL_OUTPUT = 0x2

# Node flags (XNNPACK's)
FLAG_TRANSPOSE_WEIGHTS = 0x1  # FullyConnected filter is [I, O]
FLAG_TRANSPOSE_B = 0x1  # BatchMatrixMultiply in2 is [..., N, K]
FLAG_ALIGN_CORNERS = 0x8
FLAG_KEEP_DIMS = 0x40
# WXGather, WXGatherElements, WXGatherND (webxnn). Without flags, ids out of range are clamped (WebNN's rule).
# CHECKED: ids fed straight from a graph input must be in 0..n-1 (ExecuTorch's embedding), else the run is an
# InputError naming the input, the element, its value and the range; ids computed in the graph still clamp.
# CHECKED | WRAP: the range is -n..n-1, negatives counting from the end (ONNX). WRAP alone is invalid.
# n is the size of the indexed dim (GatherND: of dim j for position j of the indices' last dim).
FLAG_CHECKED_INDICES = 0x1
FLAG_INDICES_WRAP = 0x2
CHECKED_GATHER_KINDS = ("WXGather", "WXGatherElements", "WXGatherND")
GATHER_FLAGS = (0, FLAG_CHECKED_INDICES, FLAG_CHECKED_INDICES | FLAG_INDICES_WRAP)  # the valid values


class Datatype(IntEnum):
    INVALID = 0
    FP32 = 1
    FP16 = 2
    QINT8 = 3
    QUINT8 = 4
    QINT32 = 5
    QCINT8 = 6
    QCINT32 = 7
    QCINT4 = 8
    QDINT8 = 9
    QBINT4 = 10
    QPINT8 = 11
    INT32 = 12
    PFP32 = 13
    BF16 = 14
    WX_INT8 = 128
    WX_UINT8 = 129
    WX_UINT32 = 130
    WX_INT64 = 131
    WX_UINT64 = 132


# bytes per element as stored in the constant segment (4-bit types: see `constant_nbytes`)
ELEMENT_SIZE: dict[Datatype, int] = {
    Datatype.FP32: 4,
    Datatype.FP16: 2,
    Datatype.QINT8: 1,
    Datatype.QUINT8: 1,
    Datatype.QINT32: 4,
    Datatype.QCINT8: 1,
    Datatype.QCINT32: 4,
    Datatype.QDINT8: 1,
    Datatype.QPINT8: 1,
    Datatype.INT32: 4,
    Datatype.PFP32: 4,
    Datatype.BF16: 2,
    Datatype.WX_INT8: 1,
    Datatype.WX_UINT8: 1,
    Datatype.WX_UINT32: 4,
    Datatype.WX_INT64: 8,
    Datatype.WX_UINT64: 8,
}

NUMPY_DTYPE: dict[Datatype, np.dtype] = {
    Datatype.FP32: np.dtype("<f4"),
    Datatype.FP16: np.dtype("<f2"),
    Datatype.QINT8: np.dtype("i1"),
    Datatype.QUINT8: np.dtype("u1"),
    Datatype.QINT32: np.dtype("<i4"),
    Datatype.QCINT8: np.dtype("i1"),
    Datatype.QCINT32: np.dtype("<i4"),
    Datatype.QDINT8: np.dtype("i1"),
    Datatype.INT32: np.dtype("<i4"),
    Datatype.WX_INT8: np.dtype("i1"),
    Datatype.WX_UINT8: np.dtype("u1"),
    Datatype.WX_UINT32: np.dtype("<u4"),
    Datatype.WX_INT64: np.dtype("<i8"),
    Datatype.WX_UINT64: np.dtype("<u8"),
}


def constant_nbytes(datatype: Datatype, dims: list[int]) -> int:
    """Bytes a constant of this type and shape occupies (qcint4/qbint4: two values per byte, inner dim
    padded to even)."""
    if datatype in (Datatype.QCINT4, Datatype.QBINT4):
        if not dims:
            return 1
        outer = int(np.prod(dims[:-1], dtype=np.int64)) if len(dims) > 1 else 1
        return outer * ((dims[-1] + 1) // 2)
    return ELEMENT_SIZE[datatype] * int(np.prod(dims, dtype=np.int64))


@dataclass
class PerTensorQuant:
    scale: float
    zero_point: int = 0


@dataclass
class PerChannelQuant:
    scale: list[float]
    channel_dim: int = 0
    scale_buffer_idx: int = 0
    num_scales: int = 0


@dataclass
class PerChannelGroupQuant:
    scale: list[float]
    channel_dim: int = 0
    group_size: int = 0
    scale_buffer_idx: int = 0
    num_scales: int = 0


@dataclass
class PerTokenDynamicQuant:
    num_nonbatch_dims: int = 1


Quant = PerTensorQuant | PerChannelQuant | PerChannelGroupQuant | PerTokenDynamicQuant


@dataclass
class Value:
    """An XValue. `quant` set means an XNNQuantizedTensorValue."""

    id: int
    datatype: Datatype
    dims: list[int]
    constant_buffer_idx: int = 0
    external_id: int = INVALID_ID
    flags: int = 0
    quant: Quant | None = None
    dq_datatype: int = 0


@dataclass
class Node:
    """An XNode: `kind` is the XNodeUnion member name, `fields` its table's fields by schema name."""

    kind: str
    fields: dict[str, Any]
    output_min_max: tuple[float, float] | None = None
    debug_handle: int = 0

    def input_ids(self) -> list[int]:
        """Ids this node reads, in field order, without absent optional inputs. A ConcatenateN reads only
        input1..N (ExecuTorch payloads leave the unused `input5_id` at its default 0)."""
        if self.kind.startswith("XNNConcatenate"):
            n = int(self.kind[len("XNNConcatenate") :])
            ids = [self.fields.get(f"input{k}_id", INVALID_ID) for k in range(1, n + 1)]
            return [i for i in ids if i != INVALID_ID]
        return [
            v
            for k, v in self.fields.items()
            if k.endswith("_id") and not k.startswith("output") and v != INVALID_ID
        ]

    def output_ids(self) -> list[int]:
        return [v for k, v in self.fields.items() if k.startswith("output") and k.endswith("_id")]


@dataclass
class ConstantRef:
    """A ConstantDataOffset as read from a blob: `data` is the bytes (a view into the blob) or None when the
    entry names data outside the blob (`named_key`)."""

    offset: int
    size: int
    named_key: str | None = None


@dataclass
class DynDimRef:
    """Input `input` (extern order) may take any size from 1 to `max_size` along `axis` (its dims hold the
    max); every other input dim is fixed."""

    input: int
    axis: int
    name: str
    max_size: int


@dataclass
class Metadata:
    """webxnn's appended table: names in extern order, producer, per-node provenance, dynamic input dims."""

    producer: str = ""
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    node_sources: list[str] = field(default_factory=list)
    dyn_dims: list[DynDimRef] = field(default_factory=list)


@dataclass
class Header:
    """The XH00 header of a blob, as read (`XnnGraph.header`; None for a bare flatbuffer)."""

    flatbuffer_offset: int
    flatbuffer_size: int
    constant_data_offset: int
    constant_data_size: int
    header_length: int = 30


@dataclass
class XnnGraph:
    """A whole payload. `constants[0]` is the reserved "no data" entry; value `constant_buffer_idx` indexes
    this list. Writing takes bytes-like or numpy arrays; reading gives memoryviews into the blob."""

    values: list[Value] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    constants: list[Any] = field(default_factory=lambda: [b""])
    num_externs: int = 0
    input_ids: list[int] = field(default_factory=list)
    output_ids: list[int] = field(default_factory=list)
    version: str = "0"
    metadata: Metadata | None = None
    # filled by the reader only
    identifier: str = "XN00"
    constant_refs: list[ConstantRef] = field(default_factory=list)
    has_header: bool = True
    header: Header | None = None

    def add_constant(self, data: Any) -> int:
        """Append constant data; return its constant_buffer_idx."""
        self.constants.append(data)
        return len(self.constants) - 1

    def value(self, vid: int) -> Value:
        for v in self.values:
            if v.id == vid:
                return v
        raise KeyError(vid)
