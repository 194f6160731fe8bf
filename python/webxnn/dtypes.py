"""WebNN's data types as webxnn stores them: the numpy dtype of each name, value ranges, size limits.

The bottom of the Python package (numpy only): the graph AST, constant data, the readers and the lowering
all take their dtype facts from here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "int8": np.dtype("i1"),
    "uint8": np.dtype("u1"),
    "int32": np.dtype("<i4"),
    "uint32": np.dtype("<u4"),
    "int64": np.dtype("<i8"),
    "uint64": np.dtype("<u8"),
    # int4/uint4 are stored one value per byte in `.weights` (webnn-graph's convention)
    "int4": np.dtype("i1"),
    "uint4": np.dtype("u1"),
}

INT_RANGES: dict[str, tuple[int, int]] = {
    "int4": (-8, 7),
    "uint4": (0, 15),
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
FLOAT_MAX = {"float32": float(np.finfo(np.float32).max), "float16": float(np.finfo(np.float16).max)}
MAX_DIM = 2**32 - 1
# The largest tensor a blob may declare: the runtime's kMaxTensorBytes (csrc/runtime/model.h).
MAX_TENSOR_BYTES = 1 << 40
# ... and the most elements one may hold, whatever its dtype: the runtime bounds every shape by
# kMaxTensorBytes / 8 elements (csrc/runtime/nodes/common.cc, set_out), so any dtype's bytes fit.
MAX_TENSOR_ELEMENTS = MAX_TENSOR_BYTES // 8
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def dtype_size(dtype: str) -> int:
    """Bytes per element in `.weights` / `@bytes` (int4/uint4: one byte per value, unpacked)."""
    return DTYPES[dtype].itemsize


def scalar_problem(dtype: str, value: Any) -> str | None:
    """Why `value` cannot fill a const of `dtype`, or None when it can."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"scalar value must be a number, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"scalar value {value!r} is not finite"
    if isinstance(value, int) and not I64_MIN <= value <= I64_MAX:
        # The DSL reads integers beyond i64 as doubles (as webnn-graph does), so such an int could not be
        # written and read back as itself.
        return (
            f"scalar value {value} is outside the 64-bit signed integer range; the DSL holds such "
            "numbers as doubles: give it as a float"
        )
    if dtype in INT_RANGES:
        if isinstance(value, float):
            if not value.is_integer():
                return f"scalar value {value!r} is not an integer, but the const is {dtype}"
            value = int(value)
        lo, hi = INT_RANGES[dtype]
        if not lo <= value <= hi:
            return f"scalar value {value} is out of range for {dtype} [{lo}, {hi}]"
    elif dtype in FLOAT_MAX and abs(float(value)) > FLOAT_MAX[dtype]:
        return f"scalar value {value!r} overflows {dtype} (max {FLOAT_MAX[dtype]:g})"
    return None
