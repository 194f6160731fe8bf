"""How WPT's WebNN conformance tests decide that an output is right, as plain numpy functions.

The rules (../shared/conformance/README.md):
- ULP, float32: distance between the bit patterns read as sign-magnitude integers; pass if <= value.
- ULP, float16: the output's raw fp16 bits; the expected number converted to fp16 by WPT's `toHalf`
  (round to float32, then round half *up* on the dropped mantissa bit); distance between the uint16
  patterns; +0 and -0 are equal.
- Integer types: absolute difference (exact, also beyond 2^53 for int64/uint64).
- ATOL: |actual - expected| <= value.
- Expected `data` that is one number for a shape with many elements is a fill value: check the first 1000.

NaN is not in the data; we still define it so that a NaN never passes for a number: NaN vs NaN is distance 0,
NaN vs anything else is `FAR` (never within tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import DTYPES

FAR = np.iinfo(np.int64).max  # the distance of a NaN from a number: fails any tolerance
FILL_CHECKED = 1000  # WPT checks only the first 1000 elements of a fill-valued expectation
FLOAT_TYPES = ("float32", "float16")


def f32_ordered(x: np.ndarray) -> np.ndarray:
    """float32 values → their bit patterns as sign-magnitude integers (int64): +0 and -0 both map to 0, and
    consecutive floats map to consecutive integers across the whole line."""
    bits = np.asarray(x, dtype=np.float32, order="C").view(np.uint32).astype(np.int64)
    mag = bits & 0x7FFFFFFF
    return np.where(bits >> 31 != 0, -mag, mag)


def ulp_distance_f32(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Per-element ULP distance of float32 `actual` from `expected` (any float dtype: rounded to float32 the
    way a JS Float32Array store rounds, i.e. to nearest even)."""
    a = np.asarray(actual, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.asarray(expected).astype(np.float32)
    d = np.abs(f32_ordered(a) - f32_ordered(e))
    an, en = np.isnan(a), np.isnan(e)
    return np.where(an & en, 0, np.where(an | en, FAR, d))


def to_half_bits(values: np.ndarray) -> np.ndarray:
    """WPT's `toHalf`: each number → float32 → fp16 bit pattern (uint16), rounding half up on the first
    dropped bit (not to even), flushing magnitudes below 2^-24 to a signed zero. Values too big for
    fp16 become ±inf and NaN stays NaN (the JS helper garbles both; neither occurs in the data)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.asarray(values).astype(np.float32)
    x = np.asarray(f, order="C").view(np.uint32).astype(np.int64)
    sign = (x >> 16) & 0x8000
    m = (x >> 12) & 0x7FF  # the 10 kept mantissa bits and one more for rounding
    e = (x >> 23) & 0xFF
    # fp16 subnormal: shift the mantissa (with its implicit 1) right by how far below 2^-14 it is
    sub_m = m | 0x800
    sub_shift = np.clip(114 - e, 0, 62)
    sub = sign | ((sub_m >> sub_shift) + ((sub_m >> np.clip(sub_shift - 1, 0, 62)) & 1))
    # normal: re-bias the exponent; a rounding carry may spill into the exponent (up to inf) as it should
    normal = (sign | ((e - 112) << 10) | (m >> 1)) + (m & 1)
    out = np.where(e < 103, sign, np.where(e < 113, sub, np.where(e <= 142, normal, sign | 0x7C00)))
    out = np.where(np.isnan(f), 0x7E00, out)
    return out.astype(np.uint16)


def ulp_distance_f16(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Per-element distance between float16 `actual` (its raw bits) and `expected` numbers converted by
    `to_half_bits`, on the uint16 patterns; +0 vs -0 is 0."""
    a = np.asarray(actual, dtype=np.float16, order="C").view(np.uint16).astype(np.int64)
    e = to_half_bits(expected).astype(np.int64)
    d = np.abs(a - e)
    zeros = ((a == 0) | (a == 0x8000)) & ((e == 0) | (e == 0x8000))
    an = ((a & 0x7C00) == 0x7C00) & ((a & 0x03FF) != 0)
    en = ((e & 0x7C00) == 0x7C00) & ((e & 0x03FF) != 0)
    d = np.where(zeros, 0, d)
    return np.where(an & en, 0, np.where(an | en, FAR, d))


def int_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Exact |actual - expected| for integer arrays of any width, as uint64 (int64/uint64 values beyond 2^53
    included: the subtraction is done modulo 2^64 and the smaller side is subtracted from the larger)."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    a_neg = a < 0 if a.dtype.kind == "i" else np.zeros(a.shape, bool)
    e_neg = e < 0 if e.dtype.kind == "i" else np.zeros(e.shape, bool)
    au, eu = a.astype(np.uint64), e.astype(np.uint64)  # two's complement wrap for negatives
    # a >= e, judged on the true values: signs first, then the (wrapped) patterns within the same sign
    a_ge = np.where(a_neg != e_neg, e_neg, au >= eu)
    return np.where(a_ge, au - eu, eu - au)


def atol_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|actual - expected| in float64 (NaN vs NaN is 0, NaN vs a number is inf)."""
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(a - e)
    an, en = np.isnan(a), np.isnan(e)
    return np.where(an & en, 0.0, np.where(an | en, np.inf, d))


def expected_values(desc: dict[str, Any]) -> tuple[np.ndarray, bool]:
    """An expected-output descriptor's numbers, flat, and whether they are a fill value. Float types keep the
    JSON numbers as float64 (each rule rounds them itself); integer types are exact in their own dtype. A fill
    value is repeated for the first `FILL_CHECKED` elements (or all, if fewer)."""
    dtype = DTYPES[desc["dataType"]]
    n = int(np.prod(desc["shape"], dtype=np.int64))
    data = desc["data"]
    fill = not isinstance(data, list) or (len(data) == 1 and n != 1)
    if not isinstance(data, list):
        data = [data]
    kind = np.float64 if desc["dataType"] in FLOAT_TYPES else dtype
    arr = np.asarray(data, dtype=kind).reshape(-1)
    if fill:
        arr = np.full(min(n, FILL_CHECKED), arr[0], dtype=kind)
    return arr, fill


@dataclass
class Comparison:
    """The outcome of comparing one output. `distance` is the worst per-element distance seen (ULP count,
    integer difference or absolute error, per `kind`); `first_bad` the flat index of the first element beyond
    the tolerance (None if all pass), with `got` and `want` there."""

    ok: bool
    kind: str  # "ULP-f32" | "ULP-f16" | "INT" | "ATOL"
    tolerance: float
    distance: float = 0.0
    checked: int = 0
    fill: bool = False
    first_bad: int | None = None
    got: Any = None
    want: Any = None
    shape: tuple[int, ...] = ()
    problem: str = ""  # dtype/shape mismatch, when the values could not be compared at all
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        if self.problem:
            return self.problem
        if self.ok:
            return f"ok ({self.kind} max {self.distance:g} <= {self.tolerance:g})"
        fill = " (fill value)" if self.fill else ""
        where = self.first_bad
        if self.shape and not self.fill:
            where = list(np.unravel_index(self.first_bad, self.shape))  # type: ignore[arg-type]
            where = [int(w) for w in where]
        bad = self.extra.get("bad_count", 1)
        return (
            f"element {where}{fill} (1st of {bad} bad of {self.checked}): got {self.got!r}, "
            f"expected {self.want!r}, {self.kind} "
            f"distance {self.distance_at_first:g} > {self.tolerance:g}"
        )

    @property
    def distance_at_first(self) -> float:
        return float(self.extra.get("first_distance", self.distance))


def _scalar(x: Any) -> Any:
    v = x.item() if hasattr(x, "item") else x
    return v


def compare(actual: np.ndarray, desc: dict[str, Any], tolerance: dict[str, Any] | None) -> Comparison:
    """Compare one output array with its expected descriptor under the case's tolerance (default ULP 0)."""
    tol = tolerance or {"kind": "ULP", "value": 0}
    tkind = str(tol.get("kind", "ULP")).upper()
    tval = tol.get("value", 0) or 0
    dtype_name = desc["dataType"]
    want_dtype = DTYPES[dtype_name]
    shape = [int(s) for s in desc["shape"]]
    actual = np.asarray(actual)
    is_float = dtype_name in FLOAT_TYPES
    kind = (
        "ATOL"
        if tkind == "ATOL"
        else ("ULP-f32" if dtype_name == "float32" else "ULP-f16" if dtype_name == "float16" else "INT")
    )
    if actual.dtype != want_dtype:
        return Comparison(False, kind, tval, problem=f"dtype {actual.dtype} != expected {dtype_name}")
    if list(actual.shape) != shape:
        return Comparison(False, kind, tval, problem=f"shape {list(actual.shape)} != expected {shape}")
    want, fill = expected_values(desc)
    got = actual.reshape(-1)[: want.size]
    if got.size != want.size:
        return Comparison(
            False,
            kind,
            tval,
            problem=f"expected data has {want.size} values for shape {shape} ({got.size} elements)",
        )
    if kind == "ATOL":
        dist = atol_distance(got, want) if is_float else int_distance(got, want).astype(np.float64)
    elif kind == "ULP-f32":
        dist = ulp_distance_f32(got, want)
    elif kind == "ULP-f16":
        dist = ulp_distance_f16(got, want)
    else:
        dist = int_distance(got, want)
    bad = np.flatnonzero(dist > tval)
    worst = float(dist.max()) if dist.size else 0.0
    c = Comparison(
        bad.size == 0, kind, float(tval), distance=worst, checked=int(got.size), fill=fill, shape=tuple(shape)
    )
    if bad.size:
        i = int(bad[0])
        c.first_bad, c.got, c.want = i, _scalar(got[i]), _scalar(want[i])
        c.extra["first_distance"] = float(dist[i])
        c.extra["bad_count"] = int(bad.size)
    return c


__all__ = [
    "FAR",
    "FILL_CHECKED",
    "f32_ordered",
    "ulp_distance_f32",
    "to_half_bits",
    "ulp_distance_f16",
    "int_distance",
    "atol_distance",
    "expected_values",
    "Comparison",
    "compare",
]
