"""Shape helpers against straightforward definitions (window counting, numpy broadcasting)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from webxnn.errors import ValidationError
from webxnn.ops import auto_pad, auto_pad_transpose, conv_out_size, conv_transpose_out_size, pool_out_size
from webxnn.ops.shapes import broadcast_shapes

sizes = st.integers(1, 40)
small = st.integers(1, 5)


def windows(size: int, k: int, stride: int, dil: int, pb: int, pe: int) -> int:
    """How many dilated windows fit the padded input, counted one by one."""
    padded = size + pb + pe
    return sum(1 for start in range(0, padded, stride) if start + dil * (k - 1) < padded)


@given(sizes, small, small, small, st.integers(0, 4), st.integers(0, 4))
def test_conv_out_size_counts_windows(size: int, k: int, s: int, d: int, pb: int, pe: int) -> None:
    n = windows(size, k, s, d, pb, pe)
    if n > 0:
        assert conv_out_size(size, k, s, d, pb, pe) == n


@given(sizes, small, small, small, st.integers(0, 4), st.integers(0, 4))
def test_pool_out_size_matches_spec_formula(size: int, k: int, s: int, d: int, pb: int, pe: int) -> None:
    eff = d * (k - 1) + 1
    if size + pb + pe < eff:
        return
    frac = Fraction(size + pb + pe - eff, s)
    assert pool_out_size(size, k, s, d, pb, pe, ceil=False) == math.floor(frac) + 1
    assert pool_out_size(size, k, s, d, pb, pe, ceil=True) == math.ceil(frac) + 1


@given(sizes, small, small, small, st.booleans())
def test_auto_pad_against_brute_force(size: int, k: int, s: int, d: int, upper: bool) -> None:
    want_out = math.ceil(size / s)
    # the smallest total padding that gives ceil(size / stride) windows
    total = next(p for p in range(0, 4 * (size + k * d)) if windows(size, k, s, d, 0, p) >= want_out)
    begin, end = auto_pad(size, k, s, d, upper)
    assert begin + end == total
    assert windows(size, k, s, d, begin, end) == want_out
    half, rest = total // 2, total - total // 2
    assert (begin, end) == ((half, rest) if upper else (rest, half))


@given(sizes, small, small, small, st.integers(0, 4))
def test_conv_transpose_out_size_by_scatter(size: int, k: int, s: int, d: int, op: int) -> None:
    # the furthest output element any input element touches, +1, is the unpadded output size
    full = max(i * s + j * d for i in range(size) for j in range(k)) + 1
    assert conv_transpose_out_size(size, k, s, d, 0, 0, 0) == full
    assert conv_transpose_out_size(size, k, s, d, 1, 2, op) == full - 3 + op


@given(sizes, small, small, small, st.booleans())
def test_auto_pad_transpose_gives_size_times_stride(size: int, k: int, s: int, d: int, upper: bool) -> None:
    b, e = auto_pad_transpose(size, k, s, d, 0, upper)
    out = conv_transpose_out_size(size, k, s, d, b, e, 0)
    full = conv_transpose_out_size(size, k, s, d, 0, 0, 0)
    # "same" means an output of size*stride; a short kernel cannot reach it, and padding is never negative
    assert out == size * s if full >= size * s else (b, e) == (0, 0)
    assert abs(b - e) <= 1 and ((e >= b) if upper else (b >= e))


shape = st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=4)


@given(shape, shape)
def test_broadcast_matches_numpy(a: list[int], b: list[int]) -> None:
    try:
        want = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        with pytest.raises(ValidationError, match="not broadcastable"):
            broadcast_shapes(a, b)
        return
    assert broadcast_shapes(a, b) == tuple(want)
