"""Pass 6, fuse (on XNN nodes):
  * bias: Add/Subtract of a per-channel constant right after FullyConnected / Conv2d / DepthwiseConv2d /
    ConvTranspose2d becomes (or is added to) the node's constant bias;
  * scale: Multiply by a per-channel constant right after one of those scales its constant filter and bias
    (what batchNormalization with constant statistics becomes);
  * activation: a Clamp (relu, clamp) becomes the producer's `output_min_max` when the producer supports it.
Both only when the producer's output has no other reader and is not a graph output.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..graph import DTYPES
from .ir import LGraph, LNode

BIAS_NODES = frozenset({"XNNFullyConnected", "XNNConv2d", "XNNDepthwiseConv2d", "XNNConvTranspose2d"})
# nodes whose define call honours output_min_max
CLAMP_NODES = frozenset(
    {
        "XNNFullyConnected",
        "XNNConv2d",
        "XNNDepthwiseConv2d",
        "XNNConvTranspose2d",
        "XNNAvgPooling2d",
        "XNNMaxPooling2d",
        "XNNGlobalAvgPooling2d",
        "XNNClamp",
        "XNNAdd",
        "XNNSubtract",
        "XNNMultiply",
        "XNNDiv",
    }
)


def _channel_vector(lg: LGraph, name: str, out_shape: tuple) -> np.ndarray | None:
    """The constant as a [C] vector when it only varies along the last dim of `out_shape` (C)."""
    v = lg.values[name]
    if v.const is None or v.rank > len(out_shape) or not out_shape:
        return None
    c = out_shape[-1]
    if any(d != 1 for d in v.shape[:-1]) or (v.rank and v.shape[-1] not in (1, c)):
        return None
    return np.broadcast_to(v.const.reshape(-1), (c,)) if v.const.size in (1, c) else None


def _fuse_bias(lg: LGraph, add: LNode, prod: LNode) -> bool:
    a, b = add.operands["input1_id"], add.operands["input2_id"]
    mine = prod.outputs[0]
    other = b if a == mine else a
    if add.kind == "XNNSubtract" and a != mine:  # c - conv(x) is not a bias
        return False
    out_shape = lg.values[mine].shape
    if lg.values[add.outputs[0]].shape != out_shape:
        return False
    vec = _channel_vector(lg, other, out_shape)
    if vec is None:
        return False
    dtype = lg.values[mine].dtype
    vec = vec.astype(np.float64) * (-1.0 if add.kind == "XNNSubtract" else 1.0)
    old = prod.operands.get("bias_id")
    if old is not None:
        if lg.values[old].const is None:
            return False
        vec = vec + lg.values[old].const.astype(np.float64).reshape(-1)
    prod.operands["bias_id"] = lg.add_const(f"{mine}.bias", vec.astype(DTYPES[dtype]), dtype)
    return True


def _fuse_scale(lg: LGraph, mul: LNode, prod: LNode) -> bool:
    a, b = mul.operands["input1_id"], mul.operands["input2_id"]
    mine = prod.outputs[0]
    other = b if a == mine else a
    out_shape = lg.values[mine].shape
    if lg.values[mul.outputs[0]].shape != out_shape:
        return False
    vec = _channel_vector(lg, other, out_shape)
    w = prod.operands["filter_id"]
    bias = prod.operands.get("bias_id")
    if vec is None or lg.values[w].const is None or (bias is not None and lg.values[bias].const is None):
        return False
    if lg.values[w].quant is not None:  # int8 weights: the product is not int8 (their scales could take it)
        return False
    wv = lg.values[w]
    # the output-channel dim of each filter layout: OHWI / per-group OHWI / FC [O, I] → 0; 1HWO and
    # FC [I, O] (TRANSPOSE_WEIGHTS) → last
    last = prod.kind == "XNNDepthwiseConv2d" or (
        prod.kind == "XNNFullyConnected" and prod.attrs.get("flags", 0) & 1
    )
    k = vec.astype(np.float64)
    shape = [1] * wv.rank
    shape[-1 if last else 0] = k.size
    scaled = (wv.const.astype(np.float64) * k.reshape(shape)).astype(wv.const.dtype)
    prod.operands["filter_id"] = lg.add_const(f"{w}.scaled", scaled, wv.dtype)
    if bias is not None:
        bv = lg.values[bias]
        new_bias = (bv.const.astype(np.float64).reshape(-1) * k).astype(bv.const.dtype)
        prod.operands["bias_id"] = lg.add_const(f"{bias}.scaled", new_bias, bv.dtype)
    return True


def _fuse_clamp(lg: LGraph, clamp: LNode, prod: LNode) -> bool:
    lo, hi = clamp.output_min_max or (-np.inf, np.inf)
    plo, phi = prod.output_min_max or (-np.inf, np.inf)
    nlo, nhi = max(lo, plo), min(hi, phi)
    if nlo > nhi:  # disjoint ranges: the composition is a constant, not a clamp
        return False
    prod.output_min_max = (float(nlo), float(nhi))
    return True


def fuse(lg: LGraph) -> LGraph:
    uses = Counter(i for n in lg.nodes for i in n.inputs)
    outputs = lg.output_values()
    producer: dict[str, LNode] = {o: n for n in lg.nodes for o in n.outputs}
    kept: list[LNode] = []
    for node in lg.nodes:
        fused = False
        if node.kind in ("XNNAdd", "XNNSubtract", "XNNMultiply", "XNNClamp"):
            for i in node.inputs:
                prod = producer.get(i)
                if prod is None or uses[i] != 1 or i in outputs or len(prod.outputs) != 1:
                    continue
                if node.kind == "XNNClamp" and prod.kind in CLAMP_NODES:
                    fused = _fuse_clamp(lg, node, prod)
                elif (
                    node.kind != "XNNClamp"
                    and prod.kind in BIAS_NODES
                    and prod.output_min_max is None
                    and node.output_min_max is None
                ):
                    fuse_fn = _fuse_scale if node.kind == "XNNMultiply" else _fuse_bias
                    fused = fuse_fn(lg, node, prod)
                if fused:
                    # the producer now writes the fused node's output
                    new_out = node.outputs[0]
                    prod.outputs = [new_out]
                    producer[new_out] = prod
                    del lg.values[i]
                    for j in node.inputs:
                        uses[j] -= 1
                    break
        if not fused:
            kept.append(node)
    lg.nodes = kept
    return lg
