"""The lowering of ops without an XNN node (the webxnn WX* tables), integer and float16 graphs, and dynamic
weights: each graph is compiled, executed by the numpy reference interpreter, and compared with numpy written
here on the WebNN semantics; node choices are checked where they matter (ExecuTorch compatibility)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webxnn.compiler import compile, compile_graph
from webxnn.dsl import parse
from webxnn.errors import UnsupportedError
from webxnn.xnn import reference
from webxnn.xnn.ir import Datatype
from webxnn.xnn.reader import read


def _g(inputs: str, consts: str, nodes: str, outputs: str) -> str:
    return (
        f'webnn_graph "t" v1 {{ inputs {{ {inputs} }} consts {{ {consts} }} '
        f"nodes {{ {nodes} }} outputs {{ {outputs} }} }}"
    )


def _run(
    text: str,
    inputs: dict[str, np.ndarray],
    weights: dict[str, np.ndarray] | None = None,
    via_blob: bool = True,
):
    """(outputs, XnnGraph): through the serialized blob by default, so the writer/reader see every table."""
    g = parse(text)
    xg = compile_graph(g, weights)
    if via_blob:
        xg = read(compile(g, weights))
    return reference.run(xg, inputs), xg


def _kinds(xg) -> list[str]:
    return [n.kind for n in xg.nodes]


rng = np.random.default_rng(7)

# -------------------------------------------------------------------------------- integers


def test_integer_arithmetic_uses_wx_binary_and_wraps() -> None:
    a = np.array([120, -128, 7, -7], np.int8)
    b = np.array([10, -1, 2, 2], np.int8)
    nodes = "s = add(a, b); d = sub(a, b); m = mul(a, b); q = div(a, b);"
    out, xg = _run(_g("a: i8[4]; b: i8[4];", "", nodes, "s; d; m; q;"), {"a": a, "b": b})
    assert set(_kinds(xg)) == {"WXBinary"}
    np.testing.assert_array_equal(out["s"], (a.astype(np.int32) + b).astype(np.int8))
    np.testing.assert_array_equal(out["d"], (a.astype(np.int32) - b).astype(np.int8))
    np.testing.assert_array_equal(out["m"], (a.astype(np.int32) * b).astype(np.int8))
    np.testing.assert_array_equal(out["q"], [12, -128, 3, -3])  # truncation toward zero, -128/-1 wraps


def test_integer_unary_ops() -> None:
    x = np.array([-5, 0, 3, 2**40], np.int64)
    out, xg = _run(
        _g(
            "x: i64[4];",
            "",
            "a = abs(x); n = neg(x); r = relu(x); c = clamp(x, minValue=-2, maxValue=4);",
            "a; n; r; c;",
        ),
        {"x": x},
    )
    assert set(_kinds(xg)) == {"WXUnary"}
    np.testing.assert_array_equal(out["a"], np.abs(x))
    np.testing.assert_array_equal(out["n"], -x)
    np.testing.assert_array_equal(out["r"], np.maximum(x, 0))
    np.testing.assert_array_equal(out["c"], np.clip(x, -2, 4))
    assert {v.datatype for v in xg.values} == {Datatype.WX_INT64}


def test_cast_truncates_and_saturates() -> None:
    x = np.array([1.9, -1.9, 300.0, -300.0, np.nan], np.float32)
    out, xg = _run(
        _g(
            "x: f32[5];",
            "",
            'i = cast(x, type="int32"); u = cast(x, type="uint8"); h = cast(x, type="float16");',
            "i; u; h;",
        ),
        {"x": x},
    )
    np.testing.assert_array_equal(out["i"], [1, -1, 300, -300, 0])
    np.testing.assert_array_equal(out["u"], [1, 0, 255, 0, 0])
    assert out["h"].dtype == np.float16
    np.testing.assert_array_equal(out["h"][:4], x[:4].astype(np.float16))


def test_comparisons_logical_and_where() -> None:
    a, b = rng.integers(-3, 3, (2, 3)).astype(np.float32), rng.integers(-3, 3, (3,)).astype(np.float32)
    text = _g(
        "a: f32[2, 3]; b: f32[3];",
        "",
        "g = greater(a, b); e = equal(a, b); n = logicalNot(g); o = logicalOr(g, e); "
        "w = where(o, a, b); x = logicalXor(n, e);",
        "g; e; n; o; w; x;",
    )
    out, xg = _run(text, {"a": a, "b": b})
    g, e = (a > b), (a == b)
    np.testing.assert_array_equal(out["g"], g.astype(np.uint8))
    np.testing.assert_array_equal(out["n"], (~g).astype(np.uint8))
    np.testing.assert_array_equal(out["o"], (g | e).astype(np.uint8))
    np.testing.assert_array_equal(out["w"], np.where(g | e, a, b))
    np.testing.assert_array_equal(out["x"], ((~g) ^ e).astype(np.uint8))
    assert "WXWhere" in _kinds(xg)


def test_is_nan_is_infinite() -> None:
    x = np.array([0, np.nan, np.inf, -np.inf], np.float32)
    out, _ = _run(_g("x: f32[4];", "", "n = isNaN(x); i = isInfinite(x);", "n; i;"), {"x": x})
    np.testing.assert_array_equal(out["n"], [0, 1, 0, 0])
    np.testing.assert_array_equal(out["i"], [0, 0, 1, 1])


# -------------------------------------------------------------------------------- reductions


@pytest.mark.parametrize(
    "op,fn",
    [
        ("reduceSum", lambda x, a, k: x.sum(axis=a, keepdims=k)),
        ("reduceMean", lambda x, a, k: x.mean(axis=a, keepdims=k)),
        ("reduceL2", lambda x, a, k: np.sqrt((x * x).sum(axis=a, keepdims=k))),
        ("reduceLogSumExp", lambda x, a, k: np.log(np.exp(x).sum(axis=a, keepdims=k))),
        ("reduceMax", lambda x, a, k: x.max(axis=a, keepdims=k)),
    ],
)
@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), ([], False)])
def test_reductions(op, fn, axes, keep) -> None:
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    node = f"y = {op}(x, axes={axes}, keepDimensions={str(keep).lower()});"
    out, xg = _run(_g("x: f32[2, 3, 4];", "", node, "y;"), {"x": x})
    assert _kinds(xg) == ["WXReduce"]
    np.testing.assert_allclose(out["y"], fn(x.astype(np.float64), tuple(axes), keep), rtol=1e-6, atol=1e-6)


def test_arg_max_first_index_on_ties_and_int64_output() -> None:
    x = np.array([[1, 5, 5], [2, 2, 0]], np.float32)
    out, _ = _run(
        _g(
            "x: f32[2, 3];",
            "",
            'm = argMax(x, axis=1, outputDataType="int64"); n = argMin(x, axis=0, keepDimensions=true);',
            "m; n;",
        ),
        {"x": x},
    )
    assert out["m"].dtype == np.int64
    np.testing.assert_array_equal(out["m"], [1, 0])
    np.testing.assert_array_equal(out["n"], [[0, 1, 1]])


def test_integer_reduce_sum_stays_integer() -> None:
    x = np.array([[4000000000, 500000000], [1, 2]], np.uint32)
    out, _ = _run(_g("x: u32[2, 2];", "", "y = reduceSum(x, axes=[1]);", "y;"), {"x": x})
    np.testing.assert_array_equal(out["y"], np.array([4500000000 % 2**32, 3], np.uint32))


def test_spatial_mean_after_conv_is_global_avg_pool() -> None:
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    text = _g(
        "x: f32[1, 3, 5, 5];",
        'w: f32[4, 3, 1, 1] @weights("w");',
        "c = conv2d(x, w); m = reduceMean(c, axes=[2, 3], keepDimensions=true);",
        "m;",
    )
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    out, xg = _run(text, {"x": x}, {"w": w})
    assert "XNNGlobalAvgPooling2d" in _kinds(xg) and "WXReduce" not in _kinds(xg)
    want = np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0]).mean(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(out["m"], want, rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------------------------- gather/scatter


@settings(max_examples=15, deadline=None)
@given(n=st.sampled_from([1, 7, 17]), axis=st.integers(0, 1))
def test_gather_negative_and_out_of_range_indices(n: int, axis: int) -> None:
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    dim = x.shape[axis]
    idx = np.array([0, -1, dim + 5, -dim - 5], np.int64)
    out, _ = _run(
        _g(f"x: f32[{n}, 3]; i: i64[4];", "", f"y = gather(x, i, axis={axis});", "y;"), {"x": x, "i": idx}
    )
    fixed = np.clip(np.where(idx < 0, idx + dim, idx), 0, dim - 1)
    np.testing.assert_array_equal(out["y"], np.take(x, fixed, axis=axis))


def test_gather_elements_nd_and_scatters() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ie = np.array([[2, 0, 1, 1]], np.int32)
    ind = np.array([[0, 1], [2, 3]], np.int32)
    upd = np.array([100, 200], np.float32)
    text = _g(
        "x: f32[3, 4]; ie: i32[1, 4]; ind: i32[2, 2]; u: f32[2];",
        "",
        "ge = gatherElements(x, ie, axis=0); gn = gatherND(x, ind); sn = scatterND(x, ind, u); "
        "se = scatterElements(x, ie, ge, axis=0);",
        "ge; gn; sn; se;",
    )
    out, _ = _run(text, {"x": x, "ie": ie, "ind": ind, "u": upd})
    np.testing.assert_array_equal(out["ge"], [[8, 1, 6, 7]])
    np.testing.assert_array_equal(out["gn"], [1, 11])
    want = x.copy()
    want[0, 1], want[2, 3] = 100, 200
    np.testing.assert_array_equal(out["sn"], want)
    np.testing.assert_array_equal(out["se"], x)  # writing back what was gathered changes nothing


# -------------------------------------------------------------------------------- data movement


def test_split_is_static_slices() -> None:
    x = rng.standard_normal((2, 7)).astype(np.float32)
    out, xg = _run(
        _g("x: f32[2, 7];", "", "[a, b, c] = split(x, splits=[2, 4, 1], axis=1);", "a; b; c;"), {"x": x}
    )
    assert _kinds(xg) == ["XNNStaticSlice"] * 3
    for name, want in zip("abc", np.split(x, [2, 6], axis=1)):
        np.testing.assert_array_equal(out[name], want)


@pytest.mark.parametrize(
    "mode,np_mode",
    [("edge", "edge"), ("reflection", "reflect"), ("symmetric", "symmetric"), ("constant", "constant")],
)
def test_pad_modes(mode: str, np_mode: str) -> None:
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    text = _g(
        "x: f32[2, 3, 4];",
        "",
        f'y = pad(x, beginningPadding=[0, 2, 1], endingPadding=[1, 1, 3], mode="{mode}");',
        "y;",
    )
    out, xg = _run(text, {"x": x})
    assert _kinds(xg) == (["XNNStaticConstantPad"] if mode == "constant" else ["WXPad"])
    np.testing.assert_array_equal(out["y"], np.pad(x, [(0, 1), (2, 1), (1, 3)], mode=np_mode))


def test_strided_slice_expand_tile_reverse_cumsum_triangular() -> None:
    x = rng.standard_normal((3, 5)).astype(np.float32)
    text = _g(
        "x: f32[3, 5];",
        "",
        "s = slice(x, starts=[0, 1], sizes=[3, 4], strides=[2, 3]); e = expand(x, newShape=[2, 3, 5]); "
        "t = tile(x, repetitions=[2, 1]); r = reverse(x, axes=[1]); "
        "c = cumulativeSum(x, axis=1, exclusive=true, reversed=true); u = triangular(x, upper=false, "
        "diagonal=1);",
        "s; e; t; r; c; u;",
    )
    out, _ = _run(text, {"x": x})
    np.testing.assert_array_equal(out["s"], x[0:3:2, 1:5:3])
    np.testing.assert_array_equal(out["e"], np.broadcast_to(x, (2, 3, 5)))
    np.testing.assert_array_equal(out["t"], np.tile(x, (2, 1)))
    np.testing.assert_array_equal(out["r"], x[:, ::-1])
    rev = np.cumsum(x[:, ::-1].astype(np.float64), axis=1)[:, ::-1] - x
    np.testing.assert_allclose(out["c"], rev, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out["u"], np.tril(x, 1))


# -------------------------------------------------------------------------------- normalization


def test_layer_norm_over_unsorted_non_trailing_axes() -> None:
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    scale = rng.standard_normal((4, 2)).astype(np.float32)
    bias = rng.standard_normal((4, 2)).astype(np.float32)
    text = _g(
        "x: f32[2, 3, 4]; s: f32[4, 2];",
        'b: f32[4, 2] @weights("b");',
        "y = layerNormalization(x, scale=s, bias=b, axes=[2, 0], epsilon=0.001);",
        "y;",
    )
    out, xg = _run(text, {"x": x, "s": scale}, {"b": bias})
    assert "WXNormalize" in _kinds(xg)
    xd = x.astype(np.float64)
    mean = xd.mean(axis=(0, 2), keepdims=True)
    var = xd.var(axis=(0, 2), keepdims=True)
    want = (xd - mean) / np.sqrt(var + 1e-3) * scale.T[:, None, :] + bias.T[:, None, :]
    np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-5)


def test_instance_norm_stays_in_the_nhwc_region() -> None:
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    sc, bi = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    text = _g(
        "x: f32[1, 3, 6, 6];",
        'w: f32[4, 3, 3, 3] @weights("w"); s: f32[4] @weights("s"); b: f32[4] @weights("b");',
        "c = conv2d(x, w, padding=[1, 1, 1, 1]); n = instanceNormalization(c, scale=s, bias=b); "
        "r = relu(n); d = conv2d(r, w2);",
        "d;",
    ).replace('b: f32[4] @weights("b");', 'b: f32[4] @weights("b"); w2: f32[2, 4, 1, 1] @weights("w2");')
    w2 = rng.standard_normal((2, 4, 1, 1)).astype(np.float32)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    out, xg = _run(text, {"x": x}, {"w": w, "s": sc, "b": bi, "w2": w2})
    assert _kinds(xg).count("XNNStaticTranspose") == 2  # in at the first conv, out after the last
    c = np.zeros((1, 4, 6, 6))
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(6):
        for j in range(6):
            c[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i : i + 3, j : j + 3], w)
    n = (c - c.mean(axis=(2, 3), keepdims=True)) / np.sqrt(c.var(axis=(2, 3), keepdims=True) + 1e-5)
    n = np.maximum(n * sc.reshape(1, 4, 1, 1) + bi.reshape(1, 4, 1, 1), 0)
    np.testing.assert_allclose(out["d"], np.einsum("nchw,oc->nohw", n, w2[:, :, 0, 0]), rtol=1e-4, atol=1e-4)


# -------------------------------------------------------------------------------- pools, resample


def test_l2_pool_and_integer_max_pool() -> None:
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    out, xg = _run(
        _g(
            "x: f32[1, 2, 5, 5];",
            "",
            "y = l2Pool2d(x, windowDimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]);",
            "y;",
        ),
        {"x": x},
    )
    assert "WXPool2d" in _kinds(xg)
    xp = np.pad(x.astype(np.float64) ** 2, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.sqrt(
        np.array(
            [
                [
                    [
                        [xp[0, c, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3].sum() for j in range(3)]
                        for i in range(3)
                    ]
                    for c in range(2)
                ]
            ]
        )
    )
    np.testing.assert_allclose(out["y"], want, rtol=1e-5)


@pytest.mark.parametrize("dt", ["i8", "u8"])
def test_8bit_max_pool_runs_in_float32(dt: str) -> None:
    """Plain int8/uint8 max pooling: cast to float32 (exact), an XNNMaxPooling2d, cast back, in the reference
    and in the runtime (whose pooling kernels are float only; the lowering used to emit an int8 WXPool2d that
    the runtime refused)."""
    import webxnn

    lo, hi, np_dt = (-128, 128, np.int8) if dt == "i8" else (0, 256, np.uint8)
    xi = rng.integers(lo, hi, (1, 3, 5, 5)).astype(np_dt)
    text = _g(
        f"x: {dt}[1, 3, 5, 5];",
        "",
        "y = maxPool2d(x, windowDimensions=[2, 2], strides=[2, 2], padding=[0, 1, 0, 1]);",
        "y;",
    )
    xp = np.pad(xi, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=lo)
    want = xp.reshape(1, 3, 3, 2, 3, 2).max(axis=(3, 5))
    out, xg = _run(text, {"x": xi})
    assert "XNNMaxPooling2d" in _kinds(xg) and "WXPool2d" not in _kinds(xg)
    np.testing.assert_array_equal(out["y"], want)
    got = webxnn.load(compile(parse(text))).run({"x": xi})["y"]
    assert got.dtype == np_dt
    np.testing.assert_array_equal(got, want)


def _resample_ref(x: np.ndarray, scales, sizes, linear: bool) -> np.ndarray:
    """WebNN resample2d on axes [2, 3], the straightforward way: per output pixel."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, sizes[0], sizes[1]))
    for oy in range(sizes[0]):
        for ox in range(sizes[1]):
            fy, fx = (oy + 0.5) / scales[0] - 0.5, (ox + 0.5) / scales[1] - 0.5
            if not linear:
                iy = min(max(int(np.floor(fy + 0.5)), 0), h - 1)
                ix = min(max(int(np.floor(fx + 0.5)), 0), w - 1)
                out[:, :, oy, ox] = x[:, :, iy, ix]
                continue
            y0, x0 = int(np.floor(fy)), int(np.floor(fx))
            dy, dx = fy - y0, fx - x0

            def at(yy, xx):  # noqa: E306
                return x[:, :, min(max(yy, 0), h - 1), min(max(xx, 0), w - 1)]

            out[:, :, oy, ox] = (
                (1 - dy) * (1 - dx) * at(y0, x0)
                + (1 - dy) * dx * at(y0, x0 + 1)
                + dy * (1 - dx) * at(y0 + 1, x0)
                + dy * dx * at(y0 + 1, x0 + 1)
            )
    return out


@pytest.mark.parametrize("mode", ["linear", "nearest-neighbor"])
def test_resample2d(mode: str) -> None:
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    out, xg = _run(
        _g("x: f32[1, 2, 3, 4];", "", f'y = resample2d(x, mode="{mode}", scales=[2.0, 1.5]);', "y;"), {"x": x}
    )
    assert _kinds(xg) == ["WXResample2d"]  # plain NCHW data: no transposes for XNN's NHWC node
    np.testing.assert_allclose(
        out["y"], _resample_ref(x, (2.0, 1.5), (6, 6), mode == "linear"), rtol=1e-5, atol=1e-6
    )


def test_linear_resample_in_nhwc_region_is_the_xnn_node() -> None:
    w = rng.standard_normal((2, 2, 1, 1)).astype(np.float32)
    text = _g(
        "x: f32[1, 2, 3, 4];",
        'w: f32[2, 2, 1, 1] @weights("w");',
        'c = conv2d(x, w); y = resample2d(c, mode="linear", sizes=[6, 8]);',
        "y;",
    )
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    out, xg = _run(text, {"x": x}, {"w": w})
    assert "XNNStaticResizeBilinear2D" in _kinds(xg)
    c = np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0])
    np.testing.assert_allclose(out["y"], _resample_ref(c, (2.0, 2.0), (6, 8), True), rtol=1e-5, atol=1e-5)


# -------------------------------------------------------------------------------- quantization


def test_quantize_dequantize_blockwise() -> None:
    x = (rng.standard_normal((2, 4)) * 50).astype(np.float32)
    s = np.array([[0.5, 2.0]], np.float32)  # blocks of 2 along the last dim
    z = np.array([[3, -4]], np.int8)
    text = _g(
        "x: f32[2, 4];",
        's: f32[1, 2] @weights("s"); z: i8[1, 2] @weights("z");',
        "q = quantizeLinear(x, s, z); d = dequantizeLinear(q, s, z);",
        "q; d;",
    )
    out, xg = _run(text, {"x": x}, {"s": s, "z": z})
    sb, zb = np.repeat(s, 2, axis=1), np.repeat(z, 2, axis=1).astype(np.float64)
    q = np.clip(np.rint(x / sb) + zb, -128, 127)
    np.testing.assert_array_equal(out["q"], q.astype(np.int8))
    np.testing.assert_allclose(out["d"], (q - zb) * sb, rtol=1e-6)


# -------------------------------------------------------------------------------- recurrent


def _act(name: str):
    fns = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0)}
    return fns[name]


def _gru_cell_ref(x, w, r, h, b, rb, hs, reset_after=True, acts=("sigmoid", "tanh")):
    f, g = _act(acts[0]), _act(acts[1])

    def part(m, k):  # noqa: E306
        return m[k * hs : (k + 1) * hs]

    z = f(x @ part(w, 0).T + h @ part(r, 0).T + part(b, 0) + part(rb, 0))
    rr = f(x @ part(w, 1).T + h @ part(r, 1).T + part(b, 1) + part(rb, 1))
    if reset_after:
        n = g(x @ part(w, 2).T + part(b, 2) + rr * (h @ part(r, 2).T + part(rb, 2)))
    else:
        n = g(x @ part(w, 2).T + part(b, 2) + part(rb, 2) + (rr * h) @ part(r, 2).T)
    return z * h + (1 - z) * n


@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
def test_gru_sequence(direction: str) -> None:
    steps, batch, ins, hs = 3, 2, 4, 5
    nd = 2 if direction == "both" else 1
    x = rng.standard_normal((steps, batch, ins)).astype(np.float32)
    w = (rng.standard_normal((nd, 3 * hs, ins)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((nd, 3 * hs, hs)) * 0.5).astype(np.float32)
    b = rng.standard_normal((nd, 3 * hs)).astype(np.float32)
    rb = rng.standard_normal((nd, 3 * hs)).astype(np.float32)
    text = _g(
        f"x: f32[{steps}, {batch}, {ins}];",
        f'w: f32[{nd}, {3 * hs}, {ins}] @weights("w"); r: f32[{nd}, {3 * hs}, {hs}] @weights("r"); '
        f'b: f32[{nd}, {3 * hs}] @weights("b"); rb: f32[{nd}, {3 * hs}] @weights("rb");',
        f"[h, seq] = gru(x, w, r, steps={steps}, hiddenSize={hs}, bias=b, recurrentBias=rb, "
        f'returnSequence=true, direction="{direction}", resetAfter=false);',
        "h; seq;",
    )
    out, xg = _run(text, {"x": x}, {"w": w, "r": r, "b": b, "rb": rb})
    assert "XNNFullyConnected" in _kinds(xg) and not any(k.startswith("WX") for k in _kinds(xg))
    seq = np.zeros((steps, nd, batch, hs))
    last = []
    for d in range(nd):
        h = np.zeros((batch, hs))
        order = range(steps) if (d == 0 and direction != "backward") else reversed(range(steps))
        for t in order:
            h = _gru_cell_ref(x[t].astype(np.float64), w[d], r[d], h, b[d], rb[d], hs, reset_after=False)
            seq[t, d] = h
        last.append(h)
    np.testing.assert_allclose(out["h"], np.stack(last), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["seq"], seq, rtol=1e-5, atol=1e-5)


def test_lstm_cell_with_peepholes_and_ifgo_layout() -> None:
    batch, ins, hs = 2, 3, 4
    x = rng.standard_normal((batch, ins)).astype(np.float32)
    h = rng.standard_normal((batch, hs)).astype(np.float32)
    c = rng.standard_normal((batch, hs)).astype(np.float32)
    w = rng.standard_normal((4 * hs, ins)).astype(np.float32)
    r = rng.standard_normal((4 * hs, hs)).astype(np.float32)
    p = rng.standard_normal(3 * hs).astype(np.float32)
    text = _g(
        f"x: f32[{batch}, {ins}]; h: f32[{batch}, {hs}]; c: f32[{batch}, {hs}];",
        f'w: f32[{4 * hs}, {ins}] @weights("w"); r: f32[{4 * hs}, {hs}] @weights("r"); '
        f'p: f32[{3 * hs}] @weights("p");',
        f'[ho, co] = lstmCell(x, w, r, h, c, hiddenSize={hs}, peepholeWeight=p, layout="ifgo");',
        "ho; co;",
    )
    out, _ = _run(text, {"x": x, "h": h, "c": c}, {"w": w, "r": r, "p": p})
    xd, hd, cd = (a.astype(np.float64) for a in (x, h, c))

    def gate(k):  # noqa: E306  (ifgo rows)
        return xd @ w[k * hs : (k + 1) * hs].T + hd @ r[k * hs : (k + 1) * hs].T

    sig = _act("sigmoid")
    i = sig(gate(0) + cd * p[:hs])
    f = sig(gate(1) + cd * p[2 * hs :])
    g = np.tanh(gate(2))
    o = sig(gate(3) + cd * p[hs : 2 * hs])
    ct = f * cd + i * g
    np.testing.assert_allclose(out["co"], ct, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["ho"], o * np.tanh(ct), rtol=1e-5, atol=1e-5)


# -------------------------------------------------------------------------------- float16


def test_float16_graph_computes_in_fp32_and_keeps_fp16_io_and_weights() -> None:
    k = rng.standard_normal((3, 4)).astype(np.float16)
    x = rng.standard_normal((2, 3)).astype(np.float16)
    text = _g("x: f16[2, 3];", 'k: f16[3, 4] @weights("k");', "m = matmul(x, k); s = sigmoid(m);", "s;")
    out, xg = _run(text, {"x": x}, {"k": k})
    ext = [v for v in xg.values if v.flags]
    assert {v.datatype for v in ext} == {Datatype.FP16}
    consts = [v for v in xg.values if v.constant_buffer_idx]
    assert [v.datatype for v in consts] == [Datatype.FP16]  # the weights keep half the bytes
    assert _kinds(xg).count("XNNConvert") == 3  # weights, input, output
    assert out["s"].dtype == np.float16
    want = 1 / (1 + np.exp(-(x.astype(np.float64) @ k.astype(np.float64))))
    np.testing.assert_allclose(out["s"].astype(np.float64), want, rtol=1e-3)


def test_float16_data_movement_needs_no_conversion() -> None:
    x = rng.standard_normal((2, 3)).astype(np.float16)
    k = rng.standard_normal((2, 3)).astype(np.float16)
    text = _g(
        "x: f16[2, 3];",
        'k: f16[2, 3] @weights("k");',
        "t = transpose(x); r = reshape(t, newShape=[6]); c = concat(x, k, axis=0);",
        "r; c;",
    )
    out, xg = _run(text, {"x": x}, {"k": k})
    assert "XNNConvert" not in _kinds(xg)
    np.testing.assert_array_equal(out["r"], x.T.reshape(6))
    np.testing.assert_array_equal(out["c"], np.concatenate([x, k]))


# -------------------------------------------------------------------------------- dynamic weights


def test_filters_and_b_may_be_graph_inputs() -> None:
    x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    wt = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)  # grouped convTranspose, iohw, groups=2
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    text = _g(
        "x: f32[1, 4, 5, 5]; wt: f32[4, 3, 2, 2]; a: f32[3, 4]; b: f32[4, 2];",
        "",
        "y = convTranspose2d(x, wt, groups=2, strides=[2, 2]); g = gemm(a, b, alpha=2.0);",
        "y; g;",
    )
    out, xg = _run(text, {"x": x, "wt": wt, "a": a, "b": b})
    np.testing.assert_allclose(out["g"], 2 * a.astype(np.float64) @ b, rtol=1e-5)
    y = np.zeros((1, 6, 10, 10))
    for ic in range(4):
        grp = ic // 2
        for i in range(5):
            for j in range(5):
                y[0, grp * 3 : (grp + 1) * 3, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2] += x[0, ic, i, j] * wt[ic]
    np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-5)


# -------------------------------------------------------------------------------- profiles, misc


def test_executorch_profile_names_what_it_cannot_express() -> None:
    text = _g("x: f32[4]; i: i32[2];", "", "g = gather(x, i); e = erf(g); s = sigmoid(x);", "e; s;")
    with pytest.raises(UnsupportedError) as info:
        compile(parse(text), profile="executorch")
    msg = str(info.value)
    assert "g:gather → WXGather" in msg and "e:erf → WXUnary" in msg and "sigmoid" not in msg
    ok = _g("x: f32[4];", "", "s = softsign(x); h = hardSigmoid(s);", "h;")
    xg = read(compile(parse(ok), profile="executorch"))
    assert not any(k.startswith("WX") for k in _kinds(xg))


def test_scalars_everywhere() -> None:
    x = np.array(2.5, np.float32)
    out, xg = _run(
        _g(
            "x: f32[];",
            "",
            'a = erf(x); b = reduceSum(x); c = cast(x, type="int32"); d = expand(x, newShape=[2]);',
            "a; b; c; d;",
        ),
        {"x": x},
    )
    assert [v.dims for v in xg.values if v.flags == 1] == [[]]
    assert out["a"].shape == () and out["c"] == 2
    np.testing.assert_array_equal(out["d"], [2.5, 2.5])


def test_nodes_block_constant_is_folded() -> None:
    import base64

    data = base64.b64encode(np.array([1, 2, 3], "<f4").tobytes()).decode()
    text = _g(
        "x: f32[3];", "", f'k = constant(dataType="float32", shape=[3], data="{data}"); y = add(x, k);', "y;"
    )
    out, xg = _run(text, {"x": np.ones(3, np.float32)})
    assert _kinds(xg) == ["XNNAdd"]
    np.testing.assert_array_equal(out["y"], [2, 3, 4])
