"""QDQ: ONNX QuantizeLinear/DequantizeLinear → WebNN quantizeLinear/dequantizeLinear.

WebNN needs an explicit zero point and a scale that broadcasts (or tiles block-wise) against the input,
so ONNX's optional zero point is made explicit and per-axis 1-D parameters are reshaped to [..., C, 1...].
DequantizeLinear of constant weights is deliberately not folded (see fold.NO_FOLD): lowering sees the
int8 weights and their scales.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import MAX_TENSOR_BYTES
from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, where
from .ops_shape import norm_axis
from .refusals import type_reason
from .registry import onnx_op
from .tensors import NP_OF_ONNX, ONNX_TYPE_NAMES, UINT8


def _param(ctx: Converter, node: Any, i: int, rank: int, axis: int, what: str) -> str:
    name = node.input[i]
    shape = list(ctx.shape(name))
    if len(shape) != 1 or rank <= 1:
        return ctx.operand(name)
    # ONNX per-axis: a 1-D parameter along `axis`
    target = [1] * rank
    target[axis] = shape[0]
    if ctx.is_const(name):
        return ctx.new_const(f"{ctx.namer.of(name)}/{what}", ctx.const(name).reshape(target))
    return ctx.emit("reshape", [ctx.operand(name)], {"newShape": target})


def _zero_point(ctx: Converter, node: Any, dtype: np.dtype, rank: int, axis: int) -> str:
    if ctx.has(node, 2):
        return _param(ctx, node, 2, rank, axis, "zero_point")
    scale_shape = list(ctx.shape(node.input[1]))
    if len(scale_shape) == 1 and rank > 1:
        target = [1] * rank
        target[axis] = scale_shape[0]
        scale_shape = target
    if (
        not all(isinstance(d, int) for d in scale_shape)
        or math.prod(scale_shape) * dtype.itemsize > MAX_TENSOR_BYTES
    ):
        raise ValidationError(
            f"{where(node)}: a zero point of shape {scale_shape} (y_scale's) is not a constant it can make"
        )
    return ctx.new_const(f"{ctx.namer.of(node.output[0])}/zero_point", np.zeros(scale_shape, dtype))


def _quantized_type(ctx: Converter, node: Any, output_dtype: int) -> np.dtype:
    """QuantizeLinear's output type: the zero point's (the raw constant's, before int16 → int32 widening),
    else `output_dtype`, else uint8. Only int8/uint8 are quantized types here."""
    if ctx.has(node, 2):
        name = node.input[2]
        zdt = np.dtype(ctx.const(name).dtype) if ctx.is_const(name) else np.dtype(DTYPES[ctx.dtype(name)])
        onnx_t = next((t for t, d in NP_OF_ONNX.items() if d == zdt), 0)
    else:
        onnx_t = output_dtype or UINT8
        zdt = NP_OF_ONNX.get(onnx_t, np.dtype("V1"))
    if zdt in (np.dtype("u1"), np.dtype("i1")):
        return zdt
    why = type_reason(onnx_t) or "WebNN quantizeLinear here produces int8 or uint8"
    raise UnsupportedError(f"QuantizeLinear to {ONNX_TYPE_NAMES.get(onnx_t, zdt)}: {why}")


@onnx_op("QuantizeLinear", "DequantizeLinear")
def qdq(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    rank = ctx.rank(node.input[0])
    per_axis = len(ctx.shape(node.input[1])) == 1 and rank > 1  # else axis is not used (ONNX)
    axis = norm_axis(int(a.get("axis", 1)), rank) if per_axis else 0
    if int(a.get("block_size", 0)) and len(ctx.shape(node.input[1])) != rank:
        raise UnsupportedError("blocked quantization with a scale of another rank")
    q = node.op_type == "QuantizeLinear"
    if q:
        zdt = _quantized_type(ctx, node, int(a.get("output_dtype", 0)))
        if not int(a.get("saturate", 1)):
            raise UnsupportedError("QuantizeLinear saturate=0")
    else:
        zdt = np.dtype({"uint8": "u1", "int8": "i1", "int32": "<i4"}.get(ctx.dtype(node.input[0]), "u1"))
        if ctx.dtype(node.input[0]) not in ("uint8", "int8", "int32"):
            raise UnsupportedError(f"DequantizeLinear of {ctx.dtype(node.input[0])}")
    scale = _param(ctx, node, 1, rank, axis, "scale")
    zp = _zero_point(ctx, node, zdt or np.dtype("u1"), rank, axis)
    x = ctx.x(node, 0)
    ctx.emit("quantizeLinear" if q else "dequantizeLinear", [x, scale, zp], out=node.output[0])
