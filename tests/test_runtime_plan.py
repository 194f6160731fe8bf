"""The runtime's planner: storage shared by reshapes and in-place element-wise nodes, residual adds fused into
the Conv2d / FullyConnected before them, the per-step profile, zero-copy loading, and results that do not
depend on the thread count (tiny ONNX models built here, checked against onnx's reference evaluator)."""

from __future__ import annotations

import gc
from functools import partial

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import conv_fields, load_testing_module
from test_runtime_util import GraphBuilder, conv2d_ref
from webxnn import runtime
from webxnn.xnn.ir import INVALID_ID

RNG = np.random.default_rng(77)


def rand(*shape: int, rng: np.random.Generator = RNG) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def steps(p: runtime.Program, feeds: dict[str, np.ndarray]) -> list[dict]:
    return p.profile(feeds, repeat=1)


def kinds(rows: list[dict]) -> list[tuple[str, bool, bool]]:
    return [(r["kind"], bool(r["fused"]), r["aliased"]) for r in rows]


# ---------------------------------------------------------------- reshape aliasing and in-place


def test_reshape_shares_storage_and_chain_runs_in_place() -> None:
    """x -> abs -> reshape -> neg -> abs -> sqrt -> y: no step for the reshape, one buffer for the chain."""
    b = GraphBuilder()
    x = b.input("x", [4, 6])
    a = b.value([4, 6])
    b.node("XNNAbs", input_id=x, output_id=a, flags=0)
    r = b.value([2, 12])
    b.node("XNNStaticReshape", new_shape=[2, 12], input_id=a, output_id=r, flags=0)
    n = b.value([2, 12])
    b.node("XNNNegate", input_id=r, output_id=n, flags=0)
    m = b.value([2, 12])
    b.node("XNNAbs", input_id=n, output_id=m, flags=0)
    y = b.output(b.value([2, 12]), "y")
    b.node("XNNSquareRoot", input_id=m, output_id=y, flags=0)
    p = runtime.load(b.build(), threads=1)
    xv = rand(4, 6)
    x_before = xv.copy()
    got = p.run({"x": xv})["y"]
    np.testing.assert_array_equal(got, np.sqrt(np.abs(x_before)).reshape(2, 12))
    np.testing.assert_array_equal(xv, x_before)  # graph inputs are never written
    assert p.peak_arena_bytes <= 4 * 24 + 128  # a, r, n, m share one slot
    rows = steps(p, {"x": xv})
    assert ("XNNStaticReshape", False, True) in kinds(rows)
    assert sum(1 for r in rows if not r["aliased"]) == 4


def test_multi_consumer_value_is_not_overwritten() -> None:
    """a feeds square() and a later add: square must not write over a."""
    b = GraphBuilder()
    x = b.input("x", [3, 5])
    a = b.value([3, 5])
    b.node("XNNAbs", input_id=x, output_id=a, flags=0)
    s = b.value([3, 5])
    b.node("XNNSquare", input_id=a, output_id=s, flags=0)
    y = b.output(b.value([3, 5]), "y")
    b.node("XNNAdd", input1_id=a, input2_id=s, output_id=y, flags=0)
    xv = rand(3, 5)
    got = runtime.load(b.build()).run({"x": xv})["y"]
    ax = np.abs(xv)
    np.testing.assert_allclose(got, ax + ax * ax, rtol=1e-6)


def test_reshape_alias_read_later_blocks_in_place() -> None:
    """a -> reshape r; n = neg(r) could reuse r's storage, but a (the same storage) is read later."""
    b = GraphBuilder()
    x = b.input("x", [2, 8])
    a = b.value([2, 8])
    b.node("XNNAbs", input_id=x, output_id=a, flags=0)
    r = b.value([16])
    b.node("XNNStaticReshape", new_shape=[16], input_id=a, output_id=r, flags=0)
    n = b.value([16])
    b.node("XNNNegate", input_id=r, output_id=n, flags=0)
    n2 = b.value([2, 8])
    b.node("XNNStaticReshape", new_shape=[2, 8], input_id=n, output_id=n2, flags=0)
    y = b.output(b.value([2, 8]), "y")
    b.node("XNNMultiply", input1_id=a, input2_id=n2, output_id=y, flags=0)
    xv = rand(2, 8)
    got = runtime.load(b.build()).run({"x": xv})["y"]
    np.testing.assert_allclose(got, -np.abs(xv) * np.abs(xv), rtol=1e-6)


def test_reshape_of_graph_input_is_never_written() -> None:
    """x -> reshape -> neg -> abs -> y: the reshape reads the caller's array in place; nothing writes it."""
    b = GraphBuilder()
    x = b.input("x", [3, 4])
    r = b.value([12])
    b.node("XNNStaticReshape", new_shape=[12], input_id=x, output_id=r, flags=0)
    n = b.value([12])
    b.node("XNNNegate", input_id=r, output_id=n, flags=0)
    y = b.output(b.value([12]), "y")
    b.node("XNNAbs", input_id=n, output_id=y, flags=0)
    p = runtime.load(b.build())
    xv = rand(3, 4)
    before = xv.copy()
    got = p.run({"x": xv})["y"]
    np.testing.assert_array_equal(got, np.abs(before).reshape(12))
    np.testing.assert_array_equal(xv, before)
    assert ("XNNStaticReshape", False, True) in kinds(steps(p, {"x": xv}))


def test_graph_output_reshape_of_graph_input_is_a_copy() -> None:
    b = GraphBuilder()
    x = b.input("x", [2, 3])
    y = b.output(b.value([3, 2]), "y")
    b.node("XNNStaticReshape", new_shape=[3, 2], input_id=x, output_id=y, flags=0)
    xv = rand(2, 3)
    got = runtime.load(b.build()).run({"x": xv})["y"]
    assert not np.shares_memory(got, xv)
    np.testing.assert_array_equal(got, xv.reshape(3, 2))
    got[:] = 0
    assert np.any(xv != 0)


def test_output_reshape_is_computed_in_the_output_buffer() -> None:
    """abs -> reshape -> y: abs writes straight into y's buffer; a second output of the same value copies."""
    b = GraphBuilder()
    x = b.input("x", [4, 4])
    a = b.value([4, 4])
    b.node("XNNAbs", input_id=x, output_id=a, flags=0)
    y1 = b.output(b.value([16]), "y1")
    b.node("XNNStaticReshape", new_shape=[16], input_id=a, output_id=y1, flags=0)
    y2 = b.output(b.value([2, 8]), "y2")
    b.node("XNNStaticReshape", new_shape=[2, 8], input_id=a, output_id=y2, flags=0)
    p = runtime.load(b.build())
    xv = rand(4, 4)
    out = p.run({"x": xv})
    np.testing.assert_array_equal(out["y1"], np.abs(xv).reshape(16))
    np.testing.assert_array_equal(out["y2"], np.abs(xv).reshape(2, 8))
    assert not np.shares_memory(out["y1"], out["y2"])
    assert p.peak_arena_bytes == 0
    rows = steps(p, {"x": xv})
    assert [r["kind"] for r in rows if not r["aliased"]] == ["XNNAbs", "XNNStaticReshape"]


def test_output_that_is_read_again_stays_intact() -> None:
    """y1 = abs(x) is a graph output and also feeds neg(); in-place must not touch y1."""
    b = GraphBuilder()
    x = b.input("x", [5])
    y1 = b.output(b.value([5]), "y1")
    b.node("XNNAbs", input_id=x, output_id=y1, flags=0)
    y2 = b.output(b.value([5]), "y2")
    b.node("XNNNegate", input_id=y1, output_id=y2, flags=0)
    xv = rand(5)
    out = runtime.load(b.build()).run({"x": xv})
    np.testing.assert_array_equal(out["y1"], np.abs(xv))
    np.testing.assert_array_equal(out["y2"], -np.abs(xv))


def test_binary_in_place_with_broadcast_operand() -> None:
    """a[4,8] * b[8] writes over a; b (broadcast) must be read intact for every row."""
    b = GraphBuilder()
    x = b.input("x", [4, 8])
    v = b.input("v", [8])
    a = b.value([4, 8])
    b.node("XNNAbs", input_id=x, output_id=a, flags=0)
    c = b.value([8])
    b.node("XNNNegate", input_id=v, output_id=c, flags=0)
    m = b.value([4, 8])
    b.node("XNNMultiply", input1_id=c, input2_id=a, output_id=m, flags=0)
    y = b.output(b.value([4, 8]), "y")
    b.node("XNNAdd", input1_id=m, input2_id=m, output_id=y, flags=0)
    xv, vv = rand(4, 8), rand(8)
    got = runtime.load(b.build()).run({"x": xv, "v": vv})["y"]
    want = (-vv) * np.abs(xv)
    np.testing.assert_allclose(got, want + want, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    n=st.sampled_from([1, 7, 17, 64, 1000]),
    ops=st.lists(
        st.sampled_from(["XNNAbs", "XNNNegate", "XNNSquare", "XNNFloor", "XNNSigmoid"]),
        min_size=1,
        max_size=5,
    ),
    threads=st.sampled_from([1, 2, 3]),
)
def test_in_place_chains_match_numpy(n: int, ops: list[str], threads: int) -> None:
    # Floor after Sigmoid is ill-conditioned, not wrong: sigmoid is within an ulp or two of float32,
    # and floor turns 1 - 2^-24 against 1.0 into 0 against 1 (Hypothesis found it flaky that way).
    assume("XNNFloor" not in ops[ops.index("XNNSigmoid") :] if "XNNSigmoid" in ops else True)
    fns = {
        "XNNAbs": np.abs,
        "XNNNegate": np.negative,
        "XNNSquare": np.square,
        "XNNFloor": np.floor,
        "XNNSigmoid": lambda t: 1 / (1 + np.exp(-t)),
    }
    b = GraphBuilder()
    x = b.input("x", [n])
    cur, vals = x, []
    for op in ops:
        nxt = b.value([n])
        b.node(op, input_id=cur, output_id=nxt, flags=0)
        vals.append(nxt)
        cur = nxt
    y = b.output(b.value([n]), "y")
    b.node("XNNAdd", input1_id=cur, input2_id=vals[0], output_id=y, flags=0)  # vals[0] lives to the end
    xv = rand(n, rng=np.random.default_rng(n))  # the same input each time Hypothesis replays an example
    ref = xv.astype(np.float64)
    first = None
    for op in ops:
        # rounded to float32 after each op, as the runtime stores it: floor(sigmoid(17)) is 1 in float32
        ref = fns[op](ref).astype(np.float32).astype(np.float64)
        first = ref if first is None else first
    got = runtime.load(b.build(), threads=threads).run({"x": xv})["y"]
    np.testing.assert_allclose(got, ref + first, rtol=2e-6, atol=1e-6)


# ---------------------------------------------------------------- image layout changes


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 2),
    c=st.integers(1, 10),
    h=st.sampled_from([1, 3, 7]),
    w=st.sampled_from([1, 5, 17]),
    to_nhwc=st.booleans(),
    dt=st.sampled_from(["float32", "int32", "uint8", "int64"]),
    threads=st.sampled_from([1, 2]),
)
def test_nchw_nhwc_transposes(n: int, c: int, h: int, w: int, to_nhwc: bool, dt: str, threads: int) -> None:
    """The few-channel fast path (c <= 8) and the generic one (c > 8) agree with numpy."""
    from webxnn.xnn.ir import Datatype

    xnn_dt = {
        "float32": Datatype.FP32,
        "int32": Datatype.INT32,
        "uint8": Datatype.WX_UINT8,
        "int64": Datatype.WX_INT64,
    }[dt]
    dims, perm = ([n, c, h, w], [0, 2, 3, 1]) if to_nhwc else ([n, h, w, c], [0, 3, 1, 2])
    b = GraphBuilder()
    x = b.input("x", dims, xnn_dt)
    y = b.output(b.value([dims[p] for p in perm], xnn_dt), "y")
    b.node("XNNStaticTranspose", perm=perm, num_dims=4, input_id=x, output_id=y, flags=0)
    xv = (RNG.standard_normal(dims) * 50).astype(dt)
    got = runtime.load(b.build(), threads=threads).run({"x": xv})["y"]
    np.testing.assert_array_equal(got, xv.transpose(perm))


@pytest.mark.parametrize("pixels", [(1, 1), (1, 7), (2, 4), (1, 17), (3, 37), (224, 224)])
@pytest.mark.parametrize("to_nhwc", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_rgb_image_transposes(pixels: tuple[int, int], to_nhwc: bool, threads: int) -> None:
    """3-channel float images take the 8-pixel vector loop (and its scalar tail): numpy's transpose."""
    h, w = pixels
    dims, perm = ([2, 3, h, w], [0, 2, 3, 1]) if to_nhwc else ([2, h, w, 3], [0, 3, 1, 2])
    b = GraphBuilder()
    x = b.input("x", dims)
    y = b.output(b.value([dims[p] for p in perm]), "y")
    b.node("XNNStaticTranspose", perm=perm, num_dims=4, input_id=x, output_id=y, flags=0)
    xv = RNG.standard_normal(dims).astype(np.float32)
    got = runtime.load(b.build(), threads=threads).run({"x": xv})["y"]
    np.testing.assert_array_equal(got, xv.transpose(perm))


def _image_stem(
    hw: tuple[int, int],
    k: int,
    stride: int,
    pads: tuple[int, int, int, int],
    cout: int,
    expose: bool,
    act: str | None,
) -> tuple[bytes, np.ndarray, np.ndarray]:
    """An NCHW RGB image -> XNNStaticTranspose to NHWC -> the stem conv (relu6), then `act` if given, as ONNX
    models arrive. `expose` also makes the transposed image a graph output (so it must exist). Returns the
    blob, an input and the float64 reference of y."""
    draw = partial(rand, rng=np.random.default_rng(9))
    h, w = hw
    oh, ow = (h + pads[0] + pads[2] - k) // stride + 1, (w + pads[1] + pads[3] - k) // stride + 1
    xv, wc, bc = draw(1, 3, h, w), draw(cout, k, k, 3) * 0.3, draw(cout)
    b = GraphBuilder()
    x = b.input("x", [1, 3, h, w])
    t = b.value([1, h, w, 3])
    b.node("XNNStaticTranspose", perm=[0, 2, 3, 1], num_dims=4, input_id=x, output_id=t, flags=0)
    if expose:
        b.output(t, "t")
    c = b.value([1, oh, ow, cout])
    b.node(
        "XNNConv2d",
        output_min_max=(0.0, 6.0),
        **conv_fields((k, k), pads, (stride, stride), gic=3, goc=cout),
        input1_id=t,
        filter_id=b.const(wc),
        bias_id=b.const(bc),
        output_id=c,
        flags=0,
    )
    if act:
        a = b.value([1, oh, ow, cout])
        b.node(act, input_id=c, output_id=a, flags=0)
        c = a
    b.output(c, "y")
    x64 = xv.transpose(0, 2, 3, 1).astype(np.float64)
    want = np.clip(conv2d_ref(x64, wc, bc, pads, (stride, stride), (1, 1), 1), 0, 6)
    return b.build(), xv, ACT_REF[act](want) if act else want


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("act", [None, "XNNHardswish"])
@pytest.mark.parametrize(
    "hw, k, stride, pads, cout",
    [
        ((224, 224), 3, 2, (1, 1, 1, 1), 32),
        ((17, 30), 7, 2, (3, 3, 3, 3), 64),
        ((9, 7), 3, 1, (0, 1, 1, 0), 17),
    ],
)
def test_image_transpose_fuses_into_stem(
    hw: tuple[int, int],
    k: int,
    stride: int,
    pads: tuple[int, int, int, int],
    cout: int,
    act: str | None,
    threads: int,
) -> None:
    """The NCHW -> NHWC transpose of an image read only by the stem conv never runs: the conv reads the planes
    in place (one step, the transpose listed as fused). Same bits as with the transposed image in memory."""
    blob, xv, want = _image_stem(hw, k, stride, pads, cout, expose=False, act=act)
    apart_blob, _, _ = _image_stem(hw, k, stride, pads, cout, expose=True, act=act)
    p = runtime.load(blob, threads=threads)
    got = p.run({"x": xv})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, runtime.load(apart_blob, threads=threads).run({"x": xv})["y"])
    rows = steps(p, {"x": xv})
    assert [(r["kind"], r["fused"]) for r in rows] == [("XNNConv2d", [0] + ([2] if act else []))]
    assert [r["kind"] for r in steps(runtime.load(apart_blob), {"x": xv})][:2] == [
        "XNNStaticTranspose",
        "XNNConv2d",
    ]


# ---------------------------------------------------------------- weights fetched ahead


def _classifier(
    cin: int, hidden: int, classes: int, pool: bool = True, ks: tuple[int, ...] = (1,)
) -> tuple[bytes, dict, np.ndarray]:
    """MobileNetV2's head: convs (kernel sizes ks, cin -> hidden -> ... -> hidden, relu6) on a 3x3 map, then
    a fully connected layer (hidden -> classes) on the globally average-pooled row (pool) or on the 9 pixels'
    rows."""
    b = GraphBuilder()
    x = b.input("x", [1, 3, 3, cin])
    xv = rand(1, 3, 3, cin)
    c, feat = x, xv
    for i, k in enumerate(ks):
        c, w, bias = _conv(b, c, cin if i == 0 else hidden, hidden, 3, k=k, act=(0.0, 6.0))
        feat = np.clip(_cref(feat, w, bias), 0, 6).astype(np.float32)
    rows = b.value([1 if pool else 9, hidden])
    if pool:
        b.node("XNNGlobalAvgPooling2d", input_id=c, output_id=rows, flags=0)
    else:
        b.node("XNNStaticReshape", new_shape=[9, hidden], input_id=c, output_id=rows, flags=0)
    fw, fb = rand(classes, hidden) * 0.1, rand(classes)
    y = b.output(b.value([1 if pool else 9, classes]), "y")
    b.node(
        "XNNFullyConnected", input1_id=rows, filter_id=b.const(fw), bias_id=b.const(fb), output_id=y, flags=0
    )
    f64 = feat.astype(np.float64).reshape(9, hidden)
    if pool:
        f64 = f64.mean(axis=0, keepdims=True)
    return b.build(), {"x": xv}, f64 @ fw.T.astype(np.float64) + fb


@pytest.mark.parametrize("threads", [1, 2])
def test_big_classifier_weights_prefetched_by_the_convs_before(threads: int) -> None:
    """A fully connected layer on one row with weights bigger than L2 (here 2.5 MB) runs at the speed of
    memory: the two pointwise convs before it prefetch them, half each (plan: `prefetches` names the FC node);
    a 3x3 conv before those does not. Results as numpy's."""
    blob, feeds, want = _classifier(64, 640, 1000, ks=(3, 1, 1))
    p = runtime.load(blob, threads=threads)
    np.testing.assert_allclose(p.run(feeds)["y"], want, rtol=1e-4, atol=1e-4)
    rows = [r for r in p.plan() if not r["aliased"]]
    fc = rows[-1]["node"]
    assert [(r["kind"], r["prefetches"]) for r in rows] == [
        ("XNNConv2d", None),
        ("XNNConv2d", fc),
        ("XNNConv2d", fc),
        ("XNNGlobalAvgPooling2d", None),
        ("XNNFullyConnected", None),
    ]


def test_profile_says_which_steps_prefetch(tmp_path, capsys) -> None:
    from webxnn.cli import main

    blob, _, _ = _classifier(64, 640, 1000, ks=(1, 1))
    path = tmp_path / "head.xnn"
    path.write_bytes(blob)
    assert main(["run", str(path), "--random-inputs", "--profile", "2"]) == 0
    fc = runtime.load(blob).plan()[-1]["node"]
    assert capsys.readouterr().out.count(f"prefetching node {fc}'s weights") == 2


@pytest.mark.parametrize(
    "hidden, pool, ks",
    [
        (64, True, (1,)),  # weights of 256 KB: they stay in the caches
        (640, False, (1,)),  # 9 rows: each weight read 9 times, a GEMM rather than a stream of weights
        (640, True, (1, 3)),  # the conv just before is 3x3 (IGEMM, no prefetch stream)
    ],
)
def test_classifier_weights_not_prefetched(hidden: int, pool: bool, ks: tuple[int, ...]) -> None:
    blob, feeds, want = _classifier(64, hidden, 1000, pool, ks)
    p = runtime.load(blob)
    np.testing.assert_allclose(p.run(feeds)["y"], want, rtol=1e-4, atol=1e-4)
    assert all(r["prefetches"] is None for r in p.plan())


# ---------------------------------------------------------------- residual fusion


def _conv(
    b: GraphBuilder, x: int, cin: int, cout: int, hw: int, k: int = 3, act: tuple[float, float] | None = None
) -> tuple[int, np.ndarray, np.ndarray]:
    w = rand(cout, k, k, cin) * 0.3
    bias = rand(cout)
    out = b.value([1, hw, hw, cout])
    b.node(
        "XNNConv2d",
        output_min_max=act,
        **conv_fields((k, k), (k // 2,) * 4, gic=cin, goc=cout),
        input1_id=x,
        filter_id=b.const(w),
        bias_id=b.const(bias),
        output_id=out,
        flags=0,
    )
    return out, w, bias


def _cref(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    k = w.shape[1]
    p = k // 2
    return conv2d_ref(x, w, bias, (p, p, p, p), (1, 1), (1, 1), 1)


@pytest.mark.parametrize("threads", [1, 2])
def test_residual_add_fuses_into_conv(threads: int) -> None:
    """ResNet block: y = relu(conv2(conv1(x)) + shortcut(x)), the shortcut conv placed after conv2."""
    b = GraphBuilder()
    x = b.input("x", [1, 6, 6, 4])
    c1, w1, b1 = _conv(b, x, 4, 8, 6, act=(0.0, float("inf")))
    c2, w2, b2 = _conv(b, c1, 8, 8, 6)
    sc, ws, bs = _conv(b, x, 4, 8, 6, k=1)
    y = b.output(b.value([1, 6, 6, 8]), "y")
    b.node("XNNAdd", output_min_max=(0.0, float("inf")), input1_id=c2, input2_id=sc, output_id=y, flags=0)
    p = runtime.load(b.build(), threads=threads)
    xv = rand(1, 6, 6, 4)
    got = p.run({"x": xv})["y"]
    h = np.maximum(_cref(xv, w1, b1), 0)
    want = np.maximum(_cref(h, w2, b2) + _cref(xv, ws, bs), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    rows = steps(p, {"x": xv})
    fused = [r for r in rows if r["fused"]]
    assert len(fused) == 1 and fused[0]["kind"] == "XNNConv2d" and fused[0]["shape"] == (1, 6, 6, 8)


def test_no_fusion_when_conv_has_activation_or_two_readers() -> None:
    b = GraphBuilder()
    x = b.input("x", [1, 5, 5, 3])
    c1, w1, b1 = _conv(b, x, 3, 3, 5, act=(-1.0, 1.0))  # clamp before the add: not fusable
    s1 = b.value([1, 5, 5, 3])
    b.node("XNNAdd", input1_id=c1, input2_id=x, output_id=s1, flags=0)
    c2, w2, b2 = _conv(b, s1, 3, 3, 5)  # read by the add and by the multiply: not fusable
    s2 = b.value([1, 5, 5, 3])
    b.node("XNNAdd", input1_id=s1, input2_id=c2, output_id=s2, flags=0)
    y = b.output(b.value([1, 5, 5, 3]), "y")
    b.node("XNNMultiply", input1_id=s2, input2_id=c2, output_id=y, flags=0)
    p = runtime.load(b.build())
    xv = rand(1, 5, 5, 3)
    got = p.run({"x": xv})["y"]
    t1 = np.clip(_cref(xv, w1, b1), -1, 1) + xv
    t2 = _cref(t1, w2, b2)
    np.testing.assert_allclose(got, (t1 + t2) * t2, rtol=1e-4, atol=1e-4)
    assert not any(r["fused"] for r in steps(p, {"x": xv}))


@pytest.mark.parametrize("threads", [1, 2])
def test_residual_add_fuses_into_fully_connected(threads: int) -> None:
    """Transformer sub-layer: y = x + fc(x) with bias; a broadcast add (bias row) is not fused."""
    b = GraphBuilder()
    x = b.input("x", [1, 9, 16])
    w, bias, row = rand(16, 16), rand(16), rand(16)
    f = b.value([1, 9, 16])
    wc, bc = b.const(w), b.const(bias)
    b.node("XNNFullyConnected", input1_id=x, filter_id=wc, bias_id=bc, output_id=f, flags=0)
    s = b.value([1, 9, 16])
    b.node("XNNAdd", input1_id=x, input2_id=f, output_id=s, flags=0)
    g = b.value([1, 9, 16])
    b.node("XNNFullyConnected", input1_id=s, filter_id=b.const(w), bias_id=INVALID_ID, output_id=g, flags=0)
    y = b.output(b.value([1, 9, 16]), "y")
    b.node("XNNAdd", input1_id=g, input2_id=b.const(row), output_id=y, flags=0)
    p = runtime.load(b.build(), threads=threads)
    xv = rand(1, 9, 16)
    got = p.run({"x": xv})["y"]
    x64 = xv.astype(np.float64)
    s_ref = x64 + x64 @ w.T + bias
    np.testing.assert_allclose(got, s_ref @ w.T + row, rtol=1e-4, atol=1e-4)
    assert [r["kind"] for r in steps(p, {"x": xv}) if r["fused"]] == ["XNNFullyConnected"]


# ---------------------------------------------------------------- activation fusion
ACT_REF = {
    "XNNHardswish": lambda v: v * np.clip(v + 3, 0, 6) / 6,
    "XNNSigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "XNNGelu": lambda v: 0.5 * v * (1 + np.vectorize(__import__("math").erf)(v / np.sqrt(2))),
}


def _producer_then_act(producer: str, act: str, expose: bool) -> tuple[bytes, np.ndarray, np.ndarray]:
    """x -> producer (clamped to [-2, 3]) -> act -> y, with the producer's output also a graph output when
    `expose` (which keeps it from fusing); returns the blob, an input and the float64 reference of y. The same
    weights and input on every call."""
    draw = partial(rand, rng=np.random.default_rng(5))  # the same draws on every call
    b = GraphBuilder()
    clamp = (-2.0, 3.0)
    if producer == "XNNFullyConnected":
        xv, w, bias = draw(1, 7, 24), draw(20, 24) * 0.3, draw(20)
        x = b.input("x", [1, 7, 24])
        h = b.value([1, 7, 20])
        b.node(
            producer,
            output_min_max=clamp,
            input1_id=x,
            filter_id=b.const(w),
            bias_id=b.const(bias),
            output_id=h,
            flags=0,
        )
        ref = xv.astype(np.float64) @ w.T + bias
    elif producer == "XNNDepthwiseConv2d":
        xv, w, bias = draw(1, 9, 10, 12), draw(1, 3, 3, 12), draw(12)
        x = b.input("x", [1, 9, 10, 12])
        h = b.value([1, 9, 10, 12])
        b.node(
            producer,
            output_min_max=clamp,
            input1_id=x,
            filter_id=b.const(w),
            bias_id=b.const(bias),
            output_id=h,
            flags=0,
            **conv_fields((3, 3), (1, 1, 1, 1), gic=1, goc=1, groups=12),
        )
        ref = conv2d_ref(xv, np.transpose(w, (3, 1, 2, 0)), bias, (1, 1, 1, 1), (1, 1), (1, 1), 12)
    else:
        xv, w, bias = draw(1, 6, 6, 4), draw(8, 3, 3, 4) * 0.3, draw(8)
        x = b.input("x", [1, 6, 6, 4])
        h = b.value([1, 6, 6, 8])
        b.node(
            producer,
            output_min_max=clamp,
            input1_id=x,
            filter_id=b.const(w),
            bias_id=b.const(bias),
            output_id=h,
            flags=0,
            **conv_fields((3, 3), (1, 1, 1, 1), gic=4, goc=8),
        )
        ref = _cref(xv, w, bias)
    shape = list(ref.shape)
    if expose:
        b.output(h, "h")
    y = b.output(b.value(shape), "y")
    b.node(act, input_id=h, output_id=y, flags=0)
    return b.build(), xv, ACT_REF[act](np.clip(ref, *clamp))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("act", sorted(ACT_REF))
@pytest.mark.parametrize("producer", ["XNNConv2d", "XNNDepthwiseConv2d", "XNNFullyConnected"])
def test_activation_fuses_into_producer(producer: str, act: str, threads: int) -> None:
    """MobileNetV3 / transformer MLP shapes: a conv, depthwise conv or FC whose only reader is HardSwish,
    Sigmoid or Gelu runs as one step (clamp, then the activation, on each output tile), with the same bits as
    the two steps run apart (forced by also exposing the intermediate as a graph output), and no arena."""
    fused_blob, xv, want = _producer_then_act(producer, act, expose=False)
    apart_blob, _, _ = _producer_then_act(producer, act, expose=True)
    p = runtime.load(fused_blob, threads=threads)
    got = p.run({"x": xv})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    apart = runtime.load(apart_blob, threads=threads)
    np.testing.assert_array_equal(got, apart.run({"x": xv})["y"])
    rows = steps(p, {"x": xv})
    assert [(r["kind"], len(r["fused"])) for r in rows] == [(producer, 1)]
    assert p.peak_arena_bytes == 0
    assert not any(r["fused"] for r in steps(apart, {"x": xv}))


def test_activation_not_fused_after_two_readers_or_deconv() -> None:
    """The conv output read twice, and a transposed conv (its kernels take no post-op): separate steps."""
    b = GraphBuilder()
    x = b.input("x", [1, 5, 5, 3])
    c, w, bias = _conv(b, x, 3, 3, 5)
    s = b.value([1, 5, 5, 3])
    b.node("XNNSigmoid", input_id=c, output_id=s, flags=0)
    m = b.value([1, 5, 5, 3])
    b.node("XNNMultiply", input1_id=c, input2_id=s, output_id=m, flags=0)  # swish: c * sigmoid(c)
    wd = rand(2, 2, 2, 3)
    d = b.value([1, 10, 10, 2])
    b.node(
        "XNNConvTranspose2d",
        input1_id=m,
        filter_id=b.const(wd),
        bias_id=INVALID_ID,
        output_id=d,
        flags=0,
        **conv_fields((2, 2), stride=(2, 2), gic=3, goc=2),
    )
    y = b.output(b.value([1, 10, 10, 2]), "y")
    b.node("XNNHardswish", input_id=d, output_id=y, flags=0)
    p = runtime.load(b.build())
    xv = rand(1, 5, 5, 3)
    got = p.run({"x": xv})["y"]
    cv = _cref(xv, w, bias)
    mv = cv / (1 + np.exp(-cv))
    dv = np.zeros((1, 10, 10, 2))
    for ky in range(2):
        for kx in range(2):
            dv[:, ky::2, kx::2, :] = mv @ wd[:, ky, kx, :].T
    np.testing.assert_allclose(got, ACT_REF["XNNHardswish"](dv), rtol=1e-4, atol=1e-5)
    assert not any(r["fused"] for r in steps(p, {"x": xv}))


# ---------------------------------------------------------------- expand -> depthwise fusion
def _inverted_residual(
    hw: int, expose: bool, act: str | None, expand_act: str | None = None
) -> tuple[bytes, np.ndarray, np.ndarray]:
    """MobileNetV2 block on [1, hw, hw, 24]: 1x1 expand to 144 (relu6; then `expand_act` if given, as in
    MobileNetV3), 3x3 depthwise (relu6; then `act` if given), 1x1 project to 24, residual add. `expose` also
    makes the expanded and the depthwise tensors graph outputs. Returns the blob, an input and the float64
    reference of y."""
    draw = partial(rand, rng=np.random.default_rng(8))  # the same draws on every call
    b = GraphBuilder()
    xv, we, be = draw(1, hw, hw, 24), draw(144, 1, 1, 24) * 0.3, draw(144)
    wd, bd, wp = draw(1, 3, 3, 144) * 0.3, draw(144), draw(24, 1, 1, 144) * 0.1
    x = b.input("x", [1, hw, hw, 24])
    e = b.value([1, hw, hw, 144])
    b.node(
        "XNNConv2d",
        output_min_max=(0.0, 6.0),
        **conv_fields((1, 1), gic=24, goc=144),
        input1_id=x,
        filter_id=b.const(we),
        bias_id=b.const(be),
        output_id=e,
        flags=0,
    )
    if expose:
        b.output(e, "e")
    if expand_act:
        ea = b.value([1, hw, hw, 144])
        b.node(expand_act, input_id=e, output_id=ea, flags=0)
        e = ea
    d = b.value([1, hw, hw, 144])
    b.node(
        "XNNDepthwiseConv2d",
        output_min_max=(0.0, 6.0),
        **conv_fields((3, 3), (1, 1, 1, 1), groups=144),
        input1_id=e,
        filter_id=b.const(wd),
        bias_id=b.const(bd),
        output_id=d,
        flags=0,
    )
    if act:
        a = b.value([1, hw, hw, 144])
        b.node(act, input_id=d, output_id=a, flags=0)
        d = a
    if expose:
        b.output(d, "d")
    pr = b.value([1, hw, hw, 24])
    b.node(
        "XNNConv2d",
        **conv_fields((1, 1), gic=144, goc=24),
        input1_id=d,
        filter_id=b.const(wp),
        bias_id=INVALID_ID,
        output_id=pr,
        flags=0,
    )
    y = b.output(b.value([1, hw, hw, 24]), "y")
    b.node("XNNAdd", input1_id=pr, input2_id=x, output_id=y, flags=0)
    x64 = xv.astype(np.float64)
    ev = np.clip(x64 @ we[:, 0, 0, :].T + be, 0, 6)
    if expand_act:
        ev = ACT_REF[expand_act](ev)
    dv = np.clip(conv2d_ref(ev, np.transpose(wd, (3, 1, 2, 0)), bd, (1, 1, 1, 1), (1, 1), (1, 1), 144), 0, 6)
    if act:
        dv = ACT_REF[act](dv)
    return b.build(), xv, dv @ wp[:, 0, 0, :].T + x64


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "act, expand_act",
    [(None, None), ("XNNHardswish", None), (None, "XNNSigmoid"), ("XNNHardswish", "XNNHardswish")],
)
def test_block_fuses_into_one_step(act: str | None, expand_act: str | None, threads: int) -> None:
    """On a 56x56 map (1.8 MB expanded, 1.8 MB after the depthwise) the whole block runs as one step: the 1x1
    expand conv (and its activation, MobileNetV3) computed row by row inside the depthwise, whose output rows
    (after its activation) feed the 1x1 project conv and its residual add. Same bits as the unfused block (the
    expanded and depthwise tensors forced into memory by exposing them as outputs)."""
    blob, xv, want = _inverted_residual(56, expose=False, act=act, expand_act=expand_act)
    apart_blob, _, _ = _inverted_residual(56, expose=True, act=act, expand_act=expand_act)
    p = runtime.load(blob, threads=threads)
    got = p.run({"x": xv})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, runtime.load(apart_blob, threads=threads).run({"x": xv})["y"])
    rows = steps(p, {"x": xv})
    nodes = 4 + (act is not None) + (expand_act is not None)  # the project conv is the one before the add
    assert [(r["kind"], r["node"], r["fused"]) for r in rows] == [
        ("XNNConv2d", nodes - 2, [n for n in range(nodes) if n != nodes - 2])
    ]
    apart_rows = steps(runtime.load(apart_blob), {"x": xv})
    assert [(r["kind"], len(r["fused"])) for r in apart_rows] == [
        ("XNNConv2d", 0),
        *([(expand_act, 0)] if expand_act else []),
        ("XNNDepthwiseConv2d", int(act is not None)),
        ("XNNConv2d", 1),
    ]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("hw", [7, 14])
def test_expand_stays_apart_on_small_maps(hw: int, threads: int) -> None:
    """On a 14x14 map the expanded tensor (113 KB) stays in cache between two separate steps, which are faster
    there than the row-by-row fused step; the depthwise still runs inside the project (on batches of rows),
    from 14 rows on: on 7 a 2-thread split of its rows is 4 : 3, and it stays apart. Same bits either way."""
    blob, xv, want = _inverted_residual(hw, expose=False, act=None)
    apart_blob, _, _ = _inverted_residual(hw, expose=True, act=None)
    p = runtime.load(blob, threads=threads)
    got = p.run({"x": xv})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, runtime.load(apart_blob, threads=threads).run({"x": xv})["y"])
    kinds = [(r["kind"], len(r["fused"])) for r in steps(p, {"x": xv})]
    if hw == 14:
        assert kinds == [("XNNConv2d", 0), ("XNNConv2d", 2)]  # the project with its depthwise and add
    else:
        assert kinds == [("XNNConv2d", 0), ("XNNDepthwiseConv2d", 0), ("XNNConv2d", 1)]


# ---------------------------------------------------------------- profile


def test_profile_rows_cover_every_node() -> None:
    b = GraphBuilder()
    x = b.input("x", [1, 4, 4, 2])
    c, w, bias = _conv(b, x, 2, 2, 4)
    s = b.value([1, 4, 4, 2])
    b.node("XNNAdd", input1_id=c, input2_id=x, output_id=s, flags=0)
    r = b.value([32])
    b.node("XNNStaticReshape", new_shape=[32], input_id=s, output_id=r, flags=0)
    y = b.output(b.value([32]), "y")
    b.node("XNNSigmoid", input_id=r, output_id=y, flags=0)
    p = runtime.load(b.build(), threads=2)
    rows = p.profile({"x": rand(1, 4, 4, 2)}, repeat=3)
    covered = sorted([r["node"] for r in rows] + [f for r in rows for f in r["fused"]])
    assert covered == [0, 1, 2, 3]
    for row in rows:
        assert set(row) >= {"node", "kind", "source", "shape", "fused", "ms", "total_ms", "aliased"}
        assert row["ms"] >= 0 and row["total_ms"] >= row["ms"]
    assert rows[-1]["aliased"] and rows[-1]["kind"] == "XNNStaticReshape" and rows[-1]["ms"] == 0.0
    with pytest.raises(ValueError):
        p.profile({"x": rand(1, 4, 4, 2)}, repeat=0)
    plan = p.plan()
    assert [(r["node"], r["fused"], r["aliased"]) for r in plan] == [
        (r["node"], r["fused"], r["aliased"]) for r in rows
    ]
    assert all(r["serial"] for r in plan)  # a graph this small never wakes the pool
    assert p.packed_weight_bytes >= 2 * 3 * 3 * 2 * 4


# ---------------------------------------------------------------- loading without a copy


def test_bytes_blob_is_borrowed_safely() -> None:
    """A bytes blob is used in place (kept alive by the Program); a bytearray is copied, so editing it later
    changes nothing."""
    b = GraphBuilder()
    x = b.input("x", [2, 3])
    w = rand(4, 3)
    y = b.output(b.value([2, 4]), "y")
    b.node("XNNFullyConnected", input1_id=x, filter_id=b.const(w), bias_id=INVALID_ID, output_id=y, flags=0)
    blob = b.build()
    xv = rand(2, 3)
    want = xv.astype(np.float64) @ w.T  # (atol: an fp32 sum of three products can cancel to ~0)
    p1 = runtime.load(bytes(blob))
    gc.collect()
    np.testing.assert_allclose(p1.run({"x": xv})["y"], want, rtol=1e-5, atol=1e-6)
    mutable = bytearray(blob)
    p2 = runtime.load(mutable)
    mutable[:] = bytes(len(mutable))
    np.testing.assert_allclose(p2.run({"x": xv})["y"], want, rtol=1e-5, atol=1e-6)
    p3 = runtime.load(memoryview(bytes(blob)))
    np.testing.assert_allclose(p3.run({"x": xv})["y"], want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- thread-count invariance on tiny models

onnx = pytest.importorskip("onnx")


def _onnx_cnn() -> tuple[bytes, dict[str, np.ndarray]]:
    """A MobileNetV2/ResNet-shaped toy: stem conv, depthwise, projection with residual, pool, FC."""
    from onnx import TensorProto, helper, numpy_helper

    def init(name: str, arr: np.ndarray):
        return numpy_helper.from_array(arr.astype(np.float32), name)

    inits = [
        init("w0", rand(16, 3, 3, 3) * 0.3),
        init("b0", rand(16)),
        init("w1", rand(32, 16, 1, 1) * 0.3),
        init("b1", rand(32)),
        init("wd", rand(32, 1, 3, 3) * 0.3),
        init("bd", rand(32)),
        init("w2", rand(16, 32, 1, 1) * 0.3),
        init("b2", rand(16)),
        init("wf", rand(10, 16) * 0.3),
        init("bf", rand(10)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Clip", ["c0", "lo", "hi"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["cd"], pads=[1, 1, 1, 1], group=32),
        helper.make_node("Relu", ["cd"], ["rd"]),
        helper.make_node("Conv", ["rd", "w2", "b2"], ["c2"]),
        helper.make_node("Add", ["c2", "r0"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits += [
        numpy_helper.from_array(np.array(0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6, np.float32), "hi"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 17, 17])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), {"x": rand(1, 3, 17, 17)}


def _onnx_encoder() -> tuple[bytes, dict[str, np.ndarray]]:
    """A one-layer MiniLM-shaped encoder: attention with a mask, residual + layer norm, erf GELU MLP."""
    from onnx import TensorProto, helper, numpy_helper

    d, s, h, f = 16, 7, 2, 32

    def init(name: str, arr: np.ndarray):
        return numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name)

    inits = [init(n, rand(d, d) * 0.3) for n in ("wq", "wk", "wv", "wo")]
    inits += [
        init("w1", rand(d, f) * 0.3),
        init("b1", rand(f)),
        init("w2", rand(f, d) * 0.3),
        init("b2", rand(d)),
        init("g1", 1 + rand(d) * 0.1),
        init("e1", rand(d) * 0.1),
        init("scale", np.array(1 / np.sqrt(d // h))),
        init("sqrt2", np.array(np.sqrt(2.0))),
        init("one", np.array(1.0)),
        init("half", np.array(0.5)),
        numpy_helper.from_array(np.array([1, s, h, d // h], np.int64), "heads"),
        numpy_helper.from_array(np.array([1, s, d], np.int64), "merged"),
    ]
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "wq"], ["q0"]),
        n("Reshape", ["q0", "heads"], ["q1"]),
        n("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
        n("MatMul", ["x", "wk"], ["k0"]),
        n("Reshape", ["k0", "heads"], ["k1"]),
        n("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
        n("MatMul", ["x", "wv"], ["v0"]),
        n("Reshape", ["v0", "heads"], ["v1"]),
        n("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3]),
        n("MatMul", ["q", "kt"], ["sc0"]),
        n("Mul", ["sc0", "scale"], ["sc1"]),
        n("Add", ["sc1", "mask"], ["sc"]),
        n("Softmax", ["sc"], ["pr"], axis=-1),
        n("MatMul", ["pr", "v"], ["ctx0"]),
        n("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "merged"], ["ctx"]),
        n("MatMul", ["ctx", "wo"], ["o"]),
        n("Add", ["o", "x"], ["r1"]),
        n("LayerNormalization", ["r1", "g1", "e1"], ["l1"], axis=-1, epsilon=1e-5),
        n("MatMul", ["l1", "w1"], ["m0"]),
        n("Add", ["m0", "b1"], ["m1"]),
        n("Div", ["m1", "sqrt2"], ["m2"]),
        n("Erf", ["m2"], ["m3"]),
        n("Add", ["m3", "one"], ["m4"]),
        n("Mul", ["m1", "m4"], ["m5"]),
        n("Mul", ["m5", "half"], ["m6"]),
        n("MatMul", ["m6", "w2"], ["m7"]),
        n("Add", ["m7", "b2"], ["m8"]),
        n("Add", ["m8", "l1"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "enc",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, s, d]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, s]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, s, d])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mask = np.zeros((1, 1, 1, s), np.float32)
    mask[..., -2:] = -1e4
    return model.SerializeToString(), {"x": rand(1, s, d), "mask": mask}


@pytest.mark.parametrize("make", [_onnx_cnn, _onnx_encoder], ids=["cnn", "encoder"])
def test_models_identical_for_any_thread_count(make) -> None:
    from onnx.reference import ReferenceEvaluator

    import webxnn

    model_bytes, feeds = make()
    blob = webxnn.compile(webxnn.from_onnx(onnx.load_from_string(model_bytes)))
    outs = []
    for threads in (1, 2, 3, 4):
        p = runtime.load(blob, threads=threads)
        outs.append(p.run(feeds)["y"])
        outs.append(p.run(feeds)["y"])  # a second run reuses the cached arena
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    want = ReferenceEvaluator(onnx.load_from_string(model_bytes)).run(None, feeds)[0]
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- arena placement


@settings(max_examples=60, deadline=None)
@given(
    tensors=st.lists(
        st.tuples(st.integers(1, 40), st.integers(0, 12), st.integers(0, 4)), min_size=1, max_size=24
    ),
    centred=st.booleans(),
)
def test_arena_layout_separates_live_tensors(tensors: list[tuple[int, int, int]], centred: bool) -> None:
    """Tensors whose lifetimes intersect never share bytes; offsets stay 64-byte aligned; the arena holds them
    all. Centred: tensors sharing memory share a slot and its middle (within 64 bytes)."""
    sizes = [64 * s for s, _, _ in tensors]
    starts = [a for _, a, _ in tensors]
    ends = [a + d for _, a, d in tensors]
    offsets, arena = load_testing_module().arena_layout(sizes, starts, ends, centred)
    n = len(sizes)
    for i in range(n):
        assert offsets[i] % 64 == 0 and offsets[i] + sizes[i] <= arena
        for j in range(i + 1, n):
            live_together = not (ends[i] < starts[j] or ends[j] < starts[i])
            apart = offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i]
            assert apart or not live_together
            if centred and not apart:  # one slot: the same middle
                assert abs((2 * offsets[i] + sizes[i]) - (2 * offsets[j] + sizes[j])) <= 2 * 64
    assert arena <= sum(sizes)


def test_arena_layout_centres_a_chain() -> None:
    """A chain of steps (each tensor read by the next step only) whose tensors shrink and grow: two slots take
    turns, every tensor on its slot's middle, so the first half of each (thread 0's rows) lies in the lines
    thread 0 wrote before; the greedy placement packs them from offset 0, in the same arena size."""
    sizes = [64 * k for k in (8, 6, 4, 6, 8, 2)]
    starts = list(range(6))
    ends = [s + 1 for s in starts]
    assert load_testing_module().arena_layout(sizes, starts, ends, True) == ([0, 512, 128, 512, 0, 640], 896)
    assert load_testing_module().arena_layout(sizes, starts, ends, False) == ([0, 512, 0, 512, 0, 512], 896)


def test_arena_layout_rejects_calls_outside_its_contract() -> None:
    """The test hook checks place_tensors' contract and says which tensor broke it, as webxnn's error."""
    from webxnn.errors import WebxnnError

    with pytest.raises(WebxnnError, match="differ in length"):
        load_testing_module().arena_layout([64], [0, 1], [0], True)
    with pytest.raises(WebxnnError, match="tensor 1's size 100 is not a multiple of 64"):
        load_testing_module().arena_layout([64, 100], [0, 0], [0, 0], False)
    with pytest.raises(WebxnnError, match="tensor 0 ends before it starts"):
        load_testing_module().arena_layout([64], [3], [2], True)
