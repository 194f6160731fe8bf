"""Pass 7a, qdq: quantizeLinear / dequantizeLinear around compute ops → int8 XNN values and nodes.

Runs on XNN nodes after `select`, `fuse` and `simplify`, where everything it needs is settled: the NHWC
layout and the transposes it inserted, the XNN filter layouts (so per-channel scales can be put along the
final output-channel dim), relu / clamp already fused into the producer's output range, and the quantize
/ dequantize nodes still visible as WXQuantize. Steps, one module each:

    params   which int8/uint8 values become qint8 (per tensor, read only by matching dequantizeLinear)
    sink     data movement (transpose, reshape, concat, max pool, ...) runs on the int8 values
    borders  dq → q pairs left by `sink`: the identity or a requantizing Convert
    nodes    conv / depthwise / FC (gemm, matmul + bias) / add / mul / pools / table unaries become int8,
             with qcint8 filters and qcint32 biases (`weights`)
    borders  every quantizeLinear / dequantizeLinear left at an fp32 op becomes an XNNConvert

Anything that does not match stays as it was: fp32 nodes with WXQuantize around them (never a wrong
answer). The int8 semantics are those of XNNPACK's subgraph (see tools/INT8_CONTRACT.md and the reference
interpreter `xnn/reference_quant.py`); `report` warns when a graph with Q/DQ nodes stays mostly fp32."""

from __future__ import annotations

from ..ir import LGraph
from .borders import convert_borders, requantize_pairs
from .nodes import int8_nodes
from .params import quantized_values
from .report import warn_if_mostly_fp32
from .sink import sink_dequantize


def qdq(lg: LGraph) -> LGraph:
    qvals = quantized_values(lg)
    if qvals:
        sink_dequantize(lg, qvals)
        lg.remove_dead()
        requantize_pairs(lg, qvals)
        lg.remove_dead()
        int8_nodes(lg, qvals)
        lg.remove_dead()
        convert_borders(lg, qvals)
    warn_if_mostly_fp32(lg)
    return lg


__all__ = ["qdq"]
