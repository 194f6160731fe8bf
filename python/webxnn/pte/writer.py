"""Write an ExecuTorch program (`.pte`) around a `.xnn` payload: one method, `forward`, whose only instruction
runs the payload as the XnnpackBackend delegate.

Layout (what ExecuTorch 1.x reads):

    [0, 8)    root offset, file identifier "ET12"
    [8, 40)   extended header: "eh00", u32 length 32, u64 program_size, u64 segment_base_offset,
              u64 segment_data_size
    [40, P)   the rest of the Program flatbuffer (schema/program.fbs)
    [B, ..)   segments (B = P rounded up to 128): the payload, unless it is inline in the flatbuffer

The method has one Tensor value per payload external (inputs in external-id order, then outputs: the order
ExecuTorch's XNNPACK executor binds a DelegateCall's arguments), each with the external's exact sizes,
dtype and contiguous dim order, memory-planned in one buffer. Written with the flatc-generated builders of
webxnn's own schema; neither torch nor executorch is needed.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

import flatbuffers
import numpy as np

from ..errors import FormatError, UnsupportedError
from ..xnn.ir import Datatype, Value, XnnGraph
from ..xnn.reader import read
from ._schema import (
    AllocationDetails,
    BackendDelegate,
    BackendDelegateDataReference,
    BackendDelegateInlineData,
    Chain,
    ContainerMetadata,
    DataSegment,
    DelegateCall,
    EValue,
    ExecutionPlan,
    Instruction,
    Program,
    SubsegmentOffsets,
    Tensor,
)
from ._schema.DataLocation import DataLocation
from ._schema.InstructionArguments import InstructionArguments
from ._schema.KernelTypes import KernelTypes
from ._schema.ScalarType import ScalarType
from ._schema.TensorShapeDynamism import TensorShapeDynamism

BACKEND_ID = "XnnpackBackend"
METHOD = "forward"
SEGMENT_ALIGNMENT = 128  # what ExecuTorch's serializer uses; the runtime only needs the header's offsets
TENSOR_ALIGNMENT = 16  # memory-planned tensors; XNNPACK reads external data unaligned anyway
_EXT_HEADER = struct.Struct("<4sIQQQ")  # magic, length, program_size, segment_base_offset, segment_data_size
_FLAG_INPUT, _FLAG_OUTPUT = 1, 2

# XNN datatype of an external → torch ScalarType of the ExecuTorch tensor bound to it. Explicit: ExecuTorch
# does not check a delegate argument's dtype, so a wrong mapping would run and return garbage.
SCALAR_TYPES: dict[Datatype, int] = {
    Datatype.FP32: ScalarType.FLOAT,
    Datatype.FP16: ScalarType.HALF,
    Datatype.BF16: ScalarType.BFLOAT16,
    Datatype.INT32: ScalarType.INT,
    Datatype.QINT8: ScalarType.CHAR,
    Datatype.QUINT8: ScalarType.BYTE,
}
ELEMENT_BYTES = {
    ScalarType.FLOAT: 4,
    ScalarType.HALF: 2,
    ScalarType.BFLOAT16: 2,
    ScalarType.INT: 4,
    ScalarType.CHAR: 1,
    ScalarType.BYTE: 1,
}


@dataclass(frozen=True)
class External:
    """One delegate argument: the payload value it binds to, its name and ExecuTorch tensor type."""

    value: Value
    name: str
    scalar_type: int
    dynamic: bool

    @property
    def nbytes(self) -> int:
        n = ELEMENT_BYTES[self.scalar_type]
        for d in self.value.dims:
            n *= d
        return n


def externals(g: XnnGraph) -> tuple[list[External], list[External]]:
    """The payload's inputs and outputs in the order ExecuTorch binds them (by external id), with their
    ExecuTorch types; UnsupportedError naming every external whose dtype has no ExecuTorch equivalent."""
    meta = g.metadata
    dyn_inputs = {d.input for d in meta.dyn_dims} if meta else set()
    ins = sorted((v for v in g.values if v.flags & _FLAG_INPUT), key=lambda v: v.external_id)
    outs = sorted((v for v in g.values if v.flags & _FLAG_OUTPUT), key=lambda v: v.external_id)
    bad: list[str] = []

    def make(vals: list[Value], names: list[str], kind: str, dynamic: list[bool]) -> list[External]:
        out = []
        for k, v in enumerate(vals):
            name = names[k] if k < len(names) else f"{kind}{k}"
            st = SCALAR_TYPES.get(v.datatype)
            if st is None or (v.flags & _FLAG_INPUT and v.flags & _FLAG_OUTPUT):
                why = "both an input and an output" if st is not None else f"{v.datatype.name}"
                bad.append(f"{kind} {name!r} (value {v.id}) is {why}")
                continue
            out.append(External(v, name, st, dynamic[k]))
        return out

    any_dyn = bool(dyn_inputs)
    inputs = make(ins, meta.input_names if meta else [], "input", [k in dyn_inputs for k in range(len(ins))])
    outputs = make(outs, meta.output_names if meta else [], "output", [any_dyn] * len(outs))
    if bad:
        supported = ", ".join(d.name for d in SCALAR_TYPES)
        raise UnsupportedError(
            f"cannot bind to ExecuTorch tensors (supported external dtypes: {supported}): " + "; ".join(bad)
        )
    return inputs, outputs


def pytree_spec(n: int, inputs: bool) -> str:
    """ExecuTorch's container metadata: inputs are `(args, kwargs)` with `n` positional tensors; outputs a
    single tensor or a tuple of `n`."""
    leaves = f"T{n}" + "#1" * n + "(" + ",".join("$" * n) + ")"
    if inputs:
        return f"T2#{n}#0({leaves},D0())"
    return "$" if n == 1 else leaves


def build_pte(payload: bytes, inline: bool = False) -> bytes:
    """The `.pte` bytes of a program that runs `payload` (a `.xnn` blob) as its XnnpackBackend delegate,
    inline in the flatbuffer or (default) in a segment after it."""
    g = read(payload)
    inputs, outputs = externals(g)
    b = flatbuffers.Builder(4096 + (len(payload) if inline else 0))

    offset, tensors = 0, []
    for e in [*inputs, *outputs]:
        tensors.append(_tensor(b, e, offset))
        offset += -(-e.nbytes // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT
    values = _vector(b, ExecutionPlan.StartValuesVector, [_evalue(b, t) for t in tensors])
    n_in, n_out = len(inputs), len(outputs)
    in_idx, out_idx = list(range(n_in)), list(range(n_in, n_in + n_out))

    args = _ints(b, DelegateCall.StartArgsVector, in_idx + out_idx, b.PrependInt32)
    DelegateCall.Start(b)
    DelegateCall.AddDelegateIndex(b, 0)
    DelegateCall.AddArgs(b, args)
    call = DelegateCall.End(b)
    Instruction.Start(b)
    Instruction.AddInstrArgsType(b, InstructionArguments.DelegateCall)
    Instruction.AddInstrArgs(b, call)
    instrs = _vector(b, Chain.StartInstructionsVector, [Instruction.End(b)])
    chain_in = _ints(b, Chain.StartInputsVector, in_idx, b.PrependInt32)
    chain_out = _ints(b, Chain.StartOutputsVector, out_idx, b.PrependInt32)
    Chain.Start(b)
    Chain.AddInputs(b, chain_in)
    Chain.AddOutputs(b, chain_out)
    Chain.AddInstructions(b, instrs)
    chains = _vector(b, ExecutionPlan.StartChainsVector, [Chain.End(b)])

    BackendDelegateDataReference.Start(b)
    BackendDelegateDataReference.AddLocation(b, DataLocation.INLINE if inline else DataLocation.SEGMENT)
    BackendDelegateDataReference.AddIndex(b, 0)
    ref = BackendDelegateDataReference.End(b)
    backend_id = b.CreateString(BACKEND_ID)
    specs = _vector(b, BackendDelegate.StartCompileSpecsVector, [])
    BackendDelegate.Start(b)
    BackendDelegate.AddId(b, backend_id)
    BackendDelegate.AddProcessed(b, ref)
    BackendDelegate.AddCompileSpecs(b, specs)
    delegates = _vector(b, ExecutionPlan.StartDelegatesVector, [BackendDelegate.End(b)])

    inp_str, out_str = b.CreateString(pytree_spec(n_in, True)), b.CreateString(pytree_spec(n_out, False))
    ContainerMetadata.Start(b)
    ContainerMetadata.AddEncodedInpStr(b, inp_str)
    ContainerMetadata.AddEncodedOutStr(b, out_str)
    meta = ContainerMetadata.End(b)
    plan_in = _ints(b, ExecutionPlan.StartInputsVector, in_idx, b.PrependInt32)
    plan_out = _ints(b, ExecutionPlan.StartOutputsVector, out_idx, b.PrependInt32)
    operators = _vector(b, ExecutionPlan.StartOperatorsVector, [])
    # buffer 0 is reserved by ExecuTorch's memory planning; buffer 1 holds every input and output
    buf_sizes = _ints(b, ExecutionPlan.StartNonConstBufferSizesVector, [0, offset], b.PrependInt64)
    name = b.CreateString(METHOD)
    ExecutionPlan.Start(b)
    ExecutionPlan.AddName(b, name)
    ExecutionPlan.AddContainerMetaType(b, meta)
    ExecutionPlan.AddValues(b, values)
    ExecutionPlan.AddInputs(b, plan_in)
    ExecutionPlan.AddOutputs(b, plan_out)
    ExecutionPlan.AddChains(b, chains)
    ExecutionPlan.AddOperators(b, operators)
    ExecutionPlan.AddDelegates(b, delegates)
    ExecutionPlan.AddNonConstBufferSizes(b, buf_sizes)
    plans = _vector(b, Program.StartExecutionPlanVector, [ExecutionPlan.End(b)])

    inline_data = None
    if inline:
        data = _aligned_bytes(b, payload, 16)
        BackendDelegateInlineData.Start(b)
        BackendDelegateInlineData.AddData(b, data)
        inline_data = _vector(b, Program.StartBackendDelegateDataVector, [BackendDelegateInlineData.End(b)])
    segs = []
    if not inline:
        DataSegment.Start(b)
        DataSegment.AddOffset(b, 0)
        DataSegment.AddSize(b, len(payload))
        segs.append(DataSegment.End(b))
    segments = _vector(b, Program.StartSegmentsVector, segs)
    # no constants outside the delegate: the constant segment holds only ExecuTorch's placeholder entry
    offsets = _ints(b, SubsegmentOffsets.StartOffsetsVector, [0], b.PrependUint64)
    SubsegmentOffsets.Start(b)
    SubsegmentOffsets.AddSegmentIndex(b, 0)
    SubsegmentOffsets.AddOffsets(b, offsets)
    const_seg = SubsegmentOffsets.End(b)

    Program.Start(b)
    Program.AddVersion(b, 0)
    Program.AddExecutionPlan(b, plans)
    if inline_data is not None:
        Program.AddBackendDelegateData(b, inline_data)
    Program.AddSegments(b, segments)
    Program.AddConstantSegment(b, const_seg)
    b.Finish(Program.End(b), file_identifier=b"ET12")
    fb = bytes(b.Output())

    seg_data = b"" if inline else payload
    program_size = len(fb) + _EXT_HEADER.size
    base = -(-program_size // SEGMENT_ALIGNMENT) * SEGMENT_ALIGNMENT if seg_data else program_size
    header = _EXT_HEADER.pack(b"eh00", _EXT_HEADER.size, program_size, base, len(seg_data))
    # the header goes right after the file identifier; the root offset moves by its length (everything in a
    # flatbuffer is addressed relative, so nothing else changes; 32 keeps the 16-byte force_align)
    root = struct.unpack_from("<I", fb, 0)[0] + _EXT_HEADER.size
    out = struct.pack("<I", root) + fb[4:8] + header + fb[8:]
    if seg_data:
        out += bytes(base - program_size) + seg_data
    return out


def _tensor(b: flatbuffers.Builder, e: External, offset: int) -> int:
    dims = [int(d) for d in e.value.dims]
    sizes = _ints(b, Tensor.StartSizesVector, dims, b.PrependInt32)
    dim_order = _ints(b, Tensor.StartDimOrderVector, list(range(len(dims))), b.PrependUint8)
    AllocationDetails.Start(b)
    AllocationDetails.AddMemoryId(b, 1)
    AllocationDetails.AddMemoryOffsetLow(b, offset & 0xFFFFFFFF)
    AllocationDetails.AddMemoryOffsetHigh(b, offset >> 32)
    alloc = AllocationDetails.End(b)
    Tensor.Start(b)
    Tensor.AddScalarType(b, e.scalar_type)
    Tensor.AddSizes(b, sizes)
    Tensor.AddDimOrder(b, dim_order)
    Tensor.AddAllocationInfo(b, alloc)
    Tensor.AddShapeDynamism(b, TensorShapeDynamism.DYNAMIC_BOUND if e.dynamic else TensorShapeDynamism.STATIC)
    return Tensor.End(b)


def _evalue(b: flatbuffers.Builder, tensor: int) -> int:
    EValue.Start(b)
    EValue.AddValType(b, KernelTypes.Tensor)
    EValue.AddVal(b, tensor)
    return EValue.End(b)


def _vector(b: flatbuffers.Builder, start, offsets: list[int]) -> int:  # type: ignore[no-untyped-def]
    start(b, len(offsets))
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def _ints(b: flatbuffers.Builder, start, items: list[int], prepend) -> int:  # type: ignore[no-untyped-def]
    start(b, len(items))
    for x in reversed(items):
        prepend(x)
    return b.EndVector()


def _aligned_bytes(b: flatbuffers.Builder, data: bytes, alignment: int) -> int:
    """A [ubyte] vector whose first byte is `alignment`-aligned in the final buffer (the schema's
    force_align, which flatc's Python builders do not apply)."""
    b.StartVector(1, len(data), alignment)
    b.head -= len(data)
    b.Bytes[b.head : b.head + len(data)] = data
    return b.EndVector()


def to_pte(
    model: Any,
    weights: dict[str, np.ndarray] | None = None,
    inline: bool = False,
) -> bytes:
    """An ExecuTorch program for `model`: a Graph, the path of a `.webnn` / `.json` graph or `.onnx` model
    (compiled with the `executorch` profile), or a `.xnn` blob (bytes or path; the profile's checks and
    rewrites applied to it). The payload goes in a segment after the program, or inside it with `inline`."""
    from ..compiler import apply_profile
    from ..compiler import compile as compile_model
    from ..filekind import sniff, sniff_bytes
    from ..xnn.writer import serialize

    blob: bytes | None = None
    if isinstance(model, (bytes, bytearray, memoryview)):
        if sniff_bytes(bytes(model[:256])) != "xnn":
            raise FormatError("to_pte() takes a Graph, a model path or the bytes of a .xnn blob")
        blob = bytes(model)
    elif isinstance(model, (str, os.PathLike)) and sniff(model) == "xnn":
        with open(model, "rb") as f:
            blob = f.read()
    if blob is None:
        return build_pte(compile_model(model, weights, profile="executorch"), inline=inline)
    return build_pte(serialize(apply_profile(read(blob), "executorch")), inline=inline)


__all__ = ["BACKEND_ID", "SCALAR_TYPES", "build_pte", "externals", "pytree_spec", "to_pte"]
