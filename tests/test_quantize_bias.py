"""Bias correction (webxnn.quantize.bias): with coarsely fake-quantized weights, the per-channel mean output
error on the calibration inputs shrinks once biases are corrected by -(W_q - W) E[x]; exactly to zero for
layers without padding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from quantize_helpers import fake_quant_weights
from quantize_helpers import run_all as run
from webxnn.errors import ValidationError
from webxnn.graph import Const, ConstInit, Graph, Node, Operand
from webxnn.quantize.bias import correct_biases
from webxnn.quantize.layers import clone_graph, find_layers


def coarse(w: np.ndarray, axis: int) -> np.ndarray:
    """The fake_quant given to correct_biases: 3-bit symmetric per-tensor quantize-dequantize."""
    s = float(np.abs(w).max()) / 3
    return (np.clip(np.round(w / s), -3, 3) * s).astype(np.float32)


def graph(
    nodes: list[tuple[str, str, list[str], dict[str, Any]]],
    consts: dict[str, np.ndarray],
    x_shape: list[int],
    outputs: list[str],
) -> Graph:
    g = Graph(name="t", inputs={"x": Operand("x", "float32", x_shape)})
    for name, arr in consts.items():
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        g.consts[name] = Const(name, "float32", list(arr.shape), ConstInit("weights", ref=name))
        g.weights[name] = arr
    g.nodes = [Node(nid, op, ins, opts) for nid, op, ins, opts in nodes]
    g.outputs = {o: o for o in outputs}
    return g


def channel_means(v: np.ndarray, axis: int) -> np.ndarray:
    """Mean over the runs (axis 0) and every axis of one run's value but `axis`."""
    keep = 1 + axis % (v.ndim - 1)
    return v.mean(axis=tuple(i for i in range(v.ndim) if i != keep))


def quantized(g: Graph) -> Graph:
    """3-bit symmetric per-tensor quantize-dequantize of every layer's weights: error large enough to shift
    the means."""
    return fake_quant_weights(g, per_channel=False, bits=3)


def mean_errors(g: Graph, gq: Graph, xs: list[np.ndarray], values: dict[str, int]) -> dict[str, np.ndarray]:
    """Per-channel mean of (quantized - fp32) of each value, channel axis given."""
    g, gq = clone_graph(g), clone_graph(gq)
    g.outputs = gq.outputs = {v: v for v in values}
    want = run(g, xs)
    got = run(gq, xs)
    return {v: channel_means(got[v] - want[v], ax) for v, ax in values.items()}


def input_means_of(g: Graph, xs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """E[x] per input channel of every layer's input, from the fp32 graph."""
    layers = find_layers(g)[0]
    probe = clone_graph(g)
    probe.outputs = {layer.input: layer.input for layer in layers if layer.input != "x"}
    probe.outputs["keep"] = next(iter(g.outputs.values()))
    vals = run(probe, xs) if len(probe.outputs) > 1 else {}
    vals["x"] = np.stack(xs)
    return {layer.input: channel_means(vals[layer.input], layer.input_axis) for layer in layers}


def test_conv_chain_mean_error_shrinks() -> None:
    rng = np.random.default_rng(0)
    consts = {
        "w0": rng.standard_normal((16, 6, 3, 3)) * 0.3,
        "b0": rng.standard_normal(16),
        "w1": rng.standard_normal((16, 1, 3, 3)),  # depthwise, no bias: one is added
        "w2": rng.standard_normal((5, 16, 1, 1)) * 0.3,
        "b2": rng.standard_normal(5),
    }
    nodes = [
        ("c0", "conv2d", ["x", "w0", "b0"], {"padding": [1, 1, 1, 1]}),
        ("r0", "relu", ["c0"], {}),
        ("c1", "conv2d", ["r0", "w1"], {"padding": [1, 1, 1, 1], "groups": 16}),
        ("r1", "relu", ["c1"], {}),
        ("c2", "conv2d", ["r1", "w2"], {"bias": "b2"}),
    ]
    g = graph(nodes, consts, [1, 6, 12, 12], ["c2"])
    xs = [(rng.standard_normal((1, 6, 12, 12)) + 1.0).astype(np.float32) for _ in range(8)]
    means = input_means_of(g, xs)
    gq = quantized(g)
    gc = correct_biases(g, means, coarse)
    assert "bias" in gc.nodes[2].options  # the depthwise conv got one
    gcq = quantized(gc)
    values = {"c0": 1, "c1": 1, "c2": 1}
    before = mean_errors(g, gq, xs, values)
    after = mean_errors(g, gcq, xs, values)
    # the first conv sees the true E[x]: only the padded border is off
    assert np.abs(after["c0"]).mean() < 0.25 * np.abs(before["c0"]).mean()
    assert np.abs(after["c2"]).mean() < 0.5 * np.abs(before["c2"]).mean()
    assert g.nodes[2].options == {"padding": [1, 1, 1, 1], "groups": 16}  # the input graph is untouched


def test_exact_without_padding_nhwc_gemm_matmul() -> None:
    rng = np.random.default_rng(1)
    consts = {
        "w0": rng.standard_normal((1, 1, 7, 9)),  # hwio 1x1 conv, nhwc
        "wg": rng.standard_normal((4, 9)),  # gemm, b transposed, no c
        "wm": rng.standard_normal((4, 3)),  # matmul, no bias: an add is inserted
    }
    nodes = [
        ("c0", "conv2d", ["x", "w0"], {"filterLayout": "hwio", "inputLayout": "nhwc"}),
        ("flat", "reshape", ["c0"], {"newShape": [8, 9]}),
        ("flatT", "transpose", ["flat"], {}),  # gemm reads it back with aTranspose: channels on axis 0
        ("g1", "gemm", ["flatT", "wg"], {"aTranspose": True, "bTranspose": True, "alpha": 0.5}),
        ("m2", "matmul", ["g1", "wm"], {}),
    ]
    g = graph(nodes, consts, [2, 2, 2, 7], ["m2"])
    xs = [(rng.standard_normal((2, 2, 2, 7)) + 2.0).astype(np.float32) for _ in range(4)]
    means = input_means_of(g, xs)
    gc = correct_biases(g, means, coarse)
    assert [n.op for n in gc.nodes] == ["conv2d", "reshape", "transpose", "gemm", "matmul", "add"]
    assert gc.nodes[-1].id == "m2"  # consumers and outputs keep reading the same name
    values = {"c0": 3, "g1": 1, "m2": 1}
    before = mean_errors(g, quantized(g), xs, values)
    after = mean_errors(g, quantized(gc), xs, values)
    for v in values:
        assert np.abs(before[v]).max() > 1e-2
        np.testing.assert_allclose(after[v], 0, atol=2e-5 * np.abs(before[v]).max() + 1e-5)


def test_bad_means_and_fake_quant_are_named() -> None:
    rng = np.random.default_rng(2)
    g = graph(
        [("c0", "conv2d", ["x", "w0"], {})], {"w0": rng.standard_normal((3, 4, 1, 1))}, [1, 4, 2, 2], ["c0"]
    )
    with pytest.raises(ValidationError, match=r"c0.*input_means\['x'\] has 3 values.*4 input channels"):
        correct_biases(g, {"x": np.zeros(3)}, coarse)
    with pytest.raises(ValidationError, match="not finite"):
        correct_biases(g, {"x": np.array([0, 1, np.nan, 0])}, coarse)
    with pytest.raises(ValidationError, match="fake_quant returned shape"):
        correct_biases(g, {"x": np.zeros(4)}, lambda w, axis: w[:1])
    assert correct_biases(g, {}, coarse).nodes == g.nodes  # nothing calibrated: nothing changes
