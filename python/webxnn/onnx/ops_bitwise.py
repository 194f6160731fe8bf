"""ONNX bitwise ops, which WebNN lacks, as exact integer arithmetic: BitwiseNot is -x - 1 (signed) or
max - x (unsigned); BitwiseAnd/Or/Xor look each byte pair up in a constant 256 x 256 table of answers; BitCast
between integers is a wrapping cast."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, where
from .ops_decomposed import scalar
from .refusals import BIT_REINTERPRET, type_reason
from .registry import onnx_op
from .tensors import BOOL, INT8, INT32, INT64, ONNX_TYPE_NAMES, UINT8, UINT32, UINT64, WEBNN_OF_ONNX

_INTS = ("int8", "uint8", "int32", "uint32", "int64", "uint64")


def _int_input(ctx: Converter, node: Any, i: int) -> str:
    x = ctx.x(node, i)
    if ctx.types[x].dtype not in _INTS:
        raise UnsupportedError(f"{node.op_type} of {ctx.types[x].dtype}")
    return x


@onnx_op("BitwiseNot")
def bitwise_not(ctx: Converter, node: Any) -> None:
    x = _int_input(ctx, node, 0)
    dt = ctx.types[x].dtype
    if dt.startswith("u"):  # ~x = all ones - x, no borrow
        ctx.emit("sub", [scalar(ctx, np.iinfo(DTYPES[dt]).max, x, "ones"), x], out=node.output[0])
    else:  # two's complement: ~x = -x - 1 = (-1) - x, which never overflows
        ctx.emit("sub", [scalar(ctx, -1, x, "minus_one"), x], out=node.output[0])


_NP_OPS = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}


@onnx_op("BitwiseAnd", "BitwiseOr", "BitwiseXor")
def bitwise_binary(ctx: Converter, node: Any) -> None:
    """Byte by byte through a table: idx = a_byte * 256 + b_byte (int32), gathered from op(i, j) for all
    byte pairs. A signed value is split first into its sign bit and the non-negative rest (x + 2^(w-1) for
    a negative x, added in two halves so nothing overflows), so truncating division extracts the bytes."""
    a, b = _int_input(ctx, node, 0), _int_input(ctx, node, 1)
    dt = ctx.types[a].dtype
    if ctx.types[b].dtype != dt:
        raise UnsupportedError(f"{node.op_type} of {dt} and {ctx.types[b].dtype}")
    npdt = DTYPES[dt]
    width = npdt.itemsize * 8
    signed = not dt.startswith("u")
    fn = _NP_OPS[node.op_type]
    name = ctx.namer.of(node.output[0])
    byte = np.arange(256, dtype=np.int64)
    table = ctx.new_const(f"{name}/table", fn(byte[:, None], byte[None, :]).reshape(-1).astype(np.int32))
    c256 = ctx.new_const(f"{name}/c256", np.array(256, np.int32))
    bits = width - 1 if signed else width
    zero = scalar(ctx, 0, a, "zero")

    def split(v: str) -> tuple[str, str | None]:
        if not signed:
            return v, None
        neg = ctx.emit("lesser", [v, zero])
        half = scalar(ctx, 1 << (width - 2), v, "half")
        lifted = ctx.emit("add", [ctx.emit("add", [v, half]), half])
        return ctx.emit("where", [neg, lifted, v]), neg

    (ra, sa), (rb, sb) = split(a), split(b)
    total = None
    for k in range(-(-bits // 8)):
        p = scalar(ctx, 1 << (8 * k), a, f"p{k}")
        by = []
        for r in (ra, rb):
            q = ctx.emit("div", [r, p]) if k else r  # r >= 0: truncation is floor
            m = q
            if width > 8:  # q mod 256 (an 8-bit value is its own byte)
                c = scalar(ctx, 256, a, "c256")
                m = ctx.emit("sub", [q, ctx.emit("mul", [ctx.emit("div", [q, c]), c])])
            by.append(ctx.emit("cast", [m], {"type": "int32"}) if dt != "int32" else m)
        idx = ctx.emit("add", [ctx.emit("mul", [by[0], c256]), by[1]])
        got = ctx.emit("gather", [table, idx], {"axis": 0})
        got = ctx.emit("cast", [got], {"type": dt}) if dt != "int32" else got
        term = ctx.emit("mul", [got, p]) if k else got
        total = term if total is None else ctx.emit("add", [total, term])
    if signed:
        sign = {"BitwiseAnd": "logicalAnd", "BitwiseOr": "logicalOr", "BitwiseXor": "notEqual"}[node.op_type]
        s = ctx.emit(sign, [sa, sb])
        total = ctx.emit(
            "where", [s, ctx.emit("add", [total, scalar(ctx, -(1 << (width - 1)), a, "min")]), total]
        )
    ctx.emit("identity", [total], out=node.output[0])


@onnx_op("BitCast")
def bitcast(ctx: Converter, node: Any) -> None:
    """Between integer types of one width (and from bool) the bits' new value is the two's complement wrap
    that WebNN's integer cast performs; between float and integer WebNN has no reinterpretation."""
    to = int(attrs_of(node)["to"])
    src = ctx.elem_type(node.input[0])
    why = type_reason(to) or type_reason(src)
    if why:
        raise UnsupportedError(f"BitCast: {why}")
    widths = {BOOL: 1, UINT8: 1, INT8: 1, INT32: 4, UINT32: 4, INT64: 8, UINT64: 8}
    if src not in widths or to not in widths or to == BOOL and src != BOOL:
        raise UnsupportedError(
            f"BitCast from {ONNX_TYPE_NAMES.get(src)} to {ONNX_TYPE_NAMES.get(to)}: {BIT_REINTERPRET}"
        )
    if widths[src] != widths[to]:
        raise ValidationError(f"{where(node)}: BitCast between types of different widths")
    ctx.emit("cast", [ctx.x(node, 0)], {"type": WEBNN_OF_ONNX[to]}, out=node.output[0])
