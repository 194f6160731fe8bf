"""The bundled example (`webxnn demo`) computes what numpy, written out straightforwardly here, computes."""

from __future__ import annotations

import numpy as np

import webxnn
from webxnn.demo import EXAMPLE


def _conv2d_nchw(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            window = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", window, w)
    return out + b[None, :, None, None]


def _max_pool_2x2(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def test_tiny_cnn_matches_numpy() -> None:
    graph = webxnn.load_graph(EXAMPLE)
    weights = {name: graph.const_array(name).astype(np.float64) for name in graph.consts}
    x = np.random.default_rng(7).standard_normal((1, 3, 32, 32)).astype(np.float32)

    h = np.maximum(_conv2d_nchw(x.astype(np.float64), weights["conv1_w"], weights["conv1_b"], 1, 1), 0)
    h = _max_pool_2x2(h)
    h = np.maximum(_conv2d_nchw(h, weights["conv2_w"], weights["conv2_b"], 2, 1), 0)
    h = h.mean(axis=(2, 3)).reshape(1, 16)
    logits = h @ weights["fc_w"] + weights["fc_b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)

    for threads in (1, 2):
        out = webxnn.load(webxnn.compile(graph), threads=threads).run({"x": x})["probs"]
        assert out.shape == (1, 10) and out.dtype == np.float32
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-5)


def test_inspect_executorch_payload_prints_nodes(conformance_dir, capsys) -> None:
    from webxnn.cli import main

    assert main(["inspect", str(conformance_dir / "executorch" / "conv_relu_nchw_v05.xnn")]) == 0
    out = capsys.readouterr().out
    assert "XNNStaticTranspose" in out and "XNNConv2d" in out and "XN01" in out
