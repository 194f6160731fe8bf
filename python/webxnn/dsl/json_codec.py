"""GraphJson (`"format": "webnn-graph-json"`, webnn-graph 0.3) <-> Graph.

The writer is canonical and byte-stable: fixed top-level key order, `inputs`/`consts`/`outputs` and every
object inside option values sorted by key (0.3 uses BTreeMaps), node order kept, one input/const/node per
line, ASCII-only output. Parsing the output and writing it again gives the same bytes.
The reader checks the structure and reports problems with a JSON path such as `nodes[3].inputs`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NoReturn

from ..dtypes import DTYPES, I64_MAX, I64_MIN, MAX_DIM
from ..errors import ParseError, ValidationError
from ..graph import Const, ConstInit, Dim, DynDim, Graph, Node, Operand
from .parser import MAX_DEPTH
from .structure import Key, check_graph

FORMAT = "webnn-graph-json"
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# -- writing ---------------------------------------------------------------------------------------------


def _sorted_value(v: Any, path: str) -> Any:
    """Option values with every object's keys sorted, checked to be JSON-representable."""
    if isinstance(v, dict):
        return {str(k): _sorted_value(v[k], f"{path}.{k}") for k in sorted(v, key=str)}
    if isinstance(v, (list, tuple)):
        return [_sorted_value(x, f"{path}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, float) and not math.isfinite(v):
        raise ValidationError(f"{path}: {v!r} cannot be written to JSON (not finite)")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "item") and hasattr(v, "dtype"):  # numpy scalar given by code that built the graph
        return _sorted_value(v.item(), path)
    raise ValidationError(f"{path}: {type(v).__name__} value {v!r} cannot be written to JSON")


def _dims(shape: list[Dim]) -> list[Any]:
    return [{"name": d.name, "maxSize": d.max_size} if isinstance(d, DynDim) else int(d) for d in shape]


def _init(c: Const) -> dict[str, Any]:
    init = c.init
    if init.kind == "weights":
        return {"kind": "weights", "ref": init.ref if init.ref is not None else c.name}
    if init.kind == "scalar":
        return {"kind": "scalar", "value": _sorted_value(init.value, f"consts.{c.name}.init.value")}
    if init.kind == "bytes":
        return {"kind": "inlineBytes", "bytes": list(init.data or b"")}
    raise ValidationError(f"const '{c.name}': unknown init kind {init.kind!r}")


def graph_to_dict(g: Graph) -> dict[str, Any]:
    """The GraphJson document as plain Python data (canonical key order)."""
    nodes = []
    for i, n in enumerate(g.nodes):
        single = len(n.outputs) == 1 and n.outputs[0] == n.id and not n.multi_assign
        nodes.append(
            {
                "id": n.id,
                "op": n.op,
                "inputs": list(n.inputs),
                "options": _sorted_value(dict(n.options), f"nodes[{i}].options"),
                "outputs": None if single else list(n.outputs),
            }
        )
    return {
        "format": FORMAT,
        "version": g.version,
        "name": g.name,
        "quantized": bool(g.quantized),
        "inputs": {k: {"dataType": v.dtype, "shape": _dims(v.shape)} for k, v in sorted(g.inputs.items())},
        "consts": {
            k: {"dataType": c.dtype, "shape": _dims(c.shape), "init": _init(c)}
            for k, c in sorted(g.consts.items())
        },
        "nodes": nodes,
        "outputs": dict(sorted(g.outputs.items())),
    }


def _dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))


def to_json(g: Graph) -> str:
    """Canonical GraphJson text (ends with a newline)."""
    doc = graph_to_dict(g)
    lines = ["{"]
    for key in ("format", "version", "name", "quantized"):
        lines.append(f"  {_dump(key)}: {_dump(doc[key])},")
    for key in ("inputs", "consts"):
        lines.append(_block_map(key, doc[key]) + ",")
    if doc["nodes"]:
        lines.append('  "nodes": [')
        lines.append(",\n".join(f"    {_dump(n)}" for n in doc["nodes"]))
        lines.append("  ],")
    else:
        lines.append('  "nodes": [],')
    lines.append(_block_map("outputs", doc["outputs"]))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _block_map(key: str, m: dict[str, Any]) -> str:
    if not m:
        return f"  {_dump(key)}: {{}}"
    body = ",\n".join(f"    {_dump(k)}: {_dump(v)}" for k, v in m.items())
    return f"  {_dump(key)}: {{\n{body}\n  }}"


# -- reading ---------------------------------------------------------------------------------------------


class _JsonValueError(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise _JsonValueError(f"duplicate key {k!r} in a JSON object")
        d[k] = v
    return d


def _int_or_float(text: str) -> int | float:
    v = int(text)
    if I64_MIN <= v <= I64_MAX:
        return v
    f = _float(text)  # as the text parser does: integers that do not fit i64 become floats, if exactly
    if int(f) != v:
        raise _JsonValueError(
            f"integer {text} is outside the 64-bit signed range, where numbers are "
            f"doubles, and has no exact double (the nearest is {int(f)})"
        )
    return f


def _float(text: str) -> float:
    f = float(text)
    if not math.isfinite(f):
        raise _JsonValueError(f"number {text} is out of range (not a finite 64-bit float)")
    return f


def _no_constant(text: str) -> NoReturn:
    raise _JsonValueError(f"{text} is not valid JSON (numbers must be finite)")


def _path(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if _SIMPLE_KEY.match(key) else f"{prefix}[{json.dumps(key)}]"


class _Reader:
    def __init__(self, file: str | None) -> None:
        self.file = file

    def fail(self, path: str, message: str) -> NoReturn:
        raise ParseError(f"{path}: {message}" if path else message, file=self.file)

    def obj(self, v: Any, path: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            self.fail(path, f"expected an object, got {_kind(v)}")
        return v

    def field(self, d: dict[str, Any], key: str, path: str, default: Any = ...) -> Any:
        if key not in d:
            if default is ...:
                self.fail(path, f"missing required field {key!r}")
            return default
        return d[key]

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str):
            self.fail(path, f"expected a string, got {_kind(v)}")
        return v

    def uint(self, v: Any, path: str, limit: int) -> int:
        if type(v) is not int or v < 0:
            self.fail(path, f"expected a non-negative integer, got {_kind(v)} {_short(v)}")
        if v > limit:
            self.fail(path, f"{v} is too large (at most {limit})")
        return v

    def dtype(self, v: Any, path: str) -> str:
        s = self.string(v, path)
        if s not in DTYPES:
            self.fail(path, f"unknown dataType {s!r}; expected one of {', '.join(DTYPES)}")
        return s

    def shape(self, v: Any, path: str, allow_dyn: bool) -> list[Dim]:
        if not isinstance(v, list):
            self.fail(path, f"expected a list of dimensions, got {_kind(v)}")
        dims: list[Dim] = []
        for i, d in enumerate(v):
            p = f"{path}[{i}]"
            if isinstance(d, dict):
                if not allow_dyn:
                    self.fail(p, "constant shapes must be static (dynamic dimensions only in inputs)")
                name = self.string(self.field(d, "name", p), f"{p}.name")
                size = self.uint(self.field(d, "maxSize", p), f"{p}.maxSize", MAX_DIM)
                if size < 1:
                    self.fail(f"{p}.maxSize", "a dynamic dimension's maxSize must be at least 1")
                dims.append(DynDim(name, size))
            else:
                dims.append(self.uint(d, p, MAX_DIM))
        return dims

    def const_init(self, v: Any, path: str) -> ConstInit:
        d = self.obj(v, path)
        kind = self.field(d, "kind", path)
        if kind == "weights":
            return ConstInit("weights", ref=self.string(self.field(d, "ref", path), f"{path}.ref"))
        if kind == "scalar":
            value = self.field(d, "value", path)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.fail(f"{path}.value", f"expected a number, got {_kind(value)}")
            return ConstInit("scalar", value=value)
        if kind == "inlineBytes":
            items = self.field(d, "bytes", path)
            if not isinstance(items, list):
                self.fail(f"{path}.bytes", f"expected a list of byte values, got {_kind(items)}")
            data = bytes(self.uint(b, f"{path}.bytes[{i}]", 255) for i, b in enumerate(items))
            return ConstInit("bytes", data=data)
        self.fail(
            f"{path}.kind", f'unknown init kind {_short(kind)}; expected "weights", "scalar" or "inlineBytes"'
        )

    def node(self, v: Any, path: str) -> Node:
        d = self.obj(v, path)
        nid = self.string(self.field(d, "id", path), f"{path}.id")
        op = self.string(self.field(d, "op", path), f"{path}.op")
        if not op:
            self.fail(
                f"{path}.op",
                "empty op (an alias in webnn-graph 0.3); aliases are not supported, use the identity op",
            )
        raw_inputs = self.field(d, "inputs", path, [])
        if not isinstance(raw_inputs, list):
            self.fail(f"{path}.inputs", f"expected a list of value names, got {_kind(raw_inputs)}")
        inputs = [self.string(x, f"{path}.inputs[{i}]") for i, x in enumerate(raw_inputs)]
        options = self.obj(self.field(d, "options", path, {}), f"{path}.options")
        if _depth(options) > MAX_DEPTH:
            self.fail(f"{path}.options", f"values are nested more than {MAX_DEPTH} levels deep")
        outs = self.field(d, "outputs", path, None)
        if outs is None:
            return Node(nid, op, inputs, dict(options))
        if not isinstance(outs, list) or not outs:
            self.fail(f"{path}.outputs", f"expected null or a non-empty list of names, got {_short(outs)}")
        outputs = [self.string(x, f"{path}.outputs[{i}]") for i, x in enumerate(outs)]
        return Node(nid, op, inputs, dict(options), outputs, multi_assign=True)

    def graph(self, doc: Any) -> Graph:
        d = self.obj(doc, "")
        fmt = self.field(d, "format", "")
        if fmt != FORMAT:
            self.fail("format", f"expected {FORMAT!r}, got {_short(fmt)}")
        version = self.field(d, "version", "")
        if type(version) is not int or version not in (1, 2):
            self.fail("version", f"unsupported version {_short(version)}; expected 1 or 2")
        g = Graph(version=version)
        name = d.get("name")
        g.name = "" if name is None else self.string(name, "name")
        quantized = d.get("quantized", False)
        if not isinstance(quantized, bool):
            self.fail("quantized", f"expected true or false, got {_kind(quantized)}")
        g.quantized = quantized
        for key, v in self.obj(self.field(d, "inputs", ""), "inputs").items():
            p = _path("inputs", key)
            e = self.obj(v, p)
            g.inputs[key] = Operand(
                key,
                self.dtype(self.field(e, "dataType", p), f"{p}.dataType"),
                self.shape(self.field(e, "shape", p), f"{p}.shape", allow_dyn=True),
            )
        for key, v in self.obj(d.get("consts", {}), "consts").items():
            p = _path("consts", key)
            e = self.obj(v, p)
            g.consts[key] = Const(
                key,
                self.dtype(self.field(e, "dataType", p), f"{p}.dataType"),
                self.shape(self.field(e, "shape", p), f"{p}.shape", allow_dyn=False),
                self.const_init(self.field(e, "init", p), f"{p}.init"),
            )
        nodes = self.field(d, "nodes", "")
        if not isinstance(nodes, list):
            self.fail("nodes", f"expected a list, got {_kind(nodes)}")
        g.nodes = [self.node(n, f"nodes[{i}]") for i, n in enumerate(nodes)]
        for key, v in self.obj(self.field(d, "outputs", ""), "outputs").items():
            g.outputs[key] = self.string(v, _path("outputs", key))
        return g


def _depth(v: Any) -> int:
    """Nesting depth of lists/objects, iteratively (the document may be deeper than the Python stack)."""
    deepest = 0
    stack = [(v, 0)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            stack.extend((y, d + 1) for y in x.values())
        elif isinstance(x, list):
            stack.extend((y, d + 1) for y in x)
        else:
            continue
        deepest = max(deepest, d)
    return deepest


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(v), type(v).__name__)


def _short(v: Any) -> str:
    s = json.dumps(v) if isinstance(v, (str, int, float, bool, type(None))) else _kind(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _key_path(g: Graph, key: Key) -> str:
    kind = key[0]
    if kind in ("input", "const", "output"):
        return _path(kind + "s", str(key[1]))
    if kind == "node":
        return f"nodes[{key[1]}]"
    if kind == "node_input":
        return f"nodes[{key[1]}].inputs[{key[2]}]"
    if kind == "node_output":
        n = g.nodes[int(key[1])]
        return f"nodes[{key[1]}].outputs[{key[2]}]" if n.multi_assign else f"nodes[{key[1]}].id"
    if kind == "version":
        return "version"
    return "outputs"


def parse_json(s: str | bytes, file: str | None = None) -> Graph:
    """Parse GraphJson into a Graph. Raises ParseError naming the JSON path of any problem."""
    if isinstance(s, (bytes, bytearray)):
        try:
            s = bytes(s).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ParseError(f"not UTF-8 text (byte {e.start})", file=file) from None
    try:
        doc = json.loads(
            s,
            object_pairs_hook=_pairs,
            parse_int=_int_or_float,
            parse_float=_float,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as e:
        raise ParseError(f"invalid JSON: {e.msg}", file=file, line=e.lineno, col=e.colno) from None
    except _JsonValueError as e:
        raise ParseError(str(e), file=file) from None
    except RecursionError:
        raise ParseError("JSON nested too deeply", file=file) from None
    reader = _Reader(file)
    g = reader.graph(doc)
    g.source = file

    def fail(message: str, key: Key) -> NoReturn:
        reader.fail(_key_path(g, key), message)

    check_graph(g, fail)
    return g
