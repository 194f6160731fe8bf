"""Dynamic int8 (qdint8, qd8-f32-qc8w): the kernels quantize_qd8 / qd8_gemm against numpy references written
here, and the runtime's XNNConvert fp32 -> qdint8 + XNNFullyConnected qdint8 x qcint8 -> fp32 on blobs.

The kernels: the scalar and AVX2 tables give the same bits (table.def), 1 and 2 threads too; the integer part
is checked exactly and the fp32 epilogue (one fused multiply-add) to a few ulps against float64.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_testing_module
from test_qs8_gemm import ISAS
from test_runtime_util import GraphBuilder, per_channel
from webxnn import runtime
from webxnn.errors import UnsupportedError
from webxnn.xnn.ir import Datatype, PerTokenDynamicQuant

Q = load_testing_module().kernels


def quantize_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """table.def's quantize_qd8, row by row in float32."""
    f = np.float32
    ys, zps, scales = [], [], []
    for row in x.astype(f):
        lo, hi = min(f(0), f(np.nanmin(row, initial=0))), max(f(0), f(np.nanmax(row, initial=0)))
        scale = f(1) if hi == lo else f(hi - lo) / f(255)
        z = np.clip(f(-128) - f(lo) / scale, -128, 127)
        zp = int(np.rint(z))
        v = np.clip(row / scale, f(-128 - zp), f(127 - zp))
        ys.append((np.rint(v) + zp).astype(np.int8))
        zps.append(zp)
        scales.append(scale)
    return np.array(ys).reshape(x.shape), np.array(zps, np.int32), np.array(scales, np.float32)


def gemm_reference(a, zp, sa, w_nk, w_scales, bias, lo=-np.inf, hi=np.inf) -> np.ndarray:
    """table.def's qd8_gemm in float64: exact int sums, the fp32 scale product, then x * s + b."""
    acc = (a.astype(np.int64) - zp[:, None].astype(np.int64)) @ w_nk.astype(np.int64).T
    acc = ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
    s = (sa[:, None].astype(np.float32) * np.broadcast_to(w_scales, (w_nk.shape[0],))[None, :]).astype(
        np.float32
    )
    b = np.zeros(w_nk.shape[0]) if bias is None else bias.astype(np.float64)
    y = acc.astype(np.float32).astype(np.float64) * s.astype(np.float64) + b
    return np.clip(y, lo, hi).astype(np.float32)


# ------------------------------------------------------------------------------------------ quantize_qd8


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 7), (5, 8), (4, 33), (7, 100), (2, 385)])
def test_quantize_qd8_matches_reference(isa: str, rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows * 1000 + cols)
    x = (rng.standard_normal((rows, cols)) * rng.uniform(0.01, 100, (rows, 1))).astype(np.float32)
    x[0, 0] = 0.0
    if rows > 2:
        x[1] = np.abs(x[1])  # all >= 0: zero point -128
        x[2] = -np.abs(x[2])  # all <= 0: zero point 127
    y, zp, sc = Q.quantize_qd8(x, isa=isa)
    ry, rzp, rsc = quantize_reference(x)
    np.testing.assert_array_equal(zp, rzp)
    np.testing.assert_array_equal(sc, rsc)
    np.testing.assert_array_equal(y, ry)
    # 0 is exact and every value is within half a step of its quantization
    deq = (y.astype(np.float64) - zp[:, None]) * sc[:, None]
    assert np.all(np.abs(deq - x) <= sc[:, None] * 0.5 * (1 + 1e-5))


@pytest.mark.parametrize("isa", ISAS)
def test_quantize_qd8_extreme_rows(isa: str) -> None:
    cols = 37
    x = np.zeros((6, cols), np.float32)  # row 0 all zero: scale 1 (ONNX's rule), zero point -128
    x[1] = 3.5  # constant positive row
    x[2] = -1e-30  # tiny constant negative row
    x[3] = np.linspace(-1.5e38, 1.6e38, cols)  # huge range (hi - lo still finite)
    x[4, ::2] = 1e-6
    x[5, 3] = np.inf
    y, zp, sc = Q.quantize_qd8(x, isa=isa)
    assert zp[0] == -128 and sc[0] == 1.0 and np.all(y[0] == -128)
    assert np.all(y[1] == 127) and zp[1] == -128
    ry, rzp, rsc = quantize_reference(x[:5])
    np.testing.assert_array_equal(y[:5], ry)
    np.testing.assert_array_equal(zp[:5], rzp)
    assert np.isfinite(sc[5]) or np.isinf(sc[5])  # no promise beyond "in range, no crash"
    assert y.dtype == np.int8


def test_quantize_qd8_threads_and_tables_agree() -> None:
    x = np.random.default_rng(3).standard_normal((203, 131)).astype(np.float32)
    ref = Q.quantize_qd8(x, isa="scalar")
    for isa in ISAS:
        for threads in (1, 2):
            got = Q.quantize_qd8(x, isa=isa, threads=threads)
            for g, r in zip(got, ref):
                np.testing.assert_array_equal(g, r)


# ------------------------------------------------------------------------------------------ qd8_gemm


def gemm_case(m: int, n: int, k: int, seed: int = 0, w_lo: int = -127, w_hi: int = 127, per_channel=True):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    zp = rng.integers(-128, 128, m).astype(np.int32)
    sa = rng.uniform(1e-3, 1e-1, m).astype(np.float32)
    w = rng.integers(w_lo, w_hi + 1, (n, k)).astype(np.int8)
    ws = rng.uniform(1e-3, 2e-2, n if per_channel else 1).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    return a, zp, sa, w, ws, bias


SHAPES = [(1, 1, 1), (1, 17, 5), (2, 16, 4), (3, 31, 9), (5, 33, 64), (7, 48, 3), (1, 70, 129), (13, 65, 77)]
WEIGHTS = {"small": (-64, 64), "sign": (-127, 127), "wide": (-128, 127)}  # the three AVX2 paths


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("path", sorted(WEIGHTS))
def test_qd8_gemm_matches_reference(isa: str, m: int, n: int, k: int, path: str) -> None:
    a, zp, sa, w, ws, bias = gemm_case(
        m, n, k, seed=m * 7 + n + k, w_lo=WEIGHTS[path][0], w_hi=WEIGHTS[path][1]
    )
    got = Q.qd8_gemm(a, zp, sa, w, bias, ws, isa=isa)
    ref = gemm_reference(a, zp, sa, w, ws, bias)
    np.testing.assert_allclose(got, ref, rtol=2e-7, atol=1e-6)
    np.testing.assert_array_equal(got, Q.qd8_gemm(a, zp, sa, w, bias, ws, isa="scalar"))


@pytest.mark.parametrize("isa", ISAS)
def test_qd8_gemm_layouts_clamp_and_strides(isa: str) -> None:
    a, zp, sa, w, ws, bias = gemm_case(6, 21, 19, seed=5, per_channel=False)
    wide = np.zeros((6, 24), np.int8)
    wide[:, :19] = a
    got = Q.qd8_gemm(
        wide,
        zp,
        sa,
        np.ascontiguousarray(w.T),
        None,
        ws,
        out_min=-0.5,
        out_max=0.75,
        b_is_nk=False,
        k=19,
        ldc=25,
        fill=7.0,
        isa=isa,
    )
    ref = gemm_reference(a, zp, sa, w, ws, None, -0.5, 0.75)
    np.testing.assert_allclose(got[:, :21], ref, rtol=2e-7, atol=1e-6)
    assert np.all(got[:, 21:] == 7.0)  # columns past N untouched


@pytest.mark.parametrize("isa", ISAS)
def test_qd8_gemm_extreme_rows(isa: str) -> None:
    """Zero points at both ends, rows of one value, saturated products."""
    m, n, k = 6, 40, 300
    a = np.full((m, k), 127, np.int8)
    a[1] = -128
    a[2, ::2] = -128
    a[3] = 0
    zp = np.array([-128, 127, 0, 0, -128, 127], np.int32)
    sa = np.array([1.0, 1e-3, 0.5, 1.0, 1e-30, 1e30], np.float32)
    w = np.full((n, k), -128, np.int8)
    w[::3] = 127
    ws = np.full(n, 0.25, np.float32)
    got = Q.qd8_gemm(a, zp, sa, w, None, ws, isa=isa)
    np.testing.assert_allclose(got, gemm_reference(a, zp, sa, w, ws, None), rtol=2e-7)


@pytest.mark.parametrize("m,n,k", [(97, 130, 200), (60, 40, 1025), (9, 17, 3073)])
def test_qd8_gemm_threads_and_tables_agree(m: int, n: int, k: int) -> None:
    # (K > 768: the AVX2 kernel's K blocks, qgemm_tiles.h's tile_strip, before the fp32 epilogue)
    a, zp, sa, w, ws, bias = gemm_case(m, n, k, seed=9)
    ref = Q.qd8_gemm(a, zp, sa, w, bias, ws, isa="scalar")
    for isa in ISAS:
        for threads in (1, 2):
            np.testing.assert_array_equal(Q.qd8_gemm(a, zp, sa, w, bias, ws, isa=isa, threads=threads), ref)


# ------------------------------------------------------------------------------------------ runtime nodes


def dynamic_linear_blob(x_dims, w_nk, w_scales, bias=None, out_min_max=None, nonbatch: int = 1) -> bytes:
    """x fp32 -> Convert -> qdint8 -> FullyConnected(qcint8 [N, K] [+ fp32 bias]) -> fp32: ExecuTorch's
    dynamically quantized linear."""
    n = w_nk.shape[0]
    b = GraphBuilder()
    x = b.input("x", list(x_dims))
    q = b.value(list(x_dims), Datatype.QDINT8, PerTokenDynamicQuant(num_nonbatch_dims=nonbatch))
    b.node("XNNConvert", input_id=x, output_id=q, flags=0)
    w = b.const(w_nk, Datatype.QCINT8, per_channel([float(s) for s in w_scales], 0))
    bi = b.const(bias) if bias is not None else 0xFFFFFFFF
    y = b.output(b.value([*x_dims[:-1], n]), "y")
    b.node(
        "XNNFullyConnected",
        output_min_max=out_min_max,
        input1_id=q,
        filter_id=w,
        bias_id=bi,
        output_id=y,
        flags=0,
    )
    return b.build()


@pytest.mark.parametrize("threads", [1, 2])
def test_dynamic_fully_connected_node(threads: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 24)).astype(np.float32)
    x[1, 2] = 0.0  # an all-zero row
    w = rng.integers(-127, 128, (11, 24)).astype(np.int8)
    ws = rng.uniform(0.005, 0.02, 11).astype(np.float32)
    bias = rng.standard_normal(11).astype(np.float32)
    prog = runtime.load(dynamic_linear_blob(x.shape, w, ws, bias), threads=threads)
    got = prog.run([x])["y"]
    xq, zp, sc = quantize_reference(x.reshape(-1, 24))
    ref = gemm_reference(xq, zp, sc, w, ws, bias).reshape(2, 5, 11)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    # and close to the fp32 product (per-row quantization: error about a step per row)
    fp = x @ (w.astype(np.float32) * ws[:, None]).T + bias
    assert np.max(np.abs(got - fp)) < 0.05 * np.max(np.abs(fp))


def test_dynamic_fully_connected_clamp_and_no_bias() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 9)).astype(np.float32)
    w = rng.integers(-128, 128, (4, 9)).astype(np.int8)
    ws = np.full(4, 0.01, np.float32)
    got = runtime.load(dynamic_linear_blob(x.shape, w, ws, None, (0.0, 0.05))).run([x])["y"]
    xq, zp, sc = quantize_reference(x)
    np.testing.assert_allclose(got, gemm_reference(xq, zp, sc, w, ws, None, 0.0, 0.05), rtol=1e-6, atol=1e-7)


def test_dynamic_fully_connected_refuses_grouped_rows() -> None:
    w = np.ones((4, 8), np.int8)
    with pytest.raises(UnsupportedError, match="num_nonbatch_dims 1"):
        runtime.load(dynamic_linear_blob((2, 3, 8), w, np.ones(4, np.float32), nonbatch=2))


def test_qdint8_constant_is_refused() -> None:
    b = GraphBuilder()
    c = b.const(np.zeros((2, 4), np.int8), Datatype.QCINT8, per_channel([1.0, 1.0], 0))
    b.g.values[c].datatype = Datatype.QDINT8
    b.g.values[c].quant = PerTokenDynamicQuant(1)
    x = b.input("x", [2, 4])
    y = b.output(b.value([2, 4]), "y")
    b.node("XNNCopy", input_id=x, output_id=y, flags=0)
    from webxnn.errors import WebxnnError

    with pytest.raises(WebxnnError):  # the writer or the loader refuses it
        b.build() and runtime.load(b.build())


def test_qdint8_is_not_moved_by_layout_nodes() -> None:
    """Its row parameters would not follow a reshape: only Convert makes and FullyConnected reads qdint8."""
    b = GraphBuilder()
    x = b.input("x", [2, 4])
    q = b.value([2, 4], Datatype.QDINT8, PerTokenDynamicQuant(num_nonbatch_dims=1))
    b.node("XNNConvert", input_id=x, output_id=q, flags=0)
    r = b.value([4, 2], Datatype.QDINT8, PerTokenDynamicQuant(num_nonbatch_dims=1))
    b.node("XNNStaticReshape", input_id=q, output_id=r, num_dims=2, new_shape=[4, 2], flags=0)
    w = b.const(np.ones((3, 2), np.int8), Datatype.QCINT8, per_channel([1.0] * 3, 0))
    y = b.output(b.value([4, 3]), "y")
    b.node("XNNFullyConnected", input1_id=r, filter_id=w, bias_id=0xFFFFFFFF, output_id=y, flags=0)
    with pytest.raises(UnsupportedError, match="only read by FullyConnected"):
        runtime.load(b.build())
