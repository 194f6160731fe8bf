"""Bias correction (Nagel et al. 2019, section 4.2; AIMET's empirical variant): quantizing a layer's weights
W to W_q shifts its expected output by (W_q - W) E[x], a per-output-channel offset that per-tensor rounding
makes systematic. Subtracting it from the bias removes the mean error; the calibration data gives E[x].

For a conv the shift of output channel o is sum over its input channels i and filter taps (h, w) of
(W_q - W)[o, i, h, w] * E[x_i]: every tap is taken to see the channel mean. Taps that fall on zero padding
see 0 instead, so near the borders the correction is approximate (exact for 1x1 convs, gemm and matmul).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import numpy as np

from ..errors import ValidationError
from ..graph import Graph
from .layers import Layer, clone_graph, drop_unused_consts, find_layers, owned_consts


def weight_shift(layer: Layer, w: np.ndarray, w_q: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """(W_q - W) E[x] per output channel, float64; `w`, `w_q` in the stored layout, `mean` per input
    channel."""
    d = layer.canonical(w_q) - layer.canonical(w)  # [O, I/groups, kh, kw]
    o, ig = d.shape[:2]
    per_out = mean.reshape(layer.groups, ig)[np.arange(o) // (o // layer.groups)]  # [O, I/groups]
    return layer.alpha * (d.sum(axis=(2, 3)) * per_out).sum(axis=1)


def correct_biases(
    graph: Graph,
    input_means: Mapping[str, np.ndarray],
    fake_quant: Callable[[np.ndarray, int], np.ndarray],
    only: Collection[str] | None = None,
) -> Graph:
    """A copy of `graph` whose conv2d / gemm / matmul layers with constant weights, if their input operand
    is a key of `input_means` (its per-input-channel mean over the calibration data), have their bias
    (added where absent: conv `bias`, gemm `c`, an `add` after a matmul) reduced by (W_q - W) E[x], W_q being
    `fake_quant(W, channel_axis)` (W in its stored layout, channel_axis its output-channel axis). `only`: the
    node ids to correct (the layers that get int8 weights; default all): a layer left fp32 keeps its bias
    even when it reads the same input as a quantized one."""
    g = clone_graph(graph)
    layers, _, counts = find_layers(g)
    owned = owned_consts(layers, counts)
    for layer in layers:
        if layer.input not in input_means or (only is not None and layer.node.id not in only):
            continue
        where = f"correct_biases: node {layer.node.id!r} ({layer.op})"
        w = np.asarray(g.const_array(layer.weight))
        c_in = layer.canonical(w).shape[1] * layer.groups
        mean = np.asarray(input_means[layer.input], dtype=np.float64).reshape(-1)
        if mean.size != c_in:
            raise ValidationError(
                f"{where}: input_means[{layer.input!r}] has {mean.size} values, the layer has {c_in} "
                "input channels"
            )
        if not np.all(np.isfinite(mean)):
            raise ValidationError(f"{where}: input_means[{layer.input!r}] is not finite")
        w_q = np.asarray(fake_quant(w, layer.channel_axis))
        if w_q.shape != w.shape:
            raise ValidationError(
                f"{where}: fake_quant returned shape {list(w_q.shape)} for weights {list(w.shape)}"
            )
        shift = weight_shift(layer, w, w_q, mean)
        if np.any(shift):
            layer.set_bias(g, layer.bias_array(g) - shift, owned)
    drop_unused_consts(g)
    return g
