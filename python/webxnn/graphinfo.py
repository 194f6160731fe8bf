"""`webxnn inspect m.webnn`: a graph's typed values, op counts, parameters, MACs and bytes."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from .graph import DTYPES, DynDim, Graph


def _typed(dtype: str, shape) -> dict:
    """A value's JSON entry: `shape` a list of ints (a dynamic dim gives its upper bound), and `dynamic` (one
    entry per dim: None, or the dynamic dim's name) only when some dim is dynamic."""
    out: dict = {"dtype": dtype, "shape": [d.max_size if isinstance(d, DynDim) else int(d) for d in shape]}
    if any(isinstance(d, DynDim) for d in shape):
        out["dynamic"] = [d.name if isinstance(d, DynDim) else None for d in shape]
    return out


def _numel(shape) -> int:
    return int(np.prod([d.max_size if isinstance(d, DynDim) else d for d in shape], dtype=np.int64))


def _macs(op: str, in_types: list, out_types: list, options: dict) -> int:
    """Multiply-accumulates of the ops that dominate compute; 0 for the rest."""
    if not out_types:
        return 0
    out = _numel(out_types[0].shape)
    if op == "conv2d" and len(in_types) >= 2:
        filt = in_types[1].shape  # any layout: O*I/g*kh*kw / O = I/g*kh*kw per output element
        o_axis = {"oihw": 0, "ohwi": 0, "hwio": 3, "ihwo": 3}[options.get("filterLayout", "oihw")]
        per_out = _numel(filt) // max(1, filt[o_axis])
        return out * per_out
    if op == "convTranspose2d" and len(in_types) >= 2:
        return _numel(in_types[0].shape) * _numel(in_types[1].shape) // max(1, in_types[0].shape[1])
    if op in ("matmul", "gemm") and len(in_types) >= 2:
        a = in_types[0].shape
        k = a[-2] if op == "gemm" and options.get("aTranspose") else a[-1]
        return out * k
    return 0


def summarize_graph(graph: Graph) -> dict:
    from .ops import bind_all, infer

    types = infer(graph)
    bound = bind_all(graph)
    op_counts = Counter(b.op for b in bound)
    macs = 0
    for b in bound:
        names = [v for v in b.operands.values() if isinstance(v, str)]
        macs += _macs(b.op, [types[n] for n in names], [t for _, t in b.outputs], b.options)
    params = sum(_numel(c.shape) for c in graph.consts.values())
    const_bytes = sum(_numel(c.shape) * DTYPES[c.dtype].itemsize for c in graph.consts.values())
    summary = {
        "name": graph.name,
        # keyed by the names a compiled Program takes; "id": the graph's identifier when it differs (ONNX)
        "inputs": {
            graph.io_names.get(n, n): {**_typed(o.dtype, o.shape), **_ident(graph, n)}
            for n, o in graph.inputs.items()
        },
        "outputs": {
            graph.io_names.get(n, n): {
                "ref": ref,
                **_typed(types[ref].dtype, types[ref].shape),
                **_ident(graph, n),
            }
            for n, ref in graph.outputs.items()
        },
        "nodes": len(graph.nodes),
        "op_counts": dict(sorted(op_counts.items())),
        "parameters": params,
        "constant_bytes": const_bytes,
        "macs": macs,
        "values": {n: _typed(t.dtype, t.shape) for n, t in types.items()},
    }
    if op_counts.get("quantizeLinear") or op_counts.get("dequantizeLinear"):
        summary["precision"] = _precision(graph, bound)
    return summary


def _ident(graph: Graph, n: str) -> dict[str, str]:
    return {"id": n} if n in graph.io_names else {}


def _precision(graph: Graph, bound: list) -> dict[str, dict[str, int]] | None:
    """A quantized graph's XNN nodes by precision and WebNN op, as compiling makes them (None when the graph
    does not lower, e.g. its weights are missing)."""
    from .errors import WebxnnError
    from .lower import lower_to_lgraph
    from .lower.qdq.report import precision_by_op

    try:
        return precision_by_op(lower_to_lgraph(graph, bound))
    except WebxnnError:
        return None


def _typed_str(v: dict) -> str:
    dyn = v.get("dynamic") or [None] * len(v["shape"])
    return v["dtype"] + "[" + ", ".join(f"{d}<={n}" if d else str(n) for n, d in zip(v["shape"], dyn)) + "]"


def _shown(name: str, v: dict) -> str:
    return f"{name!r} (in the graph: {v['id']})" if "id" in v else name


def describe_graph(graph: Graph, as_json: bool = False) -> str:
    s = summarize_graph(graph)
    if as_json:
        return json.dumps(s, indent=1)
    lines = [
        f"graph {s['name']!r}: {s['nodes']} nodes, {s['parameters']:,} parameters "
        f"({s['constant_bytes']:,} bytes), {s['macs']:,} MACs"
    ]
    lines.append("inputs:")
    lines += [f"  {_shown(n, v)}: {_typed_str(v)}" for n, v in s["inputs"].items()]
    lines.append("outputs:")
    lines += [f"  {_shown(n, v)} = {v['ref']}: {_typed_str(v)}" for n, v in s["outputs"].items()]
    lines.append("ops: " + ", ".join(f"{op} x{n}" for op, n in s["op_counts"].items()))
    if s.get("precision"):
        lines.append("compiled precision (XNN nodes by WebNN op):")
        lines += [
            f"  {kind}: " + ", ".join(f"{op} x{n}" for op, n in ops.items())
            for kind, ops in s["precision"].items()
        ]
    lines.append("values:")
    lines += [f"  {n}: {_typed_str(v)}" for n, v in s["values"].items()]
    return "\n".join(lines)
