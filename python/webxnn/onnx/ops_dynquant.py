"""Dynamic quantization (onnxruntime's `quantize_dynamic` output) → webxnn's `dynamicQuantizedMatmul`.

`quantize_dynamic` writes, per MatMul with constant weights W:

    x_q, x_scale, x_zp = DynamicQuantizeLinear(x)          # uint8, one scale / zero point for the tensor
    s = Mul(x_scale, W_scale)                              # W_scale [] or [N]
    y = Mul(Cast<float>(MatMulInteger(x_q, W_q, x_zp, W_zp)), s)

and onnxruntime's optimizer (or a hand-written model) may use com.microsoft `MatMulIntegerToFloat(x_q, W_q,
x_scale, W_scale, x_zp, W_zp, bias)` or `DynamicQuantizeMatMul(x, W_q, W_scale, W_zp, bias)`. All of these are
`x @ dequantize(W_q)` with x quantized on the fly, which is one `dynamicQuantizedMatmul(x, W_q - W_zp, W_scale
[, bias])`: the lowering quantizes x **per row** (a zero point and scale per row instead of per tensor: at
least as accurate as onnxruntime, so results differ from its by less than its own quantization error).

The chain is matched as it is walked: DynamicQuantizeLinear's outputs, the scale product, MatMulInteger's
int32 result and its Cast are *deferred* values (`Converter.deferred`), emitted as nothing until the Mul that
completes the chain. A deferred value read by anything else is emitted after all (`materialize`: a
DynamicQuantizeLinear through its ONNX function body) or, MatMulInteger's int32 result, refused with
UnsupportedError (never approximated), as is such a chain on non-constant weights (a MatMulInteger outside
the chain is an exact integer product: ops_qlinear); uint8 weights that
their zero point does not shift into int8 exactly run as an fp32 matmul on the dequantized weights (`_emit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from .convert import Converter, attrs_of
from .ops_qlinear import exact_matmul_integer
from .registry import contrib_op, onnx_op
from .tensors import FLOAT

_CHAIN = (
    "only the chain onnxruntime's quantize_dynamic writes is supported: DynamicQuantizeLinear -> "
    "MatMulInteger (constant weights) -> Cast to float -> Mul by (x_scale * W_scale)"
)


@dataclass
class Quantized:
    """An output of DynamicQuantizeLinear(x) (`node`): `part` is "q", "scale" or "zp"."""

    x: str
    part: str
    node: Any


@dataclass
class ScaleProduct:
    """x_scale * W_scale (W_scale constant, [] or [N]), made by the Mul `node` from `scale`."""

    x: str
    w_scale: np.ndarray
    node: Any
    scale: Quantized


@dataclass
class IntProduct:
    """MatMulInteger(x_q, W, x_zp, W_zp) with W shifted to zero point 0; `cast`: after Cast to float."""

    x: str
    weight: np.ndarray
    cast: bool = False


def materialize(ctx: Converter, name: str, user: str) -> None:
    """Give deferred value `name` a graph value after all, for a reader outside the chain: a
    DynamicQuantizeLinear output through the op's ONNX function body (per tensor, exactly as ONNX defines it),
    a scale product as that plus its Mul. MatMulInteger's int32 result has none (WebNN has no int32 matmul):
    UnsupportedError."""
    d = ctx.deferred[name]
    if isinstance(d, IntProduct):
        raise UnsupportedError(f"MatMulInteger's int32 result ({name!r}) is read by {user}: {_CHAIN}")
    q = d.scale if isinstance(d, ScaleProduct) else d
    saved = ctx.node  # the reader's node, restored after translating another node on its behalf
    if not all(o in ctx.vals for o in q.node.output if o):  # once per DynamicQuantizeLinear
        why = ctx._expand(q.node)
        ctx.node = saved
        if why != "":
            raise UnsupportedError(
                f"DynamicQuantizeLinear ({name!r}, read by {user}): {why or 'no function'}"
            )
    # The Quantized records stay: a MatMulInteger chain after this reader still matches.
    if isinstance(d, ScaleProduct):
        del ctx.deferred[name]
        ctx._translate(d.node)  # the Mul, now on graph values
        ctx.node = saved


def _int8_weight(ctx: Converter, node: Any, w_idx: int, zp_idx: int) -> np.ndarray:
    """The constant 2-D weights minus their zero point (per tensor or per column), int32."""
    if not ctx.is_const(node.input[w_idx]):
        raise UnsupportedError(f"the weights ({node.input[w_idx]!r}) must be constant: {_CHAIN}")
    w = ctx.const(node.input[w_idx])
    if w.ndim != 2 or w.dtype not in (np.int8, np.uint8):
        raise UnsupportedError(f"the weights must be 2-D int8 or uint8, got {w.dtype} {list(w.shape)}")
    zp = np.zeros((), np.int32)
    if ctx.has(node, zp_idx):
        if not ctx.is_const(node.input[zp_idx]):
            raise UnsupportedError("the weight zero point must be constant")
        zp = ctx.const(node.input[zp_idx]).astype(np.int32)
        if zp.size not in (1, w.shape[1]):
            raise UnsupportedError(
                f"weight zero point of shape {list(zp.shape)} (per tensor or per column only)"
            )
        zp = zp.reshape(-1) if zp.size > 1 else zp.reshape(())
    return w.astype(np.int32) - zp  # exact; _emit decides whether it fits int8


def _scale(ctx: Converter, node: Any, i: int, n: int) -> np.ndarray:
    if not ctx.is_const(node.input[i]):
        raise UnsupportedError(f"the weight scale ({node.input[i]!r}) must be constant")
    s = np.asarray(ctx.const(node.input[i]), np.float32)
    if s.size not in (1, n):
        raise UnsupportedError(f"weight scale of shape {list(s.shape)} (per tensor or per column only)")
    return s.reshape(-1) if s.size > 1 else s.reshape(())


def _emit(ctx: Converter, x: str, weight: np.ndarray, scale: np.ndarray, bias: str | None, out: str) -> None:
    """x @ (weight * scale) [+ bias]: dynamicQuantizedMatmul when the shifted weights are int8; else (uint8
    weights far from their zero point, which have no exact int8 form) an fp32 matmul on the dequantized
    weights, x unquantized: the real-valued layer the file describes, without the activation rounding."""
    hint = ctx.namer.of(out)
    opts = {"bias": bias} if bias is not None else {}
    if weight.min(initial=0) >= -128 and weight.max(initial=0) <= 127:
        w = ctx.new_const(f"{hint}/weight", weight.astype(np.int8))
        s = ctx.new_const(f"{hint}/weight_scale", scale)
        ctx.emit("dynamicQuantizedMatmul", [ctx.operand(x), w, s], opts, out=out)
        return
    w = ctx.new_const(f"{hint}/weight", (weight.astype(np.float64) * scale).astype(np.float32))
    if bias is None:
        ctx.emit("matmul", [ctx.operand(x), w], out=out)
    else:
        ctx.emit("add", [ctx.emit("matmul", [ctx.operand(x), w]), bias], out=out)


def _bias(ctx: Converter, node: Any, i: int, n: int) -> str | None:
    if not ctx.has(node, i):
        return None
    name = node.input[i]
    if ctx.is_const(name) and ctx.const(name).size != n:
        raise UnsupportedError(f"bias of shape {list(ctx.const(name).shape)}, expected [{n}]")
    return ctx.operand(name)


@onnx_op("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: Converter, node: Any) -> None:
    if ctx.dtype(node.input[0]) != "float32":
        raise UnsupportedError(f"DynamicQuantizeLinear of {ctx.dtype(node.input[0])}")
    for part, name in zip(("q", "scale", "zp"), node.output):
        if name:
            ctx.deferred[name] = Quantized(node.input[0], part, node)


@onnx_op("MatMulInteger")
def matmul_integer(ctx: Converter, node: Any) -> None:
    a = ctx.deferred.get(node.input[0])
    if a is None and not any(i in ctx.deferred for i in node.input):  # not this chain: exact int32 result
        return exact_matmul_integer(ctx, node)
    if not isinstance(a, Quantized) or a.part != "q":
        raise UnsupportedError(f"A is not a DynamicQuantizeLinear output: {_CHAIN}")
    za = ctx.deferred.get(node.input[2]) if ctx.has(node, 2) else None
    if not (isinstance(za, Quantized) and za.part == "zp" and za.x == a.x):
        raise UnsupportedError(f"A's zero point is not the one DynamicQuantizeLinear gave it: {_CHAIN}")
    ctx.deferred[node.output[0]] = IntProduct(a.x, _int8_weight(ctx, node, 1, 3))


def consume_deferred(ctx: Converter, node: Any) -> None:
    """`node` reads a deferred value: continue the chain (Cast, Mul, MatMulInteger, MatMulIntegerToFloat), or
    materialize what it reads and translate it as usual."""
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
    ins = [ctx.deferred.get(i) for i in node.input]
    if op == "MatMulInteger":
        return matmul_integer(ctx, node)
    if op == "com.microsoft.MatMulIntegerToFloat":
        return matmul_integer_to_float(ctx, node)
    if op == "Cast" and isinstance(ins[0], IntProduct) and int(attrs_of(node).get("to", 0)) == FLOAT:
        ctx.deferred[node.output[0]] = IntProduct(ins[0].x, ins[0].weight, cast=True)
        return None
    if op == "Mul" and len(ins) == 2:
        for d, other in ((ins[0], node.input[1]), (ins[1], node.input[0])):
            if isinstance(d, Quantized) and d.part == "scale" and ctx.is_const(other):
                w_scale = np.asarray(ctx.const(other), np.float32)
                ctx.deferred[node.output[0]] = ScaleProduct(d.x, w_scale, node, d)
                return None
        for p, s in ((ins[0], ins[1]), (ins[1], ins[0])):
            if isinstance(p, IntProduct) and p.cast and isinstance(s, ScaleProduct) and s.x == p.x:
                n = p.weight.shape[1]
                if s.w_scale.size not in (1, n):
                    raise UnsupportedError(f"W_scale of shape {list(s.w_scale.shape)}: {_CHAIN}")
                scale = s.w_scale.reshape(-1) if s.w_scale.size > 1 else s.w_scale.reshape(())
                return _emit(ctx, p.x, p.weight, scale, None, node.output[0])
    user = f"{op} node {node.name or node.output[0]!r}"
    for name in [i for i in node.input if i in ctx.deferred and i not in ctx.vals]:
        if name in ctx.deferred:
            materialize(ctx, name, user)
    ctx._translate(node)
    return None


@contrib_op("com.microsoft", "MatMulIntegerToFloat")
def matmul_integer_to_float(ctx: Converter, node: Any) -> None:
    parts = [ctx.deferred.get(node.input[i]) if ctx.has(node, i) else None for i in (0, 2, 4)]
    a = parts[0]
    ok = isinstance(a, Quantized) and all(
        isinstance(p, Quantized) and p.part == want and p.x == a.x
        for p, want in zip(parts, ("q", "scale", "zp"))
    )
    if not ok or not isinstance(a, Quantized):
        raise UnsupportedError(
            "MatMulIntegerToFloat: A, its scale and zero point must come from one DynamicQuantizeLinear"
        )
    weight = _int8_weight(ctx, node, 1, 5)
    n = weight.shape[1]
    _emit(ctx, a.x, weight, _scale(ctx, node, 3, n), _bias(ctx, node, 6, n), node.output[0])


@contrib_op("com.microsoft", "DynamicQuantizeMatMul")
def dynamic_quantize_matmul(ctx: Converter, node: Any) -> None:
    if ctx.dtype(node.input[0]) != "float32":
        raise UnsupportedError(f"DynamicQuantizeMatMul of {ctx.dtype(node.input[0])}")
    weight = _int8_weight(ctx, node, 1, 3)
    n = weight.shape[1]
    _emit(ctx, node.input[0], weight, _scale(ctx, node, 2, n), _bias(ctx, node, 4, n), node.output[0])
