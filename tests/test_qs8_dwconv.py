"""The int8 depthwise convolution (kernels.qdwconv2d) and grouped IGEMM (kernels.qconv2d with groups) against
integer numpy references written here: same bits from the scalar and AVX2 kernels, 1 and 2 threads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import load_testing_module
from test_qs8_conv import check_kernel, conv_reference
from test_qs8_gemm import ISAS, RANGE, requantize

Q = load_testing_module().kernels


def dw_reference(
    x,
    f,
    bias,
    w_scales,
    a_scale,
    a_zp,
    out_scale,
    out_zp,
    out_dtype,
    pads,
    strides,
    dil,
    out_min=-1024,
    out_max=1024,
) -> np.ndarray:
    """Output channel c * m + j = sum over taps of input channel c x filter[0, ky, kx, c * m + j]."""
    n, h, w, c = x.shape
    _, kh, kw, oc = f.shape
    m = oc // c
    top, right, bottom, left = pads
    xp = np.full((n, h + top + bottom, w + left + right, c), a_zp, np.int64)
    xp[:, top : top + h, left : left + w, :] = x
    oh = (xp.shape[1] - (kh - 1) * dil[0] - 1) // strides[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dil[1] - 1) // strides[1] + 1
    xr = np.repeat(xp - a_zp, m, axis=3)  # channel c * m + j reads input channel c
    acc = np.zeros((n, oh, ow, oc), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dil[0], kx * dil[1]
            win = xr[
                :,
                y0 : y0 + (oh - 1) * strides[0] + 1 : strides[0],
                x0 : x0 + (ow - 1) * strides[1] + 1 : strides[1],
            ]
            acc += win * f[0, ky, kx].astype(np.int64)
    if bias is not None:
        acc += bias
    return requantize(acc, w_scales, a_scale, out_scale, out_zp, out_dtype, out_min, out_max)


def dw_case(n, h, w, c, m, k, a_dtype="int8", out_dtype="int8", seed=0, per_channel=True) -> dict:
    rng = np.random.default_rng(seed)
    lo, hi = RANGE[a_dtype]
    oc = c * m
    return dict(
        x=rng.integers(lo, hi + 1, (n, h, w, c)).astype(a_dtype),
        filter=rng.integers(-128, 128, (1, k[0], k[1], oc)).astype(np.int8),
        bias=rng.integers(-3000, 3000, oc).astype(np.int32),
        w_scales=rng.uniform(0.002, 0.02, oc if per_channel else 1).astype(np.float32),
        a_scale=0.05,
        a_zero_point=int(rng.integers(lo, hi + 1)),
        out_scale=0.05 * 0.01 * 70 * np.sqrt(k[0] * k[1]) / 60,
        out_zero_point=int(rng.integers(*RANGE[out_dtype])),
        out_dtype=out_dtype,
    )


def check_dw(c: dict, threads=(1, 2), **kw) -> np.ndarray:
    return check_kernel("qdwconv2d", dw_reference, c, threads=threads, **kw)


@pytest.mark.parametrize("a_dtype,out_dtype", [("int8", "int8"), ("uint8", "int8"), ("int8", "uint8")])
@pytest.mark.parametrize(
    "shape",
    [
        (1, 8, 8, 32, 1, (3, 3)),
        (1, 7, 9, 17, 1, (3, 3)),
        (2, 5, 6, 5, 2, (3, 3)),
        (1, 9, 9, 48, 1, (5, 5)),
        (1, 4, 4, 1, 3, (1, 3)),
        (1, 3, 5, 40, 1, (2, 2)),
    ],
)
def test_dw_shapes_and_padding(shape, a_dtype, out_dtype):
    n, h, w, ch, m, k = shape
    c = dw_case(n, h, w, ch, m, k, a_dtype, out_dtype, seed=h * 100 + ch)
    check_dw(c, pads=(k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2))


@pytest.mark.parametrize(
    "strides,dil,pads",
    [((2, 2), (1, 1), (1, 1, 1, 1)), ((1, 2), (2, 1), (2, 0, 1, 3)), ((2, 1), (2, 2), (0, 2, 2, 0))],
)
def test_dw_strides_dilations(strides, dil, pads):
    check_dw(dw_case(2, 10, 9, 19, 1, (3, 3), seed=3), pads=pads, strides=strides, dil=dil)
    check_dw(dw_case(1, 7, 8, 7, 2, (3, 3), seed=4, per_channel=False), pads=pads, strides=strides, dil=dil)


@pytest.mark.parametrize("a_zp", [-128, 127])
def test_dw_extreme_zero_points_saturation_and_clamp(a_zp):
    c = dw_case(1, 6, 6, 24, 1, (3, 3), seed=9)
    c["a_zero_point"] = a_zp
    c["out_scale"] = 0.002  # most sums saturate at one end or the other
    want = check_dw(c, pads=(2, 2, 2, 2))
    assert (want == -128).any() and (want == 127).any()
    check_dw(c, pads=(1, 1, 1, 1), out_min=-10, out_max=50)


@pytest.mark.parametrize("c", [1, 7, 17, 33])
@pytest.mark.parametrize("a_dtype", ["int8", "uint8"])
def test_dw_extreme_weights_and_zero_points(c, a_dtype):
    """Weights all -128 or +127 against inputs and zero points at both ends of their range: the largest
    products and sums the kernels' int16 inputs x int16 weights and int32 accumulators must hold."""
    lo, hi = RANGE[a_dtype]
    for w, zp in ((-128, hi), (-128, lo), (127, lo), (127, hi)):
        case = dw_case(1, 5, 7, c, 1, (3, 3), a_dtype, seed=c)
        case["x"][:] = lo if zp == hi else hi
        case["x"][0, 2, 3] = zp  # one pixel equal to the zero point
        case["filter"][:] = w
        case["filter"][0, 1, 1, 0] = -w - 1 if w == 127 else 127  # one tap of the other sign
        case["a_zero_point"] = zp
        case["bias"] = None
        case["out_scale"] = 3.0  # sums up to 9 * 255 * 128 inside the output range
        check_dw(case, pads=(1, 1, 1, 1))
        check_dw(case, pads=(0, 2, 1, 0), strides=(2, 2))


@pytest.mark.parametrize(
    "shape,strides,dil,pads",
    [
        ((1, 13, 11, 33, 1, (3, 3)), (1, 1), (1, 1), (1, 1, 1, 1)),  # odd sizes, two tiles and a tail
        ((2, 9, 15, 17, 1, (3, 3)), (2, 2), (1, 1), (0, 1, 1, 0)),  # stride 2, padding on one side only
        ((1, 11, 12, 7, 1, (5, 5)), (2, 2), (1, 1), (2, 2, 2, 2)),  # 5x5 stride 2
        ((1, 9, 10, 16, 1, (7, 7)), (1, 1), (1, 1), (3, 3, 3, 3)),  # 7x7: the generic tap loop
        ((1, 10, 13, 9, 1, (3, 3)), (1, 3), (1, 2), (1, 2, 1, 2)),  # stride 3 (not a multiple of 2 x dil)
        ((1, 12, 12, 5, 3, (3, 2)), (2, 1), (3, 3), (3, 1, 2, 2)),  # multiplier 3, dilation 3, even width
        ((1, 6, 40, 3, 1, (1, 4)), (1, 2), (1, 2), (0, 3, 0, 3)),  # a wide strip: 4-pixel strips and tails
        ((3, 4, 5, 1, 1, (3, 3)), (1, 1), (1, 1), (4, 4, 4, 4)),  # C = 1, padding wider than the kernel
    ],
)
def test_dw_odd_sizes_and_geometry(shape, strides, dil, pads):
    n, h, w, ch, m, k = shape
    for a_dtype in ("int8", "uint8"):
        c = dw_case(n, h, w, ch, m, k, a_dtype, seed=h * w + ch)
        check_dw(c, pads=pads, strides=strides, dil=dil)


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    n=st.integers(1, 2),
    h=st.integers(1, 9),
    w=st.integers(1, 12),
    c=st.integers(1, 40),
    m=st.integers(1, 3),
    kh=st.integers(1, 5),
    kw=st.integers(1, 5),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dil=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    a_u8=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_dw_property(n, h, w, c, m, kh, kw, stride, dil, pads, a_u8, seed):
    top, right, bottom, left = pads
    if h + top + bottom < (kh - 1) * dil[0] + 1 or w + left + right < (kw - 1) * dil[1] + 1:
        return
    case = dw_case(n, h, w, c, m, (kh, kw), "uint8" if a_u8 else "int8", seed=seed)
    check_dw(case, pads=pads, strides=stride, dil=dil)


@pytest.mark.parametrize("groups,cin,cout", [(2, 6, 10), (3, 9, 3), (4, 8, 36)])
def test_grouped_qconv2d(groups, cin, cout):
    """qconv2d with groups: each group's IGEMM against the single-group reference on its channel slices."""
    rng = np.random.default_rng(groups)
    gic, goc = cin // groups, cout // groups
    x = rng.integers(-128, 128, (2, 7, 6, cin)).astype(np.int8)
    f = rng.integers(-127, 128, (cout, 3, 3, gic)).astype(np.int8)
    bias = rng.integers(-3000, 3000, cout).astype(np.int32)
    ws = rng.uniform(0.002, 0.02, cout).astype(np.float32)
    q = dict(a_scale=0.05, a_zero_point=-3, out_scale=0.02, out_zero_point=4, out_dtype="int8")
    pads, strides = (1, 0, 1, 2), (2, 1)
    want = np.concatenate(
        [
            conv_reference(
                x[..., g * gic : (g + 1) * gic],
                f[g * goc : (g + 1) * goc],
                bias[g * goc : (g + 1) * goc],
                ws[g * goc : (g + 1) * goc],
                q["a_scale"],
                q["a_zero_point"],
                q["out_scale"],
                q["out_zero_point"],
                "int8",
                pads,
                strides,
                (1, 1),
            )
            for g in range(groups)
        ],
        axis=3,
    )
    for isa in ISAS:
        for t in (1, 2):
            got = Q.qconv2d(
                x, f, bias, ws, **q, pads=pads, strides=strides, groups=groups, isa=isa, threads=t
            )
            np.testing.assert_array_equal(got, want, err_msg=f"{isa} {t}")
