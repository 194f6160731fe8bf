"""Filters and biases of int8 nodes: dequantizeLinear of constants → qcint8 / qcint32 constants.

After `select` a quantized filter reaches its node as dequantizeLinear(const int8, scale, zero point)
followed by the StaticTranspose / StaticReshape nodes the conv and matmul rules put between it and the node
(the filter was not constant, so they could not be folded). Here the chain is replayed with numpy on the
integers and on the (broadcast) scales, so the per-channel scales end up along the output-channel dim of the
layout the XNN node reads: 0 for Conv2d OHWI and FullyConnected [O, I], 3 for DepthwiseConv2d [1, H, W, C].
"""

from __future__ import annotations

import numpy as np

from ...xnn.ir import PerChannelQuant
from ..ir import LGraph, LNode
from .params import QUANT_DTYPES, is_dequantize

MOVES = ("XNNStaticTranspose", "XNNStaticReshape")
INT32 = np.iinfo(np.int32)


def _dequantize_chain(lg: LGraph, producers: dict[str, LNode], name: str) -> tuple[LNode, list[LNode]] | None:
    """The dequantizeLinear of constants that `name` is made from, and the data-movement nodes after it."""
    chain: list[LNode] = []
    while True:
        node = producers.get(name)
        if node is None:
            return None
        if node.kind in MOVES:
            chain.append(node)
            name = node.operands["input_id"]
            continue
        if is_dequantize(node) and all(lg.is_const(i) for i in node.inputs):
            return node, chain[::-1]
        return None


def _replay(lg: LGraph, arr: np.ndarray, chain: list[LNode]) -> np.ndarray:
    for node in chain:
        if node.kind == "XNNStaticTranspose":
            arr = np.transpose(arr, node.attrs["perm"])
        else:
            arr = arr.reshape([int(d) for d in lg.values[node.outputs[0]].shape])  # type: ignore[arg-type]
    return arr


def _operands(lg: LGraph, dq: LNode) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(integers, scale, zero point) of a dequantizeLinear, the parameters broadcast to the data's shape."""
    q, s, z = (lg.values[dq.operands[k]].const for k in ("input_id", "scale_id", "zero_point_id"))
    if q is None or s is None or z is None:  # not constant: not weights
        return None
    try:
        s, z = np.broadcast_to(s, q.shape), np.broadcast_to(z, q.shape)
    except ValueError:  # block-wise parameters
        return None
    return q, s, z


def _along(arr: np.ndarray, dim: int) -> np.ndarray | None:
    """`arr` as a vector along `dim` when it does not vary along any other dim."""
    rows = np.moveaxis(arr, dim, 0).reshape(arr.shape[dim], -1)
    return rows[:, 0] if rows.size and bool(np.all(rows == rows[:, :1])) else None


def filter_weights(
    lg: LGraph, producers: dict[str, LNode], name: str, channel_dim: int, perm: tuple[int, ...] | None = None
) -> tuple[np.ndarray, PerChannelQuant] | None:
    """The filter value `name` as int8 data with per-channel scales along `channel_dim` (a per-tensor scale
    is repeated), after `perm` when given; None when it is not a dequantized int8/uint8 constant with zero
    points 0 (uint8: 128)."""
    found = _dequantize_chain(lg, producers, name)
    if found is None:
        return None
    dq, chain = found
    ops = _operands(lg, dq)
    shift = QUANT_DTYPES.get(lg.values[dq.operands["input_id"]].dtype)
    if ops is None or shift is None:
        return None
    q, s, z = ops
    if np.any(z.astype(np.int32) + shift != 0):
        return None
    data = _replay(lg, q.astype(np.int16) + shift, chain)
    scales = _replay(lg, s.astype(np.float32), chain)
    if perm is not None:
        data, scales = np.transpose(data, perm), np.transpose(scales, perm)
    vec = _along(scales, channel_dim)
    if vec is None or not np.all(np.isfinite(vec) & (vec > 0)):
        return None
    quant = PerChannelQuant(scale=[float(x) for x in vec], channel_dim=channel_dim)
    return np.ascontiguousarray(data.astype(np.int8)), quant


def bias_values(
    lg: LGraph, producers: dict[str, LNode], name: str, in_scale: float, w_scales: list[float]
) -> tuple[np.ndarray, PerChannelQuant] | None:
    """The bias `name` (a dequantized int32 constant, or an fp32 constant such as a fused batch-norm shift)
    as int32 with scale in_scale * w_scale[o]. An int32 bias whose scale is not that product (rare) is
    requantized; None when it is not a constant vector of the output-channel count."""
    target = np.float32(in_scale) * np.asarray(w_scales, np.float32)  # float32, as quantizers compute it
    v = lg.values[name]
    if v.const is not None and v.dtype == "float32":
        real = v.const.astype(np.float64).reshape(-1)
        exact = None
    else:
        found = _dequantize_chain(lg, producers, name)
        if found is None or lg.values[found[0].operands["input_id"]].dtype != "int32":
            return None
        ops = _operands(lg, found[0])
        if ops is None:
            return None
        q, s, z = (_replay(lg, a, found[1]).reshape(-1) for a in ops)
        real = (q.astype(np.float64) - z) * s.astype(np.float64)
        same = q.size == target.size and np.all(z == 0) and np.allclose(s, target, rtol=1e-6, atol=0)
        exact = q.astype(np.int32) if same else None
    if real.size != target.size:
        return None
    data = (
        exact if exact is not None else np.clip(np.rint(real / target), INT32.min, INT32.max).astype(np.int32)
    )
    return data, PerChannelQuant(scale=[float(x) for x in target], channel_dim=0)
