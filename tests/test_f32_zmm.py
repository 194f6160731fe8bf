"""The AVX512-VNNI table's fp32 GEMMs and convolutions (kernels/avx512f/: avx2's gemm.cc, igemm.cc,
winograd.cc, dwconv.cc and deconv.cc compiled again on 512-bit tiles, one zmm accumulator per row and
16-column panel, two panels at a time). Each output is the same FMAs in the same order as on the AVX2 table,
so every kernel must give the AVX2 table's bytes: tile tails (rows 1-5 left, a lone last panel, partial
panels), K blocks, the residual and clamp epilogues, every convolution path (1x1 as GEMM, IGEMM with gathered
or in-place rows, NCHW stems read in place, Winograd, transposed), the fused MobileNet blocks, 1 and 2
threads. The values themselves are checked against numpy by test_kernels.py on the best table."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_testing_module

K = load_testing_module().kernels
if "avx512vnni" not in K.tables():
    pytest.skip(
        "this CPU has no AVX512-VNNI + VL + BW, the table that runs the 512-bit fp32 tiles",
        allow_module_level=True,
    )

RNG = np.random.default_rng(20261127)


# The fp32 entries avx512f/ compiles again (avx2.h WEBXNN_F32_GEMM_KERNELS less packers and predicates).
ZMM_ENTRIES = [
    "gemm",
    "gemm_residual",
    "batch_matmul",
    "conv2d",
    "conv2d_residual",
    "dwconv2d_fused",
    "deconv2d",
]


def test_the_table_runs_its_own_fp32_entries() -> None:
    """Without this, every test below would also pass on a table that kept AVX2's fp32 entries."""
    zmm, ymm = K.table_entries("avx512vnni"), K.table_entries("avx2")
    assert [e for e in ZMM_ENTRIES if zmm[e] == ymm[e]] == []
    assert zmm["binary"] == ymm["binary"] and zmm["qgemm"] != ymm["qgemm"]  # AVX2's / its own, as before


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def same_as_avx2(fn, *args, **kw) -> None:  # noqa: ANN001 - a kernel entry of webxnn._testing.kernels
    want = fn(*args, isa="avx2", **kw)
    for threads in (1, 2):
        got = fn(*args, isa="avx512vnni", threads=threads, **kw)
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), (fn.__name__, threads)


@pytest.mark.parametrize("m", [1, 4, 7, 17, 49, 150])
@pytest.mark.parametrize("n", [8, 16, 17, 40, 48, 64, 200])
@pytest.mark.parametrize("k", [1, 3, 16, 100, 1600])
def test_gemm(m: int, n: int, k: int) -> None:
    """Bias, a clamp and a residual; B as [K, N] and as [N, K]; K = 1600: two K blocks (the second starts
    from C)."""
    a, b, bias, r = rand(m, k), rand(k, n), rand(n), rand(m, n)
    same_as_avx2(K.gemm, a, b, bias)
    same_as_avx2(K.gemm, a, np.ascontiguousarray(b.T), bias, b_is_nk=True, min=-0.5, max=0.75, residual=r)
    same_as_avx2(K.gemm, a, b, None, post="hardswish")


CONVS = [  # (h, w, c, oc, kernel, stride, pad, dilation, groups)
    (12, 12, 32, 48, 3, 1, 1, 1, 1),  # Winograd (>= 100 input pixels, >= 16 channels each side)
    (7, 7, 64, 64, 3, 1, 1, 1, 1),  # IGEMM, taps of rows in place
    (9, 11, 17, 40, 3, 2, 1, 1, 1),  # a partial last panel
    (8, 8, 24, 33, 1, 2, 0, 1, 1),  # 1x1 stride 2
    (6, 6, 16, 48, 1, 1, 0, 1, 1),  # 1x1 stride 1: a GEMM
    (15, 13, 3, 32, 3, 2, 1, 1, 1),  # an RGB stem (rows gathered)
    (16, 16, 3, 64, 7, 2, 3, 1, 1),  # the 7x7 stem
    (10, 10, 8, 32, 3, 1, 2, 2, 2),  # dilation, two groups
    (5, 5, 4, 17, 5, 1, 2, 1, 1),  # few channels, 25 taps gathered
    (9, 9, 64, 40, 3, 2, 1, 1, 1),  # few output pixels, deep windows: im2col + one GEMM
    (8, 8, 96, 48, 1, 2, 0, 1, 1),  # a stride-2 1x1 the same way
]


@pytest.mark.parametrize("h, w, c, oc, kernel, stride, pad, dilation, groups", CONVS)
def test_conv2d(
    h: int, w: int, c: int, oc: int, kernel: int, stride: int, pad: int, dilation: int, groups: int
):
    x, f, bias = rand(2, h, w, c), rand(oc, kernel, kernel, c // groups), rand(oc)
    geo = dict(pads=(pad,) * 4, strides=(stride, stride), dilations=(dilation, dilation), groups=groups)
    same_as_avx2(K.conv2d, x, f, bias, min=-1.0, max=1.0, **geo)
    y = K.conv2d(x, f, bias, isa="avx2", **geo)
    same_as_avx2(K.conv2d, x, f, bias, residual=rand(*y.shape), post="hardswish", **geo)


@pytest.mark.parametrize("kernel, stride", [(3, 1), (3, 2), (7, 2)])
@pytest.mark.parametrize("oc", [16, 32, 40, 64])
def test_conv2d_stem_reading_planes(kernel: int, stride: int, oc: int) -> None:
    """RGB stems that read the NCHW image in place (planar tiles of 5 or 6 pixels within an output row)."""
    x = rand(1, 3, 23, 29)
    f, bias = rand(oc, kernel, kernel, 3), rand(oc)
    geo = dict(pads=(kernel // 2,) * 4, strides=(stride, stride), layout="nchw")
    same_as_avx2(K.conv2d, x, f, bias, min=0.0, max=6.0, **geo)


@pytest.mark.parametrize("c, co", [(16, 24), (32, 32), (19, 40), (96, 64)])
@pytest.mark.parametrize("stride", [1, 2])
def test_fused_blocks(c: int, co: int, stride: int) -> None:
    """The MobileNet block in one call: expand (a GEMM per row) -> depthwise -> project (a GEMM per row pair)
    + residual, and expand -> depthwise alone."""
    x = rand(2, 9, 14, 8)
    pw, pb, f, b, pj, pjb = rand(c, 8), rand(c), rand(1, 3, 3, c), rand(c), rand(co, c), rand(co)
    geo = dict(pads=(1, 1, 1, 1), strides=(stride, stride), min=-0.5, max=1.5)
    oh, ow = (9 - 1) // stride + 1, (14 - 1) // stride + 1
    same_as_avx2(
        K.dwconv2d_conv1x1,
        x,
        pw_filter=pw,
        pw_bias=pb,
        filter=f,
        bias=b,
        project_filter=pj,
        project_bias=pjb,
        residual=rand(2, oh, ow, co),
        pw_min=0.0,
        pw_max=6.0,
        **geo,
    )
    same_as_avx2(K.conv1x1_dwconv2d, x, pw, pb, f, b, pw_min=0.0, pw_max=6.0, **geo)


@pytest.mark.parametrize("oc", [16, 40])
def test_deconv2d(oc: int) -> None:
    x, f, bias = rand(1, 6, 7, 24), rand(oc, 4, 4, 24), rand(oc)
    same_as_avx2(K.deconv2d, x, f, bias, pads=(1, 1, 1, 1), strides=(2, 2))


def test_batch_matmul() -> None:
    a, b = rand(3, 17, 40), rand(3, 40, 48)
    same_as_avx2(K.batch_matmul, a, b)
