"""Graph -> canonical `.webnn` text that re-parses to the same Graph.

Layout: one block of each kind (inputs, consts, nodes, outputs; empty ones left out), two-space indent,
one declaration or statement per line. Numbers are printed so they re-parse to the same value (ints as
ints, floats with repr, which always has a '.' or an exponent). Names that the grammar cannot express as
declarations (JSON allows any string, e.g. `onnx::MatMul_0`) and output renaming raise UnsupportedError
suggesting JSON; references that 0.3 would misread (names starting with true/false/null) are written as
string literals, which the grammar accepts for operands.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import UnsupportedError
from ..graph import Const, Dim, DynDim, Graph, Operand
from .structure import DTYPE_TEXT

_IDENT = re.compile(r"[A-Za-z_/$][A-Za-z0-9_./]*\Z")
_QUIRK_PREFIXES = ("true", "false", "null")


def quote(s: str) -> str:
    """A string literal: only `\\` and `"` need escaping in this dialect."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def is_ident(s: str) -> bool:
    return bool(_IDENT.match(s))


def _safe_ref(s: str) -> bool:
    """Can `s` be written as a bare identifier in value position?"""
    return is_ident(s) and not s.startswith(_QUIRK_PREFIXES)


def _name(s: str, what: str) -> str:
    if not isinstance(s, str) or not is_ident(s):
        raise UnsupportedError(
            f"{what} {s!r} is not a .webnn identifier (ASCII letters, digits, '_', '.', '/', and '$' first); "
            "the text format cannot express it: write JSON instead (to_json)"
        )
    return s


def _number(v: int | float, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v):
        raise UnsupportedError(f"{where}: {v!r} cannot be written (numbers must be finite)")
    return repr(float(v))


class _Printer:
    def __init__(self, g: Graph) -> None:
        self.g = g
        self.values = set(g.inputs) | set(g.consts)
        for n in g.nodes:
            self.values.update(n.outputs)

    def value(self, v: Any, where: str) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return _number(v, where)
        if isinstance(v, str):
            # Operand references read best bare (`bias=b`); both forms give the same AST.
            return v if v in self.values and _safe_ref(v) else quote(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.value(x, where) for x in v) + "]"
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                key = k if isinstance(k, str) and is_ident(k) else quote(str(k))
                items.append(f"{key}: {self.value(x, where)}")
            return "{" + ", ".join(items) + "}"
        if hasattr(v, "item") and hasattr(v, "dtype"):
            return self.value(v.item(), where)
        raise UnsupportedError(f"{where}: a {type(v).__name__} value cannot be written to .webnn text")

    def ty(self, o: Operand) -> str:
        if o.dtype not in DTYPE_TEXT:
            raise UnsupportedError(f"'{o.name}': unknown dtype {o.dtype!r}")
        return f"{DTYPE_TEXT[o.dtype]}[{', '.join(_dim(d) for d in o.shape)}]"

    def const(self, c: Const) -> str:
        init = c.init
        if init.kind == "weights":
            annot = f"@weights({quote(init.ref if init.ref is not None else c.name)})"
        elif init.kind == "scalar":
            annot = f"@scalar({_number(init.value, f'const {c.name!r}')})"  # type: ignore[arg-type]
        elif init.kind == "bytes":
            annot = "@bytes([" + ", ".join(str(b) for b in (init.data or b"")) + "])"
        else:
            raise UnsupportedError(f"const '{c.name}': unknown init kind {init.kind!r}")
        return f"    {_name(c.name, 'const name')}: {self.ty(c)} {annot};"

    def text(self) -> str:
        g = self.g
        quantized = " @quantized" if g.quantized else ""
        out = [f"webnn_graph {quote(g.name or '')} v{int(g.version)}{quantized} {{"]
        if g.inputs:
            out.append("  inputs {")
            out.extend(f"    {_name(o.name, 'input name')}: {self.ty(o)};" for o in g.inputs.values())
            out.append("  }")
        if g.consts:
            out.append("  consts {")
            out.extend(self.const(c) for c in g.consts.values())
            out.append("  }")
        if g.nodes:
            out.append("  nodes {")
            for n in g.nodes:
                where = f"node '{n.id}'"
                if not isinstance(n.op, str) or not is_ident(n.op):
                    raise UnsupportedError(
                        f"{where}: op {n.op!r} is not a .webnn identifier; write JSON instead"
                    )
                outs = [_name(o, "value name") for o in n.outputs]
                if len(outs) == 1 and outs[0] == n.id and not n.multi_assign:
                    target = outs[0]
                else:
                    target = "[" + ", ".join(outs) + "]"
                args = [x if _safe_ref(x) else quote(x) for x in n.inputs]
                for k, v in n.options.items():
                    args.append(f"{_name(k, 'option key')}={self.value(v, where)}")
                out.append(f"    {target} = {n.op}({', '.join(args)});")
            out.append("  }")
        names = []
        for name, ref in g.outputs.items():
            if name != ref:
                raise UnsupportedError(
                    f"output {name!r} refers to {ref!r}: .webnn text cannot rename outputs (each output "
                    "names its value); write JSON instead (to_json), or rename the value"
                )
            names.append(_name(name, "output name") + ";")
        out.append("  outputs { " + " ".join(names) + " }")
        out.append("}")
        return "\n".join(out) + "\n"


def _dim(d: Dim) -> str:
    if isinstance(d, DynDim):
        return f"dyn({quote(d.name)}, {int(d.max_size)})"
    return str(int(d))


def to_text(g: Graph) -> str:
    """Canonical `.webnn` text for `g`."""
    return _Printer(g).text()
