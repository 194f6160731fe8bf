"""Kernel tables checked against numpy written straightforwardly here (webxnn._testing.kernels).

Every kernel: scalar table vs an independent numpy reference; threads=1 vs threads=2 byte-identical;
the "best" table (AVX2 when available) vs scalar within tolerance.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import load_testing_module
from test_runtime_util import conv2d_ref, deconv2d_ref, dwconv2d_ref, pool_ref
from webxnn.conformance import ulp_distance_f32
from webxnn.errors import InputError

K = load_testing_module().kernels

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
DIMS = st.sampled_from([1, 2, 3, 7, 17])
RNG = np.random.default_rng(1234)


def rand(*shape: int, lo: float = -1.0, hi: float = 1.0, seed: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed) if seed is not None else RNG
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def close(got: np.ndarray, want: np.ndarray, depth: int = 1) -> None:
    """Float32 sums of `depth` products against a float64 reference."""
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * max(depth, 1) + 1e-6)


def same_bytes(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()


def clamp(y: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.minimum(np.maximum(y, lo), hi)


# ------------------------------------------------------------------------------------------------- gemm
@SETTINGS
@given(
    m=DIMS,
    n=st.sampled_from([1, 3, 7, 16, 17, 24, 33, 40]),
    k=st.sampled_from([1, 2, 7, 17, 64]),
    nk=st.booleans(),
    has_bias=st.booleans(),
    act=st.booleans(),
)
def test_gemm(m, n, k, nk, has_bias, act):
    a = rand(m, k)
    b = rand(n, k) if nk else rand(k, n)
    bias = rand(n) if has_bias else None
    lo, hi = (-0.5, 0.5) if act else (-np.inf, np.inf)
    want = a.astype(np.float64) @ (b.T if nk else b).astype(np.float64)
    if has_bias:
        want = want + bias
    got = K.gemm(a, b, bias, b_is_nk=nk, min=lo, max=hi)
    close(got, clamp(want, lo, hi), k)
    close(K.gemm(a, b, bias, b_is_nk=nk, min=lo, max=hi, isa="best"), clamp(want, lo, hi), k)


@pytest.mark.parametrize("m", [7, 8, 9, 13, 14, 15, 49, 128])
def test_gemm_row_tile_splits(m):
    """Row counts whose last 7-13 rows the AVX2 GEMM splits into 4- and 5-row tiles (and 12-row tiles of
    the <= 8-column tail), with A in place and copied (row stride of 4 KB), one and two K blocks (K > 1536),
    full and partial (<= 8 and > 8 column) panels and the fused residual."""
    for k in (37, 1024, 2048, 3000):
        a = rand(m, k, seed=m)
        b = rand(52, k, seed=k, lo=-0.1, hi=0.1)
        bias, r = rand(52, seed=3), rand(m, 52, seed=4)
        want = a.astype(np.float64) @ b.T.astype(np.float64) + bias + r
        got = K.gemm(a, b, bias, b_is_nk=True, residual=r, isa="best")
        close(got, want, k)
        same_bytes(got, K.gemm(a, b, bias, b_is_nk=True, residual=r, isa="best", threads=2))


def test_gemm_copied_a_is_kept_per_call_and_chunk():
    """With a row stride of 4 KB, A's M chunks are copied once per thread and the copy is kept across the
    thread's tasks of one call: calls of the same shape on new data, three M chunks of up to 144 rows, and
    tasks taken from another thread's share must each still read their own rows."""
    for seed in (1, 2):  # same shapes and threads, new data: no copy from the last call may be reused
        a = rand(300, 1024, seed=seed)
        b = rand(96, 1024, seed=seed + 10, lo=-0.1, hi=0.1)
        want = a.astype(np.float64) @ b.T.astype(np.float64)
        one = K.gemm(a, b, None, b_is_nk=True, isa="best", threads=1)
        close(one, want, 1024)
        for threads in (2, 3):
            same_bytes(one, K.gemm(a, b, None, b_is_nk=True, isa="best", threads=threads))


def test_gemm_threads_identical_and_best():
    a, b, bias = rand(67, 129), rand(129, 300), rand(300)
    one = K.gemm(a, b, bias, threads=1)
    two = K.gemm(a, b, bias, threads=2)
    same_bytes(one, two)
    close(one, a.astype(np.float64) @ b + bias, 129)
    best1 = K.gemm(a, b, bias, isa="best", threads=1)
    same_bytes(best1, K.gemm(a, b, bias, isa="best", threads=2))
    close(best1, one, 129)


@SETTINGS
@given(
    batch_a=st.sampled_from([1, 3]), batch_b=st.sampled_from([1, 3]), m=DIMS, n=DIMS, k=DIMS, nk=st.booleans()
)
def test_batch_matmul(batch_a, batch_b, m, n, k, nk):
    a = rand(batch_a, m, k)
    b = rand(batch_b, n, k) if nk else rand(batch_b, k, n)
    bt = np.swapaxes(b, 1, 2) if nk else b
    want = np.matmul(a.astype(np.float64), bt.astype(np.float64))
    close(K.batch_matmul(a, b, b_is_nk=nk), want, k)
    close(K.batch_matmul(a, b, b_is_nk=nk, isa="best"), want, k)


def test_batch_matmul_threads():
    a, b = rand(4, 33, 70), rand(4, 70, 41)
    for nk in (False, True):
        bb = np.ascontiguousarray(np.swapaxes(b, 1, 2)) if nk else b
        same_bytes(K.batch_matmul(a, bb, b_is_nk=nk, threads=1), K.batch_matmul(a, bb, b_is_nk=nk, threads=2))
    a2, b2 = rand(40, 5, 6), rand(40, 6, 7)  # many small products: split over batches
    same_bytes(K.batch_matmul(a2, b2, threads=1), K.batch_matmul(a2, b2, threads=2))
    close(K.batch_matmul(a2, b2, threads=2), np.matmul(a2.astype(np.float64), b2), 6)


# ------------------------------------------------------------------------------------------------- conv
CONV = dict(
    n=st.sampled_from([1, 2]),
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    kh=st.integers(1, 4),
    kw=st.integers(1, 4),
    sh=st.integers(1, 3),
    sw=st.integers(1, 3),
    dh=st.integers(1, 2),
    dw=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    act=st.booleans(),
)


@SETTINGS
@given(
    groups=st.integers(1, 3),
    gic=st.sampled_from([1, 2, 3, 7]),
    goc=st.sampled_from([1, 2, 5, 17]),
    has_bias=st.booleans(),
    **CONV,
)
def test_conv2d(n, h, w, kh, kw, sh, sw, dh, dw, pads, act, groups, gic, goc, has_bias):
    assume(h + pads[0] + pads[2] >= dh * (kh - 1) + 1 and w + pads[1] + pads[3] >= dw * (kw - 1) + 1)
    x = rand(n, h, w, groups * gic)
    f = rand(groups * goc, kh, kw, gic)
    bias = rand(groups * goc) if has_bias else None
    lo, hi = (0.0, 1.0) if act else (-np.inf, np.inf)
    want = clamp(conv2d_ref(x, f, bias, pads, (sh, sw), (dh, dw), groups), lo, hi)
    got = K.conv2d(x, f, bias, pads=pads, strides=(sh, sw), dilations=(dh, dw), groups=groups, min=lo, max=hi)
    close(got, want, kh * kw * gic)
    got_best = K.conv2d(
        x, f, bias, pads=pads, strides=(sh, sw), dilations=(dh, dw), groups=groups, min=lo, max=hi, isa="best"
    )
    close(got_best, want, kh * kw * gic)


@pytest.mark.parametrize("isa", ["avx2", "best"])
def test_conv2d_threads_split_pixels_when_the_input_outweighs_the_weights(isa: str) -> None:
    """A 3x3 stride-2 conv whose input (2 x 28x28x128, 0.8 MB) outweighs its packed weights (160 outputs, 0.74
    MB, three panel groups): on 2 threads its work is split by pixel chunks around the panel groups, the last
    chunk one (empty) tile short. Same bytes as 1 thread, and the numpy result."""
    x, f, bias = rand(2, 28, 28, 128), rand(160, 3, 3, 128), rand(160)
    geo = dict(pads=(1, 1, 1, 1), strides=(2, 2), min=-1.0, max=1.0, isa=isa)
    one = K.conv2d(x, f, bias, threads=1, **geo)
    same_bytes(one, K.conv2d(x, f, bias, threads=2, **geo))
    close(one, clamp(conv2d_ref(x, f, bias, (1, 1, 1, 1), (2, 2), (1, 1), 1), -1.0, 1.0), 9 * 128)


@SETTINGS
@given(c=st.sampled_from([1, 3, 8, 17]), dm=st.sampled_from([1, 2, 3]), has_bias=st.booleans(), **CONV)
def test_dwconv2d(n, h, w, kh, kw, sh, sw, dh, dw, pads, act, c, dm, has_bias):
    assume(h + pads[0] + pads[2] >= dh * (kh - 1) + 1 and w + pads[1] + pads[3] >= dw * (kw - 1) + 1)
    x = rand(n, h, w, c)
    f = rand(1, kh, kw, c * dm)
    bias = rand(c * dm) if has_bias else None
    lo, hi = (-0.25, 0.75) if act else (-np.inf, np.inf)
    want = clamp(dwconv2d_ref(x, f, bias, pads, (sh, sw), (dh, dw)), lo, hi)
    kw_ = dict(pads=pads, strides=(sh, sw), dilations=(dh, dw), min=lo, max=hi)
    close(K.dwconv2d(x, f, bias, **kw_), want, kh * kw)
    close(K.dwconv2d(x, f, bias, isa="best", **kw_), want, kh * kw)


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (0, 0, 1, 1), (1, 1, 0, 0), (0, 1, 1, 0), (2, 0, 0, 2)])
def test_dwconv2d_3x3_row_edges(stride, pads):
    """3x3 depthwise rows whose first / last pixel reads one padding column run as whole-row strips that skip
    it (and others, two padding columns or none, keep the per-pixel path): every width from 4 to 19, channels
    with a partial vector, with and without the clamp, against numpy, on 1 and 2 threads."""
    for w in range(4, 20):
        for c in (5, 16, 19):
            x, f, b = rand(2, 6, w, c), rand(1, 3, 3, c), rand(c)
            for lo, hi in ((-np.inf, np.inf), (-0.25, 0.75)):
                want = clamp(dwconv2d_ref(x, f, b, pads, (stride, stride), (1, 1)), lo, hi)
                kw_ = dict(pads=pads, strides=(stride, stride), min=lo, max=hi, isa="best")
                got = K.dwconv2d(x, f, b, **kw_)
                close(got, want, 9)
                same_bytes(got, K.dwconv2d(x, f, b, threads=2, **kw_))


@pytest.mark.parametrize("c", [8, 19, 32])
@pytest.mark.parametrize("w", [4, 7, 14])
@pytest.mark.parametrize("s", [1, 2])
def test_dwconv2d_3x3_row_pairs(s, w, c):
    """3x3 rows of stride 1 or 2 run in pairs where all the input rows the two read are inside, else alone:
    starting the image lower moves every pair boundary, and the rows both outputs share keep their bits (1
    and 2 threads; with and without a fused expand and project)."""
    # The image from row 1 (stride 1) or 3 (stride 2) without top padding gives rows 2.. of the full one, and
    # pairs them differently: (0, 1) there is (2, 3) here, whose pairs are (1, 2), (3, 4), ...
    shift, pads2, skip = (1 if s == 1 else 3), (0, 1, 1, 1), 2
    for h in range(5, 13):
        x, f, b = rand(1, h, w * s, c), rand(1, 3, 3, c), rand(c)
        pw, pj = rand(c, 5), rand(6, c)
        xe = rand(1, h, w * s, 5)
        for threads in (1, 2):
            geo = dict(strides=(s, s), min=-0.25, max=0.75, isa="best", threads=threads)
            full = K.dwconv2d(x, f, b, pads=(1, 1, 1, 1), **geo)
            close(full, clamp(dwconv2d_ref(x, f, b, (1, 1, 1, 1), (s, s), (1, 1)), -0.25, 0.75), 9)
            same_bytes(K.dwconv2d(x[:, shift:], f, b, pads=pads2, **geo), full[:, skip:])
            blk = dict(pw_filter=pw, filter=f, bias=b, project_filter=pj, pw_min=0.0, pw_max=6.0, **geo)
            same_bytes(
                K.dwconv2d_conv1x1(xe[:, shift:], pads=pads2, **blk),
                K.dwconv2d_conv1x1(xe, pads=(1, 1, 1, 1), **blk)[:, skip:],
            )


@pytest.mark.parametrize("k,s,w,c", [((3, 3), 1, 64, 340), ((5, 5), 1, 64, 340), ((3, 3), 2, 56, 144)])
def test_dwconv2d_conv1x1_project_batches(k, s, w, c):
    """A fused project takes a task's depthwise rows in batches of up to 256 KB (here 2-4 rows, single rows
    with a 5x5 kernel, pairs with 3x3): batches that end mid-task, at a task's end and at an odd row keep the
    separate kernels' bits on 1 and 2 threads, on the AVX2 table and the best one (512-bit tiles here)."""
    for h, isa in ((5, "avx2"), (11, "avx2"), (5, "best"), (11, "best")):
        x, f, b, pj = rand(1, h, w, c), rand(1, *k, c), rand(c), rand(24, c)
        pads = (k[0] // 2,) * 4
        geo = dict(pads=pads, strides=(s, s), min=-0.5, max=1.5, isa=isa)
        mid = K.dwconv2d(x, f, b, **geo)
        r = rand(*mid.shape[:3], 24)
        want = K.gemm(mid.reshape(-1, c), pj, None, b_is_nk=True, isa=isa, residual=r.reshape(-1, 24))
        for threads in (1, 2):
            got = K.dwconv2d_conv1x1(
                x, filter=f, bias=b, project_filter=pj, residual=r, threads=threads, **geo
            )
            same_bytes(got, want.reshape(*mid.shape[:3], 24))


@SETTINGS
@given(
    groups=st.integers(1, 2),
    gic=st.sampled_from([1, 3, 7]),
    goc=st.sampled_from([1, 2, 17]),
    adj=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    has_bias=st.booleans(),
    **CONV,
)
def test_deconv2d(n, h, w, kh, kw, sh, sw, dh, dw, pads, act, groups, gic, goc, adj, has_bias):
    fh = (h - 1) * sh + dh * (kh - 1) + 1 + adj[0]
    fw = (w - 1) * sw + dw * (kw - 1) + 1 + adj[1]
    assume(fh > pads[0] + pads[2] and fw > pads[1] + pads[3])
    x = rand(n, h, w, groups * gic)
    f = rand(groups * goc, kh, kw, gic)
    bias = rand(groups * goc) if has_bias else None
    lo, hi = (-0.5, 0.5) if act else (-np.inf, np.inf)
    want = clamp(deconv2d_ref(x, f, bias, pads, (sh, sw), (dh, dw), adj, groups), lo, hi)
    kw_ = dict(pads=pads, strides=(sh, sw), dilations=(dh, dw), groups=groups, adjustment=adj, min=lo, max=hi)
    close(K.deconv2d(x, f, bias, **kw_), want, kh * kw * gic)
    close(K.deconv2d(x, f, bias, isa="best", **kw_), want, kh * kw * gic)


@SETTINGS
@given(
    n=st.sampled_from([1, 2]),
    h=st.sampled_from([1, 2, 3, 7, 17]),
    w=st.sampled_from([1, 2, 7, 17]),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    gic=st.sampled_from([16, 17, 40]),
    goc=st.sampled_from([16, 19, 33]),
    act=st.booleans(),
    has_bias=st.booleans(),
    residual=st.booleans(),
)
def test_conv2d_3x3_stride1_winograd(n, h, w, pads, gic, goc, act, has_bias, residual):
    """The shapes the AVX2 table runs by Winograd F(4x4, 3x3): odd sizes, asymmetric padding, tile tails
    (odd output sizes), channel tails, bias, clamp and the fused residual; against numpy, across threads."""
    assume(h + pads[0] + pads[2] >= 3 and w + pads[1] + pads[3] >= 3)
    x = rand(n, h, w, gic)
    f = rand(goc, 3, 3, gic)
    bias = rand(goc) if has_bias else None
    lo, hi = (-0.5, 1.0) if act else (-np.inf, np.inf)
    want = conv2d_ref(x, f, bias, pads, (1, 1), (1, 1), 1)
    r = rand(*want.shape) if residual else None
    if r is not None:
        want = want + r
    want = clamp(want, lo, hi)
    kw_ = dict(pads=pads, min=lo, max=hi, residual=r)
    got = K.conv2d(x, f, bias, isa="best", **kw_)
    close(got, want, 9 * gic)
    same_bytes(got, K.conv2d(x, f, bias, isa="best", threads=2, **kw_))


def test_conv2d_winograd_large_and_wide():
    """Many tile blocks (56x56x64: 3 blocks on 1 thread, 4 on 2), two blocks of a big U (28x28x128: output
    channels split over the threads as well) and few tiles with many channels (7x7x160 -> 200: one block in 4
    channel groups on 2 threads, each thread transforming the block once for its two groups; one group on 1
    thread): byte-identical across thread counts whatever the blocking."""
    for shape, goc in (((1, 56, 56, 64), 64), ((1, 28, 28, 128), 128), ((1, 7, 7, 160), 200)):
        x = rand(*shape)
        f = rand(goc, 3, 3, shape[3], lo=-0.1, hi=0.1)
        b = rand(goc)
        want = conv2d_ref(x, f, b, (1, 1, 1, 1), (1, 1), (1, 1), 1)
        got = K.conv2d(x, f, b, pads=(1, 1, 1, 1), isa="best")
        close(got, want, 9 * shape[3])
        same_bytes(got, K.conv2d(x, f, b, pads=(1, 1, 1, 1), isa="best", threads=2))


def test_deconv2d_wide_gemm_path():
    """Decoder-sized transposed convolutions (the AVX2 table's GEMM + gather, in bands of output rows when the
    columns pass 8 MB): stride 2 with overlapping taps, dilation, adjustment and groups, against numpy and
    byte-identical across threads."""
    for h, w, gic, goc, k, s, d, pads, groups, adj in [
        (9, 7, 24, 40, 4, 2, 1, (1, 1, 1, 1), 1, (0, 0)),
        (6, 5, 16, 24, 3, 2, 2, (0, 1, 2, 0), 2, (1, 1)),
        (5, 5, 8, 16, 2, 2, 1, (0, 0, 0, 0), 1, (0, 0)),
        (64, 48, 8, 64, 4, 2, 1, (1, 2, 1, 0), 1, (1, 0)),  # > 8 MB of columns: bands of output rows
        (3, 2, 4, 16, 17, 2, 1, (0, 0, 0, 0), 1, (0, 0)),  # 289 taps: the scalar kernel, packed as such
    ]:
        x = rand(2, h, w, groups * gic)
        f = rand(groups * goc, k, k, gic)
        b = rand(groups * goc)
        kw_ = dict(
            pads=pads, strides=(s, s), dilations=(d, d), groups=groups, adjustment=adj, min=-0.5, max=2.0
        )
        want = clamp(deconv2d_ref(x, f, b, pads, (s, s), (d, d), adj, groups), -0.5, 2.0)
        got = K.deconv2d(x, f, b, isa="best", **kw_)
        close(got, want, k * k * gic)
        same_bytes(got, K.deconv2d(x, f, b, isa="best", threads=2, **kw_))


def test_scratch_reused_across_calls_of_other_sizes():
    """The AVX2 kernels keep their per-task work space per thread between calls (copied A, a product's
    packed B, Winograd's V/M, the depthwise ring, deconv columns). Calls that need more, then less, then
    more again on the same threads each match a fresh numpy reference, on 1 and 2 threads."""
    for threads in (1, 2):
        for m, k, c, h in ((70, 2048, 96, 20), (9, 1024, 16, 6), (70, 2048, 96, 20)):
            a, b = rand(m, k, seed=m), rand(40, k, seed=k, lo=-0.1, hi=0.1)
            close(
                K.gemm(a, b, None, b_is_nk=True, isa="best", threads=threads),  # k % 1024 == 0: copied A
                a.astype(np.float64) @ b.T.astype(np.float64),
                k,
            )
            ba, bb = rand(4, m, 33, seed=1), rand(4, 33, c, seed=2)
            close(
                K.batch_matmul(ba, bb, isa="best", threads=threads), np.matmul(ba.astype(np.float64), bb), 33
            )
            x, f, fb = rand(1, h, h, c, seed=h), rand(c, 3, 3, c, seed=c, lo=-0.1, hi=0.1), rand(c, seed=5)
            close(
                K.conv2d(x, f, fb, pads=(1, 1, 1, 1), isa="best", threads=threads),  # Winograd
                conv2d_ref(x, f, fb, (1, 1, 1, 1), (1, 1), (1, 1), 1),
                9 * c,
            )
            fd = rand(1, 3, 3, 2 * c, seed=6)  # depth multiplier 2: the ring of expanded rows
            close(
                K.dwconv2d(x, fd, None, pads=(1, 1, 1, 1), isa="best", threads=threads),
                dwconv2d_ref(x, fd, None, (1, 1, 1, 1), (1, 1), (1, 1)),
                9,
            )
            ft = rand(8, 4, 4, c, seed=7)
            close(
                K.deconv2d(x, ft, None, strides=(2, 2), isa="best", threads=threads),
                deconv2d_ref(x, ft, None, (0, 0, 0, 0), (2, 2), (1, 1), (0, 0), 1),
                16 * c,
            )


@pytest.mark.parametrize("hw", [(1, 7), (2, 4), (3, 3), (1, 13), (7, 2), (3, 5), (7, 7), (5, 11)])
def test_conv2d_pixel_tile_splits(hw):
    """Output pixel counts (7, 8, 9, 13, 14, 15, 49, 55) whose last 7-13 pixels the AVX2 IGEMM splits into
    4- and 5-pixel tiles, on the gathered, RGB-row and in-place paths, with a residual; against numpy and
    across threads (a task may start at any tile)."""
    h, w = hw
    for gic, k in ((8, 3), (3, 3), (40, 1)):
        x = rand(2, h, w, gic, seed=h * w)
        f = rand(24, k, k, gic, seed=gic)
        b = rand(24, seed=1)
        pads = (k // 2,) * 4
        want = conv2d_ref(x, f, b, pads, (1, 1), (1, 1), 1)
        r = rand(*want.shape, seed=2)
        got = K.conv2d(x, f, b, pads=pads, residual=r, isa="best")
        close(got, want + r, k * k * gic)
        same_bytes(got, K.conv2d(x, f, b, pads=pads, residual=r, isa="best", threads=2))


@pytest.mark.parametrize("hw, oc", [((224, 224), 32), ((17, 30), 48), ((9, 7), 16)])
def test_conv2d_rgb_stem(hw, oc):
    """3x3 stride-2 convs of an RGB image (MobileNet stems; the AVX2 IGEMM's inlined path for whole tiles of
    whole panels, the border tiles gathered): against numpy, with and without a clamp, on 1 and 2 threads."""
    x, f, b = rand(1, *hw, 3, seed=21), rand(oc, 3, 3, 3, seed=22), rand(oc, seed=23)
    want = conv2d_ref(x, f, b, (1, 1, 1, 1), (2, 2), (1, 1), 1)
    for lo, hi in ((-np.inf, np.inf), (0.0, 6.0)):
        geo = dict(pads=(1, 1, 1, 1), strides=(2, 2), min=lo, max=hi, isa="best")
        got = K.conv2d(x, f, b, **geo)
        close(got, clamp(want, lo, hi), 27)
        same_bytes(got, K.conv2d(x, f, b, threads=2, **geo))


def _nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


@SETTINGS
@given(
    n=st.sampled_from([1, 2]),
    h=st.sampled_from([1, 2, 7, 17]),
    w=st.sampled_from([1, 6, 7, 13, 30]),
    k=st.sampled_from([(3, 3), (7, 7), (1, 1), (2, 3), (3, 7)]),
    s=st.sampled_from([(1, 1), (2, 2), (1, 2), (3, 1)]),
    d=st.sampled_from([(1, 1), (2, 1)]),
    pads=st.tuples(*[st.integers(0, 3)] * 4),
    groups=st.sampled_from([1, 2]),
    gic=st.sampled_from([1, 3, 4]),
    goc=st.sampled_from([1, 8, 16, 17, 40]),
    residual=st.booleans(),
    post=st.sampled_from(["none", "hardswish"]),
)
def test_conv2d_reads_nchw(n, h, w, k, s, d, pads, groups, gic, goc, residual, post):
    """An NCHW input read in place (layout='nchw': a graph's image, its transpose fused away) gives the bits
    of the conv of the NHWC input on both tables and 1 or 2 threads: through the AVX2 planar kernels (3x3
    and 7x7 RGB stems: tiles inside the image in place, border tiles from a zero-padded copy) and the
    gathered path for every other geometry. Against numpy too."""
    assume(h + pads[0] + pads[2] >= d[0] * (k[0] - 1) + 1 and w + pads[1] + pads[3] >= d[1] * (k[1] - 1) + 1)
    x = rand(n, h, w, groups * gic)
    f = rand(groups * goc, *k, gic)
    b = rand(groups * goc)
    want = conv2d_ref(x, f, b, pads, s, d, groups)
    r = rand(*want.shape) if residual else None
    geo = dict(pads=pads, strides=s, dilations=d, groups=groups, min=-1.0, max=1.5, post=post, residual=r)
    for isa in ("scalar", "best"):
        nhwc = K.conv2d(x, f, b, isa=isa, **geo)
        for threads in (1, 2):
            same_bytes(K.conv2d(_nchw(x), f, b, isa=isa, threads=threads, layout="nchw", **geo), nhwc)
    if post == "none":
        close(nhwc, clamp(want + (r if residual else 0), -1.0, 1.5), k[0] * k[1] * gic)


@pytest.mark.parametrize(
    "hw, k, s, pads, oc",
    [
        ((224, 224), 3, 2, (1, 1, 1, 1), 32),
        ((17, 30), 3, 2, (0, 1, 1, 0), 24),
        ((9, 7), 3, 1, (1, 1, 1, 1), 17),
        ((61, 45), 7, 2, (3, 3, 3, 3), 64),
    ],
)
def test_conv2d_rgb_stem_from_planes(hw, k, s, pads, oc):
    """Full-size and odd RGB stems read from NCHW planes (MobileNet's 3x3 / ResNet's 7x7, stride 2): the bits
    of the NHWC stem, and numpy's values."""
    x, f, b = rand(1, *hw, 3, seed=31), rand(oc, k, k, 3, seed=32), rand(oc, seed=33)
    geo = dict(pads=pads, strides=(s, s), min=0.0, max=6.0, isa="best")
    got = K.conv2d(_nchw(x), f, b, layout="nchw", **geo)
    close(got, clamp(conv2d_ref(x, f, b, pads, (s, s), (1, 1), 1), 0.0, 6.0), k * k * 3)
    same_bytes(got, K.conv2d(x, f, b, **geo))
    same_bytes(got, K.conv2d(_nchw(x), f, b, layout="nchw", threads=2, **geo))


@pytest.mark.parametrize(
    "hw, cin, cout",
    [
        ((7, 7), 320, 1280),
        ((7, 7), 16, 40),
        ((3, 5), 1600, 17),
        ((17, 1), 7, 33),
        ((1, 1), 64, 16),
        ((14, 14), 96, 576),
    ],
)
def test_conv2d_pointwise_prefetch_never_changes_results(hw, cin, cout):
    """A pointwise conv given a later step's weights to prefetch (ahead: MobileNetV2's 1x1 conv before its
    classifier) gives the same bits as without, on 1 and 2 threads, with and without a residual: the prefetch
    stream is shared out over the GEMM's tiles (K = 16 tiles, two K blocks, N tails, M = 1 included) and read
    for nothing else. Prefetch areas smaller and larger than the tiles can take."""
    x, f, b = rand(1, *hw, cin, seed=41), rand(cout, 1, 1, cin, seed=42), rand(cout, seed=43)
    r = rand(1, *hw, cout, seed=44)
    close(K.conv2d(x, f, b), conv2d_ref(x, f, b, (0, 0, 0, 0), (1, 1), (1, 1), 1), cin)
    for residual in (None, r):
        for threads in (1, 2):
            want = K.conv2d(x, f, b, min=-1.0, max=2.0, threads=threads, residual=residual)
            for ahead in (rand(3), rand(5 << 18)):
                got = K.conv2d(x, f, b, min=-1.0, max=2.0, threads=threads, residual=residual, ahead=ahead)
                same_bytes(got, want)


def test_conv2d_layout_is_checked():
    x, f = rand(1, 3, 5, 5), rand(4, 3, 3, 3)
    with pytest.raises(InputError, match="layout must be 'nhwc' or 'nchw', not 'chw'"):
        K.conv2d(x, f, layout="chw")
    with pytest.raises(InputError, match="channels"):
        K.conv2d(rand(1, 5, 5, 3), f, layout="nchw")  # 5 channels in NCHW


@SETTINGS
@given(
    h=st.integers(1, 9),
    w=st.sampled_from([1, 3, 7, 17, 40]),
    cin=st.sampled_from([1, 3, 16]),
    c=st.sampled_from([1, 8, 19]),
    k=st.sampled_from([(3, 3), (5, 5), (1, 3), (3, 1)]),
    s=st.integers(1, 3),
    d=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    post=st.sampled_from(["none", "hardswish"]),
)
def test_conv1x1_dwconv2d_fused(h, w, cin, c, k, s, d, pads, post):
    """The expand -> depthwise pair in one call: the same bits as the pointwise conv (its own clamp) followed
    by the depthwise conv, on both tables and any thread count (each task recomputes the expanded rows it
    shares with the previous task)."""
    assume(h + pads[0] + pads[2] >= d * (k[0] - 1) + 1 and w + pads[1] + pads[3] >= d * (k[1] - 1) + 1)
    x = rand(2, h, w, cin)
    pw, pb = rand(c, cin), rand(c)
    f, b = rand(1, *k, c), rand(c)
    geo = dict(pads=pads, strides=(s, s), dilations=(d, d), min=-0.5, max=1.5, post=post)
    for isa in ("scalar", "best"):
        mid = K.gemm(x.reshape(-1, cin), pw, pb, b_is_nk=True, min=0.0, max=6.0, isa=isa).reshape(2, h, w, c)
        want = K.dwconv2d(mid, f, b, isa=isa, **geo)
        for threads in (1, 2):
            got = K.conv1x1_dwconv2d(x, pw, pb, f, b, pw_min=0.0, pw_max=6.0, isa=isa, threads=threads, **geo)
            same_bytes(got, want)
    ref = dwconv2d_ref(clamp(x.astype(np.float64) @ pw.T + pb, 0, 6), f, b, pads, (s, s), (d, d))
    close(want, UN_REF["copy" if post == "none" else post](clamp(ref, -0.5, 1.5)), k[0] * k[1] * cin)


def test_conv1x1_dwconv2d_large_and_errors():
    """MobileNetV2's 112x112x16 -> 96 expand and stride-2 depthwise (many rows per task); bad shapes."""
    x, pw, f = rand(1, 112, 112, 16), rand(96, 16), rand(1, 3, 3, 96)
    mid = K.gemm(x.reshape(-1, 16), pw, None, b_is_nk=True, min=0.0, max=6.0, isa="best")
    mid = mid.reshape(1, 112, 112, 96)
    want = K.dwconv2d(mid, f, None, pads=(1, 1, 1, 1), strides=(2, 2), isa="best")
    for threads in (1, 2):
        same_bytes(
            K.conv1x1_dwconv2d(
                x,
                pw,
                None,
                f,
                None,
                pads=(1, 1, 1, 1),
                strides=(2, 2),
                pw_min=0.0,
                pw_max=6.0,
                isa="best",
                threads=threads,
            ),
            want,
        )
    # Several tasks per thread carry their ring of expanded rows from one task to the next, but never into
    # the next call: a 3-row input leaves rows 0-2 in the ring, which the next call's first rows must not
    # take (stride 1 and 2, 1 and 2 threads).
    pw2, f2 = rand(144, 24, seed=8), rand(1, 3, 3, 144, seed=9)
    for s in (1, 2):
        for seed, h in ((10, 3), (11, 56), (12, 3), (13, 56)):
            x2 = rand(1, h, 56, 24, seed=seed)
            mid2 = K.gemm(x2.reshape(-1, 24), pw2, None, b_is_nk=True, min=0.0, max=6.0, isa="best")
            want2 = K.dwconv2d(
                mid2.reshape(1, h, 56, 144), f2, None, pads=(1, 1, 1, 1), strides=(s, s), isa="best"
            )
            for threads in (2, 1):
                same_bytes(
                    K.conv1x1_dwconv2d(
                        x2,
                        pw2,
                        None,
                        f2,
                        None,
                        pads=(1, 1, 1, 1),
                        strides=(s, s),
                        pw_min=0.0,
                        pw_max=6.0,
                        isa="best",
                        threads=threads,
                    ),
                    want2,
                )
    with pytest.raises(InputError, match="pw_filter"):
        K.conv1x1_dwconv2d(x, rand(96, 15), None, f)
    with pytest.raises(InputError, match=r"filter must be \[1, kh, kw, C\]"):
        K.conv1x1_dwconv2d(x, pw, None, rand(1, 3, 3, 48))


@SETTINGS
@given(
    h=st.integers(1, 9),
    w=st.sampled_from([1, 3, 7, 17, 40]),
    cin=st.sampled_from([0, 1, 3, 16]),
    c=st.sampled_from([1, 8, 19]),
    co=st.sampled_from([1, 7, 16, 24]),
    k=st.sampled_from([(3, 3), (5, 5), (1, 3)]),
    s=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 1)] * 4),
    post=st.sampled_from(["none", "hardswish"]),
    residual=st.booleans(),
)
def test_dwconv2d_conv1x1_fused(h, w, cin, c, co, k, s, pads, post, residual):
    """The whole MobileNet block in one call ([expand ->] depthwise -> project [+ residual]; cin = 0: no
    expand): the same bits as the separate kernels on both tables and any thread count, and numpy's values."""
    assume(h + pads[0] + pads[2] >= k[0] and w + pads[1] + pads[3] >= k[1])
    x = rand(2, h, w, cin or c)
    pw, pb = (rand(c, cin), rand(c)) if cin else (None, None)
    f, b, pj, pjb = rand(1, *k, c), rand(c), rand(co, c), rand(co)
    geo = dict(pads=pads, strides=(s, s), min=-0.5, max=1.5)
    for isa in ("scalar", "best"):
        ex = dict(pw_filter=pw, pw_bias=pb, pw_min=0.0, pw_max=6.0) if cin else {}
        mid = (
            K.conv1x1_dwconv2d(x, pw, pb, f, b, post=post, isa=isa, pw_min=0.0, pw_max=6.0, **geo)
            if cin
            else K.dwconv2d(x, f, b, post=post, isa=isa, **geo)
        )
        r = rand(*mid.shape[:3], co) if residual else None
        flat = mid.reshape(-1, c)
        want = K.gemm(
            flat,
            pj,
            pjb,
            b_is_nk=True,
            min=-2.0,
            max=2.0,
            isa=isa,
            residual=None if r is None else r.reshape(-1, co),
        ).reshape(*mid.shape[:3], co)
        for threads in (1, 2):
            got = K.dwconv2d_conv1x1(
                x,
                filter=f,
                bias=b,
                project_filter=pj,
                project_bias=pjb,
                residual=r,
                post=post,
                project_min=-2.0,
                project_max=2.0,
                isa=isa,
                threads=threads,
                **ex,
                **geo,
            )
            same_bytes(got, want)
    ref = x.astype(np.float64)
    if cin:
        ref = clamp(ref @ pw.T + pb, 0, 6)
    ref = clamp(dwconv2d_ref(ref, f, b, pads, (s, s), (1, 1)), -0.5, 1.5)
    ref = UN_REF["copy" if post == "none" else post](ref)
    ref = ref @ pj.T.astype(np.float64) + pjb
    close(want, clamp(ref + (r if residual else 0), -2.0, 2.0), (cin + 1) * k[0] * k[1] + c)


def test_dwconv2d_conv1x1_large_and_errors():
    """MobileNetV2's first block (112x112x32 depthwise -> 16, no expand) and a 56x56 expand 24 -> 144,
    depthwise, project 24 + residual (many rows per task): the separate kernels' bits; bad shapes."""
    x, f, pj = rand(1, 112, 112, 32), rand(1, 3, 3, 32), rand(16, 32)
    want = K.gemm(
        K.dwconv2d(x, f, None, pads=(1, 1, 1, 1), min=0.0, max=6.0, isa="best").reshape(-1, 32),
        pj,
        None,
        b_is_nk=True,
        isa="best",
    ).reshape(1, 112, 112, 16)
    x2, pw2, f2, pj2 = rand(1, 56, 56, 24), rand(144, 24), rand(1, 3, 3, 144), rand(24, 144)
    r2 = rand(1, 56, 56, 24)
    mid2 = K.conv1x1_dwconv2d(
        x2, pw2, None, f2, None, pads=(1, 1, 1, 1), pw_min=0.0, pw_max=6.0, min=0.0, max=6.0, isa="best"
    )
    want2 = K.gemm(
        mid2.reshape(-1, 144), pj2, None, b_is_nk=True, residual=r2.reshape(-1, 24), isa="best"
    ).reshape(1, 56, 56, 24)
    for threads in (1, 2):
        same_bytes(
            K.dwconv2d_conv1x1(
                x,
                filter=f,
                project_filter=pj,
                pads=(1, 1, 1, 1),
                min=0.0,
                max=6.0,
                isa="best",
                threads=threads,
            ),
            want,
        )
        same_bytes(
            K.dwconv2d_conv1x1(
                x2,
                pw_filter=pw2,
                filter=f2,
                project_filter=pj2,
                residual=r2,
                pads=(1, 1, 1, 1),
                pw_min=0.0,
                pw_max=6.0,
                min=0.0,
                max=6.0,
                isa="best",
                threads=threads,
            ),
            want2,
        )
    # An expand with no input channels (its output is its bias) takes the unfused path.
    x0, pw0, pb0, f0, pj0 = rand(1, 5, 6, 0), rand(8, 0), rand(8), rand(1, 3, 3, 8), rand(3, 8)
    for isa in ("scalar", "best"):
        mid0 = K.dwconv2d(np.broadcast_to(pb0, (1, 5, 6, 8)).copy(), f0, None, pads=(1, 1, 1, 1), isa=isa)
        want0 = K.gemm(mid0.reshape(-1, 8), pj0, None, b_is_nk=True, isa=isa).reshape(1, 5, 6, 3)
        same_bytes(
            K.dwconv2d_conv1x1(
                x0,
                pw_filter=pw0,
                pw_bias=pb0,
                filter=f0,
                project_filter=pj0,
                pads=(1, 1, 1, 1),
                isa=isa,
                threads=2,
            ),
            want0,
        )
    with pytest.raises(InputError, match=r"project_filter must be \[output channels, 32\], not \[16, 31\]"):
        K.dwconv2d_conv1x1(x, filter=f, project_filter=rand(16, 31))
    with pytest.raises(InputError, match=r"residual must be \[1, 110, 110, 16\]"):
        K.dwconv2d_conv1x1(x, filter=f, project_filter=pj, residual=rand(1, 112, 112, 15))
    with pytest.raises(InputError, match=r"project_bias must be \[16\]"):
        K.dwconv2d_conv1x1(x, filter=f, project_filter=pj, project_bias=rand(15))


def test_conv_family_threads_identical():
    x = rand(1, 20, 23, 16)
    f = rand(24, 3, 3, 8)
    b = rand(24)
    kw_ = dict(pads=(1, 1, 1, 1), strides=(2, 1), groups=2)
    for isa in ("scalar", "best"):
        same_bytes(K.conv2d(x, f, b, isa=isa, **kw_), K.conv2d(x, f, b, threads=2, isa=isa, **kw_))
        fd = rand(1, 5, 5, 32)
        same_bytes(
            K.dwconv2d(x, fd, None, pads=(2, 2, 2, 2), isa=isa),
            K.dwconv2d(x, fd, None, pads=(2, 2, 2, 2), threads=2, isa=isa),
        )
        kd = dict(strides=(2, 2), pads=(1, 0, 1, 0), groups=2, adjustment=(1, 1))
        same_bytes(K.deconv2d(x, f, b, isa=isa, **kd), K.deconv2d(x, f, b, threads=2, isa=isa, **kd))
    # few output rows: the kernels split rows into column chunks too
    x1 = rand(1, 1, 300, 32)
    f1 = rand(32, 1, 3, 32)
    p = (0, 1, 0, 1)
    same_bytes(K.conv2d(x1, f1, None, pads=p), K.conv2d(x1, f1, None, pads=p, threads=2))
    close(K.conv2d(x1, f1, None, pads=p, threads=2), conv2d_ref(x1, f1, None, p, (1, 1), (1, 1), 1), 96)


# ------------------------------------------------------------------------------- fused post-ops (epilogue)
POST_OPS = ("hardswish", "sigmoid", "gelu")

# Every output path of the kernels that take a post-op: (name, call(**kw) -> output, accumulation depth).
_X1, _F1 = rand(1, 7, 9, 24, seed=5), rand(40, 1, 1, 24, seed=6)  # 1x1 conv: the GEMM
_X3, _F3 = rand(2, 5, 6, 7, seed=7), rand(33, 3, 3, 7, seed=8)  # 3x3, 7 channels: IGEMM
_XS, _FS = rand(1, 9, 11, 3, seed=9), rand(16, 3, 3, 3, seed=10)  # RGB stem, stride 2: the in-place rows
_XW, _FW = rand(1, 12, 11, 16, seed=11), rand(19, 3, 3, 16, seed=12)  # Winograd (>= 16 channels, >= 100 px)
_XG, _FG = rand(1, 6, 6, 8, seed=13), rand(8, 3, 3, 2, seed=14)  # 4 groups of 2: the scalar fallback
_XD, _FD = rand(2, 9, 13, 20, seed=15), rand(1, 3, 3, 40, seed=16)  # depthwise, depth multiplier 2
_FD1 = rand(1, 5, 5, 20, seed=17)  # depthwise 5x5 stride 2
_A = {m: rand(m, 37, seed=m) for m in (1, 7, 33)}
_B = rand(45, 37, seed=18)
_A4K = rand(13, 1024, seed=19)  # row stride 4 KB: copied A
_B4K = rand(20, 1024, seed=20, lo=-0.05, hi=0.05)
POST_CASES = {
    "gemv": (lambda **kw: K.gemm(_A[1], _B, _B[:, 0], b_is_nk=True, **kw), 37),
    "gemm": (lambda **kw: K.gemm(_A[7], _B, _B[:, 1], b_is_nk=True, **kw), 37),
    "gemm_tall": (lambda **kw: K.gemm(_A[33], _B, None, b_is_nk=True, **kw), 37),
    "gemm_copied_a": (lambda **kw: K.gemm(_A4K, _B4K, None, b_is_nk=True, **kw), 1024),
    "conv_1x1": (lambda **kw: K.conv2d(_X1, _F1, _F1[:, 0, 0, 0], **kw), 24),
    "conv_3x3": (lambda **kw: K.conv2d(_X3, _F3, None, pads=(1, 1, 1, 1), **kw), 63),
    "conv_stem": (
        lambda **kw: K.conv2d(_XS, _FS, _FS[:, 0, 0, 0], pads=(1, 1, 1, 1), strides=(2, 2), **kw),
        27,
    ),
    "conv_winograd": (lambda **kw: K.conv2d(_XW, _FW, _FW[:, 0, 0, 0], pads=(1, 1, 1, 1), **kw), 144),
    "conv_grouped": (lambda **kw: K.conv2d(_XG, _FG, None, pads=(1, 1, 1, 1), groups=4, **kw), 18),
    "dwconv_dm2": (lambda **kw: K.dwconv2d(_XD, _FD, _FD[0, 0, 0], pads=(1, 1, 1, 1), **kw), 9),
    "dwconv_5x5_s2": (lambda **kw: K.dwconv2d(_XD, _FD1, None, pads=(2, 2, 2, 2), strides=(2, 2), **kw), 25),
}


@pytest.mark.parametrize("case", sorted(POST_CASES))
@pytest.mark.parametrize("post", POST_OPS)
def test_fused_post_op(case, post):
    """post(clamp(op(x))) in one call: against numpy (the op's reference output, clamped, then the activation
    in float64), bit-identical to the same table's unary op run on the unfused output (fusing never changes
    results), and bit-identical across thread counts; on every output path of the GEMM and conv kernels."""
    fn, depth = POST_CASES[case]
    lo, hi = -1.5, 2.0
    for isa in ("scalar", "best"):
        plain = fn(min=lo, max=hi, isa=isa)
        got = fn(min=lo, max=hi, isa=isa, post=post)
        same_bytes(got, K.unary(post, plain, isa=isa))
        same_bytes(got, fn(min=lo, max=hi, isa=isa, post=post, threads=2))
        want = UN_REF[post](fn(min=lo, max=hi, isa="scalar").astype(np.float64))
        close(got, want, depth)
    unclamped = fn(isa="best", post=post)
    same_bytes(unclamped, K.unary(post, fn(isa="best"), isa="best"))


def test_fused_post_op_rejects_unknown_names():
    with pytest.raises(InputError, match="post must be"):
        K.gemm(_A[7], _B, None, b_is_nk=True, post="relu")


# ------------------------------------------------------------------------------------------------- pooling
@SETTINGS
@given(
    n=st.sampled_from([1, 2]),
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    c=st.sampled_from([1, 3, 17]),
    ph=st.integers(1, 3),
    pw=st.integers(1, 3),
    sh=st.integers(1, 3),
    sw=st.integers(1, 3),
    dh=st.integers(1, 2),
    dw=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    act=st.booleans(),
)
def test_pools(n, h, w, c, ph, pw, sh, sw, dh, dw, pads, act):
    assume(h + pads[0] + pads[2] >= dh * (ph - 1) + 1 and w + pads[1] + pads[3] >= dw * (pw - 1) + 1)
    # pad < window, as in real models (with dilation a window can still see only padding: see pool_ref)
    assume(all(p < k for p, k in zip(pads, (ph, pw, ph, pw))))
    x = rand(n, h, w, c)
    lo, hi = (-0.3, 0.3) if act else (-np.inf, np.inf)
    geo = dict(pads=pads, strides=(sh, sw), dilations=(dh, dw), min=lo, max=hi)
    for kind, fn in (("max", K.max_pool2d), ("avg", K.avg_pool2d)):
        want = clamp(pool_ref(x, kind, pads, (ph, pw), (sh, sw), (dh, dw)), lo, hi)
        close(fn(x, (ph, pw), **geo), want, ph * pw)
        close(fn(x, (ph, pw), isa="best", **geo), want, ph * pw)


def test_pools_threads_and_global():
    x = rand(2, 31, 29, 24)
    for fn in (K.max_pool2d, K.avg_pool2d):
        same_bytes(
            fn(x, (3, 3), pads=(1, 1, 1, 1), strides=(2, 2)),
            fn(x, (3, 3), pads=(1, 1, 1, 1), strides=(2, 2), threads=2),
        )
    shapes = [(1, 1, 1, 1), (2, 7, 7, 17), (3, 13, 11, 300), (1, 7, 7, 1280), (2, 1, 3, 64), (1, 5, 5, 71)]
    for shape in shapes:
        x = rand(*shape)
        want = x.astype(np.float64).mean(axis=(1, 2), keepdims=True)
        got = K.global_avg_pool(x)
        close(got, want, shape[1] * shape[2])
        same_bytes(got, K.global_avg_pool(x, threads=2))
        # The vector kernel sums each channel over the pixels in the same order: the same bits.
        same_bytes(got, K.global_avg_pool(x, isa="best"))
        same_bytes(got, K.global_avg_pool(x, isa="best", threads=2))
        lo_hi = K.global_avg_pool(x, min=0.0, max=0.1)
        close(lo_hi, clamp(want, 0.0, 0.1), shape[1] * shape[2])
        same_bytes(lo_hi, K.global_avg_pool(x, min=0.0, max=0.1, isa="best"))
    x = rand(2, 3, 3, 20)
    x[1, 2, 1, 5] = np.nan
    got = K.global_avg_pool(x, min=0.0, max=0.1, isa="best")
    assert np.isnan(got[1, 0, 0, 5]) and not np.isnan(np.delete(got.ravel(), 20 + 5)).any()


# --------------------------------------------------------------------------------------------- element-wise
BIN_REF = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "min": np.minimum,
    "max": np.maximum,
    "pow": np.power,
    "prelu": lambda a, b: np.where(a > 0, a, a * b),
    "squared_diff": lambda a, b: (a - b) ** 2,
}


@st.composite
def broadcast_pair(draw):
    rank = draw(st.integers(0, 6))
    out = [draw(DIMS) for _ in range(rank)]

    def operand():
        r = draw(st.integers(0, rank))
        return [1 if draw(st.booleans()) else d for d in out[rank - r :]]

    return out, operand(), operand()


@SETTINGS
@given(shapes=broadcast_pair(), op=st.sampled_from(sorted(BIN_REF)), act=st.booleans())
def test_binary_broadcast(shapes, op, act):
    _, sa, sb = shapes
    a = rand(*sa, lo=0.1, hi=2.0) if op == "pow" else rand(*sa)
    b = rand(*sb, lo=0.5, hi=2.0) if op in ("div", "pow") else rand(*sb)
    lo, hi = (-0.5, 0.5) if act else (-np.inf, np.inf)
    want = clamp(BIN_REF[op](a.astype(np.float64), b.astype(np.float64)), lo, hi)
    got = K.binary(op, a, b, min=lo, max=hi)
    assert got.shape == np.broadcast_shapes(a.shape, b.shape)
    close(got, np.asarray(want), 2)
    close(K.binary(op, a, b, min=lo, max=hi, isa="best"), np.asarray(want), 2)


def test_binary_threads_and_errors():
    a, b = rand(64, 3, 1000), rand(3, 1)
    same_bytes(K.binary("mul", a, b), K.binary("mul", a, b, threads=2))
    big, row = rand(300000), rand(1)
    same_bytes(K.binary("add", big, row), K.binary("add", big, row, threads=2))
    with pytest.raises(InputError, match="broadcast"):
        K.binary("add", rand(3, 4), rand(5))
    with pytest.raises(InputError, match="unknown op"):
        K.binary("nope", rand(3), rand(3))
    # 7 non-collapsible dims cannot be expressed in a 6-D BinaryShape
    with pytest.raises(InputError):
        K.binary("add", rand(2, 1, 2, 1, 2, 1, 2), rand(1, 2, 1, 2, 1, 2, 1))


def _erf(x):
    return np.vectorize(math.erf)(x)


UN_REF = {
    "abs": np.abs,
    "neg": np.negative,
    "floor": np.floor,
    "ceil": np.ceil,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "square": np.square,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "hardswish": lambda x: x * np.minimum(np.maximum(x + 3, 0), 6) / 6,
    "leaky_relu": lambda x: np.where(x < 0, 0.1 * x, x),
    "elu": lambda x: np.where(x < 0, 1.5 * (np.exp(x) - 1), x),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "erf": _erf,
    "relu": lambda x: np.maximum(x, 0),
    "sign": np.sign,
    "round_even": np.rint,
    "reciprocal": lambda x: 1 / x,
    "softplus": lambda x: np.logaddexp(0, x),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
    "copy": lambda x: x,
    "clamp": lambda x: x,
}
UN_ALPHA = {"leaky_relu": 0.1, "elu": 1.5, "hard_sigmoid": 0.2}
POSITIVE = {"sqrt", "rsqrt", "log", "reciprocal"}


def test_unary_ops_listed():
    assert sorted(K.unary_ops()) == sorted(UN_REF)
    assert sorted(K.binary_ops()) == sorted(BIN_REF)


@pytest.mark.parametrize("op", sorted(UN_REF))
def test_unary(op):
    if op in POSITIVE:
        x = rand(1031, lo=0.05, hi=20.0)
    elif op == "tan":
        x = rand(1031, lo=-1.4, hi=1.4)
    elif op == "round_even":
        x = np.concatenate(
            [
                rand(1000, lo=-10, hi=10),
                np.arange(-4.5, 5, 1.0, dtype=np.float32),
                np.array([0.5, -0.5, 2.5, 1e9, -0.0], np.float32),
            ]
        )
    else:
        x = np.concatenate([rand(1000, lo=-8, hi=8), np.array([-100, -30, 0, 30, 100], np.float32)])
    alpha, beta = UN_ALPHA.get(op, 0.0), (0.5 if op == "hard_sigmoid" else 0.0)
    with np.errstate(over="ignore"):
        want = UN_REF[op](x.astype(np.float64)).astype(np.float32)  # overflows to inf like float32 does
    for isa in ("scalar", "best"):
        got = K.unary(op, x, alpha=alpha, beta=beta, isa=isa)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=f"{op} {isa}")
        lo, hi = -0.5, 0.25
        got = K.unary(op, x, alpha=alpha, beta=beta, min=lo, max=hi, isa=isa)
        np.testing.assert_allclose(got, clamp(want, lo, hi), rtol=2e-6, atol=2e-6, err_msg=f"{op} {isa} act")
    big = rand(100003, lo=0.1, hi=3)
    same_bytes(K.unary(op, big, alpha=alpha, beta=beta), K.unary(op, big, alpha=alpha, beta=beta, threads=2))


@pytest.mark.parametrize("isa", ["scalar", "best"])
def test_gelu_within_wpt_ulp(isa):
    """GELU within WPT's 18 ulp wherever the result is a normal float, on a dense grid of [-13, 13]: the
    negative side is erfc-sized (down to 1e-37) and its relative error grows with x^2 unless the exponent is
    computed from x exactly (x / sqrt 2 rounded cost 60-80 ulp at x = -8)."""
    x = np.linspace(-13, 13, 200001).astype(np.float32)
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * np.vectorize(math.erfc)(-x64 / math.sqrt(2))
    got = K.unary("gelu", x, isa=isa)
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    assert ulp_distance_f32(got[normal], want[normal]).max() <= 18


@pytest.mark.parametrize("op", sorted(UN_REF))
def test_unary_nan_propagates(op):
    """A NaN input gives a NaN output on both tables (numpy's result for every op here), in full vectors and
    in a tail, with and without a clamp (the AVX2 hard_sigmoid used to clamp NaN to 0)."""
    x = rand(19, lo=0.5, hi=2.0, seed=41)
    x[[0, 9, 18]] = np.nan
    alpha, beta = UN_ALPHA.get(op, 0.0), (0.5 if op == "hard_sigmoid" else 0.0)
    for isa in ("scalar", "best"):
        for lo, hi in ((-np.inf, np.inf), (-0.5, 0.25)):
            got = K.unary(op, x, alpha=alpha, beta=beta, min=lo, max=hi, isa=isa)
            nan = [0, 9, 18]
            assert np.isnan(got[nan]).all() and not np.isnan(np.delete(got, nan)).any(), (op, isa)


def test_unary_edge_values():
    x = np.array([np.inf, -np.inf, np.nan, -0.0, 1e-30, 88.0, -88.0, 200.0, -200.0], np.float32)
    with np.errstate(all="ignore"):
        sig = K.unary("sigmoid", x)
        np.testing.assert_allclose(sig[[0, 1, 5, 6, 7, 8]], [1, 0, 1, 0, 1, 0], atol=1e-30)
        sp = K.unary("softplus", x)
        assert sp[7] == 200.0 and sp[8] < 1e-30 and np.isnan(sp[2])
        sg = K.unary("sign", x)
        assert np.isnan(sg[2]) and np.signbit(sg[3]) and sg[0] == 1 and sg[1] == -1


@SETTINGS
@given(rows=DIMS, cols=st.sampled_from([1, 2, 7, 17, 100]), scale=st.sampled_from([1.0, 30.0]))
def test_softmax(rows, cols, scale):
    x = rand(rows, cols) * np.float32(scale)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    close(K.softmax(x), want, 4)
    close(K.softmax(x, isa="best"), want, 4)
    x3 = rand(2, rows, cols)
    close(K.softmax(x3), np.asarray(K.softmax(x3.reshape(-1, cols))).reshape(x3.shape), 1)


def test_softmax_threads_and_large_values():
    x = rand(500, 333) * 100
    same_bytes(K.softmax(x), K.softmax(x, threads=2))
    assert np.all(np.isfinite(K.softmax(np.array([[1e30, 0.0, -1e30]], np.float32))))


@pytest.mark.parametrize("cols", [3, 16, 21])
def test_softmax_nan_inf_rows(cols):
    """A row with a NaN, a +inf or only -inf has a NaN in x - max, so every output is NaN (numpy's result);
    -inf entries of a finite row give 0, and values far below the max give denormals or 0 as in float64. The
    vector kernel used to drop a NaN (vmaxps ignores NaN operands) and return numbers."""
    x = rand(7, cols, seed=31)
    x[0, 1] = np.nan
    x[1, cols - 1] = np.nan
    x[2, 0] = np.inf
    x[3, :] = -np.inf
    x[4, 0] = -np.inf
    x[5, 0] = -95.0  # e^(x - max) is a denormal
    x[6, :] = np.float32(-100.0)
    x[6, cols - 1] = 0.0
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
        want = e / e.sum(axis=-1, keepdims=True)
    for isa in ("scalar", "best"):
        got = K.softmax(x, isa=isa)
        assert np.isnan(got[:4]).all() and not np.isnan(got[4:]).any()
        close(got[4:], want[4:], 4)


# ------------------------------------------------------------------------------------------------- int8
@SETTINGS
@given(scale=st.sampled_from([0.01, 0.1, 1.0, 3.0]), zp=st.integers(-128, 127))
def test_quantize_dequantize(scale, zp):
    x = np.concatenate(
        [rand(1000, lo=-300, hi=300), np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float32) * np.float32(scale)]
    )
    want = np.clip(np.rint(x / np.float32(scale)) + zp, -128, 127).astype(np.int8)
    for isa in ("scalar", "best"):
        q = K.quantize(x, scale, zp, isa=isa)
        assert q.dtype == np.int8
        np.testing.assert_array_equal(q, want)
        dq = K.dequantize(q, scale, zp, isa=isa)
        np.testing.assert_array_equal(dq, (q.astype(np.float32) - np.float32(zp)) * np.float32(scale))


def test_quantize_dequantize_threads_tails_and_specials():
    """The vector kernels (8 per step, a partial last step, chunks per thread) give the scalar bits: odd
    lengths, halves at and past 2^23, infinities, NaN (the zero point), signed zeros, clamping at both
    ends."""
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0, 8388607.5, 8388608.0, -8388609.0, 1e30, -1e30, 3e-45]
    special = np.array(special + [127.5, -128.5], np.float32)
    for n in (1, 7, 8, 9, 33, 1000, 100_003):
        x = np.concatenate([special, rand(n, lo=-400, hi=400)])
        for scale, zp in ((0.5, -3), (3.0, 127), (1e-30, 0), (np.float32(np.inf), 5)):
            want = K.quantize(x, scale, zp, isa="scalar")
            back = K.dequantize(want, scale, zp, isa="scalar")
            for t in (1, 2):
                np.testing.assert_array_equal(K.quantize(x, scale, zp, isa="best", threads=t), want)
                np.testing.assert_array_equal(K.dequantize(want, scale, zp, isa="best", threads=t), back)


# ------------------------------------------------------------------------------------------------- layout
@SETTINGS
@given(
    shape=st.lists(st.sampled_from([1, 2, 3, 5, 17]), min_size=0, max_size=6),
    data=st.data(),
    dtype=st.sampled_from([np.int8, np.float16, np.float32, np.int64]),
)
def test_transpose(shape, data, dtype):
    perm = data.draw(st.permutations(list(range(len(shape)))))
    x = (np.arange(int(np.prod(shape)), dtype=np.int64) % 2039).reshape(shape).astype(dtype)
    got = K.transpose(x, perm)
    np.testing.assert_array_equal(got, np.transpose(x, perm))
    assert got.dtype == dtype


def test_transpose_large_threads_and_odd_elem():
    x = rand(3, 130, 257)
    for perm in ([0, 2, 1], [2, 1, 0], [1, 0, 2], [1, 2, 0]):
        want = np.transpose(x, perm)
        np.testing.assert_array_equal(K.transpose(x, perm), want)
        np.testing.assert_array_equal(K.transpose(x, perm, threads=2), want)
    rgb = np.arange(4 * 5 * 3, dtype=np.uint8).view("V3").reshape(4, 5)  # 3-byte elements
    got = K.transpose(rgb, [1, 0]).view(np.uint8)
    np.testing.assert_array_equal(got, np.transpose(rgb).copy().view(np.uint8))
    x8 = np.arange(2 * 3 * 4 * 5 * 2 * 3 * 2 * 2).reshape(2, 3, 4, 5, 2, 3, 2, 2)
    perm8 = [7, 5, 3, 1, 0, 2, 4, 6]
    np.testing.assert_array_equal(K.transpose(x8, perm8), np.transpose(x8, perm8))


@SETTINGS
@given(shape=st.lists(st.sampled_from([1, 2, 3, 7]), min_size=1, max_size=5), data=st.data())
def test_slice_pad_concat(shape, data):
    x = rand(*shape)
    offs = [data.draw(st.integers(0, d - 1)) for d in shape]
    sizes = [data.draw(st.integers(1, d - o)) for d, o in zip(shape, offs)]
    want = x[tuple(slice(o, o + s) for o, s in zip(offs, sizes))]
    np.testing.assert_array_equal(K.slice(x, offs, sizes), want)
    pre = [data.draw(st.integers(0, 2)) for _ in shape]
    post = [data.draw(st.integers(0, 2)) for _ in shape]
    np.testing.assert_array_equal(
        K.pad(x, pre, post, 1.5), np.pad(x, list(zip(pre, post)), constant_values=np.float32(1.5))
    )
    axis = data.draw(st.integers(0, len(shape) - 1))
    other = list(shape)
    other[axis] = data.draw(st.integers(0, 3))
    y = rand(*other)
    np.testing.assert_array_equal(K.concat([x, y, x], axis), np.concatenate([x, y, x], axis))


def test_layout_int_types_and_errors():
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    np.testing.assert_array_equal(
        K.pad(x, [0, 1, 0], [1, 0, 2], -7), np.pad(x, [(0, 1), (1, 0), (0, 2)], constant_values=-7)
    )
    np.testing.assert_array_equal(K.slice(x, [1, 0, 1], [1, 3, 2]), x[1:2, :, 1:3])
    with pytest.raises(InputError):
        K.slice(x, [0, 0, 3], [1, 1, 2])
    with pytest.raises(InputError):
        K.transpose(x, [0, 0, 1])


# ------------------------------------------------------------------------------------------------- misc
def test_cpu_info_and_isa_errors():
    info = K.cpu_info()
    assert set(info) == {
        "isa",
        "int8",
        "avx2",
        "fma",
        "f16c",
        "avx512f",
        "avx512vl",
        "avx512bw",
        "avx512vnni",
        "avxvnni",
        "cores",
    }
    assert info["isa"] in ("scalar", "avx2", "avxvnni", "avx512vnni") and info["cores"] >= 1
    assert info["int8"].split()[0] == info["isa"]  # the int8 entries run on the same table
    from webxnn.cpuinfo import cpu_info

    assert cpu_info() == info
    with pytest.raises(InputError, match="isa"):
        K.gemm(rand(2, 2), rand(2, 2), isa="sse9")
    with pytest.raises(InputError, match="threads"):
        K.gemm(rand(2, 2), rand(2, 2), threads=0)
    with pytest.raises(InputError):
        K.gemm(rand(2, 3), rand(2, 2))
    with pytest.raises(InputError):
        K.conv2d(rand(1, 2, 2, 3), rand(4, 3, 3, 3))  # window larger than input
    with pytest.raises(InputError):
        K.conv2d(rand(1, 4, 4, 3), rand(4, 1, 1, 2))  # channel mismatch


def test_pool_shared_by_python_threads():
    """run() from several threads at once is serialized inside the pool and stays correct."""
    a, b = rand(64, 96), rand(96, 80)
    want = K.gemm(a, b)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(20):
                same_bytes(K.gemm(a, b, threads=2), want)
                same_bytes(K.unary("tanh", a, threads=2), K.unary("tanh", a))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_isa_selection_env_and_avx2_table():
    import os
    import subprocess
    import sys

    code = "import webxnn; print(webxnn.cpu_info()['isa'])"
    env = dict(os.environ, WEBXNN_ISA="scalar")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "scalar"
    info = K.cpu_info()
    if not (info["avx2"] and info["fma"] and info["f16c"]):
        with pytest.raises(InputError):
            K.gemm(rand(2, 2), rand(2, 2), isa="avx2")
        return
    assert info["isa"] in ("avx2", "avxvnni", "avx512vnni")  # the VNNI tables are AVX2's + int8 GEMMs
    a, b = rand(5, 9), rand(9, 4)
    close(K.gemm(a, b, isa="avx2"), a.astype(np.float64) @ b, 9)


def test_large_k_spans_several_panel_groups():
    """K large enough that one task group holds fewer panels than N needs (AVX2 L2 blocking)."""
    a, b, bias = rand(13, 2000), rand(2000, 70), rand(70)
    want = a.astype(np.float64) @ b + bias
    for isa in ("scalar", "best"):
        one = K.gemm(a, b, bias, isa=isa)
        close(one, want, 2000)
        same_bytes(one, K.gemm(a, b, bias, isa=isa, threads=2))
    x, f = rand(1, 6, 5, 160), rand(40, 3, 3, 160)
    want = conv2d_ref(x, f, None, (1, 1, 1, 1), (1, 1), (1, 1), 1)
    for isa in ("scalar", "best"):
        one = K.conv2d(x, f, None, pads=(1, 1, 1, 1), isa=isa)
        close(one, want, 9 * 160)
        same_bytes(one, K.conv2d(x, f, None, pads=(1, 1, 1, 1), isa=isa, threads=2))


@pytest.mark.parametrize(
    "h, c, k, s",
    [(7, 960, 3, 1), (14, 200, 3, 2), (3, 40, 3, 1), (5, 24, 5, 1), (9, 33, 3, 2), (2, 1000, 3, 1)],
)
def test_dwconv_small_spatial_channel_split(h, c, k, s):
    """Few output rows: depthwise splits (row x 16-channel tile) units over tasks; bytes stay identical."""
    x, f, b = rand(1, h, h, c), rand(1, k, k, c), rand(c)
    p = (k // 2,) * 4
    want = clamp(dwconv2d_ref(x, f, b, p, (s, s), (1, 1)), 0.0, 6.0)
    for isa in ("scalar", "best"):
        one = K.dwconv2d(x, f, b, pads=p, strides=(s, s), min=0.0, max=6.0, isa=isa)
        close(one, want, k * k)
        same_bytes(one, K.dwconv2d(x, f, b, pads=p, strides=(s, s), min=0.0, max=6.0, isa=isa, threads=2))


@pytest.mark.parametrize("n, k", [(1000, 1280), (70, 300), (17, 2000), (129, 64)])
def test_gemv_threads_identical(n, k):
    """M = 1 (classifier FC): balanced panel ranges per task; bytes identical for 1 and 2 threads."""
    a, b, bias = rand(1, k), rand(n, k), rand(n)
    want = a.astype(np.float64) @ b.T.astype(np.float64) + bias
    for isa in ("scalar", "best"):
        one = K.gemm(a, b, bias, b_is_nk=True, isa=isa)
        close(one, want, k)
        same_bytes(one, K.gemm(a, b, bias, b_is_nk=True, isa=isa, threads=2))
        r = rand(1, n)
        same_bytes(
            K.gemm(a, b, bias, b_is_nk=True, isa=isa, residual=r),
            K.gemm(a, b, bias, b_is_nk=True, isa=isa, residual=r, threads=2),
        )


def test_pool_wakes_after_idle_spin():
    """Workers poll ~0.5 ms, then sleep: calls after short and long idle gaps both finish and agree."""
    import time  # noqa: PLC0415

    x = rand(1 << 15)
    want = K.unary("tanh", x, isa="best")
    for gap in (0.0, 0.0002, 0.003, 0.0):
        time.sleep(gap)
        same_bytes(K.unary("tanh", x, isa="best", threads=2), want)


@pytest.mark.parametrize(
    "h, w, c, oc, k, s, pad, d",
    [
        (9, 9, 64, 40, 3, 2, 1, 1),
        (8, 8, 96, 33, 1, 2, 0, 1),
        (6, 7, 64, 17, 5, 1, 2, 1),
        (7, 7, 64, 48, 3, 1, 2, 2),
    ],
)
def test_conv2d_small_outputs_as_one_gemm(h, w, c, oc, k, s, pad, d):
    """Few output pixels with deep windows (>= 64 channels, A within 1 MiB) run as im2col + one K-blocked
    GEMM: numpy's values, with padding taps, a residual and a post-op; bytes identical on 1 and 2 threads."""
    x, f, b = rand(2, h, w, c), rand(oc, k, k, c), rand(oc)
    geo = dict(pads=(pad,) * 4, strides=(s, s), dilations=(d, d))
    want = clamp(conv2d_ref(x, f, b, (pad,) * 4, (s, s), (d, d), 1), -1.0, 1.0)
    for isa in ("scalar", "best"):
        one = K.conv2d(x, f, b, min=-1.0, max=1.0, isa=isa, **geo)
        close(one, want, k * k * c)
        same_bytes(one, K.conv2d(x, f, b, min=-1.0, max=1.0, isa=isa, threads=2, **geo))
        r = rand(*one.shape)
        with_res = K.conv2d(x, f, b, residual=r, post="hardswish", isa=isa, **geo)
        same_bytes(with_res, K.conv2d(x, f, b, residual=r, post="hardswish", isa=isa, threads=2, **geo))
