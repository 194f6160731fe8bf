"""The C++ runtime through webxnn.runtime: every supported node against numpy, threads, concurrency, planning,
errors, and the ExecuTorch conformance payload."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import conv_fields, pool_fields
from test_runtime_util import (
    FP32,
    GraphBuilder,
    conv2d_ref,
    conv_chain_blob,
    deconv2d_ref,
    per_channel,
    per_tensor,
    pool_ref,
    simple_fc_blob,
    unary_graph,
)
from webxnn import runtime
from webxnn.errors import FormatError, InputError, UnsupportedError
from webxnn.xnn.ir import INVALID_ID, Datatype

RNG = np.random.default_rng(1234)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def run1(blob: bytes, *xs: np.ndarray, threads: int = 1) -> np.ndarray:
    p = runtime.load(blob, threads=threads)
    outs = p.run(list(xs))
    assert len(outs) == 1
    return next(iter(outs.values()))


# ---------------------------------------------------------------- fully connected, matmul


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_fully_connected(transposed: bool, with_bias: bool) -> None:
    x, w, bias = rand(2, 3, 5), rand(7, 5), rand(7)
    b = GraphBuilder()
    xi = b.input("x", [2, 3, 5])
    wi = b.const(w.T.copy() if transposed else w)
    bi = b.const(bias) if with_bias else INVALID_ID
    y = b.output(b.value([2, 3, 7]), "y")
    b.node(
        "XNNFullyConnected",
        output_min_max=(-0.5, 1.0),
        input1_id=xi,
        filter_id=wi,
        bias_id=bi,
        output_id=y,
        flags=1 if transposed else 0,
    )
    got = run1(b.build(), x)
    want = np.clip(x.astype(np.float64) @ w.T + (bias if with_bias else 0), -0.5, 1.0)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize(
    "a_shape,b_shape,transpose_b",
    [
        ([3, 4], [4, 5], False),
        ([2, 3, 4], [2, 4, 5], False),
        ([2, 3, 4], [4, 5], False),
        ([2, 1, 3, 4], [1, 3, 5, 4], True),
        ([1, 3, 4], [2, 4, 6], False),
    ],
)
def test_batch_matrix_multiply(a_shape: list[int], b_shape: list[int], transpose_b: bool) -> None:
    a, bm = rand(*a_shape), rand(*b_shape)
    bb = np.swapaxes(bm, -1, -2) if transpose_b else bm
    want = np.matmul(a.astype(np.float64), bb)
    b = GraphBuilder()
    ai = b.input("a", a_shape)
    bi = b.input("b", b_shape)
    y = b.output(b.value(list(want.shape)), "y")
    b.node("XNNBatchMatrixMultiply", input1_id=ai, input2_id=bi, output_id=y, flags=1 if transpose_b else 0)
    np.testing.assert_allclose(run1(b.build(), a, bm), want, atol=1e-5)


# ---------------------------------------------------------------- convolution


@pytest.mark.parametrize(
    "groups,gic,goc,k,pads,stride,dil",
    [
        (1, 3, 4, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),
        (1, 2, 5, (1, 1), (0, 0, 0, 0), (1, 1), (1, 1)),
        (2, 2, 3, (3, 2), (0, 1, 2, 1), (2, 1), (1, 2)),
        (1, 1, 2, (2, 3), (1, 0, 0, 2), (2, 3), (2, 1)),
    ],
)
def test_conv2d(
    groups: int,
    gic: int,
    goc: int,
    k: tuple[int, int],
    pads: tuple[int, int, int, int],
    stride: tuple[int, int],
    dil: tuple[int, int],
) -> None:
    x = rand(2, 7, 6, groups * gic)
    w = rand(groups * goc, k[0], k[1], gic)
    bias = rand(groups * goc)
    want = np.maximum(conv2d_ref(x, w, bias, pads, stride, dil, groups), 0)
    b = GraphBuilder()
    xi = b.input("x", list(x.shape))
    y = b.output(b.value(list(want.shape)), "y")
    b.node(
        "XNNConv2d",
        output_min_max=(0.0, math.inf),
        input1_id=xi,
        filter_id=b.const(w),
        bias_id=b.const(bias),
        output_id=y,
        flags=0,
        **conv_fields(k, pads, stride, dil, groups, gic, goc),
    )
    np.testing.assert_allclose(run1(b.build(), x), want, atol=1e-4)


@pytest.mark.parametrize(
    "channels,mult,stride,pads", [(3, 1, (1, 1), (1, 1, 1, 1)), (2, 2, (2, 2), (0, 1, 1, 0))]
)
def test_depthwise_conv2d(
    channels: int, mult: int, stride: tuple[int, int], pads: tuple[int, int, int, int]
) -> None:
    x = rand(1, 6, 5, channels)
    wdw = rand(1, 3, 3, channels * mult)
    bias = rand(channels * mult)
    # as a grouped conv: output channel oc reads input channel oc // mult
    w_conv = np.transpose(wdw, (3, 1, 2, 0))
    want = conv2d_ref(x, w_conv, bias, pads, stride, (1, 1), channels)
    b = GraphBuilder()
    xi = b.input("x", list(x.shape))
    y = b.output(b.value(list(want.shape)), "y")
    b.node(
        "XNNDepthwiseConv2d",
        input1_id=xi,
        filter_id=b.const(wdw),
        bias_id=b.const(bias),
        output_id=y,
        flags=0,
        **conv_fields((3, 3), pads, stride, (1, 1), channels, 1, mult),
    )
    np.testing.assert_allclose(run1(b.build(), x), want, atol=1e-4)


@pytest.mark.parametrize(
    "groups,gic,goc,stride,pads,adj,dil",
    [
        (1, 3, 2, (2, 2), (1, 1, 1, 1), (1, 0), (1, 1)),
        (1, 2, 3, (1, 1), (0, 0, 0, 0), (0, 0), (1, 1)),
        (2, 1, 2, (3, 2), (0, 1, 2, 0), (2, 1), (1, 2)),
    ],
)
def test_conv_transpose2d(
    groups: int,
    gic: int,
    goc: int,
    stride: tuple[int, int],
    pads: tuple[int, int, int, int],
    adj: tuple[int, int],
    dil: tuple[int, int],
) -> None:
    x = rand(1, 4, 3, groups * gic)
    w = rand(groups * goc, 3, 2, gic)
    bias = rand(groups * goc)
    want = deconv2d_ref(x, w, bias, pads, stride, dil, adj, groups)
    b = GraphBuilder()
    xi = b.input("x", list(x.shape))
    y = b.output(b.value(list(want.shape)), "y")
    b.node(
        "XNNConvTranspose2d",
        input1_id=xi,
        filter_id=b.const(w),
        bias_id=b.const(bias),
        output_id=y,
        flags=0,
        **conv_fields((3, 2), pads, stride, dil, groups, gic, goc, adj),
    )
    np.testing.assert_allclose(run1(b.build(), x), want, atol=1e-4)


# ---------------------------------------------------------------- pooling


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(
    "size,stride,pads",
    [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (1, 2), (1, 1, 1, 1)), ((3, 2), (2, 1), (2, 0, 1, 1))],
)
def test_pooling(
    kind: str, size: tuple[int, int], stride: tuple[int, int], pads: tuple[int, int, int, int]
) -> None:
    x = rand(2, 7, 6, 3)
    want = pool_ref(x, kind, pads, size, stride)
    b = GraphBuilder()
    xi = b.input("x", list(x.shape))
    y = b.output(b.value(list(want.shape)), "y")
    b.node(
        "XNNMaxPooling2d" if kind == "max" else "XNNAvgPooling2d",
        **pool_fields(size, stride, pads, (0, 0)),
        input_id=xi,
        output_id=y,
        flags=0x40,
    )
    np.testing.assert_allclose(run1(b.build(), x), want, atol=1e-5)


@pytest.mark.parametrize("keep", [True, False])
def test_global_avg_pooling(keep: bool) -> None:
    x = rand(2, 5, 4, 3)
    want = x.astype(np.float64).mean(axis=(1, 2), keepdims=keep)
    want = want.reshape(2, 1, 1, 3) if keep else want.reshape(2, 3)
    want = np.clip(want, -0.1, 0.2)
    b = GraphBuilder()
    xi = b.input("x", [2, 5, 4, 3])
    y = b.output(b.value(list(want.shape)), "y")
    b.node(
        "XNNGlobalAvgPooling2d",
        output_min_max=(-0.1, 0.2),
        input_id=xi,
        output_id=y,
        flags=0x40 if keep else 0,
    )
    np.testing.assert_allclose(run1(b.build(), x), want, atol=1e-5)


# ---------------------------------------------------------------- element-wise

BINARY = {
    "XNNAdd": np.add,
    "XNNSubtract": np.subtract,
    "XNNMultiply": np.multiply,
    "XNNDiv": np.divide,
    "XNNMinimum": np.minimum,
    "XNNMaximum": np.maximum,
}


@pytest.mark.parametrize("kind", sorted(BINARY))
@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ([2, 3, 4], [2, 3, 4]),
        ([2, 3, 4], [4]),
        ([1, 3, 1], [2, 1, 5]),
        ([], [3, 2]),
        ([2, 1, 3, 1, 2, 1, 2], [1, 2, 1, 2, 1, 2, 1]),
    ],
)
def test_binary(kind: str, a_shape: list[int], b_shape: list[int]) -> None:
    a, c = rand(*a_shape), rand(*b_shape)
    if kind == "XNNDiv":
        c = np.where(np.abs(c) < 0.1, 1.0, c).astype(np.float32)
    want = BINARY[kind](a.astype(np.float64), c)
    clamp = kind in ("XNNAdd", "XNNSubtract", "XNNMultiply", "XNNDiv")
    if clamp:
        want = np.clip(want, -1.0, 1.5)
    b = GraphBuilder()
    ai = b.input("a", a_shape)
    ci = b.input("c", b_shape)
    y = b.output(b.value(list(want.shape)), "y")
    b.node(
        kind, output_min_max=(-1.0, 1.5) if clamp else None, input1_id=ai, input2_id=ci, output_id=y, flags=0
    )
    np.testing.assert_allclose(run1(b.build(), a, c), want, rtol=1e-5, atol=1e-6)


def test_binary_with_constant_operand() -> None:
    a, c = rand(2, 3), rand(3)
    b = GraphBuilder()
    ai = b.input("a", [2, 3])
    y = b.output(b.value([2, 3]), "y")
    b.node("XNNMultiply", input1_id=ai, input2_id=b.const(c), output_id=y, flags=0)
    np.testing.assert_allclose(run1(b.build(), a), a * c, rtol=1e-6)


def _gelu(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


UNARY = {
    "XNNAbs": np.abs,
    "XNNNegate": np.negative,
    "XNNFloor": np.floor,
    "XNNCeiling": np.ceil,
    "XNNSquare": np.square,
    "XNNSigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "XNNTanh": np.tanh,
    "XNNExp": np.exp,
    "XNNSin": np.sin,
    "XNNCos": np.cos,
    "XNNGelu": _gelu,
    "XNNHardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "XNNCopy": lambda x: x,
}


@pytest.mark.parametrize("kind", sorted(UNARY))
def test_unary(kind: str) -> None:
    x = rand(3, 17) * 2
    np.testing.assert_allclose(
        run1(unary_graph(kind, [3, 17]), x), UNARY[kind](x.astype(np.float64)), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "kind,fn",
    [("XNNSquareRoot", np.sqrt), ("XNNReciprocalSquareRoot", lambda x: 1 / np.sqrt(x)), ("XNNLog", np.log)],
)
def test_unary_positive(kind: str, fn) -> None:  # noqa: ANN001
    x = np.abs(rand(2, 9)) + 0.1
    np.testing.assert_allclose(run1(unary_graph(kind, [2, 9]), x), fn(x.astype(np.float64)), rtol=1e-5)


def test_clamp_leaky_elu() -> None:
    x = rand(4, 5) * 3
    b = GraphBuilder()
    xi = b.input("x", [4, 5])
    c = b.output(b.value([4, 5]), "clamp")
    b.node("XNNClamp", output_min_max=(-0.5, 0.75), input_id=xi, output_id=c, flags=0)
    lk = b.output(b.value([4, 5]), "leaky")
    b.node("XNNLeakyReLU", negative_slope=0.1, input_id=xi, output_id=lk, flags=0)
    el = b.output(b.value([4, 5]), "elu")
    b.node("XNNELU", alpha=0.7, input_id=xi, output_id=el, flags=0)
    out = runtime.load(b.build(), threads=1).run({"x": x})
    assert list(out) == ["clamp", "leaky", "elu"]
    np.testing.assert_allclose(out["clamp"], np.clip(x, -0.5, 0.75))
    np.testing.assert_allclose(out["leaky"], np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    np.testing.assert_allclose(
        out["elu"], np.where(x > 0, x, 0.7 * np.expm1(x.astype(np.float64))), rtol=1e-5, atol=1e-6
    )


def test_prelu() -> None:
    x, slope = rand(1, 3, 3, 4), rand(4)
    b = GraphBuilder()
    xi = b.input("x", [1, 3, 3, 4])
    y = b.output(b.value([1, 3, 3, 4]), "y")
    b.node("XNNPReLU", input1_id=xi, input2_id=b.const(slope), output_id=y, flags=0)
    np.testing.assert_allclose(run1(b.build(), x), np.where(x > 0, x, x * slope), rtol=1e-6)


@settings(max_examples=15, deadline=None)
@given(rows=st.sampled_from([1, 7, 17]), cols=st.sampled_from([1, 7, 17, 33]))
def test_softmax(rows: int, cols: int) -> None:
    x = rand(rows, cols) * 4
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(
        run1(unary_graph("XNNSoftmax", [rows, cols]), x), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6
    )


# ---------------------------------------------------------------- layout ops


def test_reshape_transpose_slice_pad() -> None:
    x = rand(2, 3, 4)
    b = GraphBuilder()
    xi = b.input("x", [2, 3, 4])
    r = b.output(b.value([6, 4]), "reshape")
    b.node("XNNStaticReshape", new_shape=[0, 4], input_id=xi, output_id=r, flags=0)
    t = b.output(b.value([4, 2, 3]), "transpose")
    b.node("XNNStaticTranspose", perm=[2, 0, 1], input_id=xi, output_id=t, flags=0)
    s = b.output(b.value([1, 2, 3]), "slice")
    b.node("XNNStaticSlice", offsets=[1, 1, 1], sizes=[1, 0, 3], input_id=xi, output_id=s, flags=0)
    p = b.output(b.value([3, 5, 5]), "pad")
    b.node(
        "XNNStaticConstantPad",
        pre_paddings=[1, 0, 1],
        post_paddings=[0, 2, 0],
        padding_value=-2.5,
        input_id=xi,
        output_id=p,
        flags=0,
    )
    out = runtime.load(b.build()).run({"x": x})
    np.testing.assert_array_equal(out["reshape"], x.reshape(6, 4))
    np.testing.assert_array_equal(out["transpose"], x.transpose(2, 0, 1))
    np.testing.assert_array_equal(out["slice"], x[1:2, 1:, 1:4])
    np.testing.assert_array_equal(out["pad"], np.pad(x, ((1, 0), (0, 2), (1, 0)), constant_values=-2.5))


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concatenate(n: int, axis: int) -> None:
    xs = []
    for k in range(n):
        shape = [2, 3, 4]
        shape[axis] = k + 1
        xs.append(rand(*shape))
    want = np.concatenate(xs, axis=axis)
    b = GraphBuilder()
    ids = [b.input(f"x{k}", list(x.shape)) for k, x in enumerate(xs)]
    y = b.output(b.value(list(want.shape)), "y")
    fields = {f"input{k + 1}_id": vid for k, vid in enumerate(ids)}
    b.node(f"XNNConcatenate{n}", axis=axis, output_id=y, flags=0, **fields)
    np.testing.assert_array_equal(run1(b.build(), *xs), want)


# ---------------------------------------------------------------- quantized


def test_convert_roundtrip() -> None:
    x = rand(3, 5)
    scale, zp = 0.02, 3
    b = GraphBuilder()
    xi = b.input("x", [3, 5])
    q = b.output(b.value([3, 5], Datatype.QINT8, per_tensor(scale, zp)), "q")
    b.node("XNNConvert", input_id=xi, output_id=q, flags=0)
    d = b.output(b.value([3, 5]), "d")
    b.node("XNNConvert", input_id=q, output_id=d, flags=0)
    out = runtime.load(b.build()).run({"x": x})
    want_q = np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8)
    assert out["q"].dtype == np.int8
    np.testing.assert_array_equal(out["q"], want_q)
    np.testing.assert_allclose(out["d"], (want_q.astype(np.float32) - zp) * scale, rtol=1e-6)


def test_qs8_fully_connected() -> None:
    """fp32 -> q(0.05, 3) -> FC(qcint8 per-channel, qcint32 bias) -> q(0.1, -2) -> fp32, like ExecuTorch."""
    x = np.array([[0.5, -1.0, 0.25, 2.0], [0.1, 0.2, -0.3, 0.4]], np.float32)
    in_s, in_zp, out_s, out_zp = 0.05, 3, 0.1, -2
    w_q = np.array([[10, -20, 30, 5], [-7, 8, 9, -10], [1, 2, 3, 4]], np.int8)
    w_s = [0.01, 0.02, 0.03]
    bias_q = np.array([103, -51, 7], np.int32)  # no exact rounding ties
    b = GraphBuilder()
    xi = b.input("x", [2, 4])
    xq = b.value([2, 4], Datatype.QINT8, per_tensor(in_s, in_zp))
    b.node("XNNConvert", input_id=xi, output_id=xq, flags=0)
    wi = b.const(w_q, Datatype.QCINT8, per_channel(w_s, 0))
    bi = b.const(bias_q, Datatype.QCINT32, per_channel([in_s * s for s in w_s], 0))
    yq = b.value([2, 3], Datatype.QINT8, per_tensor(out_s, out_zp))
    b.node("XNNFullyConnected", input1_id=xq, filter_id=wi, bias_id=bi, output_id=yq, flags=0)
    y = b.output(b.value([2, 3]), "y")
    b.node("XNNConvert", input_id=yq, output_id=y, flags=0)
    got = run1(b.build(), x)
    xq_ref = np.clip(np.round(x / in_s) + in_zp, -128, 127)
    acc = (xq_ref - in_zp) @ w_q.T.astype(np.float64) + bias_q
    real = acc * in_s * np.array(w_s)
    yq_ref = np.clip(np.round(real / out_s) + out_zp, -128, 127)
    np.testing.assert_allclose(got, (yq_ref - out_zp) * out_s, atol=1e-6)


def qfc_reference(
    x: np.ndarray,
    w_nk: np.ndarray,
    bias: np.ndarray | None,
    w_s: np.ndarray,
    in_s: float,
    in_zp: int,
    out_s: float,
    out_zp: int,
    lo: float,
    hi: float,
) -> np.ndarray:
    """qgemm's formula (kernels/table.def): exact int32 sums, fp32 scale (sa * sw) / sy, round half even, then
    the clamp output_min_max quantized to the output (round half even, saturating)."""
    acc = (x.astype(np.int64) - in_zp) @ w_nk.astype(np.int64).T
    if bias is not None:
        acc = acc + bias
    scale = np.float32(in_s) * w_s.astype(np.float32) / np.float32(out_s)
    y = np.rint(acc.astype(np.int32).astype(np.float32) * scale).astype(np.float64) + out_zp
    qlo = -128 if math.isinf(lo) else np.clip(np.rint(lo / out_s) + out_zp, -128, 127)
    qhi = 127 if math.isinf(hi) else np.clip(np.rint(hi / out_s) + out_zp, -128, 127)
    return np.clip(y, max(qlo, -128), min(qhi, 127)).astype(np.int8)


@pytest.mark.parametrize("channelwise", [True, False])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("bias_dt", [None, "qint32", "qcint32"])
@pytest.mark.parametrize("clamp", [None, (0.0, math.inf), (-1.5, 2.25)])
def test_qs8_fully_connected_exact(
    channelwise: bool, transposed: bool, bias_dt: str | None, clamp: tuple[float, float] | None
) -> None:
    """qint8 x (qcint8 | per-tensor qint8) [+ qint32 | qcint32 bias] -> qint8, filter [O, I] or [I, O] (flag
    0x1), with and without a fused clamp: the kernel's bits, batched input of rank 3."""
    rng = np.random.default_rng(5)
    I, O = 37, 19  # noqa: E741 - the FC's dims
    in_s, in_zp, out_s, out_zp = 0.04, -7, 0.25, 5
    x = rng.integers(-128, 128, (2, 3, I)).astype(np.int8)
    w = rng.integers(-128, 128, (O, I)).astype(np.int8)
    w_s = rng.uniform(0.002, 0.02, O).astype(np.float32) if channelwise else np.full(O, 0.01, np.float32)
    bias = rng.integers(-20000, 20000, O).astype(np.int32) if bias_dt else None
    b = GraphBuilder()
    xi = b.input("x", list(x.shape), Datatype.QINT8, per_tensor(in_s, in_zp))
    w_stored = np.ascontiguousarray(w.T) if transposed else w
    if channelwise:
        wi = b.const(w_stored, Datatype.QCINT8, per_channel([float(s) for s in w_s], 1 if transposed else 0))
    else:
        wi = b.const(w_stored, Datatype.QINT8, per_tensor(0.01, 0))
    bi = INVALID_ID
    if bias_dt == "qint32":
        bi = b.const(bias, Datatype.QINT32, per_tensor(in_s * 0.01, 0))
    elif bias_dt == "qcint32":
        bi = b.const(bias, Datatype.QCINT32, per_channel([in_s * float(s) for s in w_s], 0))
    y = b.output(b.value([2, 3, O], Datatype.QINT8, per_tensor(out_s, out_zp)), "y")
    b.node(
        "XNNFullyConnected",
        output_min_max=clamp,
        input1_id=xi,
        filter_id=wi,
        bias_id=bi,
        output_id=y,
        flags=1 if transposed else 0,
    )
    lo, hi = clamp if clamp else (-math.inf, math.inf)
    want = qfc_reference(x, w, bias, w_s, in_s, in_zp, out_s, out_zp, lo, hi)
    for threads in (1, 2):
        got = run1(b.build(), x, threads=threads)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, want)


def test_qs8_fully_connected_refuses_zero_points_outside_int8() -> None:
    b = GraphBuilder()
    xi = b.input("x", [1, 4], Datatype.QINT8, per_tensor(0.1, 200))
    wi = b.const(np.ones((2, 4), np.int8), Datatype.QCINT8, per_channel([0.1, 0.1], 0))
    y = b.output(b.value([1, 2], Datatype.QINT8, per_tensor(0.1, 0)), "y")
    b.node("XNNFullyConnected", input1_id=xi, filter_id=wi, bias_id=INVALID_ID, output_id=y, flags=0)
    with pytest.raises(UnsupportedError, match=r"qint8 zero point 200 is outside \[-128, 127\]"):
        runtime.load(b.build())


# ---------------------------------------------------------------- program behaviour


def test_threads_give_identical_bytes() -> None:
    blob = conv_chain_blob()
    x = rand(1, 5, 5, 2)
    p1, p2 = runtime.load(blob, threads=1), runtime.load(blob, threads=2)
    assert p1.threads == 1 and p2.threads == 2
    assert p1.run({"x": x})["y"].tobytes() == p2.run({"x": x})["y"].tobytes()


def test_concurrent_runs_share_one_program() -> None:
    blob = conv_chain_blob()
    p = runtime.load(blob, threads=2)
    xs = [rand(1, 5, 5, 2) for _ in range(4)]
    want = [p.run({"x": x})["y"] for x in xs]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for _ in range(25):
                np.testing.assert_array_equal(p.run({"x": xs[k]})["y"], want[k])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_load_from_path_matches_bytes(tmp_path) -> None:  # noqa: ANN001
    blob = conv_chain_blob()
    path = tmp_path / "m.xnn"
    path.write_bytes(blob)
    x = rand(1, 5, 5, 2)
    a = runtime.load(path).run({"x": x})["y"]
    b = runtime.load(str(path)).run([x])["y"]
    c = runtime.load(memoryview(blob)).run([x])["y"]
    d = runtime.load(bytearray(blob)).run([x])["y"]
    assert a.tobytes() == b.tobytes() == c.tobytes() == d.tobytes()


def test_inputs_outputs_and_repr() -> None:
    p = runtime.load(simple_fc_blob())
    assert p.inputs == [runtime.TensorInfo("x", "float32", (2, 3), (None, None))]
    assert p.outputs == [runtime.TensorInfo("y", "float32", (2, 4), (None, None))]
    assert "x: float32[2, 3]" in repr(p)
    # The FC runs fused with its sigmoid (its only consumer): h never materializes, the arena is empty.
    assert p.peak_arena_bytes == 0


def test_arena_reuses_memory() -> None:
    """A chain of 6 element-wise ops runs in place: one intermediate buffer, not six (or two)."""
    b = GraphBuilder()
    cur = b.input("x", [64, 64])
    for _ in range(6):
        nxt = b.value([64, 64])
        b.node("XNNAbs", input_id=cur, output_id=nxt, flags=0)
        cur = nxt
    y = b.output(b.value([64, 64]), "y")
    b.node("XNNNegate", input_id=cur, output_id=y, flags=0)
    p = runtime.load(b.build())
    tensor = 64 * 64 * 4
    assert tensor <= p.peak_arena_bytes <= tensor + 128
    x = rand(64, 64)
    np.testing.assert_array_equal(p.run({"x": x})["y"], -np.abs(x))


def test_dynamic_input_shape_replans() -> None:
    """A dyn dim (webxnn metadata) may take 1..max; the graph is re-planned for it."""
    from webxnn.xnn.ir import DynDimRef

    b = GraphBuilder()
    xi = b.input("x", [5, 3])
    h = b.value([5, 3])
    b.node("XNNAdd", input1_id=xi, input2_id=b.const(np.float32([1, 2, 3])), output_id=h, flags=0)
    y = b.output(b.value([15]), "y")
    b.node("XNNStaticReshape", new_shape=[0], input_id=h, output_id=y, flags=0)
    g = b.graph()
    g.metadata.dyn_dims = [DynDimRef(0, 0, "rows", 5)]
    from webxnn.xnn.writer import serialize

    p = runtime.load(serialize(g))
    assert p.inputs[0].dynamic == ("rows", None)
    for rows in (2, 5, 1, 5):
        x = rand(rows, 3)
        np.testing.assert_allclose(p.run({"x": x})["y"], (x + [1, 2, 3]).reshape(-1))
    with pytest.raises(
        InputError, match=r"input 'x': expected shape \[5, 3\], got \[2, 4\]: axis 1 is fixed"
    ):
        p.run({"x": rand(2, 4)})
    with pytest.raises(InputError, match=r"axis 0 \('rows'\) may be 1..5 but got 6"):
        p.run({"x": rand(6, 3)})
    with pytest.raises(InputError, match=r"axis 0 \('rows'\) may be 1..5 but got 0"):
        p.run({"x": rand(0, 3)})


def test_fixed_dims_reject_other_shapes() -> None:
    """With webxnn metadata and no dyn dims, any other shape is an InputError naming input and axis."""
    p = runtime.load(simple_fc_blob())
    with pytest.raises(
        InputError, match=r"input 'x': expected shape \[2, 3\], got \[1, 3\]: axis 0 is fixed"
    ):
        p.run({"x": rand(1, 3)})


def test_executorch_dims_are_upper_bounds() -> None:
    """Without webxnn metadata (ExecuTorch payloads) declared dims are upper bounds."""
    b = GraphBuilder()
    xi = b.input("x", [4, 3])
    y = b.output(b.value([4, 3]), "y")
    b.node("XNNAbs", input_id=xi, output_id=y, flags=0)
    g = b.graph()
    g.metadata = None
    from webxnn.xnn.writer import serialize

    p = runtime.load(serialize(g))
    assert p.inputs[0].dynamic == ("?", "?")
    x = rand(2, 1)
    np.testing.assert_array_equal(p.run([x])["output0"], np.abs(x))
    with pytest.raises(InputError, match=r"axis 0 may be 0..4 but got 5"):
        p.run([rand(5, 3)])


def test_input_errors() -> None:
    p = runtime.load(simple_fc_blob())
    with pytest.raises(
        InputError, match=r"unknown input\(s\) \['z'\].*missing input\(s\) \['x'\].*expected \['x'\]"
    ):
        p.run({"z": rand(2, 3)})
    with pytest.raises(InputError, match="input 'x': expected dtype float32, got float64"):
        p.run({"x": np.zeros((2, 3))})
    with pytest.raises(InputError, match=r"input 'x': expected shape \[2, 3\], got \[6\]"):
        p.run({"x": rand(6)})
    with pytest.raises(InputError, match="expected 1 input"):
        p.run([rand(2, 3), rand(2, 3)])
    # the C++ module checks too
    with pytest.raises(InputError, match="input 'x': expected dtype float32"):
        p._impl.run([np.zeros((2, 3), np.int32)])


def test_non_contiguous_input_is_copied() -> None:
    x = rand(3, 2).T  # [2, 3], not C-contiguous
    p = runtime.load(simple_fc_blob())
    y1 = p.run({"x": x})["y"]
    y2 = p.run({"x": np.ascontiguousarray(x)})["y"]
    np.testing.assert_array_equal(y1, y2)


def test_load_errors(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(FileNotFoundError):
        runtime.load(tmp_path / "missing.xnn")
    with pytest.raises(FormatError, match="too short"):
        runtime.load(b"abc")
    with pytest.raises(TypeError):
        runtime.load(12)  # type: ignore[arg-type]


def test_declared_output_shape_must_match() -> None:
    b = GraphBuilder()
    xi = b.input("x", [2, 3])
    y = b.output(b.value([3, 2]), "y")
    b.node("XNNAbs", input_id=xi, output_id=y, flags=0)
    with pytest.raises(
        FormatError,
        match=r"node 0 \(XNNAbs\): output value 1 is declared \[3, 2\] but the node "
        r"produces \[2, 3\]",
    ):
        runtime.load(b.build())


def test_webxnn_node_on_quantized_type_is_unsupported() -> None:
    b = GraphBuilder()
    xi = b.input("x", [2, 3], Datatype.QINT8, per_tensor(0.5, 1))
    y = b.output(b.value([2, 3], Datatype.QINT8, per_tensor(0.5, 1)), "y")
    b.node("WXUnary", op="relu", alpha=0.0, beta=0.0, input_id=xi, output_id=y, flags=0)
    with pytest.raises(UnsupportedError, match=r"node 0 \(WXUnary\): datatypes \(qint8\) -> qint8"):
        runtime.load(b.build())


def test_unknown_names_default_when_no_metadata() -> None:
    b = GraphBuilder()
    xi = b.input("x", [2])
    y = b.output(b.value([2]), "y")
    b.node("XNNAbs", input_id=xi, output_id=y, flags=0)
    g = b.graph()
    g.metadata = None
    from webxnn.xnn.writer import serialize

    p = runtime.load(serialize(g))
    assert [i.name for i in p.inputs] == ["input0"] and [o.name for o in p.outputs] == ["output0"]


# ---------------------------------------------------------------- ExecuTorch conformance


def test_executorch_conv_relu_payload(conformance_dir) -> None:  # noqa: ANN001
    blob_path = conformance_dir / "executorch" / "conv_relu_nchw_v05.xnn"
    meta_path = blob_path.with_suffix(".json")
    if not blob_path.exists():
        pytest.skip("ExecuTorch payload not present")
    meta = json.loads(meta_path.read_text())
    p = runtime.load(blob_path, threads=2)
    assert [i.name for i in p.inputs] == ["input0"]
    assert [o.name for o in p.outputs] == ["output0"]
    x = np.array(meta["input"]["data"], np.float32).reshape(meta["input"]["shape"])
    want = np.array(meta["expected_output"]["data"], np.float32).reshape(meta["expected_output"]["shape"])
    got = p.run({"input0": x})["output0"]
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert FP32 == Datatype.FP32
