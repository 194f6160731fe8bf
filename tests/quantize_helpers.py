"""Helpers shared by the weight-quantization tests (equalization, bias correction): running a float32
Graph over a batch of inputs, fake-quantizing its layers' weights, and the output SNR."""

from __future__ import annotations

import numpy as np

import webxnn
from webxnn.graph import Graph
from webxnn.quantize.accuracy import snr_db
from webxnn.quantize.layers import clone_graph, find_layers


def run_all(g: Graph, xs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Every output of `g` (one input) over the inputs `xs`, single-threaded, with a leading axis: the run."""
    prog = webxnn.load(webxnn.compile(g), threads=1)
    name = next(iter(g.inputs))
    outs = [prog.run({name: x}) for x in xs]
    return {k: np.stack([o[k] for o in outs]) for k in outs[0]}


def fake_quant_weights(g: Graph, per_channel: bool, bits: int = 8) -> Graph:
    """`g` with the weights of every conv / gemm / matmul symmetrically quantized and dequantized, per
    tensor or per output channel: what int8 weights would compute, in fp32."""
    g = clone_graph(g)
    q = 2 ** (bits - 1) - 1
    for layer in find_layers(g)[0]:
        w = np.asarray(g.const_array(layer.weight), dtype=np.float32)
        axes = tuple(i for i in range(w.ndim) if i != layer.channel_axis) if per_channel else None
        m = np.abs(w).max(axis=axes, keepdims=True)
        s = np.where(m > 0, m / q, 1.0)
        g.weights[layer.weight] = (np.clip(np.round(w / s), -q, q) * s).astype(np.float32)
    return g


def output_snr_db(want: np.ndarray, got: np.ndarray) -> float:
    """accuracy.snr_db of `got` against `want` (summed squares in float64)."""
    want, got = want.astype(np.float64), got.astype(np.float64)
    return snr_db(float((want**2).sum()), float(((want - got) ** 2).sum()))
