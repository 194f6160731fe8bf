"""The layout pass: NHWC regions with transposes only at their borders."""

from __future__ import annotations

import numpy as np

from webxnn.compiler import compile_graph
from webxnn.dsl import parse
from webxnn.xnn import reference


def _kinds(xg) -> list[str]:
    return [n.kind for n in xg.nodes]


def _chain(n: int, layout: str = "nchw") -> tuple[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    shape = "[1, 4, 6, 6]" if layout == "nchw" else "[1, 6, 6, 4]"
    consts, nodes, weights = [], [], {}
    prev = "x"
    for i in range(n):
        w = (rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32)
        if layout == "nchw":
            consts.append(f'w{i}: f32[4, 4, 3, 3] @weights("w{i}");')
            weights[f"w{i}"] = w
            opt = ""
        else:
            consts.append(f'w{i}: f32[4, 3, 3, 4] @weights("w{i}");')
            weights[f"w{i}"] = np.ascontiguousarray(w.transpose(0, 2, 3, 1))
            opt = ', inputLayout="nhwc", filterLayout="ohwi"'
        nodes.append(f"c{i} = conv2d({prev}, w{i}, padding=[1, 1, 1, 1]{opt});")
        nodes.append(f"r{i} = relu(c{i});")
        prev = f"r{i}"
    text = (
        f'webnn_graph "chain" v1 {{ inputs {{ x: f32{shape}; }} consts {{ {" ".join(consts)} }} '
        f"nodes {{ {' '.join(nodes)} }} outputs {{ {prev}; }} }}"
    )
    return text, weights


def test_conv_relu_chain_has_exactly_two_transposes() -> None:
    text, weights = _chain(10)
    xg = compile_graph(parse(text), weights=weights)
    kinds = _kinds(xg)
    assert kinds.count("XNNStaticTranspose") == 2
    assert kinds[0] == kinds[-1] == "XNNStaticTranspose"
    assert kinds.count("XNNConv2d") == 10 and "XNNClamp" not in kinds  # relus fused
    assert xg.nodes[0].fields["perm"] == [0, 2, 3, 1] and xg.nodes[-1].fields["perm"] == [0, 3, 1, 2]
    assert all(n.output_min_max == (0.0, float("inf")) for n in xg.nodes if n.kind == "XNNConv2d")
    # physical dims of the values inside the region are NHWC
    conv_out = xg.value(xg.nodes[1].fields["output_id"])
    assert conv_out.dims == [1, 6, 6, 4]


def test_nhwc_input_layout_needs_no_transposes() -> None:
    text, weights = _chain(3, "nhwc")
    xg = compile_graph(parse(text), weights=weights)
    assert "XNNStaticTranspose" not in _kinds(xg)


def test_value_read_inside_and_outside_the_region_converts_once() -> None:
    # c0 is a graph output (NCHW) and also feeds the next conv (NHWC): one transpose back, none forward
    text = (
        'webnn_graph "t" v1 { inputs { x: f32[1, 2, 5, 5]; } '
        'consts { w: f32[2, 2, 3, 3] @weights("w"); } '
        "nodes { c0 = conv2d(x, w, padding=[1, 1, 1, 1]); c1 = conv2d(c0, w, padding=[1, 1, 1, 1]); "
        "r = reshape(c0, newShape=[2, 25]); } outputs { c0; c1; r; } }"
    )
    w = np.random.default_rng(1).standard_normal((2, 2, 3, 3)).astype(np.float32)
    xg = compile_graph(parse(text), weights={"w": w})
    kinds = _kinds(xg)
    # in: 1, back for c0 (shared by the output and the reshape): 1, back for c1: 1
    assert kinds.count("XNNStaticTranspose") == 3
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    out = reference.run(xg, {"x": x})
    assert out["c0"].shape == (1, 2, 5, 5) and out["r"].shape == (2, 25)
    np.testing.assert_allclose(out["r"], out["c0"].reshape(2, 25))


def test_elementwise_with_lower_rank_computed_operand_leaves_the_region() -> None:
    # add(conv_out, y[5]) where y is a computed rank-1 value: the add must run in NCHW
    text = (
        'webnn_graph "t" v1 { inputs { x: f32[1, 2, 5, 5]; y: f32[5]; } '
        'consts { w: f32[2, 2, 1, 1] @weights("w"); } '
        "nodes { c = conv2d(x, w); a = add(c, y); } outputs { a; } }"
    )
    w = np.random.default_rng(1).standard_normal((2, 2, 1, 1)).astype(np.float32)
    xg = compile_graph(parse(text), weights={"w": w})
    add = next(n for n in xg.nodes if n.kind == "XNNAdd")
    assert xg.value(add.fields["output_id"]).dims == [1, 2, 5, 5]
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    want = np.einsum("oi,nihw->nohw", w[:, :, 0, 0], x) + y
    np.testing.assert_allclose(reference.run(xg, {"x": x, "y": y})["a"], want, rtol=1e-5, atol=1e-5)


def test_region_constant_operands_are_permuted_at_compile_time() -> None:
    text = (
        'webnn_graph "t" v1 { inputs { x: f32[1, 3, 2, 2]; } '
        'consts { w: f32[3, 3, 1, 1] @weights("w"); k: f32[1, 2, 2] @weights("k"); } '
        "nodes { c = conv2d(x, w); m = mul(c, k); t = transpose(m, permutation=[0, 2, 3, 1]); } "
        "outputs { t; } }"
    )
    rng = np.random.default_rng(4)
    w = rng.standard_normal((3, 3, 1, 1)).astype(np.float32)
    k = rng.standard_normal((1, 2, 2)).astype(np.float32)
    xg = compile_graph(parse(text), weights={"w": w, "k": k})
    mul = next(n for n in xg.nodes if n.kind == "XNNMultiply")
    assert xg.value(mul.fields["input2_id"]).dims == [1, 2, 2, 1]
    # transpose(NCHW→NHWC) of NHWC-stored data is absorbed: only the transpose into the region is left
    assert _kinds(xg) == ["XNNStaticTranspose", "XNNConv2d", "XNNMultiply"]
    x = rng.standard_normal((1, 3, 2, 2)).astype(np.float32)
    want = (np.einsum("oi,nihw->nohw", w[:, :, 0, 0], x) * k).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(reference.run(xg, {"x": x})["t"], want, rtol=1e-5, atol=1e-5)
