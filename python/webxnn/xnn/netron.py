"""A compiled blob as a Netron model: the "netron:" JSON message that Netron's own Python API serves for
models it is handed as objects (Netron 9.x, `message.js`).

Netron opens XNNPACK payloads only inside an ExecuTorch `.pte`, with nameless nodes and numbered values, and
refuses the rest of what a webxnn blob holds (the `XN00` identifier where 9.x expects `XN01`, node types and
datatypes from 128 up). This message is built from webxnn's own reader instead, so every node shows: its
type (webxnn's `WX*` nodes included), the WebNN / ONNX node it came from as its name, its fields as attributes
(enums by name), quantization parameters in the value types, the weights as initializers, dynamic dims by
name, and the header and metadata table as the model's properties.
"""

from __future__ import annotations

from typing import Any

from .describe import _node_params, _num, _quant_summary, _quant_text, dtype_name
from .ir import Value, XnnGraph

# Netron colours nodes by category; its ONNX metadata uses these names
_CATEGORIES = (
    ("Conv", "Layer"),
    ("FullyConnected", "Layer"),
    ("BatchMatrixMultiply", "Layer"),
    ("Pooling", "Pool"),
    ("Concatenate", "Tensor"),
    ("Transpose", "Transform"),
    ("Reshape", "Shape"),
    ("Slice", "Tensor"),
    ("Copy", "Tensor"),
    ("Gather", "Transform"),
    ("Softmax", "Activation"),
    ("Clamp", "Activation"),
    ("Sigmoid", "Activation"),
    ("Tanh", "Activation"),
    ("Hardswish", "Activation"),
    ("Gelu", "Activation"),
    ("ELU", "Activation"),
    ("LeakyReLU", "Activation"),
    ("PReLU", "Activation"),
    ("Normalization", "Normalization"),
    ("Quantize", "Quantization"),
    ("Convert", "Quantization"),
)


def _category(kind: str) -> str | None:
    return next((c for key, c in _CATEGORIES if key in kind), None)


def _value_type(g: XnnGraph, v: Value) -> dict[str, Any]:
    dims: list[Any] = list(v.dims)
    if g.metadata is not None:
        for d in g.metadata.dyn_dims:
            if d.input == v.external_id and v.flags == 1 and d.axis < len(dims):
                dims[d.axis] = f"{d.name or '?'}<={d.max_size}"
    dt = dtype_name(v.datatype)
    quant = _quant_text(_quant_summary(v.quant))
    return {"dataType": f"{dt} ({quant})" if quant else dt, "shape": {"dimensions": dims}}


def _attr(name: str, value: Any) -> dict[str, Any]:
    # JSON has no inf / nan: _num spells them as strings
    if isinstance(value, (list, tuple)):
        return {"name": name, "value": [_num(x) for x in value]}
    return {"name": name, "value": _num(value) if isinstance(value, (int, float, str)) else str(value)}


def netron_message(g: XnnGraph, title: str, blob_size: int | None = None) -> dict[str, Any]:
    """The Netron message for `g`; `title` names the model (the source file), `blob_size` its bytes."""
    md = g.metadata
    index = {v.id: k for k, v in enumerate(g.values)}
    in_names = md.input_names if md else []
    out_names = md.output_names if md else []
    sources = md.node_sources if md else []

    def value_name(v: Value) -> str:
        if v.flags == 1 and v.id in g.input_ids:
            k = g.input_ids.index(v.id)
            return in_names[k] if k < len(in_names) else f"input{k}"
        if v.flags == 2 and v.id in g.output_ids:
            k = g.output_ids.index(v.id)
            return out_names[k] if k < len(out_names) else f"output{k}"
        return f"%{v.id}"

    values = []
    for v in g.values:
        entry: dict[str, Any] = {"name": value_name(v), "type": _value_type(g, v)}
        if v.constant_buffer_idx:
            entry["initializer"] = {"type": entry["type"]}
        values.append(entry)

    def refs(ids: list[int]) -> list[int]:
        return [index[i] for i in ids if i in index]

    nodes = []
    for k, n in enumerate(g.nodes):
        ins = [
            {"name": f[: -len("_id")], "value": refs([i])}
            for f, i in n.fields.items()
            if f.endswith("_id") and not f.startswith("output") and i in n.input_ids()
        ]
        outs = [
            {"name": f[: -len("_id")], "value": refs([i])}
            for f, i in n.fields.items()
            if f.startswith("output") and f.endswith("_id")
        ]
        attrs = [_attr(name, val) for name, val in _node_params(n).items()]
        if n.output_min_max is not None:
            attrs.append(_attr("output_min_max", list(n.output_min_max)))
        if n.debug_handle:
            attrs.append(_attr("debug_handle", n.debug_handle))
        node_type: dict[str, Any] = {"name": n.kind}
        if _category(n.kind):
            node_type["category"] = _category(n.kind)
        nodes.append(
            {
                "type": node_type,
                "name": sources[k] if k < len(sources) and sources[k] else f"node {k}",
                "inputs": ins,
                "outputs": outs,
                "attributes": attrs,
            }
        )

    metadata = [{"name": "source", "value": title}]
    if md is not None and md.producer:
        metadata.append({"name": "producer", "value": md.producer})
    if g.header is not None:
        h = g.header
        metadata.append(
            {
                "name": "header",
                "value": f"XH00: flatbuffer {h.flatbuffer_size} B at {h.flatbuffer_offset}, "
                f"constants {h.constant_data_size} B at {h.constant_data_offset}",
            }
        )
    if blob_size is not None:
        metadata.append({"name": "blob bytes", "value": str(blob_size)})
    if md is not None and md.dyn_dims:
        dyn = ", ".join(f"{d.name or '?'}<={d.max_size} (input {d.input} axis {d.axis})" for d in md.dyn_dims)
        metadata.append({"name": "dynamic dims", "value": dyn})
    own = sorted({n.kind for n in g.nodes if n.kind.startswith("WX")})
    if own:
        metadata.append({"name": "webxnn node types", "value": ", ".join(own)})
    return {
        "signature": "netron:webxnn",
        "format": "webxnn XNNGraph",
        "producer": md.producer if md is not None else "",
        "metadata": metadata,
        "graphs": [
            {
                "name": title,
                "inputs": [{"name": values[index[i]]["name"], "value": refs([i])} for i in g.input_ids],
                "outputs": [{"name": values[index[i]]["name"], "value": refs([i])} for i in g.output_ids],
                "nodes": nodes,
                "values": values,
            }
        ],
    }


__all__ = ["netron_message"]
