"""qint8 nodes other than conv / FC (the int8 contract): Add, Multiply, the pools, Convert qint8 -> qint8,
the lookup-table unary nodes, Clamp, the same-params data movement and bilinear resize. Each runs from a blob
built here against a numpy reference written here (table.def's arithmetic: exact integer sums, fp32
multipliers, round half to even, saturation, the output clamp quantized like fully_connected's), bit for bit;
the kernels themselves (webxnn._testing) are checked the same way on the scalar and AVX2 tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import load_testing_module, pool_fields
from test_q8_conv_nodes import quantize_bound
from test_qs8_gemm import ISAS
from test_runtime_util import GraphBuilder, per_tensor
from webxnn import runtime
from webxnn.errors import UnsupportedError
from webxnn.xnn.ir import Datatype

Q8 = Datatype.QINT8
K = load_testing_module().kernels
RNG = np.random.default_rng(19)
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F32 = np.float32


def q8(*shape: int) -> np.ndarray:
    return RNG.integers(-128, 128, shape).astype(np.int8)


def requant(v: np.ndarray, zy: int, lo: int = -128, hi: int = 127) -> np.ndarray:
    """table.def's ending: clamp the fp32 value to [lo - zy, hi - zy] (NaN: lo), round half even, add zy."""
    v = np.where(np.isnan(v), F32(lo - zy), v)
    v = np.minimum(np.maximum(v.astype(F32), F32(lo - zy)), F32(hi - zy))
    return (np.rint(v).astype(np.int32) + zy).astype(np.int8)


def add_ref(a, b, sa, za, sb, zb, sy, zy, lo=-128, hi=127) -> np.ndarray:  # noqa: ANN001 - numpy scalars
    ma, mb = F32(sa) / F32(sy), F32(sb) / F32(sy)
    pa = (a.astype(np.int32) - za).astype(F32) * ma
    pb = (b.astype(np.int32) - zb).astype(F32) * mb
    return requant(pa + pb, zy, lo, hi)


def mul_ref(a, b, sa, za, sb, zb, sy, zy, lo=-128, hi=127) -> np.ndarray:  # noqa: ANN001
    m = F32(F32(sa) * F32(sb)) / F32(sy)
    return requant(((a.astype(np.int32) - za) * (b.astype(np.int32) - zb)).astype(F32) * m, zy, lo, hi)


def windows(x: np.ndarray, size, stride, pads, dil=(1, 1)):  # noqa: ANN001, ANN201
    """Yields (oy, ox, taps [N, taps, C] of the window's input pixels) of an NHWC pooling."""
    n, h, w, c = x.shape
    pt, pr, pb, pl = pads
    oh = (h + pt + pb - (dil[0] * (size[0] - 1) + 1)) // stride[0] + 1
    ow = (w + pl + pr - (dil[1] * (size[1] - 1) + 1)) // stride[1] + 1
    for oy in range(oh):
        for ox in range(ow):
            ys = [oy * stride[0] + k * dil[0] - pt for k in range(size[0])]
            xs = [ox * stride[1] + k * dil[1] - pl for k in range(size[1])]
            taps = [x[:, iy, ix, :] for iy in ys if 0 <= iy < h for ix in xs if 0 <= ix < w]
            yield oy, ox, np.stack(taps, axis=1) if taps else np.zeros((n, 0, c), x.dtype), (oh, ow)


def pool_ref(kind: str, x, size, stride, pads, sa=1.0, za=0, sy=1.0, zy=0, lo=-128, hi=127, dil=(1, 1)):  # noqa: ANN001, ANN201
    out = None
    for oy, ox, taps, (oh, ow) in windows(x, size, stride, pads, dil):
        if out is None:
            out = np.zeros((x.shape[0], oh, ow, x.shape[3]), np.int8)
        if kind == "max":
            m = taps.astype(np.int32).max(axis=1) if taps.shape[1] else np.full(out.shape[::3], -128)
            out[:, oy, ox, :] = np.clip(m, lo, hi)
        else:
            acc = (taps.astype(np.int32) - za).sum(axis=1)
            cnt = taps.shape[1]
            mc = (F32(sa) / F32(sy)) / F32(cnt) if cnt else F32(0)
            out[:, oy, ox, :] = requant(acc.astype(F32) * mc, zy, lo, hi)
    return out


def gap_ref(x, sa, za, sy, zy, lo=-128, hi=127) -> np.ndarray:  # noqa: ANN001
    n, h, w, c = x.shape
    acc = (x.astype(np.int32) - za).reshape(n, h * w, c).sum(axis=1)
    mc = (F32(sa) / F32(sy)) / F32(h * w)
    return requant(acc.astype(F32) * mc, zy, lo, hi)


def run(blob: bytes, *xs: np.ndarray, threads: int = 1) -> dict[str, np.ndarray]:
    return runtime.load(blob, threads=threads).run(list(xs))


def both_threads(blob: bytes, *xs: np.ndarray) -> np.ndarray:
    """The single output at 1 and 2 threads (the same bytes)."""
    one = next(iter(run(blob, *xs, threads=1).values()))
    two = next(iter(run(blob, *xs, threads=2).values()))
    np.testing.assert_array_equal(one, two)
    assert one.dtype == np.int8
    return one


# ---------------------------------------------------------------- Add, Multiply

BROADCASTS = [
    ((2, 3, 5, 7), (2, 3, 5, 7)),  # a residual add
    ((1, 4, 4, 40), (1, 4, 4, 40)),
    ((4, 17), (17,)),
    ((3, 1, 5), (1, 4, 1)),
    ((1,), (33,)),
    ((2, 40), (2, 1)),
    ((7,), (1,)),
]
PARAMS = [  # sa, za, sb, zb, sy, zy
    (0.05, 0, 0.05, 0, 0.1, 0),
    (0.02, 5, 0.07, -3, 0.05, 11),
    (0.1, -128, 0.03, 127, 0.004, -128),  # saturates at both ends
    (0.5, 127, 0.25, -128, 0.01, 127),
]


@pytest.mark.parametrize("kind", ["XNNAdd", "XNNMultiply"])
@pytest.mark.parametrize("shapes", BROADCASTS)
@pytest.mark.parametrize("params", PARAMS)
def test_add_multiply(kind: str, shapes, params) -> None:  # noqa: ANN001
    sa, za, sb, zb, sy, zy = params
    a, b = q8(*shapes[0]), q8(*shapes[1])
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    g = GraphBuilder()
    ai = g.input("a", list(a.shape), Q8, per_tensor(sa, za))
    bi = g.input("b", list(b.shape), Q8, per_tensor(sb, zb))
    y = g.output(g.value(list(out_shape), Q8, per_tensor(sy, zy)), "y")
    g.node(kind, input1_id=ai, input2_id=bi, output_id=y, flags=0)
    ref = add_ref if kind == "XNNAdd" else mul_ref
    np.testing.assert_array_equal(both_threads(g.build(), a, b), ref(a, b, sa, za, sb, zb, sy, zy))


@pytest.mark.parametrize("clamp", [(0.0, math.inf), (-1.0, 2.0), (-math.inf, 0.5)])
def test_add_output_clamp_in_place(clamp: tuple[float, float]) -> None:
    """Add(Add(a, b), c): the second add may write over its first operand; output_min_max quantized."""
    a, b, c = q8(3, 37), q8(3, 37), q8(37)
    s, z = (0.04, 3), (0.03, -9)
    g = GraphBuilder()
    ai = g.input("a", [3, 37], Q8, per_tensor(*s))
    bi = g.input("b", [3, 37], Q8, per_tensor(*z))
    ci = g.input("c", [37], Q8, per_tensor(0.02, 0))
    t = g.value([3, 37], Q8, per_tensor(0.05, 1))
    g.node("XNNAdd", input1_id=ai, input2_id=bi, output_id=t, flags=0)
    y = g.output(g.value([3, 37], Q8, per_tensor(0.06, -2)), "y")
    g.node("XNNAdd", output_min_max=clamp, input1_id=t, input2_id=ci, output_id=y, flags=0)
    tq = add_ref(a, b, *s, *z, 0.05, 1)
    lo, hi = quantize_bound(clamp[0], 0.06, -2), quantize_bound(clamp[1], 0.06, -2)
    want = add_ref(tq, c, 0.05, 1, 0.02, 0, 0.06, -2, lo, hi)
    np.testing.assert_array_equal(both_threads(g.build(), a, b, c), want)


def test_binary_q8_refusals() -> None:
    g = GraphBuilder()
    ai = g.input("a", [4], Q8, per_tensor(0.1, 0))
    bi = g.input("b", [4], Q8, per_tensor(0.1, 0))
    y = g.output(g.value([4], Q8, per_tensor(0.1, 0)), "y")
    g.node("XNNSubtract", input1_id=ai, input2_id=bi, output_id=y, flags=0)
    with pytest.raises(
        UnsupportedError, match=r"XNNSubtract\): datatypes \(qint8, qint8\) -> qint8 .*fp32 only"
    ):
        runtime.load(g.build())
    g = GraphBuilder()
    ai = g.input("a", [4], Q8, per_tensor(0.1, 0))
    bi = g.input("b", [4], Q8, per_tensor(0.1, 300))
    y = g.output(g.value([4], Q8, per_tensor(0.1, 0)), "y")
    g.node("XNNAdd", input1_id=ai, input2_id=bi, output_id=y, flags=0)
    with pytest.raises(UnsupportedError, match=r"qint8 zero point 300 of .* is outside \[-128, 127\]"):
        runtime.load(g.build())


# ---------------------------------------------------------------- pools


POOLS = [  # size, stride, pads (t, r, b, l)
    ((3, 3), (2, 2), (1, 1, 1, 1)),  # MobileNet / ResNet stem max pool
    ((2, 2), (2, 2), (0, 0, 0, 0)),
    ((3, 3), (1, 1), (1, 1, 1, 1)),
    ((2, 3), (1, 2), (1, 0, 0, 2)),
]


@pytest.mark.parametrize("c", [1, 7, 33, 40])
@pytest.mark.parametrize("window", POOLS)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling(kind: str, window, c: int) -> None:  # noqa: ANN001
    size, stride, pads = window
    x = q8(2, 9, 8, c)
    sa, za, sy, zy = (0.05, -7, 0.05, -7) if kind == "max" else (0.05, -7, 0.02, 4)
    clamp = (0.0, 3.0)
    lo, hi = quantize_bound(clamp[0], sy, zy), quantize_bound(clamp[1], sy, zy)
    want = pool_ref(kind, x, size, stride, pads, sa, za, sy, zy, lo, hi)
    g = GraphBuilder()
    xi = g.input("x", list(x.shape), Q8, per_tensor(sa, za))
    y = g.output(g.value(list(want.shape), Q8, per_tensor(sy, zy)), "y")
    node = "XNNMaxPooling2d" if kind == "max" else "XNNAvgPooling2d"
    g.node(node, output_min_max=clamp, input_id=xi, output_id=y, flags=0, **pool_fields(size, stride, pads))
    np.testing.assert_array_equal(both_threads(g.build(), x), want)


@pytest.mark.parametrize("shape", [(1, 7, 7, 40), (2, 3, 5, 17), (1, 1, 1, 1)])
@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("params", [(0.05, -7, 0.02, 4), (0.1, 127, 0.001, -128), (0.02, 0, 0.02, 0)])
def test_global_avg_pool(shape, keep_dims: bool, params) -> None:  # noqa: ANN001
    sa, za, sy, zy = params
    x = q8(*shape)
    want = gap_ref(x, sa, za, sy, zy)
    oshape = [shape[0], 1, 1, shape[3]] if keep_dims else [shape[0], shape[3]]
    g = GraphBuilder()
    xi = g.input("x", list(shape), Q8, per_tensor(sa, za))
    y = g.output(g.value(oshape, Q8, per_tensor(sy, zy)), "y")
    g.node("XNNGlobalAvgPooling2d", input_id=xi, output_id=y, flags=0x40 if keep_dims else 0)
    np.testing.assert_array_equal(both_threads(g.build(), x).reshape(want.shape), want)


def test_max_pool_needs_the_same_params() -> None:
    g = GraphBuilder()
    xi = g.input("x", [1, 4, 4, 3], Q8, per_tensor(0.05, 1))
    y = g.output(g.value([1, 2, 2, 3], Q8, per_tensor(0.05, 2)), "y")
    g.node("XNNMaxPooling2d", input_id=xi, output_id=y, flags=0, **pool_fields((2, 2), (2, 2)))
    with pytest.raises(UnsupportedError, match=r"XNNMaxPooling2d\): qint8 input .* must have the same quant"):
        runtime.load(g.build())


# ---------------------------------------------------------------- lookup tables: unary, Clamp, Convert

ALL = np.arange(-128, 128, dtype=np.int8)


def real_op(kind: str, x: np.ndarray, alpha: float) -> np.ndarray:
    """unary.cc's real_op, in double precision."""
    if kind == "XNNSigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if kind == "XNNTanh":
        return np.tanh(x)
    if kind == "XNNHardswish":
        return x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0
    if kind == "XNNGelu":
        return 0.5 * x * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    if kind == "XNNLeakyReLU":
        return np.where(x >= 0, x, alpha * x)
    if kind == "XNNELU":
        return np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0)))
    return x  # XNNClamp


def lut_ref(kind: str, sx: float, zx: int, sy: float, zy: int, alpha: float, clamp) -> np.ndarray:  # noqa: ANN001
    """The table unary.cc builds, over every int8 input (index i holds input ALL[i])."""
    x = (ALL.astype(np.float64) - zx) * float(F32(sx))
    y = real_op(kind, x, float(F32(alpha)))
    lo, hi = (quantize_bound(clamp[0], sy, zy), quantize_bound(clamp[1], sy, zy)) if clamp else (-128, 127)
    return np.clip(np.rint(y / float(F32(sy))) + zy, lo, hi).astype(np.int8)


UNARY = [
    ("XNNSigmoid", {}),
    ("XNNTanh", {}),
    ("XNNHardswish", {}),
    ("XNNGelu", {}),
    ("XNNLeakyReLU", {"negative_slope": 0.1}),
    ("XNNELU", {"alpha": 0.7}),
]


@pytest.mark.parametrize("kind,fields", UNARY)
@pytest.mark.parametrize("params", [(0.05, 0, 1 / 256, -128), (0.1, 20, 0.02, 3), (0.03, -128, 0.5, 127)])
def test_unary_lookup(kind: str, fields: dict, params) -> None:  # noqa: ANN001
    sx, zx, sy, zy = params
    x = np.concatenate([ALL, q8(61)])  # every value, then a tail past the vector width
    alpha = next(iter(fields.values()), 0.0)
    table = lut_ref(kind, sx, zx, sy, zy, alpha, None)
    g = GraphBuilder()
    xi = g.input("x", [x.size], Q8, per_tensor(sx, zx))
    y = g.output(g.value([x.size], Q8, per_tensor(sy, zy)), "y")
    g.node(kind, input_id=xi, output_id=y, flags=0, **fields)
    np.testing.assert_array_equal(both_threads(g.build(), x), table[x.astype(np.int32) + 128])


def test_unary_lookup_folds_and_chains_in_place() -> None:
    """A constant input folds at load (the table built then); Tanh(Sigmoid(x)) reuses its input's storage."""
    g = GraphBuilder()
    xi = g.input("x", [5, 9], Q8, per_tensor(0.05, 2))
    s = g.value([5, 9], Q8, per_tensor(1 / 256, -128))
    g.node("XNNSigmoid", input_id=xi, output_id=s, flags=0)
    y = g.output(g.value([5, 9], Q8, per_tensor(1 / 128, 0)), "y")
    g.node("XNNTanh", input_id=s, output_id=y, flags=0)
    c = g.const(ALL[:45].reshape(5, 9), Q8, per_tensor(0.05, 2))
    f = g.output(g.value([5, 9], Q8, per_tensor(1 / 256, -128)), "f")
    g.node("XNNSigmoid", input_id=c, output_id=f, flags=0)
    x = q8(5, 9)
    out = run(g.build(), x)
    t1 = lut_ref("XNNSigmoid", 0.05, 2, 1 / 256, -128, 0.0, None)
    t2 = lut_ref("XNNTanh", 1 / 256, -128, 1 / 128, 0, 0.0, None)
    np.testing.assert_array_equal(out["y"], t2[t1[x.astype(np.int32) + 128].astype(np.int32) + 128])
    np.testing.assert_array_equal(out["f"], t1[ALL[:45].astype(np.int32) + 128].reshape(5, 9))


@pytest.mark.parametrize("clamp", [(0.0, 6.0), (-0.5, 0.75), (-math.inf, 0.0)])
def test_clamp(clamp: tuple[float, float]) -> None:
    g = GraphBuilder()
    xi = g.input("x", [256], Q8, per_tensor(0.05, -3))
    y = g.output(g.value([256], Q8, per_tensor(0.05, -3)), "y")
    g.node("XNNClamp", output_min_max=clamp, input_id=xi, output_id=y, flags=0)
    lo, hi = quantize_bound(clamp[0], 0.05, -3), quantize_bound(clamp[1], 0.05, -3)
    np.testing.assert_array_equal(both_threads(g.build(), ALL), np.clip(ALL, lo, hi))


@pytest.mark.parametrize("params", [(0.05, 3, 0.1, -2), (0.1, -128, 0.01, 127), (0.02, 0, 0.02, 5)])
def test_convert_requantize(params) -> None:  # noqa: ANN001
    sx, zx, sy, zy = params
    g = GraphBuilder()
    xi = g.input("x", [256], Q8, per_tensor(sx, zx))
    y = g.output(g.value([256], Q8, per_tensor(sy, zy)), "y")
    g.node("XNNConvert", input_id=xi, output_id=y, flags=0)
    want = requant((ALL.astype(np.int32) - zx).astype(F32) * (F32(sx) / F32(sy)), zy)
    np.testing.assert_array_equal(both_threads(g.build(), ALL), want)


def test_unary_q8_refusals() -> None:
    g = GraphBuilder()
    xi = g.input("x", [4], Q8, per_tensor(0.1, 0))
    y = g.output(g.value([4], Q8, per_tensor(0.1, 0)), "y")
    g.node("XNNExp", input_id=xi, output_id=y, flags=0)
    with pytest.raises(UnsupportedError, match=r"XNNExp\): datatypes \(qint8\) -> qint8 .*fp32 only"):
        runtime.load(g.build())
    g = GraphBuilder()
    xi = g.input("x", [4], Q8, per_tensor(0.1, 0))
    y = g.output(g.value([4], Q8, per_tensor(0.2, 0)), "y")
    g.node("XNNClamp", output_min_max=(0.0, 1.0), input_id=xi, output_id=y, flags=0)
    with pytest.raises(UnsupportedError, match=r"XNNClamp\): qint8 input .* must have the same quantization"):
        runtime.load(g.build())


# ---------------------------------------------------------------- data movement (same params in and out)


def test_layout_nodes_on_qint8() -> None:
    qp = per_tensor(0.05, -4)
    x, x2 = q8(2, 3, 4), q8(2, 5, 4)
    g = GraphBuilder()
    xi = g.input("x", [2, 3, 4], Q8, qp)
    x2i = g.input("x2", [2, 5, 4], Q8, qp)
    outs = {}

    def out(name: str, dims: list[int]) -> int:
        outs[name] = g.output(g.value(dims, Q8, qp), name)
        return outs[name]

    g.node("XNNConcatenate2", axis=1, input1_id=xi, input2_id=x2i, output_id=out("cat", [2, 8, 4]), flags=0)
    g.node("XNNStaticReshape", new_shape=[6, 4], input_id=xi, output_id=out("reshape", [6, 4]), flags=0)
    g.node("XNNStaticTranspose", perm=[2, 0, 1], input_id=xi, output_id=out("transpose", [4, 2, 3]), flags=0)
    g.node(
        "XNNStaticSlice",
        offsets=[1, 1, 1],
        sizes=[1, 2, 3],
        input_id=xi,
        output_id=out("slice", [1, 2, 3]),
        flags=0,
    )
    g.node(
        "XNNStaticConstantPad",
        pre_paddings=[0, 1, 0],
        post_paddings=[1, 0, 2],
        padding_value=-2.5,
        input_id=xi,
        output_id=out("pad", [3, 4, 6]),
        flags=0,
    )
    g.node(
        "XNNStaticConstantPad",
        pre_paddings=[0, 0, 1],
        post_paddings=[0, 0, 0],
        padding_value=100.0,
        input_id=xi,
        output_id=out("pad_sat", [2, 3, 5]),
        flags=0,
    )
    g.node("XNNCopy", input_id=xi, output_id=out("copy", [2, 3, 4]), flags=0)
    got = run(g.build(), x, x2, threads=2)
    np.testing.assert_array_equal(got["cat"], np.concatenate([x, x2], axis=1))
    np.testing.assert_array_equal(got["reshape"], x.reshape(6, 4))
    np.testing.assert_array_equal(got["transpose"], x.transpose(2, 0, 1))
    np.testing.assert_array_equal(got["slice"], x[1:2, 1:3, 1:4])
    fill = int(np.rint(-2.5 / F32(0.05))) - 4  # -54
    np.testing.assert_array_equal(got["pad"], np.pad(x, ((0, 1), (1, 0), (0, 2)), constant_values=fill))
    np.testing.assert_array_equal(got["pad_sat"], np.pad(x, ((0, 0), (0, 0), (1, 0)), constant_values=127))
    np.testing.assert_array_equal(got["copy"], x)
    assert all(v.dtype == np.int8 for v in got.values())


@pytest.mark.parametrize("node", ["XNNConcatenate2", "XNNStaticTranspose", "XNNStaticReshape"])
def test_layout_nodes_refuse_differing_params(node: str) -> None:
    g = GraphBuilder()
    xi = g.input("x", [2, 3], Q8, per_tensor(0.05, 1))
    fields = {
        "XNNConcatenate2": dict(axis=0, input1_id=xi, input2_id=xi),
        "XNNStaticTranspose": dict(perm=[1, 0], input_id=xi),
        "XNNStaticReshape": dict(new_shape=[6], input_id=xi),
    }[node]
    dims = {"XNNConcatenate2": [4, 3], "XNNStaticTranspose": [3, 2], "XNNStaticReshape": [6]}[node]
    y = g.output(g.value(dims, Q8, per_tensor(0.05, 2)), "y")
    g.node(node, output_id=y, flags=0, **fields)
    with pytest.raises(
        UnsupportedError, match=rf"{node}\): qint8 input .*zero point 1\) and output .*zero point 2"
    ):
        runtime.load(g.build())


@pytest.mark.parametrize("flags", [0, 0x8])
def test_resize_bilinear_q8(flags: int) -> None:
    """The raw int8 values interpolated in double like fp32's, rounded half to even."""
    x = q8(1, 3, 4, 5)
    oh, ow = 6, 7
    g = GraphBuilder()
    qp = per_tensor(0.1, 9)
    xi = g.input("x", list(x.shape), Q8, qp)
    y = g.output(g.value([1, oh, ow, 5], Q8, qp), "y")
    g.node("XNNStaticResizeBilinear2D", new_height=oh, new_width=ow, input_id=xi, output_id=y, flags=flags)

    def taps(n: int, on: int) -> list[tuple[int, int, float]]:
        r = []
        for k in range(on):
            if flags & 0x8:
                src = k * (n - 1) / (on - 1) if on > 1 else 0.0
            else:
                src = (k + 0.5) * n / on - 0.5
            src = min(max(src, 0.0), n - 1)
            i0 = math.floor(src)
            r.append((i0, min(i0 + 1, n - 1), src - i0))
        return r

    xd = x.astype(np.float64)
    want = np.zeros((1, oh, ow, 5), np.int8)
    for oy, (y0, y1, wy) in enumerate(taps(3, oh)):
        for ox, (x0, x1, wx) in enumerate(taps(4, ow)):
            top = xd[0, y0, x0] * (1 - wx) + xd[0, y0, x1] * wx
            bot = xd[0, y1, x0] * (1 - wx) + xd[0, y1, x1] * wx
            want[0, oy, ox] = np.clip(np.rint(top * (1 - wy) + bot * wy), -128, 127)
    np.testing.assert_array_equal(both_threads(g.build(), x), want)


# ---------------------------------------------------------------- the kernels, every table

SIZES = [1, 7, 15, 16, 17, 31, 33, 100]


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("op", ["add", "mul"])
@given(
    n=st.sampled_from(SIZES),
    bcast=st.sampled_from(["none", "a", "b", "rows"]),
    za=st.sampled_from([0, 3, -128, 127]),
    zb=st.sampled_from([0, -9, -128, 127]),
    zy=st.sampled_from([0, 11, -128, 127]),
    scales=st.tuples(*[st.floats(0.00390625, 0.5, width=32)] * 3),
    out_is_a=st.booleans(),
)
@SETTINGS
def test_qadd_qmul_kernels(
    isa: str, op: str, n: int, bcast: str, za: int, zb: int, zy: int, scales, out_is_a: bool
) -> None:  # noqa: ANN001
    sa, sb, sy = scales
    a = q8(3, n) if bcast != "a" else q8(1)
    b = q8(3, n) if bcast not in ("b", "rows") else (q8(1) if bcast == "b" else q8(3, 1))
    out_is_a = out_is_a and bcast != "a"
    ref = add_ref if op == "add" else mul_ref
    want = ref(a, b, sa, za, sb, zb, sy, zy, -100, 120)
    for threads in (1, 2):
        got = K.qbinary(
            op, a, b, sa, za, sb, zb, sy, zy, -100, 120, out_is_a=out_is_a, isa=isa, threads=threads
        )
        np.testing.assert_array_equal(got, want)


def test_qadd_kernel_large_rows_split() -> None:
    """One long row (a residual add) split into chunks over threads: the same bytes everywhere."""
    a, b = q8(50001), q8(50001)
    want = add_ref(a, b, 0.03, 1, 0.05, -2, 0.04, 3)
    for isa in ISAS:
        for threads in (1, 2):
            np.testing.assert_array_equal(
                K.qbinary("add", a, b, 0.03, 1, 0.05, -2, 0.04, 3, isa=isa, threads=threads), want
            )


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("window", POOLS + [((3, 3), (1, 1), (2, 2, 2, 2))])
@pytest.mark.parametrize("c", [1, 17, 32, 45])
def test_qpool_kernels(isa: str, kind: str, window, c: int) -> None:  # noqa: ANN001
    size, stride, pads = window
    dil = (2, 2) if pads[0] == 2 else (1, 1)
    x = q8(2, 7, 9, c)
    want = pool_ref(kind, x, size, stride, pads, 0.05, -7, 0.03, 5, -120, 100, dil)
    for threads in (1, 2):
        got = K.qpool(
            kind,
            x,
            list(size),
            list(stride),
            list(pads),
            list(dil),
            0.05,
            -7,
            0.03,
            5,
            -120,
            100,
            isa=isa,
            threads=threads,
        )
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("shape", [(1, 7, 7, 1), (2, 3, 3, 17), (1, 7, 7, 1280), (3, 1, 2, 31)])
@pytest.mark.parametrize("params", [(0.05, -7, 0.02, 4, -128, 127), (0.1, 127, 0.001, -128, -100, 90)])
def test_qglobal_avg_pool_kernel(isa: str, shape, params) -> None:  # noqa: ANN001
    sa, za, sy, zy, lo, hi = params
    x = q8(*shape)
    want = gap_ref(x, sa, za, sy, zy, lo, hi)
    for threads in (1, 2):
        np.testing.assert_array_equal(
            K.qglobal_avg_pool(x, sa, za, sy, zy, lo, hi, isa=isa, threads=threads), want
        )


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 256, 1000, 70001])
def test_qlut_kernel(isa: str, n: int) -> None:
    table = q8(256)
    x = np.concatenate([ALL, q8(n)])
    want = table[x.view(np.uint8)]
    for threads in (1, 2):
        np.testing.assert_array_equal(K.qlut(x, table, isa=isa, threads=threads), want)
        np.testing.assert_array_equal(K.qlut(x, table, in_place=True, isa=isa, threads=threads), want)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_qadd_qmul_kernels_huge_scale_ratios(isa: str, op: str) -> None:
    """Multipliers so large that v leaves int32 (the AVX2 kernels' fp32-clamp path) saturate like the rest."""
    a, b = q8(3, 37), q8(3, 37)
    ref = add_ref if op == "add" else mul_ref
    for sa, sb, sy in ((1e6, 3e5, 1e-6), (1e30, 1e30, 1e-30), (1e-30, 1e-30, 1e30)):
        with np.errstate(over="ignore", invalid="ignore"):  # inf * 0 = NaN: out_min
            want = ref(a, b, sa, 3, sb, -2, sy, 1, -120, 100)
        got = K.qbinary(op, a, b, sa, 3, sb, -2, sy, 1, -120, 100, isa=isa)
        np.testing.assert_array_equal(got, want)
