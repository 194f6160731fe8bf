"""The int8 residual epilogues (kernels.qgemm / kernels.qconv2d with residual=: table.def's qgemm_residual and
qconv2d_residual) against a numpy integer reference written here -- the product requantized to its own qint8
output and clamp, then qadd's arithmetic on that and the residual -- and against the pair run apart (the
product, then the stand-alone qadd kernel), bit for bit: tile tails (1, 7, 17 columns / rows), K edges and K
blocks, u8 and s8 activations, zero points 0 / inner / extreme, per-channel and per-tensor weight scales, sums
that saturate at both ends, a Relu on the sum, the pointwise, IGEMM, grouped, few-channel (image stem) and
-128-weight (AVX2's 16-bit path) routes, every int8 table (scalar, avx2, vnni-emu), 1 and 2 threads."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_testing_module
from test_q8_elementwise_nodes import add_ref
from test_qs8_conv import conv_case, conv_reference
from test_qs8_gemm import ISAS, RANGE, case, want_of
from webxnn.errors import InputError

Q = load_testing_module().kernels
RNG = np.random.default_rng(1919)


def add_args(
    y: np.ndarray, r: np.ndarray, y_q: tuple[float, int], r_zp: int, sum_zp: int, relu: bool
) -> dict:
    """The Add's quantization for a product y (scale, zero point y_q) and a residual r: the residual's scale
    near the product's, and a sum scale that puts the 10th and 90th percentiles of the real sums just outside
    the sum's range, so the sums saturate at both ends (an extreme zero point: all sums beyond it too), with
    values between. When the sums lie on one side of 0 only, sum_zp cannot give that: the zero point that does
    is used instead. relu: the sum clamped to [its zero point, 127]."""
    r_scale = float(np.float32(y_q[0] * RNG.uniform(0.6, 1.6)))
    real = (y.astype(np.float64) - y_q[1]) * y_q[0] + (r.astype(np.float64) - r_zp) * r_scale
    lo, hi = np.quantile(real, [0.1, 0.9])
    if lo < 0 < hi:  # lo and hi just past the ends (-128 - zp) * s and (127 - zp) * s of the sum's range
        bounds = [
            hi / (127 - sum_zp) if sum_zp < 127 else np.inf,
            lo / (-128 - sum_zp) if sum_zp > -128 else np.inf,
        ]
        scale = 0.9 * min(bounds)
    else:  # the zero point that maps [lo, hi] just past [-128, 127]
        scale = max(hi - lo, 1e-3) / 255 * 0.9
        sum_zp = int(np.clip(np.rint(-128 - lo / scale), -128, 127))
    return dict(
        r_scale=r_scale,
        r_zero_point=r_zp,
        sum_scale=float(np.float32(scale)),
        sum_zero_point=sum_zp,
        sum_min=sum_zp if relu else -128,
        sum_max=127,
    )


def sum_ref(y: np.ndarray, r: np.ndarray, y_scale: float, y_zp: int, a: dict) -> np.ndarray:
    """qadd (table.def) of the product's output y and the residual r."""
    return add_ref(
        y,
        r,
        y_scale,
        y_zp,
        a["r_scale"],
        a["r_zero_point"],
        a["sum_scale"],
        a["sum_zero_point"],
        a["sum_min"],
        a["sum_max"],
    )


def apart(y: np.ndarray, r: np.ndarray, y_scale: float, y_zp: int, a: dict, isa: str) -> np.ndarray:
    """The stand-alone Add kernel on the product's output: what the unfused pair computes."""
    return Q.qbinary(
        "add",
        y,
        r,
        a_scale=y_scale,
        a_zp=y_zp,
        b_scale=a["r_scale"],
        b_zp=a["r_zero_point"],
        out_scale=a["sum_scale"],
        out_zp=a["sum_zero_point"],
        out_min=a["sum_min"],
        out_max=a["sum_max"],
        isa=isa,
    )


def check_all(
    kernel: str, c: dict, want_y: np.ndarray, out_min: int, out_max: int, add: tuple[int, int, bool], **kw
) -> None:
    """kernels.<kernel> with a residual (add: its zero point, the sum's, a Relu on the sum; add_args) on every
    table and 1 and 2 threads: the reference's bytes, and those of the product then the stand-alone Add on
    the same table."""
    r = RNG.integers(-128, 128, want_y.shape).astype(np.int8)
    a = add_args(want_y, r, (c["out_scale"], c["out_zero_point"]), *add)
    want = sum_ref(want_y, r, c["out_scale"], c["out_zero_point"], a)
    if want.size >= 64:  # not a degenerate case: values inside the clamp too
        assert ((want > a["sum_min"]) & (want < a["sum_max"])).any()
    for isa in ISAS:
        y = getattr(Q, kernel)(**c, out_min=out_min, out_max=out_max, isa=isa, **kw)
        assert np.array_equal(y, want_y), (isa, "product")
        assert np.array_equal(apart(y, r, c["out_scale"], c["out_zero_point"], a, isa), want), (isa, "apart")
        for t in (1, 2):
            got = getattr(Q, kernel)(
                **c, out_min=out_min, out_max=out_max, isa=isa, threads=t, residual=r, **a, **kw
            )
            bad = np.argwhere(got != want)
            assert bad.size == 0, (isa, t, bad[:5], got[tuple(bad[0])], want[tuple(bad[0])])


# M, N, K: tile tails in M and N, K edges (partial row groups, K blocks past 24 KB of a strip)
GEMM_SHAPES = [
    (1, 1, 1),
    (1, 17, 63),
    (1, 70, 33),
    (2, 7, 5),
    (3, 16, 17),
    (7, 33, 64),
    (17, 17, 7),
    (17, 48, 769),
    (33, 31, 2049),
    (200, 40, 24),
]


@pytest.mark.parametrize("m,n,k", GEMM_SHAPES)
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_qgemm_residual(m: int, n: int, k: int, a_dtype: str) -> None:
    i = m * 7 + n * 3 + k
    lo, hi = RANGE[a_dtype]
    a_zp = (lo, hi, (lo + hi) // 2 + 3)[i % 3]
    y_zp, r_zp, s_zp = (0, -128, 127, -7)[i % 4], (127, 0, -128, 9)[i % 4], (-128, 5, 0, 127)[i % 4]
    c = case(m, n, k, a_dtype, "int8", a_zp=a_zp, out_zp=y_zp, per_channel=i % 2 == 0, seed=i)
    out_min, out_max = ((-1024, 1024), (y_zp, 127), (-100, 90))[i % 3]  # the product's own clamp
    want_y = want_of(c, out_min, out_max)
    check_all("qgemm", c, want_y, out_min, out_max, (r_zp, s_zp, i % 2 == 1))


@pytest.mark.parametrize("wide", [False, True])
def test_qgemm_residual_weights_and_scales(wide: bool) -> None:
    """Weights with -128 (AVX2's 16-bit path) or within [-127, 127]; products from mostly saturated to
    mostly small."""
    for j, spread in enumerate((0.3, 1.0, 10.0, 100.0)):
        c = case(9, 35, 40, "uint8", "int8", out_zp=-3, seed=50 + j, w_lo=-128 if wide else -127)
        c["out_scale"] *= spread
        if wide:
            c["B"][:, 0] = -128
        check_all("qgemm", c, want_of(c), -1024, 1024, (-2, 4, j % 2 == 0))


@pytest.mark.parametrize("relu", [False, True])
def test_residual_saturates_at_both_ends(relu: bool) -> None:
    """Sums past both ends of int8 (or, with a Relu, below the sum's zero point), with values between, on the
    GEMM and the IGEMM routes, every table: the reference's bytes."""
    c = case(24, 40, 48, "int8", "int8", a_zp=-3, out_zp=-6, seed=11)
    x = conv_case(1, 6, 5, 8, 24, (3, 3), "int8", "int8", seed=12)
    geo = dict(pads=(1, 1, 1, 1), strides=(1, 1), dilations=(1, 1))
    for kernel, args, kw in (("qgemm", c, {}), ("qconv2d", x, geo)):
        y = getattr(Q, kernel)(**args, **kw, isa="scalar")
        r = RNG.integers(-128, 128, y.shape).astype(np.int8)
        a = add_args(y, r, (args["out_scale"], args["out_zero_point"]), 1, 0, relu)
        want = sum_ref(y, r, args["out_scale"], args["out_zero_point"], a)
        for edge in (a["sum_min"], 127):
            assert (want == edge).mean() > 0.05, (kernel, edge)
        assert ((want > a["sum_min"]) & (want < 127)).mean() > 0.1, kernel
        for isa in ISAS:
            got = getattr(Q, kernel)(**args, **kw, isa=isa, threads=2, residual=r, **a)
            assert np.array_equal(got, want), (kernel, isa)


def test_qgemm_residual_row_strides() -> None:
    """C and the residual [M, ldc] with ldc > N: the columns past N stay as filled (the residual is read only
    within [0, N) of its rows)."""
    c = case(5, 19, 30, "int8", "int8", out_zp=2, seed=7)
    y = Q.qgemm(**c, ldc=24, fill=0x55)
    r = RNG.integers(-128, 128, (5, 24)).astype(np.int8)
    a = add_args(y[:, :19], r[:, :19], (c["out_scale"], 2), 3, -1, False)
    want = y.copy()
    want[:, :19] = sum_ref(y[:, :19], r[:, :19], c["out_scale"], c["out_zero_point"], a)
    for isa in ISAS:
        for t in (1, 2):
            got = Q.qgemm(**c, ldc=24, fill=0x55, residual=r, isa=isa, threads=t, **a)
            assert np.array_equal(got, want), (isa, t)


CONV_CASES = [  # n, h, w, c, oc, k, pads, strides, groups: pointwise (GEMM), IGEMM, grouped, image stems
    (1, 7, 9, 16, 17, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (2, 5, 5, 7, 33, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (1, 9, 8, 24, 40, (3, 3), (1, 1, 1, 1), (1, 1), 1),
    (1, 11, 7, 9, 7, (3, 3), (1, 0, 2, 1), (2, 2), 1),
    (1, 6, 6, 1, 1, (1, 3), (0, 1, 0, 1), (1, 1), 1),
    (1, 8, 7, 6, 10, (3, 3), (1, 1, 1, 1), (1, 1), 2),
    (1, 17, 13, 3, 16, (3, 3), (1, 1, 1, 1), (2, 2), 1),  # RGB stem: AVX2's fp32-accumulating path
    (1, 15, 15, 3, 19, (7, 7), (3, 3, 3, 3), (2, 2), 1),
    (1, 10, 10, 2, 18, (5, 5), (2, 2, 2, 2), (1, 1), 1),
]


@pytest.mark.parametrize("n,h,w,ch,oc,k,pads,strides,groups", CONV_CASES)
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_qconv2d_residual(n, h, w, ch, oc, k, pads, strides, groups, a_dtype) -> None:  # noqa: ANN001
    i = h * 13 + ch * 5 + oc
    c = conv_case(n, h, w, ch * groups, oc * groups, k, a_dtype, "int8", seed=i)
    if groups > 1:  # OHWI [groups * oc, kh, kw, ch]
        c["filter"] = np.ascontiguousarray(c["filter"][..., :ch])
    c["out_zero_point"] = (-128, 0, 127, 11)[i % 4]
    out_min, out_max = ((-1024, 1024), (c["out_zero_point"], 127))[i % 2]
    geo = dict(pads=pads, strides=strides, dilations=(1, 1))
    if groups == 1:
        keys = ("x", "filter", "bias", "w_scales", "a_scale", "a_zero_point", "out_scale", "out_zero_point")
        want_y = conv_reference(*(c[k_] for k_ in keys), "int8", pads, strides, (1, 1), out_min, out_max)
    else:
        want_y = Q.qconv2d(**c, **geo, groups=groups, out_min=out_min, out_max=out_max, isa="scalar")
        geo["groups"] = groups
    check_all(
        "qconv2d",
        c,
        want_y,
        out_min,
        out_max,
        # the residual's zero point at the other end from the product's: sums on both sides of 0
        (
            {-128: 127, 127: -128}.get(c["out_zero_point"], (5, -128, 127)[i % 3]),
            (0, 127, -128, 30)[i % 4],
            i % 2 == 0,
        ),
        **geo,
    )


def test_residual_refusals() -> None:
    """The binding refuses a residual of another shape and a u8 product (qadd is s8 only)."""
    c = case(3, 5, 7, "uint8", "int8", seed=3)
    with pytest.raises(InputError, match="shape"):
        Q.qgemm(**c, residual=np.zeros((3, 4), np.int8))
    c["out_dtype"] = "uint8"
    with pytest.raises(InputError, match="int8"):
        Q.qgemm(**c, residual=np.zeros((3, 5), np.int8))
