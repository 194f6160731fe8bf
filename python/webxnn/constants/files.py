"""The weights manifest and the `.weights` file: read (memory-mapped), checked against a graph's consts,
written (pack) and split into `.npy` files (unpack).

`.weights` files come in two layouts (see reference/webnn-graph-dsl.md §3): `pack-weights` writes an 8-byte
`WGWT` + u32 version header with absolute offsets; `convert-onnx` writes raw, headerless, unaligned bytes.
The one rule that reads both: each tensor is `byteLength` bytes at absolute `byteOffset`. The file is
memory-mapped and tensors are numpy views into the map (read-only; possibly unaligned), so large files are
never copied into Python objects.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, cast

import numpy as np

from ..dtypes import DTYPES, MAX_DIM, dtype_size
from ..errors import WeightsError

if TYPE_CHECKING:  # the graph AST sits above this package (graph.py reads const data through it)
    from ..graph import Const, Graph

MANIFEST_FORMATS = ("wg-weights-manifest", "webnn-weights-manifest")
MAGIC = b"WGWT"
HEADER_SIZE = 8
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class TensorEntry:
    key: str
    dtype: str
    shape: tuple[int, ...]
    byte_offset: int
    byte_length: int
    layout: str | None = None


@dataclass
class Manifest:
    tensors: dict[str, TensorEntry]
    format: str = "wg-weights-manifest"
    version: int = 1
    endianness: str = "little"
    source: str | None = None
    _normalized: dict[str, list[str]] | None = field(default=None, repr=False)

    def lookup(self, key: str) -> TensorEntry | None:
        """Exact key first; then 0.3's fallback, comparing with `::` -> `__` and `.` -> `_` applied (the
        rustnn text sanitizer rewrites names that way). An ambiguous fallback is an error."""
        entry = self.tensors.get(key)
        if entry is not None:
            return entry
        if self._normalized is None:
            self._normalized = {}
            for k in self.tensors:
                self._normalized.setdefault(_normalize(k), []).append(k)
        hits = self._normalized.get(_normalize(key), [])
        if len(hits) > 1:
            raise WeightsError(
                f"{self.source or 'manifest'}: weights key {key!r} is ambiguous: manifest "
                f"keys {hits} all normalize to {_normalize(key)!r}"
            )
        return self.tensors[hits[0]] if hits else None


def _normalize(key: str) -> str:
    return key.replace("::", "__").replace(".", "_")


# -- manifest --------------------------------------------------------------------------------------------


def _uint(v: Any, where: str, limit: int | None = None) -> int:
    if type(v) is not int or v < 0:
        raise WeightsError(f"{where}: expected a non-negative integer, got {v!r}")
    if limit is not None and v > limit:
        raise WeightsError(f"{where}: {v} is too large (at most {limit})")
    return v


def parse_manifest(doc: Any, source: str | None = None) -> Manifest:
    """Validate a manifest document (already JSON-decoded). Strict: the fields `format`, `version`,
    `endianness`, `tensors`, and per tensor `dataType`, `shape`, `byteOffset`, `byteLength` are required."""
    where = source or "manifest"
    if not isinstance(doc, dict):
        raise WeightsError(f"{where}: a manifest is a JSON object")
    for key in ("format", "version", "endianness", "tensors"):
        if key not in doc:
            raise WeightsError(f"{where}: missing required field {key!r}")
    if not isinstance(doc["format"], str) or doc["format"] not in MANIFEST_FORMATS:
        raise WeightsError(f'{where}: format must be "wg-weights-manifest", got {doc["format"]!r}')
    if doc["version"] != 1 or type(doc["version"]) is not int:
        raise WeightsError(f"{where}: unsupported manifest version {doc['version']!r} (expected 1)")
    if doc["endianness"] != "little":
        raise WeightsError(f'{where}: endianness must be "little", got {doc["endianness"]!r}')
    if not isinstance(doc["tensors"], dict):
        raise WeightsError(f"{where}: tensors must be an object")
    tensors: dict[str, TensorEntry] = {}
    for key, t in doc["tensors"].items():
        w = f"{where}: tensors[{key!r}]"
        if not isinstance(t, dict):
            raise WeightsError(f"{w}: expected an object")
        for f in ("dataType", "shape", "byteOffset", "byteLength"):
            if f not in t:
                raise WeightsError(f"{w}: missing required field {f!r}")
        dtype = t["dataType"]
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise WeightsError(f"{w}.dataType: unknown data type {dtype!r}")
        if not isinstance(t["shape"], list):
            raise WeightsError(f"{w}.shape: expected a list of dimensions")
        shape = tuple(_uint(d, f"{w}.shape[{i}]", MAX_DIM) for i, d in enumerate(t["shape"]))
        layout = t.get("layout")
        if layout not in (None, "row-major"):
            raise WeightsError(f'{w}.layout: only "row-major" is supported, got {layout!r}')
        tensors[key] = TensorEntry(
            key,
            dtype,
            shape,
            _uint(t["byteOffset"], f"{w}.byteOffset"),
            _uint(t["byteLength"], f"{w}.byteLength"),
            layout,
        )
    return Manifest(tensors, doc["format"], 1, "little", source)


def load_manifest(path: PathLike | Mapping[str, Any]) -> Manifest:
    """Read and validate a `*.manifest.json` (or validate an already-loaded dict)."""
    if isinstance(path, Mapping):
        return parse_manifest(dict(path))
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise WeightsError(f"manifest not found: {p}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise WeightsError(f"{p}: not a valid JSON manifest ({e})") from None
    except OSError as e:
        raise WeightsError(f"{p}: cannot read manifest ({e.strerror or e})") from None
    return parse_manifest(doc, p)


# -- the .weights file -----------------------------------------------------------------------------------


class WeightsFile:
    """A memory-mapped `.weights` file. `tensor(entry)` returns a read-only view of its bytes."""

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                # mmap cannot map an empty file; there is nothing to read from one anyway.
                self.buf: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except FileNotFoundError:
            raise WeightsError(f"weights file not found: {self.path}") from None
        except (OSError, ValueError) as e:
            raise WeightsError(f"{self.path}: cannot map weights file ({e})") from None
        self.size = size
        self.has_header = size >= HEADER_SIZE and bytes(self.buf[:4]) == MAGIC

    def check_header(self, manifest: Manifest) -> None:
        """A WGWT header must say version 1. Only treated as a header when no tensor starts inside it (a
        headerless file whose first tensor happens to begin with the bytes "WGWT" is not a header)."""
        if not self.has_header or any(t.byte_offset < HEADER_SIZE for t in manifest.tensors.values()):
            return
        (version,) = struct.unpack_from("<I", self.buf, 4)
        if version != 1:
            raise WeightsError(f"{self.path}: WGWT header version {version} is not supported (expected 1)")

    def array(self, entry: TensorEntry, what: str) -> np.ndarray:
        end = entry.byte_offset + entry.byte_length
        if end > self.size:
            raise WeightsError(
                f"{what}: bytes [{entry.byte_offset}, {end}) are past the end of {self.path} "
                f"({self.size} bytes)"
            )
        dt = DTYPES[entry.dtype]
        count = entry.byte_length // dt.itemsize
        arr = np.frombuffer(self.buf, dtype=dt, count=count, offset=entry.byte_offset)
        return arr.reshape(entry.shape)


def _check_entry(c: Const, entry: TensorEntry, what: str) -> None:
    if entry.dtype != c.dtype:
        raise WeightsError(f"{what}: manifest dataType {entry.dtype} does not match the const's {c.dtype}")
    if list(entry.shape) != list(c.shape):
        raise WeightsError(
            f"{what}: manifest shape {list(entry.shape)} does not match the const's {list(c.shape)}"
        )
    want = math.prod(const_shape(c)) * dtype_size(c.dtype)
    if entry.byte_length != want:
        raise WeightsError(
            f"{what}: byteLength {entry.byte_length} but {c.dtype}{list(c.shape)} needs {want} bytes"
        )


def const_shape(c: Const) -> tuple[int, ...]:
    """A const's shape as ints: const shapes are static (the readers reject dyn() there)."""
    return cast("tuple[int, ...]", tuple(c.shape))


def weights_consts(g: Graph) -> list[Const]:
    return [c for c in g.consts.values() if c.init.kind == "weights"]


def weights_ref(c: Const) -> str:
    return c.init.ref if c.init.ref is not None else c.name


def read_weights(g: Graph, weights_path: PathLike, manifest: Manifest | PathLike) -> dict[str, np.ndarray]:
    """Arrays for every weights const of `g` (keyed by const name), checked against the manifest."""
    m = manifest if isinstance(manifest, Manifest) else load_manifest(manifest)
    wf = WeightsFile(weights_path)
    wf.check_header(m)
    out: dict[str, np.ndarray] = {}
    for c in weights_consts(g):
        ref = weights_ref(c)
        what = f"const '{c.name}' (weights key {ref!r})"
        entry = m.lookup(ref)
        if entry is None:
            raise WeightsError(f"{what}: not in manifest {m.source or ''}".rstrip())
        _check_entry(c, entry, what)
        out[c.name] = wf.array(entry, what)
    return out


# -- pack / unpack ---------------------------------------------------------------------------------------

_NP_TO_WEBNN = {
    ("f", 4): "float32",
    ("f", 2): "float16",
    ("i", 1): "int8",
    ("u", 1): "uint8",
    ("i", 4): "int32",
    ("u", 4): "uint32",
    ("i", 8): "int64",
    ("u", 8): "uint64",
}


def pack_weights(
    arrays: Mapping[str, Any],
    weights_path: PathLike,
    manifest_path: PathLike,
    dtypes: Mapping[str, str] | None = None,
) -> Manifest:
    """Write `arrays` (key -> array, in order) as a WGWT `.weights` file plus its manifest. `dtypes` may
    override the WebNN dtype per key (e.g. "int4" for int8 arrays holding 4-bit values)."""
    entries: dict[str, dict[str, Any]] = {}
    offset = HEADER_SIZE
    blobs: list[np.ndarray] = []
    for key, value in arrays.items():
        arr = np.asarray(value)
        dtype = (dtypes or {}).get(key) or _NP_TO_WEBNN.get((arr.dtype.kind, arr.dtype.itemsize))
        if dtype is None or dtype not in DTYPES:
            raise WeightsError(f"array {key!r}: dtype {arr.dtype} has no WebNN equivalent")
        arr = np.asarray(arr, dtype=DTYPES[dtype], order="C")  # (ascontiguousarray would make 0-d 1-d)
        entries[key] = {
            "dataType": dtype,
            "shape": list(arr.shape),
            "byteOffset": offset,
            "byteLength": arr.nbytes,
            "layout": "row-major",
        }
        offset += arr.nbytes
        blobs.append(arr)
    doc = {"format": "wg-weights-manifest", "version": 1, "endianness": "little", "tensors": entries}
    from ..atomic import atomic_open

    with atomic_open(weights_path, "wb") as f:
        f.write(MAGIC + struct.pack("<I", 1))
        for arr in blobs:
            f.write(arr.tobytes())
    with atomic_open(manifest_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return parse_manifest(doc, os.fspath(manifest_path))


def unpack_weights(weights_path: PathLike, manifest_path: PathLike, out_dir: PathLike) -> dict[str, Path]:
    """Write each tensor of a `.weights` file as `<key>.npy` in `out_dir` ('/', '\\' and ':' in keys become
    '_'). Returns key -> written path."""
    m = load_manifest(manifest_path)
    wf = WeightsFile(weights_path)
    wf.check_header(m)
    from ..atomic import atomic_open

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    used: set[str] = set()
    for key, entry in m.tensors.items():
        what = f"tensor {key!r}"
        want = int(np.prod(entry.shape, dtype=np.int64)) * dtype_size(entry.dtype)
        if entry.byte_length != want:
            raise WeightsError(
                f"{what}: byteLength {entry.byte_length} but "
                f"{entry.dtype}{list(entry.shape)} needs {want} bytes"
            )
        fname = "".join("_" if ch in "/\\:" else ch for ch in key) or "_"
        if fname in (".", "..") or fname in used:
            fname = f"{fname}_{len(used)}"
        used.add(fname)
        path = out / (fname + ".npy")
        with atomic_open(path, "wb") as f:
            np.save(f, wf.array(entry, what))
        written[key] = path
    return written
