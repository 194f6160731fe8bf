"""Elementwise ONNX ops: arithmetic, comparisons, logic, activations, Cast, Where, Identity/Dropout."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError
from .convert import Converter, attrs_of
from .ops_decomposed import gelu_tanh
from .refusals import RANDOM_DROPOUT, TRAINING_MODE
from .registry import onnx_op

_BINARY = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Pow": "pow",
    "Equal": "equal",
    "Greater": "greater",
    "Less": "lesser",
    "GreaterOrEqual": "greaterOrEqual",
    "LessOrEqual": "lesserOrEqual",
    "And": "logicalAnd",
    "Or": "logicalOr",
    "Xor": "logicalXor",
    "PRelu": "prelu",
}

_UNARY = {
    "Relu": "relu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "Exp": "exp",
    "Log": "log",
    "Abs": "abs",
    "Neg": "neg",
    "Sqrt": "sqrt",
    "Erf": "erf",
    "Floor": "floor",
    "Ceil": "ceil",
    "Reciprocal": "reciprocal",
    "Sin": "sin",
    "Cos": "cos",
    "Tan": "tan",
    "Sign": "sign",
    "Not": "logicalNot",
    "Softplus": "softplus",
    "Softsign": "softsign",
    "Round": "roundEven",
    "IsNaN": "isNaN",
    "HardSwish": "hardSwish",
}


@onnx_op(*_BINARY)
def binary(ctx: Converter, node: Any) -> None:
    a, b = ctx.x(node, 0), ctx.x(node, 1)
    if node.op_type == "Pow" and ctx.dtype(node.input[1]) != ctx.dtype(node.input[0]):
        # ONNX allows e.g. float ** int64; WebNN needs one type: convert the exponent
        if ctx.dtype(node.input[0]) not in ("float32", "float16"):
            if ctx.dtype(node.input[1]) not in ("float32", "float16"):
                raise UnsupportedError(
                    f"Pow of {ctx.dtype(node.input[0])} with a {ctx.dtype(node.input[1])} exponent"
                )
            # an integer base to a float power: computed in float, truncated back to the base's type (ONNX)
            y = ctx.emit("pow", [ctx.emit("cast", [a], {"type": ctx.dtype(node.input[1])}), b])
            ctx.emit("cast", [y], {"type": ctx.dtype(node.input[0])}, out=node.output[0])
            return
        if not ctx.is_const(node.input[1]):
            b = ctx.emit("cast", [b], {"type": ctx.dtype(node.input[0])})
            ctx.emit("pow", [a, b], out=node.output[0])
            return
        b = ctx.new_const(
            f"{ctx.namer.of(node.input[1])}/cast",
            ctx.const(node.input[1]).astype(
                np.float32 if ctx.dtype(node.input[0]) == "float32" else np.float16
            ),
        )
    ctx.emit(_BINARY[node.op_type], [a, b], out=node.output[0])


@onnx_op("Max", "Min", "Sum", "Mean")
def variadic(ctx: Converter, node: Any) -> None:
    op = {"Max": "max", "Min": "min", "Sum": "add", "Mean": "add"}[node.op_type]
    ins = [ctx.x(node, i) for i in range(len(node.input)) if node.input[i]]
    if len(ins) == 1:
        ctx.emit("identity", ins, out=node.output[0])
        return
    acc = ins[0]
    last = node.op_type != "Mean"
    for k, v in enumerate(ins[1:]):
        final = last and k == len(ins) - 2
        acc = ctx.emit(op, [acc, v], out=node.output[0] if final else None)
    if node.op_type == "Mean":
        n = ctx.new_const(
            f"{ctx.namer.of(node.output[0])}/count",
            np.array(len(ins), dtype=np.float32 if ctx.dtype(node.input[0]) == "float32" else np.float16),
        )
        ctx.emit("div", [acc, n], out=node.output[0])


@onnx_op(*_UNARY)
def unary(ctx: Converter, node: Any) -> None:
    ctx.emit(_UNARY[node.op_type], [ctx.x(node, 0)], out=node.output[0])


@onnx_op("IsInf")
def is_inf(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    pos, neg = bool(a.get("detect_positive", 1)), bool(a.get("detect_negative", 1))
    if pos and neg:
        ctx.emit("isInfinite", [ctx.x(node, 0)], out=node.output[0])
        return
    x = ctx.x(node, 0)
    if not (pos or neg):
        ctx.emit("logicalAnd", [ctx.emit("isInfinite", [x]), ctx.emit("isNaN", [x])], out=node.output[0])
        return
    zero = ctx.new_const(
        f"{ctx.namer.of(node.output[0])}/zero", np.zeros((), _np_of(ctx.dtype(node.input[0])))
    )
    side = ctx.emit("greater" if pos else "lesser", [x, zero])
    ctx.emit("logicalAnd", [ctx.emit("isInfinite", [x]), side], out=node.output[0])


@onnx_op("Elu")
def elu(ctx: Converter, node: Any) -> None:
    ctx.emit("elu", [ctx.x(node, 0)], {"alpha": float(attrs_of(node).get("alpha", 1.0))}, out=node.output[0])


@onnx_op("LeakyRelu")
def leaky_relu(ctx: Converter, node: Any) -> None:
    ctx.emit(
        "leakyRelu", [ctx.x(node, 0)], {"alpha": float(attrs_of(node).get("alpha", 0.01))}, out=node.output[0]
    )


@onnx_op("HardSigmoid")
def hard_sigmoid(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    ctx.emit(
        "hardSigmoid",
        [ctx.x(node, 0)],
        {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))},
        out=node.output[0],
    )


@onnx_op("Gelu")
def gelu(ctx: Converter, node: Any) -> None:
    approx = attrs_of(node).get("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    if approx == "tanh":
        gelu_tanh(ctx, node)
        return
    if approx != "none":
        raise UnsupportedError(f"Gelu approximate={approx!r}")
    ctx.emit("gelu", [ctx.x(node, 0)], out=node.output[0])


@onnx_op("Clip")
def clip(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    opts: dict[str, Any] = {}
    lo = a.get("min")
    hi = a.get("max")
    if any(ctx.has(node, i) and not ctx.is_const(node.input[i]) for i in (1, 2)):
        _clip_runtime(ctx, node)
        return
    if ctx.has(node, 1):
        lo = ctx.const_scalar(node, 1, "min")
    if ctx.has(node, 2):
        hi = ctx.const_scalar(node, 2, "max")
    if lo is not None and np.isfinite(lo):
        opts["minValue"] = float(lo)
    if hi is not None and np.isfinite(hi):
        opts["maxValue"] = float(hi)
    if opts == {"minValue": 0.0}:
        ctx.emit("relu", [ctx.x(node, 0)], out=node.output[0])
        return
    ctx.emit("clamp", [ctx.x(node, 0)], opts, out=node.output[0])


def _clip_runtime(ctx: Converter, node: Any) -> None:
    """Clip whose bounds are computed at run time: max(x, min) then min(·, max)."""
    y = ctx.x(node, 0)
    bounds = [(1, "max"), (2, "min")]
    live = [(i, op) for i, op in bounds if ctx.has(node, i)]
    for k, (i, op) in enumerate(live):
        y = ctx.emit(op, [y, ctx.x(node, i)], out=node.output[0] if k == len(live) - 1 else None)


@onnx_op("Where")
def where_(ctx: Converter, node: Any) -> None:
    ctx.emit("where", [ctx.x(node, 0), ctx.x(node, 1), ctx.x(node, 2)], out=node.output[0])


@onnx_op("Cast")
def cast(ctx: Converter, node: Any) -> None:
    cast_to(ctx, node, int(attrs_of(node)["to"]))


@onnx_op("CastLike")
def cast_like(ctx: Converter, node: Any) -> None:
    cast_to(ctx, node, ctx.elem_type(node.input[1]))


def cast_to(ctx: Converter, node: Any, onnx_type: int) -> None:
    """Cast input 0 of `node` to ONNX element type `onnx_type`."""
    from .tensors import BOOL, webnn_dtype

    to = webnn_dtype(onnx_type, f"{node.op_type} target")
    if onnx_type == BOOL:  # WebNN has none; x != 0 gives the 0/1 uint8 ONNX means
        zero = ctx.new_const(
            f"{ctx.namer.of(node.output[0])}/zero", np.zeros((), _np_of(ctx.dtype(node.input[0])))
        )
        ctx.emit("notEqual", [ctx.x(node, 0), zero], out=node.output[0])
        return
    if to == ctx.dtype(node.input[0]):
        ctx.alias(node.output[0], node.input[0])
        return
    ctx.emit("cast", [ctx.x(node, 0)], {"type": to}, out=node.output[0])


def _dropout_is_identity(ctx: Converter, node: Any) -> bool:
    """Dropout with a training_mode input is the identity when that is a constant 0 or the ratio is a
    constant 0; otherwise it drops at random (refused), or may (a run-time training_mode: refused)."""
    training = ctx.const(node.input[2]) if ctx.is_const(node.input[2]) else None
    if training is not None and not bool(np.asarray(training).reshape(-1)[0]):
        return True
    ratio = 0.5
    if ctx.has(node, 1):
        if not ctx.is_const(node.input[1]):
            raise UnsupportedError(f"Dropout {TRAINING_MODE}")
        ratio = float(np.asarray(ctx.const(node.input[1])).reshape(-1)[0])
    if ratio == 0.0:
        return True
    if training is None:
        raise UnsupportedError(f"Dropout {TRAINING_MODE}")
    return False


def _np_of(dtype: str) -> np.dtype:
    from ..graph import DTYPES

    return DTYPES[dtype]


@onnx_op("Identity", "Dropout")
def identity(ctx: Converter, node: Any) -> None:
    if node.op_type == "Dropout" and ctx.has(node, 2) and not _dropout_is_identity(ctx, node):
        raise UnsupportedError(RANDOM_DROPOUT)
    if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1]:
        # the mask is all ones in inference
        shape = ctx.static_shape(node.input[0], "Dropout mask")
        ctx.set_const(node.output[1], np.ones(shape, np.bool_))
    ctx.alias(node.output[0], node.input[0])
