"""The int8 GEMM kernels (kernels.qgemm) against an integer numpy reference written here.

Every case: the scalar, AVX2 and VNNI kernels (vnni-emu where the CPU has no VNNI) give the reference's bits
exactly (table.def's contract says what is computed in fp32); 1 and 2 threads give the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import int8_isas, load_testing_module
from webxnn.errors import InputError

Q = load_testing_module().kernels
HAVE_AVX2 = bool(Q.cpu_info()["avx2"])
ISAS = int8_isas(Q)  # scalar, avx2, and the VNNI tables this build and CPU run (vnni-emu in testing builds)
RANGE = {"uint8": (0, 255), "int8": (-128, 127)}
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference(
    a: np.ndarray,
    b_nk: np.ndarray,
    bias: np.ndarray | None,
    w_scales: np.ndarray,
    a_scale: float,
    a_zp: int,
    out_scale: float,
    out_zp: int,
    out_dtype: str,
    out_min: int,
    out_max: int,
) -> np.ndarray:
    """qgemm's formula (table.def): exact sums (wrapping as int32), fp32 scale, round half even, clamp."""
    acc = (a.astype(np.int64) - a_zp) @ b_nk.astype(np.int64).T
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    return requantize(acc, w_scales, a_scale, out_scale, out_zp, out_dtype, out_min, out_max)


def requantize(acc, w_scales, a_scale, out_scale, out_zp, out_dtype, out_min, out_max) -> np.ndarray:
    """table.def's requantization of exact sums [..., N] (wrapping as int32): fp32 scale, round half even,
    clamp (NaN: the low bound)."""
    acc = ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
    scale = np.float32(a_scale) * w_scales.astype(np.float32) / np.float32(out_scale)
    assert scale.dtype == np.float32
    v = acc.astype(np.float32) * scale
    tmin, tmax = RANGE[out_dtype]
    lo, hi = max(out_min, tmin), min(out_max, tmax)
    y = np.rint(v).astype(np.float64) + out_zp
    y = np.where(np.isnan(v), lo, y)
    y = np.minimum(np.maximum(y, lo), hi)
    return y.astype(out_dtype)


def case(
    m: int,
    n: int,
    k: int,
    a_dtype: str = "uint8",
    out_dtype: str = "int8",
    a_zp: int | None = None,
    out_zp: int = 0,
    per_channel: bool = True,
    seed: int = 0,
    w_lo: int = -127,
    w_hi: int = 127,
    out_scale: float | None = None,
    has_bias: bool = True,
) -> dict:
    rng = np.random.default_rng(seed)
    lo, hi = RANGE[a_dtype]
    a = rng.integers(lo, hi + 1, (m, k)).astype(a_dtype)
    b = rng.integers(w_lo, w_hi + 1, (n, k)).astype(np.int8)
    bias = rng.integers(-5000, 5000, n).astype(np.int32) if has_bias else None
    w_scales = rng.uniform(0.002, 0.02, n if per_channel else 1).astype(np.float32)
    if a_zp is None:
        a_zp = int(rng.integers(lo, hi + 1))
    # An output scale that puts the typical sum near the output range, so some outputs saturate.
    typical = 0.05 * 0.01 * 64.0 * np.sqrt(max(k, 1)) * 3
    return dict(
        A=a,
        B=b,
        bias=bias,
        w_scales=w_scales,
        a_scale=0.05,
        a_zero_point=a_zp,
        out_scale=out_scale if out_scale is not None else typical / 100,
        out_zero_point=out_zp,
        out_dtype=out_dtype,
    )


def want_of(c: dict, out_min: int = -1024, out_max: int = 1024) -> np.ndarray:
    return reference(
        c["A"],
        c["B"],
        c["bias"],
        c["w_scales"],
        c["a_scale"],
        c["a_zero_point"],
        c["out_scale"],
        c["out_zero_point"],
        c["out_dtype"],
        out_min,
        out_max,
    )


def check(c: dict, out_min: int = -1024, out_max: int = 1024, threads: tuple[int, ...] = (1,)) -> np.ndarray:
    want = want_of(c, out_min, out_max)
    for isa in ISAS:
        for t in threads:
            got = Q.qgemm(**c, out_min=out_min, out_max=out_max, isa=isa, threads=t)
            assert got.dtype == want.dtype
            bad = np.argwhere(got != want)
            assert bad.size == 0, (isa, t, bad[:5], got[tuple(bad[0])], want[tuple(bad[0])])
    return want


SHAPES = [
    (1, 1, 1),
    (1, 7, 17),
    (1, 17, 63),
    (1, 64, 64),
    (1, 65, 257),
    (1, 130, 65),
    (2, 16, 4),
    (3, 17, 7),
    (4, 16, 64),
    (5, 33, 65),
    (7, 63, 17),
    (17, 65, 63),
    (64, 64, 64),
    (65, 7, 257),
    (9, 1, 3),
    (6, 48, 2),
]


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize(
    "a_dtype,out_dtype", [("uint8", "int8"), ("int8", "uint8"), ("uint8", "uint8"), ("int8", "int8")]
)
def test_shapes_and_types(m, n, k, a_dtype, out_dtype):
    out_zp = 128 if out_dtype == "uint8" else 0
    check(case(m, n, k, a_dtype, out_dtype, out_zp=out_zp, seed=m * 1000 + n * 10 + k))


@pytest.mark.parametrize(
    "a_dtype,a_zp", [("uint8", 0), ("uint8", 255), ("uint8", 128), ("int8", -128), ("int8", 127), ("int8", 0)]
)
@pytest.mark.parametrize("out_dtype,out_zp", [("uint8", 0), ("uint8", 255), ("int8", -128), ("int8", 127)])
def test_extreme_zero_points(a_dtype, a_zp, out_dtype, out_zp):
    check(case(13, 40, 67, a_dtype, out_dtype, a_zp=a_zp, out_zp=out_zp, seed=abs(a_zp + 7 * out_zp)))


@pytest.mark.parametrize("out_dtype", ["uint8", "int8"])
def test_saturation_at_both_ends(out_dtype):
    c = case(9, 35, 70, "uint8", out_dtype, out_zp=100 if out_dtype == "uint8" else 0, out_scale=1e-4)
    want = check(c)
    lo, hi = RANGE[out_dtype]
    assert (want == lo).sum() > 10 and (want == hi).sum() > 10


@pytest.mark.parametrize(
    "out_min,out_max", [(0, 127), (-20, 30), (5, 5), (40, -40), (-1000, 1000), (100, 300)]
)
@pytest.mark.parametrize("out_dtype,out_zp", [("int8", 3), ("uint8", 130)])
def test_clamp_ranges(out_min, out_max, out_dtype, out_zp):
    if out_max < RANGE[out_dtype][0]:
        # Known: the scalar kernel / numpy reference give uint8(out_max) (wrapped), AVX2 the type's low end.
        pytest.skip("out_max below the output type's range")
    c = case(6, 24, 33, "int8", out_dtype, out_zp=out_zp)
    want = check(c, out_min, out_max)
    tlo, thi = RANGE[out_dtype]
    lo, hi = max(out_min, tlo), min(out_max, thi)
    assert want.max() <= max(hi, lo) and (lo > hi or want.min() >= lo)


@pytest.mark.parametrize("out_dtype", ["int8", "uint8"])
def test_infinite_and_huge_scales(out_dtype):
    """Sums times an inf / huge scale (hostile) saturate like any large value; 0 * inf is NaN: the low end."""
    c = case(5, 18, 40, "uint8", out_dtype)
    c["w_scales"][:4] = [np.inf, -np.inf, 1e30, -1e30]
    c["bias"][:4] = [5, 5, -7, 0]
    check(c, -1000, 1000)
    check(c, -10, 20)


def test_per_tensor_scale_and_no_bias():
    check(case(11, 37, 45, per_channel=False, has_bias=False))


@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
@pytest.mark.parametrize("m,n,k", [(1, 70, 129), (5, 17, 65), (2, 16, 4), (7, 33, 3)])
def test_min_weight_takes_the_exact_path(a_dtype, m, n, k):
    c = case(m, n, k, a_dtype, "int8", w_lo=-128, seed=k)
    c["B"][0, :] = -128  # at least one -128: the 16-bit path
    check(c)


@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
@pytest.mark.parametrize("m,n,k", [(1, 70, 129), (5, 40, 65), (2, 32, 4), (7, 33, 3)])
def test_small_weights_take_the_u8_path(a_dtype, m, n, k):
    """|w| <= 64 everywhere: plain vpmaddubsw on u8 activations (s8 ones shifted by +128)."""
    c = case(m, n, k, a_dtype, "int8", w_lo=-64, w_hi=64, seed=k)
    c["B"][0, :] = 64
    c["B"][1, :] = -64
    check(c, threads=(1, 2))


@pytest.mark.parametrize("a_dtype,a_value", [("uint8", 0), ("uint8", 255), ("int8", -128), ("int8", 127)])
@pytest.mark.parametrize("w_value", [-128, -127, -65, -64, 64, 65, 127])
def test_worst_case_pairs(a_dtype, a_value, w_value):
    """Every pair at the largest magnitude vpmaddubsw could see: the sums must stay exact."""
    c = case(5, 20, 64, a_dtype, "int8", a_zp=0 if a_dtype == "int8" else 128, out_scale=2.0)
    c["A"][:] = a_value
    c["B"][:] = w_value
    c["B"][3, ::2] = -w_value if w_value != -128 else 127
    c["B"][4, :] = abs(w_value) if abs(w_value) < 128 else 127
    check(c)


def test_threads_give_the_same_bytes():
    for m, n, k in [(64, 96, 128), (1, 512, 1024), (200, 40, 300), (3, 256, 700)]:
        check(case(m, n, k), threads=(1, 2, 3))
        c = case(m, n, k, w_lo=-128)
        c["B"][1, 1] = -128
        check(c, threads=(1, 2))


# The K blocks (qgemm_tiles.h, tile_strip): strips of two panels (N > 16) block past 768 k in blocks
# of at most 512 k, a lone 16-column panel past 1536 k in blocks of at most 1024; more than 24 tiles of a
# strip share a block in groups. K at the block edges (odd K: a partial last row group), row counts with a
# remainder tile, tile groups (M > 48 for 2-row tiles, > 96 for 4-row ones), both activation paths.
@pytest.mark.parametrize(
    "m,n,k",
    [
        (4, 32, 768),
        (4, 32, 769),
        (5, 40, 1023),
        (6, 32, 1024),
        (7, 33, 1025),
        (51, 48, 1537),
        (9, 16, 1537),
        (101, 16, 2049),
        (13, 17, 2047),
        (2, 64, 3001),
    ],
)
@pytest.mark.parametrize("a_dtype,w_bound", [("uint8", 127), ("int8", 127), ("uint8", 64)])
def test_long_k_blocks(m, n, k, a_dtype, w_bound):
    check(case(m, n, k, a_dtype, seed=m + n + k, w_lo=-w_bound, w_hi=w_bound), threads=(1, 2))


def test_strides_transposed_b_and_untouched_padding():
    c = case(9, 21, 37, "uint8", "uint8", out_zp=10)
    want = want_of(c)
    a_wide = np.full((9, 37 + 11), 77, np.uint8)
    a_wide[:, :37] = c["A"]
    for isa in ISAS:
        args = dict(c, A=a_wide, B=np.ascontiguousarray(c["B"].T))
        got = Q.qgemm(**args, b_is_nk=False, k=37, ldc=21 + 5, fill=0xA5, isa=isa, threads=2)
        np.testing.assert_array_equal(got[:, :21], want)
        assert (got[:, 21:] == 0xA5).all()


def test_k_zero_gives_requantized_bias():
    c = case(3, 18, 0)
    c["A"] = np.zeros((3, 4), np.uint8)
    want = reference(
        c["A"][:, :0],
        c["B"],
        c["bias"],
        c["w_scales"],
        c["a_scale"],
        c["a_zero_point"],
        c["out_scale"],
        c["out_zero_point"],
        "int8",
        -1024,
        1024,
    )
    for isa in ISAS:
        np.testing.assert_array_equal(Q.qgemm(**c, k=0, isa=isa), want)


def test_int32_wraparound_and_nan_scale():
    c = case(4, 20, 65)
    c["bias"][:] = 2**31 - 1  # the sums wrap modulo 2^32, like the int32 accumulators
    c["w_scales"][3] = np.nan  # hostile: NaN requantizes to the clamp's low end
    want = check(c, -100, 100)
    assert (want[:, 3] == -100).all()


@SETTINGS
@given(
    m=st.integers(1, 20),
    n=st.integers(1, 40),
    k=st.integers(0, 80),
    a_u8=st.booleans(),
    out_u8=st.booleans(),
    per_channel=st.booleans(),
    zp_seed=st.integers(0, 10**6),
    w_bound=st.sampled_from([64, 127, 128]),
)
def test_property_shapes(m, n, k, a_u8, out_u8, per_channel, zp_seed, w_bound):
    a_dtype, out_dtype = ("uint8" if a_u8 else "int8"), ("uint8" if out_u8 else "int8")
    rng = np.random.default_rng(zp_seed)
    out_zp = int(rng.integers(*RANGE[out_dtype]))
    c = case(
        m,
        n,
        k,
        a_dtype,
        out_dtype,
        out_zp=out_zp,
        per_channel=per_channel,
        seed=zp_seed,
        w_lo=-w_bound,
        w_hi=min(w_bound, 127),
    )
    if k == 0:
        c["A"] = np.zeros((m, 4), c["A"].dtype)
        want = want_of(dict(c, A=c["A"][:, :0]))
        for isa in ISAS:
            np.testing.assert_array_equal(Q.qgemm(**c, k=0, isa=isa), want)
        return
    check(c, threads=(1, 2))


def test_bad_arguments():
    c = case(2, 3, 4)
    with pytest.raises(InputError, match="uint8 or int8"):
        Q.qgemm(**dict(c, A=c["A"].astype(np.int16)))
    with pytest.raises(InputError, match="w_scales"):
        Q.qgemm(**dict(c, w_scales=np.ones(2, np.float32)))
