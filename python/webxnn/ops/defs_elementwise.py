"""Element-wise ops: binary arithmetic, comparisons, logical ops, unary math, activations, clamp, cast,
where, prelu, softmax."""

from __future__ import annotations

from typing import Any

from .common import ALL, FLOAT, SIGNED, TT, define, dtype_in, same_dtype
from .registry import Ctx, normalize_dtype
from .shapes import broadcast_shapes, norm_axis

# -------------------------------------------------------------------------------------------- binary

_BINARY = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "div": "a / b",
    "max": "max(a, b)",
    "min": "min(a, b)",
    "pow": "a raised to b",
}
_COMPARE = {
    "equal": "a == b",
    "notEqual": "a != b",
    "greater": "a > b",
    "greaterOrEqual": "a >= b",
    "lesser": "a < b",
    "lesserOrEqual": "a <= b",
}
_LOGICAL = {"logicalAnd": "a && b", "logicalOr": "a || b", "logicalXor": "a xor b"}


def _binary(out_dtype: str | None, in_dtypes: frozenset[str]):
    def infer(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
        dt = same_dtype(ctx, {"a": t["a"], "b": t["b"]})
        dtype_in(ctx, t["a"], "a", in_dtypes)
        return [TT(out_dtype or dt, broadcast_shapes(t["a"].shape, t["b"].shape))]

    return infer


for _name, _expr in _BINARY.items():
    define(
        _name,
        ["a", "b"],
        _binary(None, ALL),
        f"Element-wise {_expr} with numpy broadcasting; a and b share a data type, the output has it. "
        "WebNN §7.6.9 Element-wise binary operations.",
    )
for _name, _expr in _COMPARE.items():
    define(
        _name,
        ["a", "b"],
        _binary("uint8", ALL),
        f"Element-wise comparison {_expr} with numpy broadcasting; outputs uint8 0/1. "
        "WebNN MLGraphBuilder element-wise logical operations (comparisons).",
    )
for _name, _expr in _LOGICAL.items():
    define(
        _name,
        ["a", "b"],
        _binary("uint8", frozenset({"uint8"})),
        f"Element-wise logical {_expr} on uint8 (non-zero = true) with broadcasting; outputs uint8 0/1. "
        "WebNN MLGraphBuilder element-wise logical operations.",
    )

# -------------------------------------------------------------------------------------------- unary

_UNARY: dict[str, tuple[frozenset[str], str]] = {
    "abs": (SIGNED, "|x|"),
    "neg": (SIGNED, "-x"),
    "sign": (SIGNED, "-1, 0 or 1 by the sign of x"),
    "ceil": (FLOAT, "ceil(x)"),
    "floor": (FLOAT, "floor(x)"),
    "roundEven": (FLOAT, "x rounded half to even"),
    "sqrt": (FLOAT, "sqrt(x)"),
    "exp": (FLOAT, "e^x"),
    "log": (FLOAT, "natural log of x"),
    "sin": (FLOAT, "sin(x)"),
    "cos": (FLOAT, "cos(x)"),
    "tan": (FLOAT, "tan(x)"),
    "erf": (FLOAT, "the Gauss error function of x"),
    "reciprocal": (FLOAT, "1 / x"),
    "identity": (ALL, "x unchanged"),
}
_ACT: dict[str, tuple[frozenset[str], str, str]] = {
    "relu": (SIGNED, "max(0, x)", "WebNN §7.6.27 relu()"),
    "sigmoid": (FLOAT, "1 / (1 + exp(-x))", "WebNN §7.6.30 sigmoid()"),
    "tanh": (FLOAT, "tanh(x)", "WebNN §7.6.37 tanh()"),
    "softsign": (FLOAT, "x / (1 + |x|)", "WebNN §7.6.34 softsign()"),
    "softplus": (FLOAT, "ln(1 + exp(x))", "WebNN §7.6.33 softplus()"),
    "hardSwish": (FLOAT, "x * max(0, min(6, x + 3)) / 6", "WebNN §7.6.16 hardSwish()"),
    "gelu": (FLOAT, "0.5 * x * (1 + erf(x / sqrt(2)))", "WebNN MLGraphBuilder.gelu()"),
}


def _same(allowed: frozenset[str]):
    def infer(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
        dtype_in(ctx, t["input"], "input", allowed)
        return [t["input"]]

    return infer


for _name, (_allowed, _expr) in _UNARY.items():
    define(
        _name,
        ["input"],
        _same(_allowed),
        f"Element-wise {_expr}; output has the input's shape and type. WebNN §7.6.10 Element-wise unary "
        "operations.",
    )
for _name, (_allowed, _expr, _sec) in _ACT.items():
    define(
        _name,
        ["input"],
        _same(_allowed),
        f"Element-wise {_expr}; output has the input's shape and type. {_sec}.",
    )

define(
    "logicalNot",
    ["input"],
    _same(frozenset({"uint8"})),
    "Element-wise logical not of a uint8 tensor (0 -> 1, non-zero -> 0). WebNN element-wise logical "
    "operations.",
)


def _is_special(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dtype_in(ctx, t["input"], "input", FLOAT)
    return [TT("uint8", t["input"].shape)]


define(
    "isNaN",
    ["input"],
    _is_special,
    "Element-wise test for NaN; outputs uint8 0/1. WebNN element-wise logical operations.",
)
define(
    "isInfinite",
    ["input"],
    _is_special,
    "Element-wise test for +/-infinity; outputs uint8 0/1. WebNN element-wise logical operations.",
)

define(
    "elu",
    ["input"],
    _same(FLOAT),
    "Element-wise x if x >= 0 else alpha * (exp(x) - 1). WebNN §7.6.11 elu().",
    options={"alpha": ("float", 1.0)},
)
define(
    "leakyRelu",
    ["input"],
    _same(FLOAT),
    "Element-wise x if x >= 0 else alpha * x. WebNN §7.6.18 leakyRelu().",
    options={"alpha": ("float", 0.01)},
)
define(
    "hardSigmoid",
    ["input"],
    _same(FLOAT),
    "Element-wise max(0, min(1, alpha * x + beta)). WebNN §7.6.15 hardSigmoid().",
    options={"alpha": ("float", 0.2), "beta": ("float", 0.5)},
)
define(
    "linear",
    ["input"],
    _same(FLOAT),
    "Element-wise alpha * x + beta. WebNN §7.6.19 linear().",
    options={"alpha": ("float", 1.0), "beta": ("float", 0.0)},
)


def _clamp(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    if opts["minValue"] > opts["maxValue"]:
        ctx.fail(f"minValue {opts['minValue']} is greater than maxValue {opts['maxValue']}")
    return [t["input"]]


define(
    "clamp",
    ["input"],
    _clamp,
    "Element-wise min(max(x, minValue), maxValue); the bounds default to -inf and +inf. "
    "WebNN §7.6.5 clamp().",
    options={"minValue": ("number", float("-inf")), "maxValue": ("number", float("inf"))},
)

# -------------------------------------------------------------------------------------------- cast


def _cast_normalize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    # converters write the target as `to` (0.3: "int64", 0.2: Rust-Debug "Int64") or `dataType`
    given = [k for k in ("type", "to", "dataType") if k in opts]
    if not given:
        ctx.fail('missing the target data type: write type="int32" (to= and dataType= are accepted too)')
    if len(given) > 1:
        ctx.fail(f"target data type given twice ({', '.join(given)})")
    v = opts.pop(given[0])
    d = normalize_dtype(v)
    if d is None:
        ctx.fail(f"option {given[0]!r}: unknown data type {v!r}")
    opts["type"] = d
    return opts


def _cast(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    return [TT(opts["type"], t["input"].shape)]


define(
    "cast",
    ["input"],
    _cast,
    "Element-wise conversion to data type `type` (any to any; float to int truncates toward zero). "
    "`to` and `dataType` are accepted, in any case. WebNN MLGraphBuilder.cast().",
    options={"type": ("dtype", None)},
    accepts=("to", "dataType"),
    normalize=_cast_normalize,
)

# -------------------------------------------------------------------------------------------- where, prelu


def _where(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dtype_in(ctx, t["condition"], "condition", frozenset({"uint8"}))
    dt = same_dtype(ctx, {"trueValue": t["trueValue"], "falseValue": t["falseValue"]})
    shape = broadcast_shapes(t["condition"].shape, t["trueValue"].shape, t["falseValue"].shape)
    return [TT(dt, shape)]


define(
    "where",
    ["condition", "trueValue", "falseValue"],
    _where,
    "Element-wise select: trueValue where condition (uint8) is non-zero, else falseValue; all three "
    "broadcast. WebNN MLGraphBuilder.where().",
)


def _prelu(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dt = same_dtype(ctx, {"input": t["input"], "slope": t["slope"]})
    dtype_in(ctx, t["input"], "input", SIGNED)
    return [TT(dt, broadcast_shapes(t["input"].shape, t["slope"].shape))]


define(
    "prelu",
    ["input", "slope"],
    _prelu,
    "Element-wise x if x >= 0 else slope * x, slope broadcast to the input. WebNN §7.6.25 prelu().",
)

# -------------------------------------------------------------------------------------------- softmax


def _softmax(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    dtype_in(ctx, x, "input", FLOAT)
    if x.rank == 0:
        ctx.fail("input must have rank >= 1")
    # The current spec makes axis required; files written for the earlier 2-D-only edition omit it, and
    # the last dimension is what that edition meant.
    axis = x.rank - 1 if opts["axis"] is None else opts["axis"]
    opts["axis"] = norm_axis(axis, x.rank)
    return [x]


define(
    "softmax",
    ["input"],
    _softmax,
    "exp(x - max) / sum(exp(x - max)) along `axis` (negative counts from the end; omitted = last "
    "dimension, as in the earlier 2-D edition). WebNN §7.6.32 softmax().",
    options={"axis": ("int", None)},
)
