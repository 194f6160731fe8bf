"""Pass 8, emit: the lowered LGraph → an `xnn.ir.XnnGraph`.

Value ids: graph inputs first (declaration order), then every other value in order of first use. External
ids: inputs 0..n_in-1, then outputs in the graph's output order. Constant data is referenced (numpy arrays,
made contiguous little-endian only when they are not already). Names, producer and per-node provenance go
in the metadata table.
"""

from __future__ import annotations

from .. import __version__
from ..errors import UnsupportedError
from ..graph import DynDim
from ..xnn.ir import (
    FLAG_EXTERNAL_INPUT,
    FLAG_EXTERNAL_OUTPUT,
    INVALID_ID,
    NUMPY_DTYPE,
    Datatype,
    DynDimRef,
    Metadata,
    Node,
    PerChannelQuant,
    PerTensorQuant,
    PerTokenDynamicQuant,
    Value,
    XnnGraph,
)
from .ir import LGraph, LNode, LValue
from .widen import store_half

DATATYPES: dict[str, Datatype] = {
    "float32": Datatype.FP32,
    "float16": Datatype.FP16,
    "int32": Datatype.INT32,
    "int8": Datatype.WX_INT8,
    "uint8": Datatype.WX_UINT8,
    "uint32": Datatype.WX_UINT32,
    "int64": Datatype.WX_INT64,
    "uint64": Datatype.WX_UINT64,
}


def _dims(shape: tuple) -> list[int]:
    # dynamic dims are written at their maximum; the runtime takes actual sizes from the inputs
    return [d.max_size if isinstance(d, DynDim) else int(d) for d in shape]


def _datatype(dtype: str, where: str) -> Datatype:
    dt = DATATYPES.get(dtype)
    if dt is None:
        raise UnsupportedError(f"{where}: data type {dtype} has no XNN datatype")
    return dt


# the quantized datatype of a value by (its WebNN dtype, the type of its `quant`)
QUANT_DATATYPES: dict[tuple[str, type], Datatype] = {
    ("int8", PerTokenDynamicQuant): Datatype.QDINT8,
    ("int8", PerChannelQuant): Datatype.QCINT8,
    ("int8", PerTensorQuant): Datatype.QINT8,
    ("int32", PerChannelQuant): Datatype.QCINT32,
    ("int32", PerTensorQuant): Datatype.QINT32,
}


def _value_datatype(v: LValue) -> Datatype:
    if v.quant is None:
        return _datatype(v.dtype, f"value {v.name!r}")
    dt = QUANT_DATATYPES.get((v.dtype, type(v.quant)))
    if dt is None:
        raise UnsupportedError(
            f"value {v.name!r}: {v.dtype} with {type(v.quant).__name__} has no XNN datatype"
        )
    return dt


def _separate_outputs(lg: LGraph) -> None:
    """Every graph output must be a distinct value written by a node: copy inputs, constants and values
    named by more than one output."""
    produced = {o for n in lg.nodes for o in n.outputs}
    seen: set[str] = set()
    new_outputs = []
    for oname, vname in lg.outputs:
        if vname not in produced or vname in seen or vname in lg.inputs:
            v = lg.values[vname]
            copy = lg.add_value(f"{oname}.copy", v.dtype, v.shape, layout=v.layout)
            lg.nodes.append(LNode("XNNCopy", {"input_id": vname}, [copy], {}, f"{oname}:output"))
            vname = copy
        seen.add(vname)
        new_outputs.append((oname, vname))
    lg.outputs = new_outputs


def emit(lg: LGraph) -> XnnGraph:
    store_half(lg)
    _separate_outputs(lg)
    g = XnnGraph(version="0")
    ids: dict[str, int] = {}
    n_in = len(lg.inputs)
    out_index = {v: k for k, (_, v) in enumerate(lg.outputs)}

    def value_id(name: str) -> int:
        if name in ids:
            return ids[name]
        v = lg.values[name]
        vid = len(g.values)
        dt = _value_datatype(v)
        val = Value(id=vid, datatype=dt, dims=_dims(v.shape), quant=v.quant)
        if v.const is not None:
            data = v.const
            want = NUMPY_DTYPE[dt]
            if data.dtype != want:
                data = data.astype(want)
            val.constant_buffer_idx = g.add_constant(data)
        if name in lg.inputs:
            val.external_id = lg.inputs.index(name)
            val.flags |= FLAG_EXTERNAL_INPUT
        if name in out_index:
            val.external_id = n_in + out_index[name]
            val.flags |= FLAG_EXTERNAL_OUTPUT
        g.values.append(val)
        ids[name] = vid
        return vid

    for name in lg.inputs:
        value_id(name)
    sources: list[str] = []
    for node in lg.nodes:
        fields: dict = {}
        for key, ref in node.operands.items():
            fields[key] = INVALID_ID if ref is None else value_id(ref)
        out_fields = node.attrs.get("output_fields", ["output_id"])
        for key, ref in zip(out_fields, node.outputs):
            fields[key] = value_id(ref)
        for key, val in node.attrs.items():
            if key != "output_fields":
                fields[key] = val
        fields.setdefault("flags", 0)
        g.nodes.append(Node(node.kind, fields, node.output_min_max))
        sources.append(node.src)
    g.num_externs = n_in + len(lg.outputs)
    g.input_ids = [ids[n] for n in lg.inputs]
    g.output_ids = [ids[v] for _, v in lg.outputs]
    dyn_dims = [
        DynDimRef(input=k, axis=axis, name=d.name, max_size=d.max_size)
        for k, name in enumerate(lg.inputs)
        for axis, d in enumerate(lg.values[name].shape)
        if isinstance(d, DynDim)
    ]
    g.metadata = Metadata(
        producer=f"webxnn {__version__}",
        input_names=list(lg.inputs),
        output_names=[o for o, _ in lg.outputs],
        node_sources=sources,
        dyn_dims=dyn_dims,
    )
    return g
