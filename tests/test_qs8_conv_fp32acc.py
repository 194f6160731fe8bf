"""int8 convolutions with few input channels (image stems), which the AVX2 table runs on fp32 FMAs
(csrc/kernels/avx2/qconv_fp32acc.cc): exact while K = kh * kw * C <= 514, so bit for bit the integer numpy
reference and the scalar table; larger K stays on the int8 IGEMM. Shapes of the real stems, every zero-point
and weight extreme, sums at the exactness bound that fp32 would round past it, and NCHW input read in place
(qconv2d_reads_nchw)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_qs8_conv import SETTINGS, check_conv, conv_case

RANGE = {"uint8": (0, 255), "int8": (-128, 127)}


@pytest.mark.parametrize("a_dtype,out_dtype", [("uint8", "uint8"), ("int8", "int8")])
def test_mobilenet_v2_stem(a_dtype, out_dtype):
    """224x224x3 -> 112x112x32, 3x3 stride 2, the pads onnxruntime's export gives (0, 0 top-left, 1, 1)."""
    c = conv_case(1, 224, 224, 3, 32, (3, 3), a_dtype, out_dtype, seed=1)
    check_conv(c, pads=(0, 1, 1, 0), strides=(2, 2), threads=(1, 2), out_min=RANGE[out_dtype][0] + 3)


@pytest.mark.parametrize("a_dtype,out_dtype", [("uint8", "int8"), ("int8", "uint8")])
def test_resnet50_stem(a_dtype, out_dtype):
    """7x7 stride 2, pads 3, 3 -> 64 channels (ResNet-50's stem) on a smaller odd-sized image."""
    c = conv_case(1, 57, 45, 3, 64, (7, 7), a_dtype, out_dtype, seed=2)
    check_conv(c, pads=(3, 3, 3, 3), strides=(2, 2), threads=(1, 2))


@pytest.mark.parametrize("ch", [1, 2, 3, 4])
@pytest.mark.parametrize("oc", [1, 7, 16, 17, 33])
def test_channels_and_columns(ch, oc):
    """Every input-channel count the fp32 path takes, and column tails (a lone column, 7, whole and partial
    panels), on odd-sized images with asymmetric pads."""
    for h, w in ((7, 17), (17, 7)):
        c = conv_case(2, h, w, ch, oc, (3, 3), "uint8" if oc % 2 else "int8", seed=ch * 100 + oc + h)
        check_conv(c, pads=(2, 0, 1, 1), strides=(1, 2), threads=(1, 2))


@pytest.mark.parametrize(
    "k,strides,dil,pads",
    [
        ((3, 3), (2, 2), (2, 1), (1, 1, 1, 1)),  # vertical dilation: still on the fp32 path
        ((3, 3), (1, 1), (1, 2), (1, 2, 1, 2)),  # horizontal dilation: the int8 IGEMM
        ((1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),  # a pointwise conv with 3 channels
        ((1, 1), (2, 3), (1, 1), (0, 0, 0, 0)),
        ((5, 1), (1, 1), (3, 1), (4, 0, 3, 0)),
        ((2, 9), (3, 1), (1, 1), (0, 4, 2, 4)),
        ((9, 9), (4, 4), (1, 1), (0, 0, 0, 0)),  # stride past the window: columns nobody reads
    ],
)
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_geometries(k, strides, dil, pads, a_dtype):
    c = conv_case(2, 17, 15, 3, 20, k, a_dtype, seed=k[0] * 10 + k[1])
    check_conv(c, pads=pads, strides=strides, dil=dil, threads=(1, 2))


def test_image_smaller_than_the_filter():
    """Every window mostly padding, rows of the ring entirely padding."""
    c = conv_case(1, 2, 3, 3, 9, (7, 7), seed=5)
    check_conv(c, pads=(3, 3, 3, 3), strides=(2, 2), threads=(1, 2))


@pytest.mark.parametrize(
    "a_dtype,a_zp,x_value", [("uint8", 0, 255), ("uint8", 255, 0), ("int8", -128, 127), ("int8", 127, -128)]
)
@pytest.mark.parametrize("out_dtype", ["uint8", "int8"])
def test_extreme_zero_points_and_weights(a_dtype, a_zp, x_value, out_dtype):
    """Zero points at both ends of the type (padding is then 0 or 255 raw), inputs at the other end, weights
    -128 and 127, clamped outputs."""
    c = conv_case(1, 9, 11, 3, 24, (3, 3), a_dtype, out_dtype, seed=a_zp + 1000 + x_value)
    c["a_zero_point"] = a_zp
    rng = np.random.default_rng(a_zp + 700)
    c["x"] = np.where(rng.random(c["x"].shape) < 0.7, x_value, c["x"]).astype(a_dtype)
    c["filter"] = rng.choice(np.array([-128, 127], np.int8), c["filter"].shape)
    c["out_scale"] = c["a_scale"] * 0.02 * 255 * 128 * 27 / 400
    lo, hi = RANGE[out_dtype]
    check_conv(c, pads=(1, 2, 2, 1), strides=(2, 1), threads=(1, 2), out_min=lo + 5, out_max=hi - 9)


@pytest.mark.parametrize("bias_bound", [2**24 - 27 * 255 * 128, 2**24, 2**31 - 1])
def test_bias_magnitudes(bias_bound):
    """Sums start from the bias in fp32 while every |bias| + K * 255 * 128 < 2^24 (exact), else the bias is
    added in int32 after the sums (wrapping like the reference's int32): biases at the limit, just past it,
    and anywhere in int32."""
    c = conv_case(1, 13, 12, 3, 20, (3, 3), "uint8", "int8", seed=bias_bound % 1000)
    rng = np.random.default_rng(bias_bound % 997)
    c["bias"] = rng.integers(-bias_bound + 1, bias_bound, 20).astype(np.int32)
    c["bias"][0] = bias_bound - 1
    c["out_scale"] = 0.05 * 0.01 * 40  # large sums saturate, small ones do not
    check_conv(c, pads=(1, 1, 1, 1), strides=(2, 2), threads=(1, 2))


def bound_case(k: tuple[int, int], ch: int, a_dtype: str, w_value: int, h: int, w: int) -> dict:
    """Every product (x - za) * w the same, 255 * w_value: with 127 (odd products, 32385) the window's sum
    S = K * 32385 goes past 2^24 for K >= 519, where fp32 partial sums in k order round
    (test_the_bound_test_can_fail); with -128 it is the largest magnitude, -32640 (K = 514: S = -16,776,960,
    just inside 2^24). The bias is -S + 40 and the output scale 1, so an inner pixel's output is exactly
    40 + zy, and a sum off by one shows."""
    kk = k[0] * k[1] * ch
    lo, hi = RANGE[a_dtype]
    return dict(
        x=np.full((1, h, w, ch), hi, a_dtype),
        filter=np.full((3, k[0], k[1], ch), w_value, np.int8),
        bias=np.full(3, -kk * 255 * w_value + 40, np.int32),
        w_scales=np.full(3, 1 / 64, np.float32),
        a_scale=1.0,
        a_zero_point=hi - 255,  # x - za = 255
        out_scale=1 / 64,
        out_zero_point=-3 if a_dtype == "int8" else 100,
        out_dtype="int8" if a_dtype == "int8" else "uint8",
    )


@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
@pytest.mark.parametrize("w_value", [127, -128])
@pytest.mark.parametrize(
    "k,ch",
    [
        ((2, 257), 1),  # K = 514: the largest on the fp32 path
        ((16, 16), 2),  # 512
        ((11, 16), 3),  # 528 > 514: the int8 IGEMM (fp32 sums in k order would be 8 short)
        ((12, 11), 4),  # 528
        ((1, 264), 2),  # 528
    ],
)
def test_sums_at_the_exactness_bound(k, ch, a_dtype, w_value):
    c = bound_case(k, ch, a_dtype, w_value, k[0] + 1, k[1] + 2)
    want = check_conv(c, pads=(0, 1, 1, 0), threads=(1, 2))
    assert (want[0, 0, 0] == 40 + c["out_zero_point"]).all()  # inner: the full sum, exactly


def test_the_bound_test_can_fail():
    """bound_case's sums (products 32385) with fp32 accumulation in k order, as the fp32 path sums them: exact
    at K = 514, 8 short at K = 528 (so the fp32 path must not take K = 528)."""
    for kk, error in ((514, 0), (528, -8)):
        s = np.float32(0)
        for _ in range(kk):
            s = np.float32(s + np.float32(32385))
        assert int(s) - kk * 32385 == error


@pytest.mark.parametrize(
    "n,h,w,ch,oc,k,strides,dil,pads",
    [
        (1, 224, 224, 3, 32, (3, 3), (2, 2), (1, 1), (0, 1, 1, 0)),  # MobileNetV2's stem
        (2, 17, 7, 3, 64, (7, 7), (2, 2), (1, 1), (3, 3, 3, 3)),  # ResNet-50's, on a small odd image
        (1, 7, 17, 1, 17, (3, 3), (1, 2), (2, 1), (2, 0, 1, 1)),
        (2, 9, 70, 2, 33, (2, 5), (1, 1), (1, 1), (0, 4, 1, 3)),  # rows of more than one 64-column chunk
        (1, 5, 6, 4, 7, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
        (1, 2, 3, 3, 9, (7, 7), (2, 2), (1, 1), (3, 3, 3, 3)),  # every window mostly padding
        (1, 6, 9, 3, 16, (3, 3), (1, 1), (1, 2), (1, 1, 1, 1)),  # horizontal dilation: NHWC only
    ],
)
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_planes(n, h, w, ch, oc, k, strides, dil, pads, a_dtype):
    """qconv2d reading an NCHW copy of x (p.input_nchw) where the table reads planes (AVX2: the fp32 path's
    convs; scalar: none), the bits of the NHWC conv."""
    c = conv_case(n, h, w, ch, oc, k, a_dtype, seed=h + w + ch)
    check_conv(c, pads=pads, strides=strides, dil=dil, threads=(1, 2), planes=True)


@SETTINGS
@given(
    h=st.integers(1, 17),
    w=st.integers(1, 17),
    ch=st.integers(1, 4),
    oc=st.integers(1, 40),
    kh=st.integers(1, 7),
    kw=st.integers(1, 7),
    sh=st.integers(1, 3),
    sw=st.integers(1, 3),
    dh=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 3)] * 4),
    a_u8=st.booleans(),
    out_u8=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_stem_property(h, w, ch, oc, kh, kw, sh, sw, dh, pads, a_u8, out_u8, seed):
    top, right, bottom, left = pads
    if h + top + bottom < (kh - 1) * dh + 1 or w + left + right < kw:
        return
    a_dtype, out_dtype = ("uint8" if a_u8 else "int8"), ("uint8" if out_u8 else "int8")
    case = conv_case(1, h, w, ch, oc, (kh, kw), a_dtype, out_dtype, w_lo=-128, seed=seed)
    check_conv(case, pads=pads, strides=(sh, sw), dil=(dh, 1), threads=(1, 2), planes=bool(seed % 2))
