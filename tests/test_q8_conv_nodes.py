"""int8 Conv2d and DepthwiseConv2d nodes in the runtime (INT8_CONTRACT.md: qint8 x qcint8 [+ qcint32 /
qint32] -> qint8) against a numpy integer convolution written here, bit for bit: odd channel counts and sizes,
strides, padding, dilation, groups, depth multipliers, per-channel and per-tensor weights, extreme zero
points, saturation, clamps in the int8 domain, 1 and 2 threads, the best and the scalar kernel table; and what
the runtime refuses, by name."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import webxnn
from conftest import conv_fields, outputs_with_isa
from test_runtime_util import GraphBuilder, per_channel, per_tensor
from webxnn import runtime
from webxnn.errors import UnsupportedError
from webxnn.xnn.ir import INVALID_ID, Datatype


@dataclass
class QConv:
    """One int8 conv node: x [1, h, w, groups * gic] -> [1, oh, ow, groups * goc]; depthwise when `dw` (gic 1,
    filter stored 1HWO), else a Conv2d (filter OHWI [groups * goc, kh, kw, gic])."""

    h: int
    w: int
    groups: int
    gic: int
    goc: int
    k: tuple[int, int] = (3, 3)
    pads: tuple[int, int, int, int] = (1, 1, 1, 1)
    stride: tuple[int, int] = (1, 1)
    dil: tuple[int, int] = (1, 1)
    dw: bool = False
    per_channel: bool = True
    bias: str | None = "qcint32"  # None, "qint32", "qcint32"
    in_q: tuple[float, int] = (0.05, 3)
    out_q: tuple[float, int] = (0.1, -2)
    clamp: tuple[float, float] | None = None
    batch: int = 1
    seed: int = 0
    nchw: bool = False  # the graph's input is NCHW, transposed to NHWC by a StaticTranspose before the conv
    arrays: dict = field(default_factory=dict)

    @property
    def oc(self) -> int:
        return self.groups * self.goc

    def make(self) -> QConv:
        rng = np.random.default_rng(self.seed)
        self.arrays = dict(
            x=rng.integers(-128, 128, (self.batch, self.h, self.w, self.groups * self.gic)).astype(np.int8),
            f=rng.integers(-128, 128, (self.oc, *self.k, self.gic)).astype(np.int8),  # OHWI
            bias=rng.integers(-4000, 4000, self.oc).astype(np.int32),
            ws=(rng.uniform(0.002, 0.02, self.oc) if self.per_channel else np.full(self.oc, 0.01)).astype(
                np.float32
            ),
        )
        return self


def quantize_bound(real: float, scale: float, zp: int) -> int:
    """fully_connected.cc's quantize_bound: round half even in double, saturating to int8."""
    if math.isinf(real):
        return -128 if real < 0 else 127
    return int(np.clip(np.rint(np.float64(np.float32(real)) / np.float64(np.float32(scale))) + zp, -128, 127))


def reference(c: QConv) -> np.ndarray:
    """Grouped convolution over the zero-point-padded input in int64, then table.def's requantization."""
    a = c.arrays
    x, f = a["x"].astype(np.int64), a["f"].astype(np.int64)
    in_s, in_zp = c.in_q
    out_s, out_zp = c.out_q
    n, h, w, _ = x.shape
    top, right, bottom, left = c.pads
    xp = np.full((n, h + top + bottom, w + left + right, x.shape[3]), in_zp, np.int64)
    xp[:, top : top + h, left : left + w] = x
    xp -= in_zp
    kh, kw = c.k
    oh = (xp.shape[1] - (kh - 1) * c.dil[0] - 1) // c.stride[0] + 1
    ow = (xp.shape[2] - (kw - 1) * c.dil[1] - 1) // c.stride[1] + 1
    acc = np.zeros((n, oh, ow, c.oc), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * c.dil[0], kx * c.dil[1]
            win = xp[
                :,
                y0 : y0 + (oh - 1) * c.stride[0] + 1 : c.stride[0],
                x0 : x0 + (ow - 1) * c.stride[1] + 1 : c.stride[1],
            ]
            for g in range(c.groups):
                xs = win[..., g * c.gic : (g + 1) * c.gic]
                fs = f[g * c.goc : (g + 1) * c.goc, ky, kx, :]  # [goc, gic]
                acc[..., g * c.goc : (g + 1) * c.goc] += xs @ fs.T
    if c.bias:
        acc += a["bias"]
    acc = ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
    scale = np.float32(in_s) * a["ws"] / np.float32(out_s)
    y = np.rint(acc.astype(np.float32) * scale).astype(np.float64) + out_zp
    lo, hi = c.clamp if c.clamp else (-math.inf, math.inf)
    return np.clip(y, quantize_bound(lo, out_s, out_zp), quantize_bound(hi, out_s, out_zp)).astype(np.int8)


def feed(c: QConv) -> np.ndarray:
    """The graph's input: x, or its planes when the graph transposes them itself (c.nchw)."""
    return np.ascontiguousarray(c.arrays["x"].transpose(0, 3, 1, 2)) if c.nchw else c.arrays["x"]


def conv_node(b: GraphBuilder, c: QConv, xi: int, y: int) -> None:
    """c's node (c.make() done: its filter and bias as constants) from value xi to value y."""
    a = c.arrays
    if c.dw:  # [oc, kh, kw, 1] -> [1, kh, kw, oc]
        stored, dim = np.ascontiguousarray(a["f"].transpose(3, 1, 2, 0)), 3
    else:
        stored, dim = a["f"], 0
    ws = [float(s) for s in a["ws"]]
    if c.per_channel:
        wi = b.const(stored, Datatype.QCINT8, per_channel(ws, dim))
    else:
        wi = b.const(stored, Datatype.QINT8, per_tensor(ws[0], 0))
    bi = INVALID_ID
    if c.bias == "qcint32":
        bi = b.const(a["bias"], Datatype.QCINT32, per_channel([c.in_q[0] * s for s in ws], 0))
    elif c.bias == "qint32":
        bi = b.const(a["bias"], Datatype.QINT32, per_tensor(c.in_q[0] * ws[0], 0))
    geometry = conv_fields(c.k, c.pads, c.stride, c.dil, c.groups, c.gic, c.goc)
    kind = "XNNDepthwiseConv2d" if c.dw else "XNNConv2d"
    b.node(
        kind, output_min_max=c.clamp, input1_id=xi, filter_id=wi, bias_id=bi, output_id=y, flags=0, **geometry
    )


def blob(c: QConv) -> bytes:
    b = GraphBuilder()
    in_s, in_zp = c.in_q
    xi = b.input("x", list(feed(c).shape), Datatype.QINT8, per_tensor(in_s, in_zp))
    if c.nchw:
        t = b.value(list(c.arrays["x"].shape), Datatype.QINT8, per_tensor(in_s, in_zp))
        b.node("XNNStaticTranspose", perm=[0, 2, 3, 1], input_id=xi, output_id=t, flags=0)
        xi = t
    want_shape = list(reference(c).shape)
    y = b.output(b.value(want_shape, Datatype.QINT8, per_tensor(*c.out_q)), "y")
    conv_node(b, c, xi, y)
    return b.build()


def check(c: QConv, threads: tuple[int, ...] = (1, 2)) -> np.ndarray:
    c.make()
    want = reference(c)
    data = blob(c)
    for t in threads:
        got = runtime.load(data, threads=t).run([feed(c)])["y"]
        assert got.dtype == np.int8
        bad = np.argwhere(got != want)
        assert bad.size == 0, (t, bad[:5], got[tuple(bad[0])], want[tuple(bad[0])])
    return want


# ---------------------------------------------------------------- Conv2d


@pytest.mark.parametrize("ch", [1, 7, 17])
@pytest.mark.parametrize("hw", [(1, 1), (5, 7), (9, 9)])
@pytest.mark.parametrize("k,pads", [((3, 3), (1, 1, 1, 1)), ((1, 1), (0, 0, 0, 0)), ((2, 3), (0, 2, 1, 1))])
def test_conv2d_sizes(
    ch: int, hw: tuple[int, int], k: tuple[int, int], pads: tuple[int, int, int, int]
) -> None:
    if hw[0] + pads[0] + pads[2] < k[0] or hw[1] + pads[1] + pads[3] < k[1]:
        pytest.skip("kernel larger than the padded input")
    check(QConv(*hw, groups=1, gic=ch, goc=ch + 2, k=k, pads=pads, seed=ch))


@pytest.mark.parametrize("stride,dil", [((2, 2), (1, 1)), ((1, 2), (2, 1)), ((2, 1), (2, 2))])
@pytest.mark.parametrize("per_ch", [True, False])
@pytest.mark.parametrize("bias", [None, "qint32", "qcint32"])
def test_conv2d_strides_dilation_weights_bias(stride, dil, per_ch: bool, bias: str | None) -> None:
    c = QConv(9, 8, groups=1, gic=7, goc=17, pads=(2, 1, 0, 2), stride=stride, dil=dil, per_channel=per_ch)
    if bias == "qint32" and per_ch:
        pytest.skip("a per-tensor bias goes with per-tensor weights")
    c.bias = bias
    check(c)


@pytest.mark.parametrize("groups,gic,goc", [(2, 3, 5), (2, 8, 8), (3, 1, 2), (7, 1, 1), (17, 1, 1)])
def test_conv2d_groups(groups: int, gic: int, goc: int) -> None:
    """Grouped (one IGEMM per group) and depthwise-like (gic 1: the depthwise kernel) Conv2d nodes."""
    check(QConv(7, 6, groups=groups, gic=gic, goc=goc, stride=(2, 1), seed=groups))


@pytest.mark.parametrize("zps", [(0, 0), (-128, 127), (127, -128), (-5, 9)])
def test_conv2d_zero_points_and_saturation(zps: tuple[int, int]) -> None:
    c = QConv(6, 5, groups=1, gic=17, goc=7, in_q=(0.05, zps[0]), out_q=(0.02, zps[1]), pads=(2, 2, 2, 2))
    want = check(c)
    assert (want == -128).any() and (want == 127).any()  # saturates at both ends


@pytest.mark.parametrize("clamp", [(0.0, 6.0), (0.0, math.inf), (-0.3, 0.25), (-math.inf, -1.0)])
def test_conv2d_clamp_in_int8_domain(clamp: tuple[float, float]) -> None:
    """relu / relu6-style output_min_max folded into the int8 clamp (round half even, saturating)."""
    check(QConv(5, 5, groups=1, gic=7, goc=9, out_q=(0.05, -20), clamp=clamp))


def test_conv2d_batch() -> None:
    check(QConv(5, 4, groups=2, gic=3, goc=4, batch=3))


# ---------------------------------------------------------------- DepthwiseConv2d


@pytest.mark.parametrize("ch", [1, 7, 17, 32, 40])
@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_depthwise(ch: int, m: int, stride: tuple[int, int]) -> None:
    check(QConv(9, 7, groups=ch, gic=1, goc=m, dw=True, stride=stride, seed=ch * m))


@pytest.mark.parametrize(
    "k,pads,dil",
    [((5, 5), (2, 2, 2, 2), (1, 1)), ((3, 3), (0, 2, 1, 0), (2, 2)), ((1, 3), (0, 0, 0, 1), (1, 1))],
)
@pytest.mark.parametrize("per_ch", [True, False])
def test_depthwise_kernels_padding_dilation(k, pads, dil, per_ch: bool) -> None:
    check(
        QConv(
            8,
            9,
            groups=17,
            gic=1,
            goc=1,
            k=k,
            pads=pads,
            dil=dil,
            dw=True,
            per_channel=per_ch,
            bias="qcint32" if per_ch else "qint32",
        )
    )


@pytest.mark.parametrize("zps", [(-128, 127), (127, -128), (0, 0)])
@pytest.mark.parametrize("clamp", [None, (0.0, 6.0)])
def test_depthwise_zero_points_saturation_clamp(zps, clamp) -> None:
    c = QConv(6, 6, groups=24, gic=1, goc=1, dw=True, in_q=(0.05, zps[0]), out_q=(0.01, zps[1]), clamp=clamp)
    want = check(c)
    assert (want == want.min()).sum() > 1 and (want == want.max()).sum() > 1


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    groups=st.integers(1, 4),
    gic=st.integers(1, 9),
    goc=st.integers(1, 9),
    k=st.integers(1, 3),
    stride=st.integers(1, 2),
    pad=st.integers(0, 2),
    dw=st.booleans(),
    zp=st.integers(-128, 127),
    seed=st.integers(0, 10**6),
)
def test_conv_property(h, w, groups, gic, goc, k, stride, pad, dw, zp, seed) -> None:
    if h + 2 * pad < k or w + 2 * pad < k:
        return
    if dw:
        gic, groups = 1, groups * gic
    check(
        QConv(
            h,
            w,
            groups,
            gic,
            goc,
            k=(k, k),
            pads=(pad,) * 4,
            stride=(stride,) * 2,
            dw=dw,
            in_q=(0.03, zp),
            seed=seed,
        ),
        threads=(1,),
    )


# ---------------------------------------------------------------- scalar table, fusion guards


def test_scalar_table_gives_the_same_bytes(tmp_path) -> None:  # noqa: ANN001
    """The same blobs through a process whose runtime uses the scalar table (WEBXNN_ISA=scalar)."""
    cases = [
        QConv(7, 9, groups=1, gic=17, goc=7, stride=(2, 2)),
        QConv(6, 5, groups=2, gic=3, goc=5, dil=(2, 1), pads=(2, 1, 2, 1)),
        QConv(9, 7, groups=17, gic=1, goc=2, dw=True, clamp=(0.0, 6.0)),
        QConv(8, 8, groups=40, gic=1, goc=1, dw=True, stride=(2, 2), in_q=(0.05, -128)),
        QConv(5, 5, groups=7, gic=1, goc=1, in_q=(0.05, 127)),
        QConv(9, 11, groups=1, gic=3, goc=17, stride=(2, 2), nchw=True),  # an RGB stem on its image's planes
    ]
    items = []
    for c in cases:
        c.make()
        items.append((blob(c), feed(c), reference(c)))
    outs = outputs_with_isa("scalar", [(b, x) for b, x, _ in items], tmp_path)
    for k, (_, _, want) in enumerate(items):
        for t in range(2):
            np.testing.assert_array_equal(outs[2 * k + t]["y"], want)


@pytest.mark.parametrize(
    "c",
    [
        QConv(224, 224, 1, 3, 32, stride=(2, 2), pads=(0, 1, 1, 0), in_q=(0.02, -128)),  # MobileNetV2's stem
        QConv(31, 27, 1, 3, 64, k=(7, 7), stride=(2, 2), pads=(3, 3, 3, 3), clamp=(0.0, 6.0)),  # ResNet-50's
        QConv(9, 8, 1, 1, 5, batch=2, in_q=(0.05, 127)),
        QConv(6, 7, 1, 4, 9, k=(2, 3), pads=(0, 2, 1, 1), dil=(2, 1)),
        QConv(6, 7, 1, 3, 9, dil=(1, 2), pads=(1, 2, 1, 2)),  # horizontal dilation: both steps run
        QConv(6, 7, 1, 8, 9),  # no planes (8 channels)
    ],
    ids=lambda c: f"{c.h}x{c.w}x{c.gic}-k{c.k}-d{c.dil}",
)
def test_image_transpose_fuses_into_an_int8_stem(c: QConv) -> None:
    """NCHW image -> StaticTranspose -> int8 Conv2d: where the best table's qconv2d reads planes
    (qconv2d_reads_nchw: the 256-bit tables' few-channel convs) the conv reads the image in place and the
    transpose never runs (the 512-bit AVX512-VNNI tiles run stems after it); the bits are the NHWC conv's
    either way."""
    c.nchw = True
    check(c)
    p = runtime.load(blob(c), threads=1)
    reads = webxnn.cpu_info()["isa"] in ("avx2", "avxvnni") and c.gic <= 4 and c.dil[1] == 1
    steps = [s["kind"] for s in p.plan() if "kind" in s and not s.get("aliased")]
    assert steps == (["XNNConv2d"] if reads else ["XNNStaticTranspose", "XNNConv2d"]), steps


def test_int8_block_does_not_fuse() -> None:
    """A MobileNet block (1x1 expand -> 3x3 depthwise -> 1x1 project) on maps big enough that fp32 would fuse
    it into one step: int8 nodes run as their own steps, each exact."""
    rng = np.random.default_rng(3)
    h, c0, c1 = 64, 16, 256  # the expanded map is 1 MiB of int8
    qs = [(0.05, 1), (0.04, -3), (0.06, 2), (0.08, 0)]
    b = GraphBuilder()
    cur = b.input("x", [1, h, h, c0], Datatype.QINT8, per_tensor(*qs[0]))
    x = rng.integers(-128, 128, (1, h, h, c0)).astype(np.int8)
    specs = [
        QConv(
            h, h, groups=1, gic=c0, goc=c1, k=(1, 1), pads=(0, 0, 0, 0), in_q=qs[0], out_q=qs[1], clamp=(0, 6)
        ),
        QConv(h, h, groups=c1, gic=1, goc=1, dw=True, in_q=qs[1], out_q=qs[2], clamp=(0, 6), seed=1),
        QConv(h, h, groups=1, gic=c1, goc=c0, k=(1, 1), pads=(0, 0, 0, 0), in_q=qs[2], out_q=qs[3], seed=2),
    ]
    want = x
    for k, c in enumerate(specs):
        c.make()
        c.arrays["x"] = want
        want = reference(c)
        y = b.value(list(want.shape), Datatype.QINT8, per_tensor(*c.out_q))
        if k == len(specs) - 1:
            b.output(y, "y")
        conv_node(b, c, cur, y)
        cur = y
    p = runtime.load(b.build(), threads=2)
    assert all(not s["fused"] for s in p.plan()) and len(p.plan()) == 3
    np.testing.assert_array_equal(p.run([x])["y"], want)


# ---------------------------------------------------------------- refusals


def refused(c: QConv, mutate) -> str:  # noqa: ANN001
    c.make()
    b = GraphBuilder()
    parts = mutate(b, c)
    b.node(**parts)
    with pytest.raises(UnsupportedError) as e:
        runtime.load(b.build())
    return str(e.value)


def node_parts(
    b: GraphBuilder,
    c: QConv,
    x_q=(0.05, 3),
    y_q=(0.1, -2),
    w_dt=Datatype.QCINT8,
    w_quant=None,
    x_dt=Datatype.QINT8,
    const_filter=True,
) -> dict:
    a = c.arrays
    xi = b.input("x", list(a["x"].shape), x_dt, per_tensor(*x_q) if x_dt == Datatype.QINT8 else None)
    wq = w_quant or per_channel([0.01] * c.oc, 0)
    wi = b.const(a["f"], w_dt, wq) if const_filter else b.input("w", list(a["f"].shape), w_dt, wq)
    y = b.output(b.value([1, c.h, c.w, c.oc], Datatype.QINT8, per_tensor(*y_q)), "y")
    return dict(
        kind="XNNConv2d",
        input1_id=xi,
        filter_id=wi,
        bias_id=INVALID_ID,
        output_id=y,
        flags=0,
        **conv_fields(c.k, c.pads, c.stride, c.dil, c.groups, c.gic, c.goc),
    )


def test_refuses_zero_points_outside_int8() -> None:
    msg = refused(QConv(4, 4, 1, 3, 2), lambda b, c: node_parts(b, c, x_q=(0.1, 200)))
    assert "qint8 zero point 200 is outside [-128, 127]" in msg
    msg = refused(QConv(4, 4, 1, 3, 2), lambda b, c: node_parts(b, c, y_q=(0.1, -129)))
    assert "qint8 zero point -129 is outside [-128, 127]" in msg


def test_refuses_nonzero_filter_zero_point() -> None:
    msg = refused(
        QConv(4, 4, 1, 3, 2), lambda b, c: node_parts(b, c, w_dt=Datatype.QINT8, w_quant=per_tensor(0.1, 4))
    )
    assert "XNNConv2d" in msg and "filter zero point 4 is not supported" in msg


def test_refuses_scales_along_another_dim() -> None:
    msg = refused(QConv(4, 4, 1, 3, 3), lambda b, c: node_parts(b, c, w_quant=per_channel([0.01] * 3, 3)))
    assert "per-channel filter scales must be along the output dim 0, not 3" in msg


def test_refuses_dynamic_filter_and_mixed_types() -> None:
    msg = refused(QConv(4, 4, 1, 3, 2), lambda b, c: node_parts(b, c, const_filter=False))
    assert "filter" in msg and "constant" in msg
    msg = refused(QConv(4, 4, 1, 3, 2), lambda b, c: node_parts(b, c, x_dt=Datatype.FP32))
    assert "are not supported (fp32, or qint8 x qcint8" in msg
