"""Transposes fused into batch matmuls: attention's head split ([tokens, heads * dim] -> [heads, tokens, dim])
and merge run inside the BatchMatrixMultiply steps, which read and write at strides (kernels.h's MatStrides).

The kernel on numpy views (every table) and whole graphs (GraphBuilder) against numpy written here; the
graphs that must not fuse (partial broadcast, a transpose with two readers, A's columns not adjacent) run
their transposes and give the same answers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import load_testing_module
from test_runtime_util import GraphBuilder
from webxnn import runtime
from webxnn.errors import InputError
from webxnn.xnn.ir import FLAG_TRANSPOSE_B

K = load_testing_module().kernels
TABLES = ["scalar", "avx2", "best"]
SIZES = st.sampled_from([1, 2, 7, 17, 33])
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RNG = np.random.default_rng(2026)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def close(got: np.ndarray, want: np.ndarray, depth: int) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * depth + 1e-6)


def have(isa: str) -> bool:
    return isa in ("scalar", "best") or isa in K.tables()


# ---------------------------------------------------------------- the kernel on views


@SETTINGS
@given(
    tokens=SIZES,
    heads=st.sampled_from([1, 2, 3]),
    dim=SIZES,
    nk=st.booleans(),
    threads=st.sampled_from([1, 2]),
)
def test_products_read_and_write_head_slices_in_place(
    tokens: int, heads: int, dim: int, nk: bool, threads: int
) -> None:
    """Per head h, scores q[:, h] @ k[:, h]^T (nk: k read as [N, K]) or values p[:, h] @ v[:, h]; every
    operand and the output a [tokens, heads, ...] array read through np.swapaxes (rows a token apart, heads a
    head's width apart), as attention lays them out before its head split and after its merge."""
    a = np.swapaxes(rand(tokens, heads, dim if nk else tokens), 0, 1)  # q or p: [heads, tokens, K]
    b = np.swapaxes(rand(tokens, heads, dim), 0, 1)  # k: [heads, N, K]; v: [heads, K, N]
    n, depth = (tokens, dim) if nk else (dim, tokens)
    bt = np.swapaxes(b, 1, 2) if nk else b
    want = np.matmul(a.astype(np.float64), bt.astype(np.float64))
    for isa in filter(have, TABLES):
        out = np.full((tokens, heads, n), np.nan, np.float32)
        c = np.swapaxes(out, 0, 1)  # [heads, tokens, n] written where the head merge puts it
        K.batch_matmul_strided(a, b, c, b_is_nk=nk, isa=isa, threads=threads)
        close(c, want, depth)


def test_strided_and_dense_give_the_same_bytes() -> None:
    """The same products through views and through contiguous copies: the strides change where the kernel
    reads, not the sums it makes (every table, 1 and 2 threads)."""
    for nk in (False, True):
        a = np.swapaxes(rand(40, 4, 24 if nk else 40), 0, 1)
        b = np.swapaxes(rand(40, 4, 24), 0, 1)
        n = 40 if nk else 24
        for isa in filter(have, TABLES):
            for threads in (1, 2):
                dense = K.batch_matmul(
                    np.ascontiguousarray(a), np.ascontiguousarray(b), b_is_nk=nk, isa=isa, threads=threads
                )
                c = np.empty((4, 40, n), np.float32)
                K.batch_matmul_strided(a, b, c, b_is_nk=nk, isa=isa, threads=threads)
                assert c.tobytes() == dense.tobytes()


def test_strided_kernel_refuses_columns_apart() -> None:
    a = np.swapaxes(rand(3, 5, 4), 1, 2)  # columns 4 floats apart
    with pytest.raises(InputError, match="columns must be adjacent"):
        K.batch_matmul_strided(a, rand(3, 5, 2), np.empty((3, 4, 2), np.float32))


# ---------------------------------------------------------------- graphs


def _attention(
    tokens: int, heads: int, dim: int, k_perm: list[int], merge: bool, extra_reader: bool = False
) -> tuple[bytes, dict[str, np.ndarray], np.ndarray]:
    """x [1, T, H*D] -> reshape [1, T, H, D] -> transposes to q / k / v -> q @ k^T -> @ v -> (merge) -> y.
    k_perm (0, 2, 1, 3): k as [1, H, T, D] read with the transpose-B flag; (0, 2, 3, 1): k as [1, H, D, T]."""
    b = GraphBuilder()
    x = b.input("x", [1, tokens, heads * dim])
    r = b.value([1, tokens, heads, dim])
    b.node("XNNStaticReshape", new_shape=[1, tokens, heads, dim], input_id=x, output_id=r, flags=0)
    split = [0, 2, 1, 3]

    def transpose(perm: list[int]) -> int:
        v = b.value([[1, tokens, heads, dim][p] for p in perm])
        b.node("XNNStaticTranspose", perm=perm, num_dims=4, input_id=r, output_id=v, flags=0)
        return v

    q, k, v = transpose(split), transpose(k_perm), transpose(split)
    s = b.value([1, heads, tokens, tokens])
    nk = k_perm == split
    b.node(
        "XNNBatchMatrixMultiply", input1_id=q, input2_id=k, output_id=s, flags=FLAG_TRANSPOSE_B if nk else 0
    )
    o = b.value([1, heads, tokens, dim])
    b.node("XNNBatchMatrixMultiply", input1_id=s, input2_id=v, output_id=o, flags=0)
    if merge:
        y = b.output(b.value([1, tokens, heads, dim]), "y")
        b.node("XNNStaticTranspose", perm=split, num_dims=4, input_id=o, output_id=y, flags=0)
    else:
        b.output(o, "y")
    if extra_reader:  # a second reader of q: its transpose has to run
        b.node("XNNAbs", input_id=q, output_id=b.output(b.value([1, heads, tokens, dim]), "q_abs"), flags=0)
    xv = rand(1, tokens, heads * dim)
    x4 = xv.astype(np.float64).reshape(1, tokens, heads, dim).transpose(split)
    want = np.matmul(np.matmul(x4, np.swapaxes(x4, 2, 3)), x4)
    return b.build(), {"x": xv}, want.transpose(split) if merge else want


def _fused(p: runtime.Program, feeds: dict[str, np.ndarray]) -> tuple[list[str], int]:
    rows = p.profile(feeds, repeat=1)
    return [r["kind"] for r in rows if not r["aliased"]], sum(len(r["fused"]) for r in rows)


@pytest.mark.parametrize("k_perm", [[0, 2, 1, 3], [0, 2, 3, 1]])
@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(7, 3, 5), (17, 2, 16), (64, 4, 32)])
def test_attention_transposes_run_inside_the_products(
    k_perm: list[int], merge: bool, threads: int, shape: tuple[int, int, int]
) -> None:
    blob, feeds, want = _attention(*shape, k_perm=k_perm, merge=merge)
    p = runtime.load(blob, threads=threads)
    close(p.run(feeds)["y"], want, shape[0] * shape[2])
    kinds, fused = _fused(p, feeds)
    assert kinds == ["XNNBatchMatrixMultiply"] * 2  # no transpose step left
    assert fused == (4 if merge else 3)


def test_transpose_with_a_second_reader_runs() -> None:
    blob, feeds, want = _attention(7, 2, 5, k_perm=[0, 2, 1, 3], merge=True, extra_reader=True)
    p = runtime.load(blob, threads=2)
    out = p.run(feeds)
    close(out["y"], want, 35)
    kinds, _ = _fused(p, feeds)
    assert kinds.count("XNNStaticTranspose") == 1  # q's; k's, v's and the merge ran inside the products


def test_a_partially_broadcast_operand_keeps_its_transpose() -> None:
    """[2, 1, M, K] x [2, 3, K, N]: one batch stride cannot say "the same A for 3 products, then the next", so
    the transpose making B runs and the product reads dense operands."""
    b = GraphBuilder()
    a = b.input("a", [2, 1, 4, 5])
    x = b.input("x", [2, 5, 3, 6])
    bt = b.value([2, 3, 5, 6])
    b.node("XNNStaticTranspose", perm=[0, 2, 1, 3], num_dims=4, input_id=x, output_id=bt, flags=0)
    y = b.output(b.value([2, 3, 4, 6]), "y")
    b.node("XNNBatchMatrixMultiply", input1_id=a, input2_id=bt, output_id=y, flags=0)
    av, xv = rand(2, 1, 4, 5), rand(2, 5, 3, 6)
    p = runtime.load(b.build(), threads=2)
    close(p.run({"a": av, "x": xv})["y"], np.matmul(av.astype(np.float64), xv.transpose(0, 2, 1, 3)), 5)
    assert _fused(p, {"a": av, "x": xv})[0] == ["XNNStaticTranspose", "XNNBatchMatrixMultiply"]


def test_a_transpose_moving_a_columns_runs() -> None:
    """A = x^T per batch: its columns are not adjacent in x, so the transpose runs (B's would be read as
    [N, K])."""
    b = GraphBuilder()
    x = b.input("x", [3, 5, 4])
    at = b.value([3, 4, 5])
    b.node("XNNStaticTranspose", perm=[0, 2, 1], num_dims=3, input_id=x, output_id=at, flags=0)
    w = b.input("w", [3, 5, 2])
    y = b.output(b.value([3, 4, 2]), "y")
    b.node("XNNBatchMatrixMultiply", input1_id=at, input2_id=w, output_id=y, flags=0)
    xv, wv = rand(3, 5, 4), rand(3, 5, 2)
    p = runtime.load(b.build(), threads=1)
    close(p.run({"x": xv, "w": wv})["y"], np.matmul(xv.transpose(0, 2, 1).astype(np.float64), wv), 5)
    assert _fused(p, {"x": xv, "w": wv})[0] == ["XNNStaticTranspose", "XNNBatchMatrixMultiply"]
