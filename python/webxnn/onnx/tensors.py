"""ONNX tensors ↔ numpy, and ONNX element types ↔ WebNN dtypes.

Initializers can be large: raw data is viewed with `np.frombuffer` (no second copy) and external data is
memory-mapped from the file next to the model rather than read into the protobuf.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UnsupportedError, WeightsError

# ONNX TensorProto.DataType numbers (stable across onnx versions)
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, BFLOAT16 = 10, 11, 12, 13, 16

NP_OF_ONNX: dict[int, np.dtype] = {
    FLOAT: np.dtype("<f4"),
    UINT8: np.dtype("u1"),
    INT8: np.dtype("i1"),
    UINT16: np.dtype("<u2"),
    INT16: np.dtype("<i2"),
    INT32: np.dtype("<i4"),
    INT64: np.dtype("<i8"),
    BOOL: np.dtype("bool"),
    FLOAT16: np.dtype("<f2"),
    DOUBLE: np.dtype("<f8"),
    UINT32: np.dtype("<u4"),
    UINT64: np.dtype("<u8"),
}

# ONNX element type → WebNN dtype of a graph value. bool is uint8 in WebNN (0/1).
WEBNN_OF_ONNX: dict[int, str] = {
    FLOAT: "float32",
    FLOAT16: "float16",
    INT8: "int8",
    UINT8: "uint8",
    INT32: "int32",
    UINT32: "uint32",
    INT64: "int64",
    UINT64: "uint64",
    BOOL: "uint8",
}

ONNX_TYPE_NAMES = {
    1: "float",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "double",
    12: "uint32",
    13: "uint64",
    16: "bfloat16",
}


def webnn_dtype(elem_type: int, where: str) -> str:
    dt = WEBNN_OF_ONNX.get(elem_type)
    if dt is None:
        from .refusals import type_reason

        why = type_reason(elem_type)
        if why:
            raise UnsupportedError(f"{where}: {why}")
        name = ONNX_TYPE_NAMES.get(elem_type, str(elem_type))
        raise UnsupportedError(f"{where}: element type {name} has no WebNN equivalent")
    return dt


def webnn_dtype_of_array(a: np.ndarray) -> str | None:
    return {
        "f4": "float32",
        "f2": "float16",
        "i1": "int8",
        "u1": "uint8",
        "i4": "int32",
        "u4": "uint32",
        "i8": "int64",
        "u8": "uint64",
        "b1": "uint8",
    }.get(f"{a.dtype.kind}{a.dtype.itemsize}")


def as_webnn_array(a: np.ndarray) -> np.ndarray:
    """`a` in a dtype WebNN has: bool → uint8, float64 → float32, int16/uint16 → int32 (constants only)."""
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    if a.dtype in (np.int16, np.uint16):
        return a.astype(np.int32)
    if webnn_dtype_of_array(a) is None:
        raise UnsupportedError(f"constant of dtype {a.dtype} has no WebNN equivalent")
    return a


def _field_int(t: Any, info: dict[str, str], key: str, default: int) -> int:
    """A non-negative integer external_data field (`offset`, `length`) of initializer `t`."""
    raw = info.get(key)
    if raw is None or raw == "":
        return default
    if not raw.isascii() or not raw.isdigit():
        raise WeightsError(
            f"initializer {t.name!r}: external data {key} {raw!r} is not a non-negative integer"
        )
    return int(raw)


def external_path(t: Any, base: Path | None, location: str) -> Path:
    """The file an initializer's external data `location` names, confined to the model's folder `base`
    (as onnxruntime does): no absolute path, no `..` and no symlink leading out of it."""
    if base is None:
        raise WeightsError(f"initializer {t.name!r}: external data, but the model was not loaded from a file")
    if not location or "\0" in location:
        raise WeightsError(f"initializer {t.name!r}: external data location {location!r} is not a file name")
    rel = Path(location)
    if rel.is_absolute() or rel.drive or ".." in rel.parts or location.startswith(("/", "\\")):
        raise WeightsError(
            f"initializer {t.name!r}: external data location {location!r} is outside the model's folder "
            "(it must be a relative path without '..')"
        )
    root = base.resolve()
    try:
        path = (root / rel).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # a symlink loop, an unencodable name
        raise WeightsError(f"initializer {t.name!r}: external data location {location!r}: {e}") from None
    if not path.is_relative_to(root):
        raise WeightsError(
            f"initializer {t.name!r}: external data location {location!r} leads outside the model's folder "
            f"(to {path}, through a symlink)"
        )
    try:
        found = path.is_file()
    except OSError as e:  # a name too long for the file system, ...
        raise WeightsError(f"initializer {t.name!r}: external data location {location!r}: {e}") from None
    if not found:
        raise WeightsError(
            f"initializer {t.name!r}: external data file {location!r} not found beside the model"
        )
    return path


def _external(t: Any, base: Path | None, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    info = {e.key: e.value for e in t.external_data}
    path = external_path(t, base, info.get("location", ""))
    offset = _field_int(t, info, "offset", 0)
    count = numel(t, shape)
    length = _field_int(t, info, "length", count * dt.itemsize)
    size = os.path.getsize(path)
    if length != count * dt.itemsize or offset > size or length > size - offset:
        raise WeightsError(
            f"initializer {t.name!r}: external data {info.get('location')!r} offset {offset} length {length} "
            f"does not hold {dt}{list(shape)} ({count * dt.itemsize} bytes; the file has {size})"
        )
    if count == 0:
        return np.zeros(shape, dt)
    return np.memmap(path, dtype=dt, mode="r", offset=offset, shape=shape)


def numel(t: Any, shape: tuple[int, ...]) -> int:
    """The element count of `shape`; a negative dim is an error naming the initializer."""
    if any(d < 0 for d in shape):
        raise WeightsError(f"initializer {t.name!r}: negative dim in {list(shape)}")
    n = 1
    for d in shape:
        n *= d
    return n


def to_array(t: Any, base: Path | None = None) -> np.ndarray:
    """A TensorProto as an ndarray (read-only views where possible)."""
    from onnx import numpy_helper

    shape = tuple(int(d) for d in t.dims)
    dt = NP_OF_ONNX.get(t.data_type)
    if t.data_location == 1:  # TensorProto.EXTERNAL
        if dt is None:
            raise UnsupportedError(
                f"initializer {t.name!r}: external data of type "
                f"{ONNX_TYPE_NAMES.get(t.data_type, t.data_type)}"
            )
        return _external(t, base, dt, shape)
    count = numel(t, shape)
    if dt is not None and t.raw_data and dt != np.bool_:
        if len(t.raw_data) != count * dt.itemsize:
            raise WeightsError(
                f"initializer {t.name!r}: raw_data holds {len(t.raw_data)} bytes, but {dt}{list(shape)} "
                f"needs {count * dt.itemsize}"
            )
        return np.frombuffer(t.raw_data, dtype=dt).reshape(shape)
    try:
        arr = numpy_helper.to_array(t)
    except Exception as e:  # an odd or corrupt tensor: say which one
        raise WeightsError(f"initializer {t.name!r}: cannot decode ({e})") from None
    if arr.shape != shape:  # typed data fields (float_data, ...) of the wrong length
        raise WeightsError(f"initializer {t.name!r}: holds {arr.size} values, but its dims are {list(shape)}")
    return arr
