"""The patterns pass (GELU, written-out layer norm, attention scale) and TRANSPOSE_B folding: each pattern is
fused and computes what numpy says, and near misses (a wrong constant, an extra reader) are left alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from webxnn.compiler import compile_graph
from webxnn.dsl import parse
from webxnn.xnn import reference

RNG = np.random.default_rng(11)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _g(inputs: str, consts: str, nodes: str, outputs: str) -> str:
    return (
        f'webnn_graph "t" v1 {{ inputs {{ {inputs} }} consts {{ {consts} }} '
        f"nodes {{ {nodes} }} outputs {{ {outputs} }} }}"
    )


def _w(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _kinds(xg) -> list[str]:
    return [n.kind for n in xg.nodes]


def _gelu(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


# ---------------------------------------------------------------------------------------------- GELU

GELU_CONSTS = (
    "r2: f32[] @scalar(1.4142135); ir2: f32[] @scalar(0.70710677); one: f32[] @scalar(1.0); "
    "half: f32[] @scalar(0.5);"
)
GELU_FORMS = {
    # torch's export: ((x · (erf(x / √2) + 1)) · 0.5
    "torch": "d = div(x, r2); e = erf(d); p = add(e, one); m = mul(x, p); y = mul(m, half);",
    # 0.5 first, mul by 1/√2, the constant on the left
    "half_first": "d = mul(ir2, x); e = erf(d); p = add(one, e); h = mul(x, half); y = mul(p, h);",
    # (p · 0.5) · x
    "p_half": "d = div(x, r2); e = erf(d); p = add(e, one); m = mul(half, p); y = mul(x, m);",
}


@pytest.mark.parametrize("form", sorted(GELU_FORMS))
def test_erf_gelu_becomes_one_gelu(form: str) -> None:
    xg = compile_graph(parse(_g("x: f32[2, 5, 7];", GELU_CONSTS, GELU_FORMS[form], "y;")))
    assert _kinds(xg) == ["XNNGelu"]
    x = _w(2, 5, 7) * 3
    np.testing.assert_allclose(reference.run(xg, {"x": x})["y"], _gelu(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "nodes",
    [
        # √3 instead of √2
        "d = div(x, r3); e = erf(d); p = add(e, one); m = mul(x, p); y = mul(m, half);",
        # 0.6 instead of 0.5
        "d = div(x, r2); e = erf(d); p = add(e, one); m = mul(x, p); y = mul(m, k6);",
        # multiplied by another tensor than the erf's input
        "d = div(x, r2); e = erf(d); p = add(e, one); m = mul(z, p); y = mul(m, half);",
    ],
)
def test_gelu_near_misses_stay(nodes: str) -> None:
    consts = GELU_CONSTS + " r3: f32[] @scalar(1.7320508); k6: f32[] @scalar(0.6);"
    xg = compile_graph(parse(_g("x: f32[2, 5]; z: f32[2, 5];", consts, nodes, "y;")))
    assert "XNNGelu" not in _kinds(xg)
    x, z = _w(2, 5), _w(2, 5)
    got = reference.run(xg, {"x": x, "z": z})["y"]
    env = {"x": x.astype(np.float64), "z": z.astype(np.float64)}
    r2 = 1.7320508 if "r3" in nodes else math.sqrt(2.0)
    k = 0.6 if "k6" in nodes else 0.5
    left = env["z"] if "mul(z" in nodes else env["x"]
    np.testing.assert_allclose(got, left * (1 + _erf(env["x"] / r2)) * k, rtol=1e-5, atol=1e-6)


def test_gelu_with_an_intermediate_read_elsewhere_is_not_fused() -> None:
    nodes = GELU_FORMS["torch"] + " w = add(p, one);"
    xg = compile_graph(parse(_g("x: f32[3, 4];", GELU_CONSTS, nodes, "y; w;")))
    assert "XNNGelu" not in _kinds(xg)
    x = _w(3, 4)
    out = reference.run(xg, {"x": x})
    np.testing.assert_allclose(out["y"], _gelu(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["w"], 2 + _erf(x / math.sqrt(2.0)), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- layer norm

LN_CONSTS = (
    "two: f32[] @scalar(2.0); eps: f32[] @scalar(0.00001); one: f32[] @scalar(1.0); "
    'g: f32[8] @weights("g"); b: f32[8] @weights("b");'
)
LN_HEAD = "m = reduceMean(x, axes=[2], keepDimensions=true); d = sub(x, m); "
LN_FORMS = {
    "pow_div_affine": LN_HEAD + "s = pow(d, two); v = reduceMean(s, axes=[2], keepDimensions=true); "
    "ve = add(v, eps); sd = sqrt(ve); n = div(d, sd); gn = mul(n, g); y = add(gn, b);",
    "square_recip": LN_HEAD + "s = mul(d, d); v = reduceMean(s, axes=[2], keepDimensions=true); "
    "ve = add(eps, v); sd = sqrt(ve); r = div(one, sd); n = mul(d, r); gn = mul(g, n); "
    "y = add(b, gn);",
    "plain": LN_HEAD + "s = pow(d, two); v = reduceMean(s, axes=[2], keepDimensions=true); "
    "ve = add(v, eps); sd = sqrt(ve); y = div(d, sd);",
}


def _layer_norm(x: np.ndarray, g: np.ndarray | None, b: np.ndarray | None, eps: float = 1e-5) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.mean(axis=-1, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(axis=-1, keepdims=True) + eps)
    if g is not None:
        y = y * g
    return y if b is None else y + b


@pytest.mark.parametrize("form", sorted(LN_FORMS))
def test_written_out_layer_norm_becomes_normalize(form: str) -> None:
    g, b = _w(8), _w(8)
    xg = compile_graph(
        parse(_g("x: f32[2, 3, 8];", LN_CONSTS, LN_FORMS[form], "y;")), weights={"g": g, "b": b}
    )
    assert _kinds(xg) == ["WXNormalize"]
    x = _w(2, 3, 8) * 2 + 1
    affine = form != "plain"
    want = _layer_norm(x, g if affine else None, b if affine else None)
    np.testing.assert_allclose(reference.run(xg, {"x": x})["y"], want, rtol=1e-4, atol=1e-5)


def test_layer_norm_near_misses_stay() -> None:
    g, b = _w(8), _w(8)
    # the square is a cube: not a variance
    cube = LN_FORMS["pow_div_affine"].replace("pow(d, two)", "pow(d, three)")
    xg = compile_graph(
        parse(
            _g(
                "x: f32[2, 8];",
                LN_CONSTS + " three: f32[] @scalar(3.0);",
                cube.replace("axes=[2]", "axes=[1]"),
                "y;",
            )
        ),
        weights={"g": g, "b": b},
    )
    assert "WXNormalize" not in _kinds(xg)
    # the centred value is also a graph output
    nodes = LN_FORMS["plain"].replace("axes=[2]", "axes=[1]")
    xg = compile_graph(parse(_g("x: f32[2, 8];", LN_CONSTS, nodes, "y; d;")), weights={"g": g, "b": b})
    assert "WXNormalize" not in _kinds(xg)
    x = _w(2, 8)
    out = reference.run(xg, {"x": x})
    np.testing.assert_allclose(out["y"], _layer_norm(x, None, None), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["d"], x - x.mean(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)
    # the two means reduce over different axes
    nodes = LN_FORMS["plain"].replace("v = reduceMean(s, axes=[2]", "v = reduceMean(s, axes=[1]")
    xg = compile_graph(parse(_g("x: f32[2, 3, 8];", LN_CONSTS, nodes, "y;")), weights={"g": g, "b": b})
    assert "WXNormalize" not in _kinds(xg)


def test_layer_norm_gamma_that_varies_off_the_axes_is_not_absorbed() -> None:
    g, b = _w(8), _w(8)
    consts = LN_CONSTS + ' g3: f32[3, 1] @weights("g3");'
    nodes = LN_FORMS["plain"].replace("y = div(d, sd);", "n = div(d, sd); y = mul(n, g3);")
    g3 = _w(3, 1)
    xg = compile_graph(parse(_g("x: f32[2, 3, 8];", consts, nodes, "y;")), weights={"g": g, "b": b, "g3": g3})
    assert _kinds(xg) == ["WXNormalize", "XNNMultiply"]
    x = _w(2, 3, 8)
    np.testing.assert_allclose(
        reference.run(xg, {"x": x})["y"], _layer_norm(x, None, None) * g3, rtol=1e-4, atol=1e-5
    )


# ---------------------------------------------------------------------------------------------- attention

S, H, NH = 5, 8, 2
DH = H // NH
ATT_INPUTS = "x: f32[1, 5, 8];"
ATT_CONSTS = (
    'wq: f32[8, 8] @weights("wq"); bq: f32[8] @weights("bq"); wk: f32[8, 8] @weights("wk"); '
    'bk: f32[8] @weights("bk"); sc: f32[] @scalar(2.0);'
)
HEADS = (
    "q0 = matmul(x, wq); q1 = add(bq, q0); q2 = reshape(q1, newShape=[1, 5, 2, 4]); "
    "q = transpose(q2, permutation=[0, 2, 1, 3]); "
    "k0 = matmul(x, wk); k1 = add(k0, bk); k2 = reshape(k1, newShape=[1, 5, 2, 4]); "
)


def _att_weights() -> dict[str, np.ndarray]:
    return {"wq": _w(H, H), "bq": _w(H), "wk": _w(H, H), "bk": _w(H)}


def _att_want(x: np.ndarray, w: dict[str, np.ndarray], scale: float) -> np.ndarray:
    x = x.astype(np.float64)
    q = (x @ w["wq"] + w["bq"]).reshape(1, S, NH, DH).transpose(0, 2, 1, 3)
    k = (x @ w["wk"] + w["bk"]).reshape(1, S, NH, DH).transpose(0, 2, 1, 3)
    return (q @ k.transpose(0, 1, 3, 2)) * scale


@pytest.mark.parametrize(
    "kt",
    [
        # torch: one transpose [0, 2, 3, 1] of the reshaped K
        "kt = transpose(k2, permutation=[0, 2, 3, 1]);",
        # two steps: heads first, then swap the last two dims
        "k = transpose(k2, permutation=[0, 2, 1, 3]); kt = transpose(k, permutation=[0, 1, 3, 2]);",
    ],
)
def test_attention_scale_folds_into_q_and_k_transpose_becomes_a_flag(kt: str) -> None:
    w = _att_weights()
    nodes = HEADS + kt + " s = matmul(q, kt); y = div(s, sc);"
    xg = compile_graph(parse(_g(ATT_INPUTS, ATT_CONSTS, nodes, "y;")), weights=w)
    kinds = _kinds(xg)
    assert "XNNDiv" not in kinds and "XNNMultiply" not in kinds
    bmm = next(n for n in xg.nodes if n.kind == "XNNBatchMatrixMultiply")
    assert bmm.fields["flags"] & 1
    # the only transposes left keep the innermost dim (row copies: the heads split)
    for n in xg.nodes:
        if n.kind == "XNNStaticTranspose":
            assert n.fields["perm"][-1] == len(n.fields["perm"]) - 1
    x = _w(1, S, H)
    np.testing.assert_allclose(reference.run(xg, {"x": x})["y"], _att_want(x, w, 0.5), rtol=1e-4, atol=1e-5)


def test_bmm_of_a_plain_last_two_swap_reads_the_source_directly() -> None:
    xg = compile_graph(
        parse(
            _g(
                "a: f32[2, 3, 4]; b: f32[2, 5, 4];",
                "",
                "bt = transpose(b, permutation=[0, 2, 1]); y = matmul(a, bt);",
                "y;",
            )
        )
    )
    assert _kinds(xg) == ["XNNBatchMatrixMultiply"] and xg.nodes[0].fields["flags"] == 1
    a, b = _w(2, 3, 4), _w(2, 5, 4)
    np.testing.assert_allclose(
        reference.run(xg, {"a": a, "b": b})["y"], a @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-6
    )


def test_transposed_b_read_elsewhere_keeps_its_transpose() -> None:
    xg = compile_graph(
        parse(
            _g(
                "a: f32[1, 2, 3, 4]; b: f32[1, 5, 2, 4];",
                "",
                "bt = transpose(b, permutation=[0, 2, 3, 1]); y = matmul(a, bt); z = relu(bt);",
                "y; z;",
            )
        )
    )
    bmm = next(n for n in xg.nodes if n.kind == "XNNBatchMatrixMultiply")
    assert bmm.fields["flags"] == 0
    a, b = _w(1, 2, 3, 4), _w(1, 5, 2, 4)
    out = reference.run(xg, {"a": a, "b": b})
    np.testing.assert_allclose(out["y"], a @ b.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_scale_of_a_product_of_q_with_itself_is_not_folded() -> None:
    wq, bq = _w(4, 4), _w(4)
    consts = 'wq: f32[4, 4] @weights("wq"); bq: f32[4] @weights("bq"); sc: f32[] @scalar(2.0);'
    nodes = "q0 = matmul(x, wq); q = add(q0, bq); s = matmul(q, q); y = mul(s, sc);"
    xg = compile_graph(parse(_g("x: f32[1, 4, 4];", consts, nodes, "y;")), weights={"wq": wq, "bq": bq})
    assert "XNNMultiply" in _kinds(xg)
    x = _w(1, 4, 4)
    q = x.astype(np.float64) @ wq + bq
    np.testing.assert_allclose(reference.run(xg, {"x": x})["y"], q @ q * 2.0, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "case", ["q_read_elsewhere", "heads_read_elsewhere", "not_scalar", "q_computed_weights"]
)
def test_attention_scale_near_misses_stay(case: str) -> None:
    w = _att_weights()
    consts, nodes, outs = ATT_CONSTS, HEADS + "kt = transpose(k2, permutation=[0, 2, 3, 1]); ", "y;"
    inputs = ATT_INPUTS
    scale: float | np.ndarray = 0.5
    if case == "q_read_elsewhere":
        nodes += "s = matmul(q, kt); y = div(s, sc);"
        outs = "y; q1; k1;"  # both projections are read elsewhere: neither may be scaled
    elif case == "heads_read_elsewhere":  # the matmul's own operands are graph outputs too
        nodes += "s = matmul(q, kt); y = div(s, sc);"
        outs = "y; q; kt;"
    elif case == "not_scalar":
        consts += ' sv: f32[5] @weights("sv");'
        w["sv"] = _w(S)
        scale = w["sv"].astype(np.float64)
        nodes += "s = matmul(q, kt); y = mul(s, sv);"
    else:  # the scale is folded into the K side (constant weights), never into a computed matrix
        inputs = "x: f32[1, 5, 8]; wx: f32[8, 8];"
        nodes = nodes.replace("matmul(x, wq)", "matmul(x, wx)") + "s = matmul(q, kt); y = div(s, sc);"
    xg = compile_graph(parse(_g(inputs, consts, nodes, outs)), weights=w)
    x = _w(1, S, H)
    feeds = {"x": x}
    if case == "q_computed_weights":
        feeds["wx"] = w["wq"]
        xg_kinds = _kinds(xg)
        assert "XNNDiv" not in xg_kinds  # K's projection took it
    else:
        assert {"XNNDiv", "XNNMultiply"} & set(_kinds(xg))
    out = reference.run(xg, feeds)
    np.testing.assert_allclose(out["y"], _att_want(x, w, 1.0) * scale, rtol=1e-4, atol=1e-5)
    if case == "q_read_elsewhere":
        np.testing.assert_allclose(out["q1"], x @ w["wq"] + w["bq"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out["k1"], x @ w["wk"] + w["bk"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale", [2.0, 3.0])
def test_fp16_weights_scaled_by_a_power_of_two_stay_half_size(scale: float) -> None:
    w = {k: v.astype(np.float16) for k, v in _att_weights().items()}
    f16 = ATT_CONSTS.replace("f32", "f16").replace("@scalar(2.0)", f"@scalar({scale})")
    nodes = HEADS + "kt = transpose(k2, permutation=[0, 2, 3, 1]); s = matmul(q, kt); y = div(s, sc);"
    xg = compile_graph(parse(_g("x: f16[1, 5, 8];", f16, nodes, "y;")), weights=w)
    assert "XNNDiv" not in _kinds(xg)
    half_weights = [
        v for v in xg.values if v.datatype.name == "FP16" and v.dims == [H, H] and v.constant_buffer_idx
    ]
    # Wk is untouched; Wq/2 is still exactly fp16, Wq/3 is not (stored as fp32)
    assert len(half_weights) == (2 if scale == 2.0 else 1)
    x = _w(1, S, H).astype(np.float16)
    want = _att_want(x.astype(np.float32), {k: v.astype(np.float32) for k, v in w.items()}, 1 / scale)
    got = reference.run(xg, {"x": x})["y"].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
