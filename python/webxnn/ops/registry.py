"""The op registry: `REGISTRY`, `get(op)`, `register(spec)` and `bind(node, types, graph)`.

`bind` is the one place where a parsed `graph.Node` meets op semantics. It resolves positional and
option-given operands into roles, rewrites converter forms (via the op's `normalize`), checks and coerces
option values, fills defaults and runs the op's `infer`, which may also fill input-dependent defaults
(global pool windows, default axes) and normalize negative axes. Every error names the node and the op.
"""

from __future__ import annotations

import difflib
import math
from typing import Any, NoReturn

from ..dtypes import FLOAT_MAX, I64_MIN
from ..errors import ValidationError, WebxnnError
from ..graph import DTYPES, DynDim, Node
from .base import ANNOTATION_KEYS, REQUIRED, BoundNode, OpSpec, TensorType

REGISTRY: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    """Add `spec` under its name and aliases (a name may be registered once)."""
    for name in [spec.name, *spec.aliases]:
        if name in REGISTRY:
            raise RuntimeError(f"op {name!r} registered twice")
        REGISTRY[name] = spec
    return spec


def get(op: str) -> OpSpec:
    """The spec of `op`; ValidationError naming the op and the closest known names when unknown."""
    if not isinstance(op, str):
        raise ValidationError(f"op name must be a string, got {op!r}")
    spec = REGISTRY.get(op)
    if spec is None:
        close = difflib.get_close_matches(op, list(REGISTRY), n=3, cutoff=0.6)
        if not close:  # case slips such as "MatMul" are common in hand-written graphs
            close = [k for k in REGISTRY if k.lower() == str(op).lower()]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValidationError(f"unknown op {op!r}{hint}")
    return spec


class Ctx:
    """Where an error happens: node id, op and source location, prefixed to every message."""

    def __init__(self, node: Node, op: str, source: str | None = None) -> None:
        self.node = node
        self.op = op
        self.source = source
        self.extra: dict[str, Any] = {}  # scratch space from an op's normalize() to its infer()

    @property
    def where(self) -> str:
        loc = ""
        if self.node.loc is not None:
            loc = f"{self.source or '<text>'}:{self.node.loc[0]}:{self.node.loc[1]}: "
        return f"{loc}node {self.node.id!r} ({self.op})"

    def fail(self, msg: str) -> NoReturn:
        raise ValidationError(f"{self.where}: {msg}")


# ---------------------------------------------------------------------------------------------- options


def _is_int(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v) and v.is_integer()


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def normalize_dtype(v: Any) -> str | None:
    """A WebNN dtype name from the spellings converters use ("float32", "Float32", "FLOAT32", "f32")."""
    if not isinstance(v, str):
        return None
    s = v.strip().lower()
    short = {
        "f32": "float32",
        "f16": "float16",
        "i8": "int8",
        "u8": "uint8",
        "i32": "int32",
        "u32": "uint32",
        "i64": "int64",
        "u64": "uint64",
        "i4": "int4",
        "u4": "uint4",
        "float": "float32",
        "half": "float16",
        "bool": "uint8",
    }
    s = short.get(s, s)
    return s if s in DTYPES else None


def _float32_range(ctx: Ctx, key: str, v: float) -> float:
    """`v` when a blob's float32 field can hold it (infinities and NaN included); a finite value beyond the
    float32 range would only fail in the blob writer, without saying which op and option."""
    if math.isfinite(v) and abs(v) > FLOAT_MAX["float32"]:
        ctx.fail(f"option {key!r} = {v!r} is outside the float32 range (±{FLOAT_MAX['float32']:g})")
    return v


def coerce_option(ctx: Ctx, key: str, kind: Any, v: Any) -> Any:
    """Check option `key` against its kind and return it in canonical Python form (lists, ints, floats)."""

    def bad(expected: str) -> NoReturn:
        ctx.fail(f"option {key!r} must be {expected}, got {v!r}")

    if kind == "any":
        return v
    if kind == "int":
        if not _is_int(v):
            bad("an integer")
        return int(v)
    if kind == "float":
        if not _is_num(v):
            bad("a number")
        return _float32_range(ctx, key, float(v))
    if kind == "number":  # keeps integers exact (clamp bounds on int64 tensors)
        if not _is_num(v):
            bad("a number")
        if isinstance(v, float):
            _float32_range(ctx, key, v)
        elif not I64_MIN <= int(v) < 1 << 64:
            ctx.fail(f"option {key!r} = {v} is outside the 64-bit integer range")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            bad("true or false")
        return v
    if kind in ("ints", "shape"):
        if not isinstance(v, (list, tuple)):
            bad("a list of integers")
        out = []
        for x in v:
            if kind == "shape" and x is None:  # an earlier spec's `null` newShape entry = inferred dim
                out.append(-1)
            elif kind == "shape" and isinstance(x, DynDim):  # a bound shape fed back in (re-binding)
                out.append(x)
            elif _is_int(x):
                out.append(int(x))
            else:
                bad("a list of integers")
        return out
    if kind == "floats":
        if not isinstance(v, (list, tuple)) or not all(_is_num(x) for x in v):
            bad("a list of numbers")
        return [_float32_range(ctx, key, float(x)) for x in v]
    if kind == "int|ints":
        if _is_int(v):
            return int(v)
        return coerce_option(ctx, key, "ints", v)
    if kind == "str":
        if not isinstance(v, str):
            bad("a string")
        return v
    if kind == "dtype":
        d = normalize_dtype(v)
        if d is None:
            bad("a data type (" + ", ".join(DTYPES) + ")")
        return d
    if isinstance(kind, tuple):  # enum; matched case-insensitively, stored in the spec's spelling
        if isinstance(v, str):
            spelled = v.lower().replace("_", "-")  # "SAME_UPPER" from ONNX-minded writers
            for choice in kind:
                if spelled == choice.lower():
                    return choice
        bad("one of " + ", ".join(repr(c) for c in kind))
    if isinstance(kind, list) and len(kind) == 1 and isinstance(kind[0], tuple):  # list of enums
        if not isinstance(v, (list, tuple)):
            bad("a list of " + "/".join(kind[0]))
        return [coerce_option(ctx, key, kind[0], x) for x in v]
    raise AssertionError(f"bad option kind {kind!r} for {key}")


# ---------------------------------------------------------------------------------------------- bind


def operand_roles(spec: OpSpec) -> list[str]:
    """Roles in positional order: required inputs, positional-only optional inputs, operand options."""
    return [*spec.inputs, *spec.optional_inputs, *spec.operand_options]


def accepted_keys(spec: OpSpec) -> list[str]:
    return sorted({*spec.options, *spec.operand_options, *spec.accepts, *ANNOTATION_KEYS})


def bind(node: Node, types: dict[str, TensorType], graph: Any = None) -> BoundNode:
    """Resolve `node` into a BoundNode (see module doc). `types` holds every value defined so far."""
    spec = get(node.op)
    ctx = Ctx(node, node.op, getattr(graph, "source", None))
    try:
        return _bind(spec, ctx, node, types)
    except WebxnnError as e:
        if ctx.where in str(e):
            raise
        # helpers in shapes.py raise without a place; add it here
        raise type(e)(f"{ctx.where}: {e}") from None


def _bind(spec: OpSpec, ctx: Ctx, node: Node, types: dict[str, TensorType]) -> BoundNode:
    opts = {k: v for k, v in node.options.items() if k not in ANNOTATION_KEYS}
    operands: dict[str, Any] = {}

    def check_ref(name: Any, role: str) -> str:
        if not isinstance(name, str):
            ctx.fail(f"operand {role!r} must name a value, got {name!r}")
        if name not in types:
            ctx.fail(f"operand {role!r} refers to {name!r}, which is not defined before this node")
        return name

    if spec.variadic:
        role = spec.inputs[0]
        if not node.inputs:
            ctx.fail(f"needs at least one input for {role!r}")
        operands[role] = [check_ref(n, role) for n in node.inputs]
    else:
        roles = operand_roles(spec)
        if len(node.inputs) < len(spec.inputs):
            missing = spec.inputs[len(node.inputs) :]
            ctx.fail(
                f"expects {len(spec.inputs)} operand(s) ({', '.join(spec.inputs)}), got "
                f"{len(node.inputs)}; missing {', '.join(missing)}"
            )
        if len(node.inputs) > len(roles):
            ctx.fail(f"expects at most {len(roles)} operand(s) ({', '.join(roles)}), got {len(node.inputs)}")
        for role, name in zip(roles, node.inputs):
            operands[role] = check_ref(name, role)
        for role in roles[len(node.inputs) :]:
            operands[role] = None
        for role in spec.operand_options:
            if role in opts:
                v = opts.pop(role)
                if operands[role] is not None:
                    ctx.fail(
                        f"operand {role!r} given both positionally ({operands[role]!r}) and as "
                        f"option {role}={v!r}"
                    )
                operands[role] = None if v is None else check_ref(v, role)

    unknown = [k for k in opts if k not in spec.options and k not in spec.accepts]
    if unknown:
        ctx.fail(f"unknown option {unknown[0]!r}; accepted: {', '.join(accepted_keys(spec))}")

    def type_of(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, list):
            return [types[x] for x in v]
        return types[v]

    ttypes = {role: type_of(v) for role, v in operands.items()}

    if spec.normalize is not None:
        opts = spec.normalize(ctx, ttypes, opts)
    full: dict[str, Any] = {}
    for key, default in spec.options.items():
        if key in opts and opts[key] is not None:
            kind = spec.option_types.get(key, "any")
            full[key] = coerce_option(ctx, key, kind, opts[key])
        elif default is REQUIRED:
            ctx.fail(f"missing required option {key!r}")
        else:
            full[key] = list(default) if isinstance(default, list) else default

    assert spec.infer is not None, spec.name
    out_types = spec.infer(ctx, ttypes, full)
    if len(out_types) != len(node.outputs):
        ctx.fail(
            f"produces {len(out_types)} output(s) but the node names {len(node.outputs)} "
            f"({', '.join(node.outputs)})"
        )
    return BoundNode(
        node=node,
        op=full.pop("__op__", spec.name),
        operands=operands,
        options=full,
        outputs=list(zip(node.outputs, out_types)),
    )
