"""The int8 IGEMM convolution (kernels.qconv2d) against an integer numpy convolution written here: same bits
from the scalar and AVX2 kernels, 1 and 2 threads, padding read as the input zero point."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import load_testing_module
from test_qs8_gemm import ISAS, RANGE, reference

Q = load_testing_module().kernels


def conv_reference(
    x: np.ndarray,
    f: np.ndarray,
    bias: np.ndarray | None,
    w_scales: np.ndarray,
    a_scale: float,
    a_zp: int,
    out_scale: float,
    out_zp: int,
    out_dtype: str,
    pads: tuple[int, int, int, int],
    strides: tuple[int, int],
    dil: tuple[int, int],
    out_min: int = -1024,
    out_max: int = 1024,
) -> np.ndarray:
    """im2col over the zero-point-padded input, then the GEMM reference (table.def's qgemm formula)."""
    n, h, w, c = x.shape
    oc, kh, kw, _ = f.shape
    top, right, bottom, left = pads
    xp = np.full((n, h + top + bottom, w + left + right, c), a_zp, np.int64)
    xp[:, top : top + h, left : left + w, :] = x
    eh, ew = (kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1
    oh, ow = (xp.shape[1] - eh) // strides[0] + 1, (xp.shape[2] - ew) // strides[1] + 1
    cols = np.empty((n, oh, ow, kh, kw, c), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dil[0], kx * dil[1]
            cols[:, :, :, ky, kx, :] = xp[
                :,
                y0 : y0 + (oh - 1) * strides[0] + 1 : strides[0],
                x0 : x0 + (ow - 1) * strides[1] + 1 : strides[1],
                :,
            ]
    y = reference(
        cols.reshape(n * oh * ow, -1),
        f.reshape(oc, -1),
        bias,
        w_scales,
        a_scale,
        a_zp,
        out_scale,
        out_zp,
        out_dtype,
        out_min,
        out_max,
    )
    return y.reshape(n, oh, ow, oc)


def conv_case(
    n: int,
    h: int,
    w: int,
    c: int,
    oc: int,
    k: tuple[int, int],
    a_dtype: str = "uint8",
    out_dtype: str = "int8",
    w_lo: int = -127,
    w_hi: int = 127,
    seed: int = 0,
) -> dict:
    rng = np.random.default_rng(seed)
    lo, hi = RANGE[a_dtype]
    taps = k[0] * k[1] * c
    return dict(
        x=rng.integers(lo, hi + 1, (n, h, w, c)).astype(a_dtype),
        filter=rng.integers(w_lo, w_hi + 1, (oc, k[0], k[1], c)).astype(np.int8),
        bias=rng.integers(-3000, 3000, oc).astype(np.int32),
        w_scales=rng.uniform(0.002, 0.02, oc).astype(np.float32),
        a_scale=0.05,
        a_zero_point=int(rng.integers(lo, hi + 1)),
        out_scale=0.05 * 0.01 * 40 * np.sqrt(taps) / 60,
        out_zero_point=int(rng.integers(*RANGE[out_dtype])),
        out_dtype=out_dtype,
    )


def check_kernel(
    kernel: str,
    ref,
    c: dict,
    pads=(0, 0, 0, 0),
    strides=(1, 1),
    dil=(1, 1),
    threads=(1,),
    out_min=-1024,
    out_max=1024,
    **kernel_kw,
) -> np.ndarray:
    """kernels.<kernel> (qconv2d, qdwconv2d) on case `c` against `ref`, bit for bit, on every ISA and thread
    count (kernel_kw: the binding's other options, e.g. qconv2d's planes); returns the reference output."""
    keys = (
        "x",
        "filter",
        "bias",
        "w_scales",
        "a_scale",
        "a_zero_point",
        "out_scale",
        "out_zero_point",
        "out_dtype",
    )
    want = ref(*(c[k] for k in keys), pads, strides, dil, out_min, out_max)
    for isa in ISAS:
        for t in threads:
            got = getattr(Q, kernel)(
                **c,
                pads=pads,
                strides=strides,
                dilations=dil,
                out_min=out_min,
                out_max=out_max,
                isa=isa,
                threads=t,
                **kernel_kw,
            )
            bad = np.argwhere(got != want)
            assert bad.size == 0, (isa, t, bad[:5])
    return want


def check_conv(c: dict, **kw) -> np.ndarray:
    return check_kernel("qconv2d", conv_reference, c, **kw)


@pytest.mark.parametrize("a_dtype,out_dtype", [("uint8", "int8"), ("int8", "uint8")])
@pytest.mark.parametrize(
    "shape",
    [
        (1, 8, 8, 16, 16, (3, 3)),
        (1, 7, 9, 3, 17, (3, 3)),
        (2, 5, 6, 5, 33, (3, 3)),
        (1, 9, 9, 64, 32, (1, 1)),
        (1, 6, 6, 7, 8, (5, 5)),
        (1, 4, 4, 1, 1, (1, 3)),
        (1, 11, 5, 20, 40, (3, 2)),
    ],
)
def test_conv_shapes_and_padding(shape, a_dtype, out_dtype):
    n, h, w, ch, oc, k = shape
    c = conv_case(n, h, w, ch, oc, k, a_dtype, out_dtype, seed=h * 100 + ch)
    pads = (k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2)
    check_conv(c, pads=pads, threads=(1, 2))


@pytest.mark.parametrize(
    "strides,dil,pads",
    [
        ((2, 2), (1, 1), (1, 1, 1, 1)),
        ((1, 2), (2, 1), (2, 0, 1, 3)),
        ((3, 1), (1, 1), (0, 2, 2, 0)),
        ((1, 1), (2, 2), (2, 2, 2, 2)),
    ],
)
@pytest.mark.parametrize("weights", ["sign", "small", "wide"])
def test_conv_strides_dilations_and_paths(strides, dil, pads, weights):
    w_lo, w_hi = {"sign": (-127, 127), "small": (-64, 64), "wide": (-128, 127)}[weights]
    c = conv_case(2, 10, 9, 13, 24, (3, 3), w_lo=w_lo, w_hi=w_hi, seed=7)
    if weights == "wide":
        c["filter"][0, 0, 0, 0] = -128
    check_conv(c, pads=pads, strides=strides, dil=dil, threads=(1, 2))


@pytest.mark.parametrize("a_zp", [0, 255])
def test_conv_extreme_zero_point_padding_and_clamp(a_zp):
    c = conv_case(1, 6, 6, 8, 16, (3, 3), seed=a_zp)
    c["a_zero_point"] = a_zp
    check_conv(c, pads=(2, 2, 2, 2), out_min=-10, out_max=50)


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# Long-K convolutions run in K blocks (qgemm_tiles.h, tile_strip): block edges on tap edges (C = 512, as
# ResNet-50's last stage), inside taps with a partial row group (C = 130, 3 blocks of 99 of 297 row groups;
# C = 257), a 1x1 with C = 2048, and enough pixels for several tile groups.
@pytest.mark.parametrize(
    "shape",
    [
        (1, 7, 7, 512, 40, (3, 3), (1, 1, 1, 1), (1, 1)),
        (1, 6, 5, 130, 33, (3, 3), (1, 0, 1, 2), (1, 1)),
        (1, 11, 11, 257, 16, (3, 3), (0, 0, 0, 0), (2, 2)),
        (1, 7, 7, 2048, 20, (1, 1), (0, 0, 0, 0), (1, 1)),
        (2, 10, 12, 96, 48, (3, 3), (1, 1, 1, 1), (1, 1)),
    ],
)
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_conv_long_k_blocks(shape, a_dtype):
    n, h, w, c, oc, k, pads, strides = shape
    check_conv(conv_case(n, h, w, c, oc, k, a_dtype, seed=c + oc), pads=pads, strides=strides, threads=(1, 2))


@SETTINGS
@given(
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    c=st.integers(1, 20),
    oc=st.integers(1, 35),
    kh=st.integers(1, 3),
    kw=st.integers(1, 3),
    stride=st.integers(1, 2),
    pad=st.integers(0, 2),
    a_u8=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_conv_property(h, w, c, oc, kh, kw, stride, pad, a_u8, seed):
    if h + 2 * pad < kh or w + 2 * pad < kw:
        return
    case = conv_case(1, h, w, c, oc, (kh, kw), "uint8" if a_u8 else "int8", seed=seed)
    check_conv(case, pads=(pad, pad, pad, pad), strides=(stride, stride), threads=(1, 2))


@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
@pytest.mark.parametrize(
    "h,w,ch,oc,k,strides,dil,pads",
    [
        (15, 13, 3, 20, (7, 7), (2, 2), (1, 1), (3, 3, 3, 3)),  # ResNet's stem, small
        (9, 10, 3, 32, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),  # MobileNetV2's
        (6, 3, 1, 5, (2, 5), (1, 1), (2, 1), (1, 2, 0, 2)),  # W < kw: every filter row gathered
        (7, 8, 2, 17, (3, 4), (1, 3), (1, 1), (0, 0, 2, 1)),
        (5, 12, 7, 9, (2, 9), (2, 1), (1, 1), (1, 4, 1, 4)),  # kw * C = 63, the largest merged row
        (5, 12, 7, 9, (1, 10), (1, 1), (1, 1), (0, 0, 0, 0)),  # 70: taps of C
        (6, 7, 5, 33, (3, 3), (1, 1), (1, 2), (1, 1, 1, 1)),  # horizontal dilation: taps of C
    ],
)
def test_conv_few_channels_merged_filter_rows(h, w, ch, oc, k, strides, dil, pads, a_dtype):
    """Convs with C < 8 (not a multiple of 4) and groups 1 pack each filter row as one tap of kw * C bytes
    (qgemm_layout.h); the rows that overlap the left / right padding are gathered with the zero point."""
    c = conv_case(2, h, w, ch, oc, k, a_dtype, seed=h * 10 + ch)
    c["filter"][0, 0, 0, 0] = 127
    c["filter"][-1, -1, -1, -1] = -127
    check_conv(c, pads=pads, strides=strides, dil=dil, threads=(1, 2))
