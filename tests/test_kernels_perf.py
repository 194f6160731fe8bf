"""The performance kernels added for issue 5, checked against numpy and the scalar table.

Blocked GEMM (K blocks, M chunks, N tails, GEMV), transcendental unary ops, softmax and the fused layer norm
(`normalize`), plus the benchmark entry points (peak probe, timed kernels). No timing is asserted.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import load_testing_module
from webxnn.errors import InputError

K = load_testing_module().kernels

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RNG = np.random.default_rng(99)
HAVE_AVX2 = K.cpu_info()["isa"] != "scalar"  # avx2, or a VNNI table (AVX2's + int8 GEMMs)


def rand(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def same_bytes(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape and a.tobytes() == b.tobytes()


def gemm_ref(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, lo: float, hi: float) -> np.ndarray:
    y = a.astype(np.float64) @ b.astype(np.float64)
    if bias is not None:
        y = y + bias
    return np.minimum(np.maximum(y, lo), hi)


# ------------------------------------------------------------------------------------------------ GEMM
@SETTINGS
@given(
    m=st.sampled_from([1, 2, 5, 6, 7, 13, 145, 150]),
    n=st.sampled_from([1, 7, 8, 12, 16, 17, 24, 33, 40, 65]),
    k=st.sampled_from([1, 3, 16, 255, 321, 700]),
    act=st.booleans(),
    bias=st.booleans(),
)
def test_gemm_blocking_tails(m, n, k, act, bias):
    """M across MR tiles and MC chunks, N across panel tails, K across KC blocks: vs numpy and scalar."""
    a, b = rand(m, k), rand(k, n)
    bv = rand(n) if bias else None
    lo, hi = (-2.0, 2.0) if act else (-np.inf, np.inf)
    want = gemm_ref(a, b, bv, lo, hi)
    tol = dict(rtol=1e-5, atol=3e-6 * k + 1e-6)
    scalar = K.gemm(a, b, bv, min=lo, max=hi)
    np.testing.assert_allclose(scalar, want, **tol)
    best = K.gemm(a, b, bv, min=lo, max=hi, isa="best")
    np.testing.assert_allclose(best, want, **tol)
    np.testing.assert_allclose(best, scalar, **tol)
    same_bytes(best, K.gemm(a, b, bv, min=lo, max=hi, isa="best", threads=2))


@pytest.mark.parametrize("n", [8, 12, 24, 28, 40])
@pytest.mark.parametrize("m,k", [(7, 16), (150, 70)])
def test_gemm_panel_tails(m, n, k):
    """Partial panels whose first 8 columns are full (N = 16 p + 8: the 24-wide pass, or the 8-wide tiles;
    N = 16 p + 12: the masked 16-wide tile) store those columns unmasked: every column still right, with a
    residual and a clamp, at 1 and 2 threads."""
    a, b, bias, r = rand(m, k), rand(k, n), rand(n), rand(m, n)
    want = np.clip(a.astype(np.float64) @ b + bias + r, -1.0, 2.0)
    got = K.gemm(a, b, bias, min=-1.0, max=2.0, isa="best", residual=r)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6 * k + 1e-6)
    same_bytes(got, K.gemm(a, b, bias, min=-1.0, max=2.0, isa="best", residual=r, threads=2))


@pytest.mark.parametrize("m,n,k", [(1, 1000, 300), (1, 70, 9), (1, 4096, 33), (3, 500, 700), (300, 40, 20)])
def test_gemm_shapes_threads(m, n, k):
    a, b, bias = rand(m, k), rand(n, k), rand(n)
    want = gemm_ref(a, b.T, bias, -np.inf, np.inf)
    one = K.gemm(a, b, bias, b_is_nk=True, isa="best")
    np.testing.assert_allclose(one, want, rtol=1e-5, atol=3e-6 * k)
    same_bytes(one, K.gemm(a, b, bias, b_is_nk=True, isa="best", threads=2))


def test_gemm_nan_inf_propagate():
    a, b = rand(7, 40), rand(40, 20)
    a[2, 5] = np.nan
    a[4, 0] = np.inf
    got = K.gemm(a, b, isa="best")
    ref = K.gemm(a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert np.all(np.isnan(got[2]))


# ------------------------------------------------------------------------------------------------ unary
def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


TRANS = {
    "exp": np.exp,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "erf": _erf,
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
}


def _ulp_err(got: np.ndarray, want64: np.ndarray) -> np.ndarray:
    want = want64.astype(np.float32)
    ulp = np.spacing(np.abs(want)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want64) / np.maximum(ulp, np.finfo(np.float32).tiny)


@pytest.mark.parametrize("op", sorted(TRANS))
def test_transcendental_accuracy(op):
    """Dense sweep over the interesting range; a few ULP where the result is not tiny."""
    x = np.concatenate(
        [
            np.linspace(-12, 12, 20011, dtype=np.float32),
            np.geomspace(1e-7, 1, 500).astype(np.float32),
            -np.geomspace(1e-7, 1, 500).astype(np.float32),
            np.array([0.0, -0.0], np.float32),
        ]
    )
    if op == "exp":
        x = np.concatenate([x, np.linspace(-87, 88.7, 3001, dtype=np.float32)])
    with np.errstate(over="ignore"):
        want = TRANS[op](x.astype(np.float64))
    got = K.unary(op, x, isa="best")
    big = np.abs(want) > 1e-3
    budget = {"exp": 8, "sigmoid": 8, "tanh": 8, "erf": 16, "gelu": 64}[op]
    assert np.max(_ulp_err(got[big], want[big])) <= budget, op
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7 if op != "gelu" else 5e-7)


@pytest.mark.parametrize("op", sorted(TRANS))
def test_transcendental_edges(op):
    x = np.array(
        [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 88.5, 89.0, -87.5, -104.0, -200.0, 200.0],
        np.float32,
    )
    with np.errstate(all="ignore"):
        want = K.unary(op, x)  # scalar (libm) reference
        got = K.unary(op, x, isa="best")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=2e-6, atol=1e-30)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 100, 20000])
def test_transcendental_tails_threads_clamp(n):
    x = rand(n, lo=-5, hi=5)
    for op in TRANS:
        a = K.unary(op, x, isa="best", min=-0.5, max=0.75)
        np.testing.assert_allclose(a, np.clip(K.unary(op, x), -0.5, 0.75), rtol=2e-6, atol=5e-7)
        same_bytes(a, K.unary(op, x, isa="best", min=-0.5, max=0.75, threads=2))


# ------------------------------------------------------------------------------------------------ softmax
@SETTINGS
@given(
    rows=st.sampled_from([1, 3, 17]),
    cols=st.sampled_from([1, 7, 8, 15, 16, 17, 128, 1000]),
    scale=st.sampled_from([1.0, 50.0]),
)
def test_softmax_best(rows, cols, scale):
    x = rand(rows, cols) * np.float32(scale)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    got = K.softmax(x, isa="best")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    same_bytes(got, K.softmax(x, isa="best", threads=2))


def test_softmax_inf_rows():
    x = np.array([[1e30, 0.0, -1e30], [-np.inf, 0.0, 1.0]], np.float32)
    got = K.softmax(x, isa="best")
    np.testing.assert_allclose(got, K.softmax(x), rtol=1e-6, atol=1e-30)


# ------------------------------------------------------------------------------------------------ normalize
def norm_ref(x, g, b, eps):
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(-1, keepdims=True)
    y = (x64 - mu) / np.sqrt(var + eps)
    if g is not None:
        y = y * g
    if b is not None:
        y = y + b
    return y


@SETTINGS
@given(
    rows=st.sampled_from([1, 2, 17, 128]),
    cols=st.sampled_from([1, 2, 7, 8, 17, 384, 1000]),
    has_g=st.booleans(),
    has_b=st.booleans(),
    offset=st.sampled_from([0.0, 100.0]),
)
def test_normalize(rows, cols, has_g, has_b, offset):
    x = rand(rows, cols) + np.float32(offset)
    g = rand(cols) if has_g else None
    b = rand(cols) if has_b else None
    want = norm_ref(x, g, b, 1e-5)
    for isa in ("scalar", "best"):
        got = K.normalize(x, g, b, epsilon=1e-5, isa=isa)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5, err_msg=isa)
        same_bytes(got, K.normalize(x, g, b, epsilon=1e-5, isa=isa, threads=2))


def test_normalize_errors_and_3d():
    x = rand(2, 3, 16)
    want = norm_ref(x, None, None, 1e-5)
    np.testing.assert_allclose(K.normalize(x, isa="best"), want, rtol=1e-4, atol=2e-5)
    with pytest.raises(InputError, match="scale"):
        K.normalize(x, rand(5))


# ------------------------------------------------------------------------------------------------ bench hooks
def test_bench_entry_points():
    a, b = rand(8, 16), rand(16, 24)
    times = K.time_gemm(a, b, isa="best", repeat=3)
    assert len(times) == 3 and all(t >= 0 for t in times)
    assert len(K.time_conv2d(rand(1, 5, 5, 3), rand(4, 3, 3, 3), pads=(1, 1, 1, 1), repeat=2)) == 2
    assert len(K.time_dwconv2d(rand(1, 5, 5, 3), rand(1, 3, 3, 3), pads=(1, 1, 1, 1), repeat=2)) == 2
    assert len(K.time_max_pool2d(rand(1, 5, 5, 3), (3, 3), strides=(2, 2), repeat=2)) == 2
    assert len(K.time_unary("gelu", rand(100), repeat=2)) == 2
    assert len(K.time_softmax(rand(4, 100), repeat=2)) == 2
    assert len(K.time_normalize(rand(4, 100), repeat=2)) == 2
    if HAVE_AVX2:
        assert K.peak_fma(threads=1, iters=10000, repeat=1) > 0
        for isa in K.tables():  # the int8 peak of each table's multiply step (vpdpbusd on a VNNI one)
            if isa != "scalar":
                assert K.peak_int8(threads=1, iters=10000, repeat=1, isa=isa) > 0
                want = {"avx512vnni": "vpdpbusd zmm", "avxvnni": "vpdpbusd"}.get(
                    isa, "vpmaddubsw + vpmaddwd + vpaddd"
                )
                assert K.int8_peak_step(isa) == want


def test_bench_load_run_overhead_graph():
    """`python -m bench load` times `run` on a 1-element graph (x + x): it loads and runs."""
    load = pytest.importorskip("bench.load")
    assert load.run_overhead_us() > 0


def test_bench_contention_warning():
    """The benches flag runs during which another tenant used the machine: the second vCPU busy (2-thread peak
    < 1.8x the best 1-thread one), a core shared (1-thread peak < 90 % of its best) or memory bandwidth taken
    (a 32 MB copy < 80 % of the run's best)."""
    common = pytest.importorskip("bench.common")
    assert common.contention_warning([{1: 116.0, 2: 230.0}, {1: 115.0, 2: 226.0}]) is None
    assert common.contention_warning([{1: 116.0}]) is None
    assert common.contention_warning([]) is None
    warning = common.contention_warning([{1: 116.0, 2: 230.0}, {1: 116.0, 2: 150.0}])
    assert warning is not None and "1.29x" in warning and "core was shared" not in warning
    warning = common.contention_warning([{1: 45.0, 2: 96.0}, {1: 117.0, 2: 234.0}])  # 96/45 passed before
    assert warning is not None and "38%" in warning and "0.82x" in warning
    ok = [{1: 116.0, 2: 230.0}]
    assert common.contention_warning(ok, [30.0, 29.0, 31.0]) is None
    warning = common.contention_warning(ok, [30.0, 20.0])  # another tenant streaming memory
    assert warning is not None and "memory bandwidth fell to 67%" in warning
    assert common.copy_bandwidth() > 0


def test_bench_models_partial_run_keeps_the_full_results():
    """Only the full models suite writes bench/out/models.json (the README's table); a run of some models or
    thread counts goes to a file of its own (two partial runs had overwritten the committed results)."""
    pytest.importorskip("onnx")
    models = pytest.importorskip("bench.models")
    full = sorted(models.MODELS)
    assert str(models.default_json_path(full, [2, 1])) == "bench/out/models.json"
    assert str(models.default_json_path(["mobilenetv2"], [1, 2])) == "bench/out/models-partial.json"
    assert str(models.default_json_path(full, [1])) == "bench/out/models-partial.json"
    common = pytest.importorskip("bench.common")
    assert str(common.result_path("kernels", False, "png")) == "bench/out/kernels-partial.png"


def test_bench_kernels_only_matching_nothing_says_so(capsys):
    """`python -m bench kernels --only X` with no case named like X stops with the list of case names (it
    crashed on an empty result before)."""
    kernels = pytest.importorskip("bench.kernels")
    with pytest.raises(SystemExit) as exc:
        kernels.main(["--only", "depthwise", "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--only depthwise: no case name contains that" in err and "dwconv 3x3 112x112x32" in err


# ---------------------------------------------------------------------------------------- depthwise / pool
@SETTINGS
@given(
    w=st.sampled_from([4, 5, 9, 13, 23, 40]),
    c=st.sampled_from([1, 8, 19, 32]),
    k=st.sampled_from([(3, 3), (5, 5), (1, 7)]),
    s=st.sampled_from([1, 2, 3]),
    d=st.sampled_from([1, 2]),
    pad=st.sampled_from([0, 1, 2]),
    act=st.booleans(),
    dm=st.sampled_from([1, 1, 2, 3]),
)
def test_dwconv_wide_rows_vs_scalar(w, c, k, s, d, pad, act, dm):
    """Rows wide enough for the interior strips (4-8 pixels, split evenly: widths 9, 13, 23, 40 give every
    strip size), with borders, channel tails, strides 1/2/3 (3-wide kernels have their own stride-1 and
    stride-2 paths), dilation, with and without a clamp, and depth multipliers (the input expanded first)."""
    h = 6
    if w + 2 * pad < d * (k[1] - 1) + 1 or h + 2 * pad < d * (k[0] - 1) + 1:
        return
    x, f, b = rand(1, h, w, c), rand(1, *k, c * dm), rand(c * dm)
    lo, hi = (-1.0, 1.5) if act else (-np.inf, np.inf)
    kw = dict(pads=(pad,) * 4, strides=(s, s), dilations=(d, d), min=lo, max=hi)
    ref = K.dwconv2d(x, f, b, **kw)
    got = K.dwconv2d(x, f, b, isa="best", **kw)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    same_bytes(got, K.dwconv2d(x, f, b, isa="best", threads=2, **kw))


def test_pools_large_vs_scalar_threads_nan():
    x = rand(2, 30, 31, 19)
    x[0, 3, 4, 5] = np.nan
    for fn in (K.max_pool2d, K.avg_pool2d):
        kw = dict(pads=(1, 1, 1, 1), strides=(2, 2))
        ref = fn(x, (3, 3), **kw)
        got = fn(x, (3, 3), isa="best", **kw)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        ok = ~np.isnan(ref)
        np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-6, atol=1e-6)
        same_bytes(got, fn(x, (3, 3), isa="best", threads=2, **kw))


@pytest.mark.parametrize("c", [1, 5, 8, 16, 24, 64, 95, 136])
@pytest.mark.parametrize(
    "pool,dil,pads",
    [
        ((3, 3), (1, 1), (1, 1, 1, 1)),
        ((2, 3), (1, 1), (0, 0, 1, 1)),
        ((5, 3), (2, 1), (2, 1, 2, 0)),
        ((1, 3), (1, 1), (0, 0, 0, 0)),
    ],
)
def test_max_pool_3wide_stride2_nan(c, pool, dil, pads):
    """The separable 3-wide stride-2 max pool path: channel blocks of 64, 16 and 8 and tails, 1 to 5 valid
    rows, NaN at window corners (a NaN anywhere in a window gives NaN), the clamp, and thread counts."""
    x = rand(1, 11, 13, c)
    x[0, 0, 0, 0] = np.nan
    x[0, 4, 6, c - 1] = np.nan
    x[0, 6, 3, c // 2] = np.nan
    x[0, 10, 12, 0] = np.nan
    kw = dict(pads=pads, strides=(2, 2), dilations=dil, min=-0.5, max=0.8)
    ref = K.max_pool2d(x, pool, **kw)
    got = K.max_pool2d(x, pool, isa="best", **kw)
    assert np.isnan(ref).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[~np.isnan(ref)], ref[~np.isnan(ref)])
    same_bytes(got, K.max_pool2d(x, pool, isa="best", threads=2, **kw))


@pytest.mark.parametrize(
    "gic,k,s,dil,pads",
    [
        (3, (3, 3), 2, (1, 1), (1, 1, 1, 1)),
        (3, (7, 7), 2, (1, 1), (3, 3, 3, 3)),
        (1, (3, 3), 1, (1, 1), (0, 1, 2, 0)),
        (5, (2, 3), 2, (2, 1), (1, 0, 0, 1)),
        (3, (3, 3), 1, (1, 2), (1, 1, 1, 1)),
    ],
)
def test_conv2d_small_channels(gic, k, s, dil, pads):
    """Few input channels (RGB stems): kernel rows read in place for interior windows, gathered at borders."""
    x, f, b = rand(2, 15, 17, gic), rand(37, *k, gic), rand(37)
    kw = dict(pads=pads, strides=(s, s), dilations=dil, min=-1.0, max=1.0)
    ref = K.conv2d(x, f, b, **kw)
    got = K.conv2d(x, f, b, isa="best", **kw)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    same_bytes(got, K.conv2d(x, f, b, isa="best", threads=2, **kw))
    r = rand(*ref.shape)
    with_r = K.conv2d(x, f, b, isa="best", residual=r, **kw)
    np.testing.assert_allclose(with_r, K.conv2d(x, f, b, residual=r, **kw), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------- batch matmul
@pytest.mark.parametrize(
    "ba,bb,m,n,k,nk",
    [
        (12, 12, 128, 128, 32, False),
        (12, 12, 128, 32, 128, False),
        (3, 1, 7, 17, 33, True),
        (1, 5, 1, 40, 9, False),
        (1, 1, 150, 70, 400, True),
        (2, 2, 13, 5, 700, False),
    ],
)
def test_batch_matmul_best_threads(ba, bb, m, n, k, nk):
    a = rand(ba, m, k)
    b = rand(bb, n, k) if nk else rand(bb, k, n)
    want = np.matmul(a.astype(np.float64), (np.swapaxes(b, 1, 2) if nk else b).astype(np.float64))
    got = K.batch_matmul(a, b, b_is_nk=nk, isa="best")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6 * k)
    same_bytes(got, K.batch_matmul(a, b, b_is_nk=nk, isa="best", threads=2))


# ---------------------------------------------------------------------------------------- fused residual
@SETTINGS
@given(
    m=st.sampled_from([1, 5, 6, 150]),
    n=st.sampled_from([3, 8, 16, 24, 40]),
    k=st.sampled_from([1, 16, 64, 400]),
    act=st.booleans(),
)
def test_gemm_residual(m, n, k, act):
    a, b, bias, r = rand(m, k), rand(k, n), rand(n), rand(m, n)
    lo, hi = (0.0, 6.0) if act else (-np.inf, np.inf)
    want = np.clip(a.astype(np.float64) @ b + bias + r, lo, hi)
    for isa in ("scalar", "best"):
        got = K.gemm(a, b, bias, min=lo, max=hi, isa=isa, residual=r)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6 * k + 1e-6, err_msg=isa)
        same_bytes(got, K.gemm(a, b, bias, min=lo, max=hi, isa=isa, residual=r, threads=2))


@pytest.mark.parametrize(
    "k,s,pad,c,oc", [(1, 1, 0, 16, 24), (1, 2, 0, 8, 17), (3, 1, 1, 5, 32), (3, 2, 1, 3, 7)]
)
def test_conv2d_residual(k, s, pad, c, oc):
    x, f, b = rand(1, 9, 11, c), rand(oc, k, k, c), rand(oc)
    kw = dict(pads=(pad,) * 4, strides=(s, s), min=0.0, max=np.inf)
    plain = K.conv2d(x, f, b, pads=(pad,) * 4, strides=(s, s))
    r = rand(*plain.shape)
    want = np.maximum(plain.astype(np.float64) + r, 0)
    for isa in ("scalar", "best"):
        got = K.conv2d(x, f, b, isa=isa, residual=r, **kw)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=isa)
        same_bytes(got, K.conv2d(x, f, b, isa=isa, residual=r, threads=2, **kw))
    with pytest.raises(InputError, match="residual"):
        K.conv2d(x, f, b, residual=rand(1, 2, 2, oc), **kw)


def test_gemm_k_zero_and_empty():
    a, b, bias = np.zeros((7, 0), np.float32), np.zeros((0, 20), np.float32), rand(20)
    for isa in ("scalar", "best"):
        got = K.gemm(a, b, bias, isa=isa, min=-0.5, max=0.5)
        np.testing.assert_array_equal(got, np.broadcast_to(np.clip(bias, -0.5, 0.5), (7, 20)))
        np.testing.assert_array_equal(K.gemm(np.zeros((1, 0), np.float32), b, bias, isa=isa)[0], bias)
        assert K.batch_matmul(
            np.zeros((2, 3, 0), np.float32), np.zeros((2, 0, 4), np.float32), isa=isa
        ).shape == (2, 3, 4)


def test_bench_layers_matches_steps_to_onnx_nodes():
    """`python -m bench layers` charges each ORT node to the webxnn step that starts at or before it in the
    ONNX graph (a block computed in one step counts from its expand conv), and lists the ORT nodes it cannot
    place."""
    pytest.importorskip("onnx")
    layers = pytest.importorskip("bench.layers")
    from bench.models import Builder, webxnn_compile

    b = Builder(0)
    x = b.conv("input", 8, 96, 1, act="relu6")  # expand: large enough to run inside the depthwise step
    x = b.conv(x, 96, 96, 3, groups=96, act="relu6")
    y = b.conv(x, 96, 8, 1)
    model = b.model([("input", [1, 8, 112, 112])], [y])
    feeds = {"input": rand(1, 8, 112, 112)}
    steps = layers.webxnn_steps(webxnn_compile(model), feeds, threads=1, repeat=1)
    import onnx

    outs = [n.output[0] for n in onnx.load_from_string(model).graph.node]
    ort_nodes = [(name, "Conv", 1.0) for name in outs]
    ort_nodes += [("/SomeFusion", "Gemm", 0.5), ("/SomeFusion", "Gemm", 0.25)]  # ORT's own names
    charged, unmatched = layers.match(model, steps, ort_nodes)
    assert unmatched == {"Gemm": [2, 0.75]}
    # The layout transposes take nothing; the block's one step takes the expand conv, the depthwise conv,
    # their two clips and the project conv.
    assert [s["kind"] for s in steps] == ["XNNStaticTranspose", "XNNConv2d", "XNNStaticTranspose"]
    assert steps[1]["fused"] and charged == [0.0, 5.0, 0.0]
    text = layers.report("tiny", 1, steps, charged, unmatched, top=2)
    assert "Conv2d + fused" in text and "Gemm x2 0.750 ms" in text


def test_bench_layers_pairs_renamed_fusions_by_kind():
    """ORT's renamed fusions (a classifier's `/MatMulAddFusion` Gemm) pair with the webxnn steps of their
    kind that took nothing when the counts agree; otherwise they stay listed apart."""
    pytest.importorskip("onnx")
    layers = pytest.importorskip("bench.layers")
    from bench.models import Builder, webxnn_compile

    b = Builder(0)
    x = b.conv("input", 3, 8, 3)
    x = b.node("GlobalAveragePool", [x])
    x = b.node("Flatten", [x])
    y = b.linear(x, 8, 10)
    model = b.model([("input", [1, 3, 8, 8])], [y])
    steps = layers.webxnn_steps(webxnn_compile(model), {"input": rand(1, 3, 8, 8)}, threads=1, repeat=1)
    fc = [i for i, s in enumerate(steps) if s["kind"] == "XNNFullyConnected"]
    assert len(fc) == 1
    charged, unmatched = layers.match(model, steps, [("/MatMulAddFusion", "Gemm", 0.25)])
    assert unmatched == {} and charged[fc[0]] == 0.25
    charged, unmatched = layers.match(model, steps, [("/A", "Gemm", 0.25), ("/B", "Gemm", 0.5)])
    assert unmatched == {"Gemm": [2, 0.75]} and charged[fc[0]] == 0.0
