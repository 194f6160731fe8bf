"""The fuse pass: bias adds into conv/FC, relu/clamp into output_min_max — and the cases where it must not."""

from __future__ import annotations

import numpy as np

from webxnn.compiler import compile_graph
from webxnn.dsl import parse
from webxnn.xnn import reference

INF = float("inf")
RNG = np.random.default_rng(7)


def _g(inputs: str, consts: str, nodes: str, outputs: str) -> str:
    return (
        f'webnn_graph "t" v1 {{ inputs {{ {inputs} }} consts {{ {consts} }} '
        f"nodes {{ {nodes} }} outputs {{ {outputs} }} }}"
    )


def _w(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _const(xg, vid: int) -> np.ndarray:
    v = xg.value(vid)
    return np.asarray(xg.constants[v.constant_buffer_idx]).reshape(v.dims)


CONV = ("x: f32[1, 3, 4, 4];", 'w: f32[5, 3, 3, 3] @weights("w"); b: f32[1, 5, 1, 1] @weights("b");')


def test_conv_bias_add_relu_is_one_node() -> None:
    w, b = _w(5, 3, 3, 3), _w(1, 5, 1, 1)
    xg = compile_graph(
        parse(_g(*CONV, "c = conv2d(x, w, padding=[1, 1, 1, 1]); a = add(c, b); r = relu(a);", "r;")),
        weights={"w": w, "b": b},
    )
    convs = [n for n in xg.nodes if n.kind == "XNNConv2d"]
    assert [n.kind for n in xg.nodes] == ["XNNStaticTranspose", "XNNConv2d", "XNNStaticTranspose"]
    assert convs[0].output_min_max == (0.0, INF)
    np.testing.assert_array_equal(_const(xg, convs[0].fields["bias_id"]), b.reshape(5))


def test_bias_adds_to_an_existing_bias_and_sub_negates() -> None:
    w, b, b2 = _w(5, 3, 3, 3), _w(1, 5, 1, 1), _w(5)
    consts = CONV[1] + ' b2: f32[5] @weights("b2");'
    xg = compile_graph(
        parse(
            _g(
                CONV[0],
                consts,
                "c = conv2d(x, w, bias=b2); s = sub(c, b); r = clamp(s, minValue=-1.0, maxValue=2.0);",
                "r;",
            )
        ),
        weights={"w": w, "b": b, "b2": b2},
    )
    conv = next(n for n in xg.nodes if n.kind == "XNNConv2d")
    assert len(xg.nodes) == 3 and conv.output_min_max == (-1.0, 2.0)
    np.testing.assert_allclose(_const(xg, conv.fields["bias_id"]), b2 - b.reshape(5), rtol=1e-6)


def test_matmul_add_becomes_fully_connected_with_bias() -> None:
    W, b = _w(8, 3), _w(3)
    xg = compile_graph(
        parse(
            _g(
                "x: f32[2, 8];",
                'W: f32[8, 3] @weights("W"); b: f32[3] @weights("b");',
                "m = matmul(x, W); y = add(b, m); r = relu(y);",
                "r;",
            )
        ),
        weights={"W": W, "b": b},
    )
    assert [n.kind for n in xg.nodes] == ["XNNFullyConnected"]
    fc = xg.nodes[0]
    # B [K, N] goes in untouched (no weight copy at compile time) with TRANSPOSE_WEIGHTS
    assert fc.output_min_max == (0.0, INF) and fc.fields["flags"] == 1
    np.testing.assert_array_equal(_const(xg, fc.fields["filter_id"]), W)
    x = _w(2, 8)
    np.testing.assert_allclose(
        reference.run(xg, {"x": x})["r"], np.maximum(x @ W + b, 0), rtol=1e-5, atol=1e-6
    )


def test_gemm_b_transpose_keeps_the_nk_weight_as_filter() -> None:
    W = _w(3, 8)  # [N, K], like torch's Linear
    xg = compile_graph(
        parse(_g("x: f32[2, 8];", 'W: f32[3, 8] @weights("W");', "y = gemm(x, W, bTranspose=true);", "y;")),
        weights={"W": W},
    )
    fc = next(n for n in xg.nodes if n.kind == "XNNFullyConnected")
    assert fc.fields["flags"] == 0
    np.testing.assert_array_equal(_const(xg, fc.fields["filter_id"]), W)
    x = _w(2, 8)
    np.testing.assert_allclose(reference.run(xg, {"x": x})["y"], x @ W.T, rtol=1e-5, atol=1e-6)


def test_no_fusion_when_the_producer_output_has_other_readers() -> None:
    w, b = _w(5, 3, 3, 3), _w(1, 5, 1, 1)
    xg = compile_graph(
        parse(_g(*CONV, "c = conv2d(x, w); a = add(c, b); r = relu(c);", "a; r;")), weights={"w": w, "b": b}
    )
    kinds = [n.kind for n in xg.nodes]
    assert "XNNAdd" in kinds and "XNNClamp" in kinds
    conv = next(n for n in xg.nodes if n.kind == "XNNConv2d")
    assert conv.output_min_max is None and conv.fields["bias_id"] == 0xFFFFFFFF


def test_no_fusion_into_a_graph_output_or_of_non_channel_constants() -> None:
    w = _w(5, 3, 3, 3)
    xg = compile_graph(
        parse(
            _g(
                CONV[0],
                CONV[1] + ' k: f32[2, 2] @weights("k");',
                "c = conv2d(x, w); r = relu(c); a = add(c, k);",
                "c; r; a;",
            )
        ),
        weights={"w": w, "b": _w(1, 5, 1, 1), "k": _w(2, 2)},
    )
    conv = next(n for n in xg.nodes if n.kind == "XNNConv2d")
    assert conv.output_min_max is None
    assert [n.kind for n in xg.nodes].count("XNNClamp") == 1


def test_relu_after_non_fusable_op_stays_a_clamp() -> None:
    xg = compile_graph(parse(_g("x: f32[2, 3];", "", "m = max(x, x); r = relu(m);", "r;")))
    assert [n.kind for n in xg.nodes] == ["XNNMaximum", "XNNClamp"]
    assert xg.nodes[1].output_min_max == (0.0, INF)


def test_clamp_fuses_into_add_and_disjoint_clamps_do_not_merge() -> None:
    xg = compile_graph(
        parse(
            _g(
                "x: f32[4]; y: f32[4];",
                "",
                "a = add(x, y); c = clamp(a, minValue=0.0, maxValue=1.0); "
                "d = clamp(c, minValue=2.0, maxValue=3.0);",
                "d;",
            )
        )
    )
    assert [n.kind for n in xg.nodes] == ["XNNAdd", "XNNClamp"]
    assert xg.nodes[0].output_min_max == (0.0, 1.0) and xg.nodes[1].output_min_max == (2.0, 3.0)


def test_batch_norm_after_conv_folds_into_filter_and_bias() -> None:
    w, b = _w(5, 3, 3, 3), _w(5)
    mean, var, scale, shift = _w(5), np.abs(_w(5)) + 0.5, _w(5), _w(5)
    consts = (
        'w: f32[5, 3, 3, 3] @weights("w"); b: f32[5] @weights("b"); m: f32[5] @weights("m"); '
        'v: f32[5] @weights("v"); s: f32[5] @weights("s"); t: f32[5] @weights("t");'
    )
    xg = compile_graph(
        parse(
            _g(
                "x: f32[1, 3, 4, 4];",
                consts,
                "c = conv2d(x, w, bias=b); n = batchNormalization(c, m, v, scale=s, bias=t, "
                "epsilon=0.001); r = relu(n);",
                "r;",
            )
        ),
        weights={"w": w, "b": b, "m": mean, "v": var, "s": scale, "t": shift},
    )
    assert [n.kind for n in xg.nodes] == ["XNNStaticTranspose", "XNNConv2d", "XNNStaticTranspose"]
    x = _w(1, 3, 4, 4)
    conv = np.einsum("oikl,nihwkl->nohw", w, np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3)))
    conv += b.reshape(1, 5, 1, 1)
    k = (scale / np.sqrt(var + 0.001)).reshape(1, 5, 1, 1)
    want = np.maximum((conv - mean.reshape(1, 5, 1, 1)) * k + shift.reshape(1, 5, 1, 1), 0)
    np.testing.assert_allclose(reference.run(xg, {"x": x})["r"], want, rtol=1e-5, atol=1e-5)


def test_batch_norm_with_computed_statistics_stays_elementwise() -> None:
    xg = compile_graph(
        parse(_g("x: f32[2, 3]; m: f32[3]; v: f32[3];", "", "n = batchNormalization(x, m, v, axis=1);", "n;"))
    )
    x, m, v = _w(2, 3), _w(3), np.abs(_w(3)) + 0.1
    got = reference.run(xg, {"x": x, "m": m, "v": v})["n"]
    np.testing.assert_allclose(got, (x - m) / np.sqrt(v + 1e-5), rtol=1e-5, atol=1e-6)


def test_linear_hard_sigmoid_reciprocal_decompose() -> None:
    xg = compile_graph(
        parse(
            _g(
                "x: f32[5];",
                "",
                "l = linear(x, alpha=2.0, beta=-1.0); "
                "h = hardSigmoid(x, alpha=0.3, beta=0.4); q = reciprocal(x);",
                "l; h; q;",
            )
        )
    )
    x = np.array([-3, -0.5, 0.25, 1, 4], np.float32)
    out = reference.run(xg, {"x": x})
    np.testing.assert_allclose(out["l"], 2 * x - 1, rtol=1e-6)
    np.testing.assert_allclose(out["h"], np.clip(0.3 * x + 0.4, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(out["q"], 1 / x, rtol=1e-6)
    hs = [n for n in xg.nodes if xg.metadata.node_sources[xg.nodes.index(n)] == "h:hardSigmoid"]
    assert [n.kind for n in hs] == ["XNNMultiply", "XNNAdd"] and hs[1].output_min_max == (0.0, 1.0)
