"""Each pass on its own: normalize, fold, decompose, select's error report, emit's externs and metadata,
and compile_graph's profile and weights handling."""

from __future__ import annotations

import numpy as np
import pytest

import webxnn
from webxnn.compiler import compile, compile_graph
from webxnn.dsl import parse
from webxnn.errors import UnsupportedError, WeightsError
from webxnn.lower import decompose, fold, normalize
from webxnn.ops import bind_all
from webxnn.xnn import reference
from webxnn.xnn.ir import FLAG_EXTERNAL_INPUT, FLAG_EXTERNAL_OUTPUT, INVALID_ID, Datatype


def _g(inputs: str, consts: str, nodes: str, outputs: str) -> str:
    return (
        f'webnn_graph "t" v1 {{ inputs {{ {inputs} }} consts {{ {consts} }} '
        f"nodes {{ {nodes} }} outputs {{ {outputs} }} }}"
    )


def _lg(text: str, weights=None):
    g = parse(text)
    return normalize(g, bind_all(g), weights)


# ---------------------------------------------------------------------------------------------- normalize


def test_normalize_moves_values_nodes_and_constants() -> None:
    lg = _lg(
        _g(
            "x: f32[2, 3];",
            'k: f32[3] @weights("k"); s: f32[] @scalar(2.5);',
            "a = add(x, k); m = mul(a, s);",
            "m;",
        ),
        {"k": np.arange(3, dtype=np.float32)},
    )
    assert lg.inputs == ["x"] and lg.outputs == [("m", "m")]
    assert [(n.kind, n.operands, n.src) for n in lg.nodes] == [
        ("add", {"a": "x", "b": "k"}, "a:add"),
        ("mul", {"a": "a", "b": "s"}, "m:mul"),
    ]
    assert lg.values["s"].const.shape == () and float(lg.values["s"].const) == 2.5
    np.testing.assert_array_equal(lg.values["k"].const, [0, 1, 2])


def test_normalize_rejects_wrong_weights() -> None:
    text = _g("x: f32[2, 3];", 'k: f32[3] @weights("k");', "a = add(x, k);", "a;")
    with pytest.raises(WeightsError, match="'k'"):
        _lg(text, {"k": np.zeros(4, np.float32)})
    with pytest.raises(WeightsError, match="'k'"):
        _lg(text, {})


# ---------------------------------------------------------------------------------------------- fold


def test_fold_evaluates_constant_subgraphs() -> None:
    lg = _lg(
        _g(
            "x: f32[2, 3];",
            'k: f32[3, 2] @weights("k"); s: f32[] @scalar(2.0);',
            "t = transpose(k); u = mul(t, s); v = relu(u); a = add(x, v);",
            "a;",
        ),
        {"k": np.array([[1, -2], [3, 4], [-5, 6]], np.float32)},
    )
    fold(lg)
    assert [n.kind for n in lg.nodes] == ["add"]
    np.testing.assert_array_equal(lg.values["v"].const, [[2, 6, 0], [0, 8, 12]])
    assert lg.values["v"].const.dtype == np.float32


# ---------------------------------------------------------------------------------------------- decompose


def test_gemm_decomposes_and_constant_scalings_fold_into_weights() -> None:
    b, c = np.ones((3, 4), np.float32), np.arange(4, dtype=np.float32)
    lg = _lg(
        _g(
            "a: f32[2, 3];",
            'b: f32[3, 4] @weights("b"); c: f32[4] @weights("c");',
            "y = gemm(a, b, c=c, alpha=3.0, beta=0.5);",
            "y;",
        ),
        {"b": b, "c": c},
    )
    decompose(lg)
    assert [n.kind for n in lg.nodes] == ["mul", "matmul", "mul", "add"]
    fold(lg)
    assert [n.kind for n in lg.nodes] == ["matmul", "add"]
    xg = compile_graph(
        parse(
            _g(
                "a: f32[2, 3];",
                'b: f32[3, 4] @weights("b"); c: f32[4] @weights("c");',
                "y = gemm(a, b, c=c, alpha=3.0, beta=0.5);",
                "y;",
            )
        ),
        weights={"b": b, "c": c},
    )
    assert [n.kind for n in xg.nodes] == ["XNNFullyConnected"]  # alpha in the filter, beta·c as the bias
    a = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(reference.run(xg, {"a": a})["y"], 3 * a @ b + 0.5 * c, rtol=1e-5)


def test_gemm_with_computed_operands_scales_the_product() -> None:
    text = _g(
        "a: f32[3, 2]; b: f32[4, 3]; c: f32[2, 4];",
        "",
        "y = gemm(a, b, c=c, alpha=2.0, beta=-1.0, aTranspose=true, bTranspose=true);",
        "y;",
    )
    xg = compile_graph(parse(text))
    assert [n.kind for n in xg.nodes].count("XNNBatchMatrixMultiply") == 1
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (4, 3), (2, 4)))
    np.testing.assert_allclose(
        reference.run(xg, {"a": a, "b": b, "c": c})["y"], 2 * a.T @ b.T - c, rtol=1e-5, atol=1e-6
    )


# ---------------------------------------------------------------------------------------------- select


def test_unsupported_nodes_are_all_named_at_once() -> None:
    text = _g(
        "a: i32[2, 2]; q: f32[4];",
        "s: f32[4] @scalar(0.5); z: i4[4] @scalar(0);",
        "m1 = matmul(a, a); m2 = matmul(m1, a); d = quantizeLinear(q, s, z); r = relu(q);",
        "m2; d; r;",
    )
    with pytest.raises(UnsupportedError) as info:
        compile_graph(parse(text))
    msg = str(info.value)
    assert "'m1' (matmul)" in msg and "'m2' (matmul)" in msg and "int32" in msg
    assert "'d' (quantizeLinear)" in msg and "int4" in msg


# ---------------------------------------------------------------------------------------------- emit


def test_externs_follow_declaration_order_and_metadata_names() -> None:
    text = _g("zeta: f32[2]; alpha: f32[2];", "", "s = add(zeta, alpha); d = sub(zeta, alpha);", "s; d;")
    xg = compile_graph(parse(text))
    assert xg.metadata.input_names == ["zeta", "alpha"] and xg.metadata.output_names == ["s", "d"]
    assert xg.metadata.producer == f"webxnn {webxnn.__version__}"
    assert xg.metadata.node_sources == ["s:add", "d:sub"]
    assert xg.num_externs == 4
    ext = {v.external_id: v for v in xg.values if v.external_id != INVALID_ID}
    assert [ext[i].flags for i in range(4)] == [FLAG_EXTERNAL_INPUT] * 2 + [FLAG_EXTERNAL_OUTPUT] * 2
    assert xg.input_ids == [ext[0].id, ext[1].id] and xg.output_ids == [ext[2].id, ext[3].id]
    assert all(
        v.external_id == INVALID_ID and v.flags == 0
        for v in xg.values
        if v.id not in (*xg.input_ids, *xg.output_ids)
    )


def test_outputs_that_are_inputs_constants_or_repeated_get_copies() -> None:
    text = _g("x: f32[2];", 'k: f32[2] @weights("k");', "r = relu(x);", "x; k; r;")
    g = parse(text)
    g.outputs["r2"] = "r"
    xg = compile_graph(g, weights={"k": np.array([1, 2], np.float32)})
    assert [n.kind for n in xg.nodes].count("XNNCopy") == 3
    out = reference.run(xg, {"x": np.array([-1, 3], np.float32)})
    np.testing.assert_array_equal(out["x"], [-1, 3])
    np.testing.assert_array_equal(out["k"], [1, 2])
    np.testing.assert_array_equal(out["r2"], [0, 3])


def test_constants_are_referenced_not_copied() -> None:
    W = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    k = np.ones((4, 3), np.float32)
    xg = compile_graph(
        parse(
            _g(
                "x: f32[4, 4];",
                'W: f32[4, 3] @weights("W"); k: f32[4, 3] @weights("k");',
                "m = matmul(x, W); y = mul(m, k);",
                "y;",
            )
        ),
        weights={"W": W, "k": k},
    )
    assert any(c is k for c in xg.constants)


# ---------------------------------------------------------------------------------------------- compiler


def test_executorch_profile_refuses_webxnn_datatypes() -> None:
    text = _g("x: u8[2, 3];", "", "r = reshape(x, newShape=[3, 2]);", "r;")
    assert compile_graph(parse(text)).values[0].datatype == Datatype.WX_UINT8
    with pytest.raises(UnsupportedError, match="executorch.*r:reshape.*WX_UINT8"):
        compile_graph(parse(text), profile="executorch")
    with pytest.raises(UnsupportedError, match="profile"):
        compile_graph(parse(text), profile="tflite")


def test_executorch_profile_accepts_plain_xnn_graphs() -> None:
    text = _g("x: f32[2, 3];", "", "r = relu(x);", "r;")
    assert compile_graph(parse(text), profile="executorch").nodes[0].kind == "XNNClamp"


def test_compile_returns_a_blob() -> None:
    pytest.importorskip("webxnn.xnn.writer")
    blob = compile(parse(_g("x: f32[2, 3];", "", "r = sigmoid(x);", "r;")))
    assert isinstance(blob, bytes) and blob[4:8] == b"XH00"


def test_autopad_same_upper_conv_and_pool() -> None:
    text = _g(
        "x: f32[1, 1, 5, 5];",
        'w: f32[1, 1, 2, 2] @weights("w");',
        'c = conv2d(x, w, strides=[2, 2], autoPad="same-upper"); '
        'p = maxPool2d(x, windowDimensions=[2, 2], strides=[2, 2], autoPad="same-lower");',
        "c; p;",
    )
    xg = compile_graph(parse(text), weights={"w": np.ones((1, 1, 2, 2), np.float32)})
    conv = next(n for n in xg.nodes if n.kind == "XNNConv2d")
    pool = next(n for n in xg.nodes if n.kind == "XNNMaxPooling2d")
    f, p = conv.fields, pool.fields
    assert (f["padding_top"], f["padding_bottom"], f["padding_left"], f["padding_right"]) == (0, 1, 0, 1)
    assert (p["padding_top"], p["padding_bottom"], p["padding_left"], p["padding_right"]) == (1, 0, 1, 0)
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    out = reference.run(xg, {"x": x})
    xp = np.pad(x[0, 0], ((0, 1), (0, 1)))
    want = [[xp[i : i + 2, j : j + 2].sum() for j in (0, 2, 4)] for i in (0, 2, 4)]
    np.testing.assert_allclose(out["c"][0, 0], want)
