"""Human-readable and JSON summaries of an XNN IR graph: what `webxnn inspect m.xnn` prints.

`summary_dict` collects everything; `describe` renders the same facts as stable plain text. Both work on any
graph the reader returns, including odd ExecuTorch payloads (dangling ids, named data without bytes), and
never raise on them.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from . import _layout as L
from .ir import (
    INVALID_ID,
    Datatype,
    Node,
    PerChannelGroupQuant,
    PerChannelQuant,
    PerTensorQuant,
    PerTokenDynamicQuant,
    Value,
    XnnGraph,
)

# (height field, width field) pairs shown as one "HxW" parameter, and the label to show
_PAIRS = [
    ("kernel", "kernel_height", "kernel_width"),
    ("pool", "pooling_height", "pooling_width"),
    ("stride", "subsampling_height", "subsampling_width"),
    ("stride", "stride_height", "stride_width"),
    ("dilation", "dilation_height", "dilation_width"),
    ("adjustment", "adjustment_height", "adjustment_width"),
    ("size", "new_height", "new_width"),
]
_PADS = ("padding_top", "padding_right", "padding_bottom", "padding_left")
_HIDDEN = {"num_dims"}  # implied by the vectors
_SHOW_IF_NONZERO = {"flags", "adjustment", "alpha", "beta"}


def dtype_name(dt: Any) -> str:
    try:
        name = Datatype(dt).name.lower()
    except ValueError:
        return f"dtype{dt}"
    return name[3:] if name.startswith("wx_") else name


def _num(x: Any) -> Any:
    """JSON-safe number: ints stay ints, non-finite floats become strings."""
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    return x


def _fmt_num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _nbytes(c: Any) -> int | None:
    if c is None:
        return None
    try:
        return memoryview(c).nbytes
    except TypeError:
        return int(getattr(c, "nbytes", 0))


def _quant_summary(q: Any) -> dict[str, Any] | None:
    if q is None:
        return None
    if isinstance(q, PerTensorQuant):
        return {"kind": "per-tensor", "scale": _num(float(q.scale)), "zero_point": q.zero_point}
    if isinstance(q, PerTokenDynamicQuant):
        return {"kind": "per-token dynamic", "num_nonbatch_dims": q.num_nonbatch_dims}
    d: dict[str, Any] = {
        "kind": "per-channel" if isinstance(q, PerChannelQuant) else "per-channel-group",
        "channel_dim": q.channel_dim,
        "num_scales": len(q.scale),
    }
    if isinstance(q, PerChannelGroupQuant):
        d["group_size"] = q.group_size
    if q.scale_buffer_idx:
        d["scale_buffer_idx"] = q.scale_buffer_idx
        d["num_scales"] = q.num_scales
    elif q.scale:
        finite = [s for s in q.scale if math.isfinite(s)]
        if finite:
            d["scale_min"], d["scale_max"] = float(min(finite)), float(max(finite))
    return d


def _quant_text(d: dict[str, Any] | None) -> str:
    if d is None:
        return ""
    k = d["kind"]
    if k == "per-tensor":
        return f"scale={_fmt_num(d['scale'])} zp={d['zero_point']}"
    if k == "per-token dynamic":
        return f"dynamic per-token, nonbatch_dims={d['num_nonbatch_dims']}"
    s = f"{k} dim={d['channel_dim']}"
    if "group_size" in d:
        s += f" group={d['group_size']}"
    if "scale_buffer_idx" in d:
        s += f", {d['num_scales']} scales in constant {d['scale_buffer_idx']}"
    else:
        s += f", {d['num_scales']} scales"
        if "scale_min" in d:
            s += f" [{d['scale_min']:g}..{d['scale_max']:g}]"
    return s


def precision(n: Node, by_id: dict[int, Value]) -> str:
    """How a node computes (`precision_label`)."""
    outs = [by_id[i] for i in n.output_ids() if i in by_id]
    q_out = any(v.quant is not None for v in outs)
    q_in = any(by_id[i].quant is not None for i in n.input_ids() if i in by_id)
    return precision_label(n.kind, q_in, q_out, outs[0].datatype if outs else None)


def precision_label(kind: str, q_in: bool, q_out: bool, out_datatype: Any) -> str:
    """How a node of `kind` computes: "int8" when it reads (`q_in`) or writes (`q_out`) quantized values
    (static or dynamic int8), "convert" for an XNNConvert between quantized and unquantized values, else
    its output's datatype as `dtype_name` spells it ("fp32", ...; "?" for None). One labelling for
    `describe`, `run --profile` and the lowered graph's `inspect` summary and fp32 warning."""
    if kind == "XNNConvert" and q_in != q_out:
        return "convert"
    if q_in or q_out:
        return "int8"
    return "?" if out_datatype is None else dtype_name(out_datatype)


def node_precisions(g: XnnGraph) -> list[str]:
    """`precision` of every node, in node order."""
    by_id = {v.id: v for v in g.values}
    return [precision(n, by_id) for n in g.nodes]


def _value_kind(g: XnnGraph, v: Value) -> str:
    if v.flags == 1:
        return f"input {v.external_id}"
    if v.flags == 2:
        return f"output {v.external_id}"
    if v.flags:
        return f"flags {v.flags:#x}"
    if v.constant_buffer_idx:
        idx = v.constant_buffer_idx
        size = _nbytes(g.constants[idx]) if idx < len(g.constants) else None
        ref = g.constant_refs[idx] if idx < len(g.constant_refs) else None
        if ref is not None and ref.named_key is not None:
            return f"const#{idx}(named, {ref.size} B{'' if size is not None else ', missing'})"
        return f"const#{idx}({size if size is not None else '?'} B)"
    return "internal"


def _node_params(n: Node) -> dict[str, Any]:
    f = n.fields
    out: dict[str, Any] = {}
    used = set(_HIDDEN)
    if all(k in f for k in _PADS):
        out["pad"] = [f[k] for k in _PADS]
        used.update(_PADS)
    for label, h, w in _PAIRS:
        if h in f and w in f:
            used.update((h, w))
            if label in _SHOW_IF_NONZERO and not (f[h] or f[w]):
                continue
            out[label] = [f[h], f[w]]
    if "group_input_channels" in f and "group_output_channels" in f:
        out["group_channels"] = [f["group_input_channels"], f["group_output_channels"]]
        used.update(("group_input_channels", "group_output_channels"))
    spec = L.node_table(n.kind) if n.kind in L.union_members(L.NODE_UNION) else None
    for k, val in f.items():
        if k in used or k.endswith("_id"):
            continue
        if k in _SHOW_IF_NONZERO and not val:
            continue
        enum = L.field_enum(spec.name, k) if spec is not None else None
        if enum and isinstance(val, int):
            names = {v: n for n, v in L.enum_values(enum).items()}
            val = names.get(val, val)
        out[k] = [_num(x) for x in val] if isinstance(val, list) else _num(val)
    return out


def _params_text(p: dict[str, Any]) -> str:
    parts = []
    for k, v in p.items():
        if k == "pad" and isinstance(v, list):
            parts.append("pad=" + ",".join(map(str, v)) + " (t,r,b,l)")
        elif k in ("kernel", "pool", "stride", "dilation", "adjustment", "size") and isinstance(v, list):
            parts.append(f"{k}={v[0]}x{v[1]}")
        elif k == "group_channels" and isinstance(v, list):
            parts.append(f"group_channels={v[0]}->{v[1]}")
        elif k == "flags":
            parts.append(f"flags={v:#x}")
        elif isinstance(v, list):
            parts.append(f"{k}=[{','.join(_fmt_num(x) for x in v)}]")
        else:
            parts.append(f"{k}={_fmt_num(v)}")
    return " ".join(parts)


def summary_dict(g: XnnGraph, blob_size: int | None = None) -> dict[str, Any]:
    """Everything `describe` prints, as JSON-compatible data."""
    meta = g.metadata
    in_names = list(meta.input_names) if meta else []
    out_names = list(meta.output_names) if meta else []
    by_id = {v.id: v for v in g.values}

    def io(ids: list[int], names: list[str]) -> list[dict[str, Any]]:
        out = []
        for k, vid in enumerate(ids):
            v = by_id.get(vid)
            out.append(
                {
                    "name": names[k] if k < len(names) else None,
                    "value": vid,
                    "external_id": v.external_id if v else None,
                    "dtype": dtype_name(v.datatype) if v else None,
                    "dims": list(v.dims) if v else None,
                }
            )
        return out

    values = [
        {
            "id": v.id,
            "dtype": dtype_name(v.datatype),
            "dims": list(v.dims),
            "kind": _value_kind(g, v),
            "quant": _quant_summary(v.quant),
        }
        for v in g.values
    ]
    nodes = []
    for i, n in enumerate(g.nodes):
        out_ids = n.output_ids()
        in_ids = [vid for vid in n.input_ids() if vid not in out_ids]
        if n.kind.startswith("XNNConcatenate") and n.kind[14:].isdigit():
            in_ids = [n.fields.get(f"input{k}_id", INVALID_ID) for k in range(1, int(n.kind[14:]) + 1)]
        nd: dict[str, Any] = {
            "index": i,
            "kind": n.kind,
            "inputs": in_ids,
            "outputs": out_ids,
            "params": _node_params(n),
            "precision": precision(n, by_id),
        }
        if n.output_min_max is not None:
            nd["clamp"] = [_num(float(n.output_min_max[0])), _num(float(n.output_min_max[1]))]
        if meta and i < len(meta.node_sources):
            nd["source"] = meta.node_sources[i]
        nodes.append(nd)
    sizes = [(i, _nbytes(c)) for i, c in enumerate(g.constants) if i > 0]
    known = [(i, s) for i, s in sizes if s is not None]
    total_const = sum(s for _, s in known)
    largest = max(known, key=lambda t: t[1], default=None)
    h = g.header
    header = (
        None
        if h is None
        else {
            "header_length": h.header_length,
            "flatbuffer_offset": h.flatbuffer_offset,
            "flatbuffer_size": h.flatbuffer_size,
            "constant_data_offset": h.constant_data_offset,
            "constant_data_size": h.constant_data_size,
        }
    )
    totals: dict[str, Any] = {
        "blob_size": blob_size,
        "flatbuffer_size": h.flatbuffer_size if h else None,
        "constants_bytes": total_const,
        "overhead_bytes": blob_size - total_const if blob_size is not None else None,
    }
    return {
        "identifier": g.identifier,
        "version": g.version,
        "producer": meta.producer if meta else None,
        "has_header": g.has_header,
        "header": header,
        "num_externs": g.num_externs,
        "inputs": io(list(g.input_ids), in_names),
        "outputs": io(list(g.output_ids), out_names),
        "values": values,
        "nodes": nodes,
        "constants": {
            "count": len(sizes),
            "total_bytes": total_const,
            "missing": [i for i, s in sizes if s is None],
            "largest": None if largest is None else {"index": largest[0], "bytes": largest[1]},
        },
        "totals": totals,
    }


def _dims(d: list[int] | None) -> str:
    return "?" if d is None else "[" + ",".join(map(str, d)) + "]"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths))).rstrip() for r in rows]


def describe(g: XnnGraph, blob_size: int | None = None) -> str:
    """A plain-text report of a graph (as read from a blob of `blob_size` bytes, if given)."""
    s = summary_dict(g, blob_size)
    lines = []
    lines.append(
        f"identifier   {s['identifier']}   version {s['version']!r}   "
        f"producer {s['producer'] if s['producer'] is not None else '(none)'}"
    )
    h = s["header"]
    if h is not None:
        lines.append(
            f"header       XH00 length {h['header_length']}; flatbuffer {h['flatbuffer_size']} B at "
            f"{h['flatbuffer_offset']}; constants {h['constant_data_size']} B at "
            f"{h['constant_data_offset']}"
        )
    elif not s["has_header"]:
        lines.append("header       none (bare flatbuffer)")
    lines.append(f"externs      {s['num_externs']} (inputs {len(s['inputs'])}, outputs {len(s['outputs'])})")
    for title, key in (("inputs", "inputs"), ("outputs", "outputs")):
        lines.append(f"{title}:")
        rows = [
            [
                f"[{e['external_id']}]",
                e["name"] if e["name"] is not None else "-",
                f"value {e['value']}",
                e["dtype"] or "?",
                _dims(e["dims"]),
            ]
            for e in s[key]
        ]
        lines += _table(rows) or ["  (none)"]
    lines.append(f"values ({len(s['values'])}):")
    rows = [["id", "dtype", "dims", "kind", "quant"]]
    rows += [
        [str(v["id"]), v["dtype"], _dims(v["dims"]), v["kind"], _quant_text(v["quant"])] for v in s["values"]
    ]
    lines += _table(rows)
    lines.append(f"nodes ({len(s['nodes'])}):")
    rows = []
    for n in s["nodes"]:
        ins = ", ".join("-" if i == INVALID_ID else str(i) for i in n["inputs"])
        extra = _params_text(n["params"])
        if "clamp" in n:
            extra += f" clamp=[{_fmt_num(n['clamp'][0])}, {_fmt_num(n['clamp'][1])}]"
        if "source" in n:
            extra += f"  <{n['source']}>"
        outs = ", ".join(map(str, n["outputs"]))
        rows.append([f"#{n['index']}", n["kind"], n["precision"], f"{ins} -> {outs}", extra.strip()])
    lines += _table(rows)
    counts = Counter(n["precision"] for n in s["nodes"])
    if counts.get("int8") or counts.get("convert"):
        lines.append("precision    " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    c = s["constants"]
    line = f"constants    {c['count']} entries, {c['total_bytes']} B"
    if c["largest"] is not None:
        line += f", largest #{c['largest']['index']} ({c['largest']['bytes']} B)"
    if c["missing"]:
        line += f", {len(c['missing'])} named without data"
    lines.append(line)
    t = s["totals"]
    parts = []
    if t["blob_size"] is not None:
        parts.append(f"blob {t['blob_size']} B")
    if t["flatbuffer_size"] is not None:
        parts.append(f"flatbuffer {t['flatbuffer_size']} B")
    parts.append(f"constants {t['constants_bytes']} B")
    if t["overhead_bytes"] is not None:
        parts.append(f"overhead {t['overhead_bytes']} B")
    lines.append("totals       " + ", ".join(parts))
    return "\n".join(lines) + "\n"
