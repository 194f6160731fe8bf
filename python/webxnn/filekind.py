"""What kind of file a path holds, told from its first bytes (and its extension where bytes cannot tell), so
that a file given to the wrong command is named ("this is a .webnn text file; use `webxnn compile`") instead
of failing deep inside a parser.

Kinds: "xnn" (XNNGraph blob: `XH00` header or `XN00`/`XN01` flatbuffer identifier at offset 4), "pte"
(ExecuTorch program: identifier `ET..` at offset 4), "onnx" (protobuf ModelProto), "webnn" (text DSL),
"json", "npy", "npz", "weights" (`WGWT` .weights file), "unknown".
"""

from __future__ import annotations

import os
from typing import Union

from .errors import FileError, FormatError, WebxnnError

PathLike = Union[str, "os.PathLike[str]"]

HEAD_BYTES = 4096  # how much of a file sniffing reads

# what each kind is, and what to do with it
KINDS: dict[str, tuple[str, str]] = {
    "xnn": ("a compiled .xnn blob", "run it with `webxnn run` or `webxnn.load`"),
    "pte": (
        "an ExecuTorch .pte program",
        "`webxnn run`, `webxnn inspect` and `webxnn.load` run its XnnpackBackend delegate",
    ),
    "onnx": ("an ONNX model", "use `webxnn compile` or `webxnn run` on it"),
    "webnn": ("a .webnn text file", "use `webxnn compile`"),
    "json": ("a JSON file", "a webnn-graph JSON graph goes to `webxnn compile`"),
    "npy": ("a .npy array", "pass it to `webxnn run` with --input NAME=FILE.npy"),
    "npz": ("a .npz archive", "save each array as a .npy file and pass it with --input NAME=FILE.npy"),
    "weights": ("a .weights file", "give it with --weights, beside its graph and manifest"),
    "unknown": (
        "not a file kind webxnn knows",
        "expected a .xnn blob, a .webnn/.json graph, an .onnx model or a .npy array",
    ),
}


def require_file(path: PathLike) -> str:
    """`path` as a str if it names a readable file; FileError otherwise."""
    p = os.fspath(path)
    if os.path.isdir(p):
        raise FileError(p, "is a folder, not a file")
    if not os.path.exists(p):
        raise FileError(p)
    if not os.access(p, os.R_OK):
        raise FileError(p, "cannot read (permission denied)")
    return p


def read_head(path: PathLike, size: int = HEAD_BYTES) -> bytes:
    """The first `size` bytes of a file; FileError when it cannot be read."""
    p = require_file(path)
    try:
        with open(p, "rb") as f:
            return f.read(size)
    except OSError as e:
        raise FileError.from_os_error(p, e) from None


def _varint(b: bytes, i: int) -> tuple[int, int] | None:
    v = shift = 0
    while i < len(b) and shift < 64:
        c = b[i]
        v |= (c & 0x7F) << shift
        i += 1
        if not c & 0x80:
            return v, i
        shift += 7
    return None


def _looks_like_onnx(head: bytes) -> bool:
    """A cheap parse of the first protobuf fields: ModelProto has field numbers 1..20 with varint (0) or
    length-delimited (2) wire types; exporters write ir_version (field 1) first."""
    i, fields = 0, 0
    while i < len(head) and fields < 8:
        tag = _varint(head, i)
        if tag is None:
            break
        key, i = tag
        field, wire = key >> 3, key & 7
        if not 1 <= field <= 20 or wire not in (0, 2) or (fields == 0 and field != 1):
            return False
        val = _varint(head, i)
        if val is None:
            break
        n, i = val
        if wire == 2:
            i += n
        fields += 1
    return fields > 0


def sniff_bytes(head: bytes, ext: str = "") -> str:
    """The kind of a file whose first bytes are `head` and whose extension is `ext` (".onnx", ...)."""
    ext = ext.lower()
    if head[4:8] in (b"XH00", b"XN00", b"XN01"):
        return "xnn"
    if head[4:6] == b"ET" and head[6:8].isdigit():
        return "pte"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "npz"
    if head.startswith(b"WGWT"):
        return "weights"
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if text.startswith(("{", "[")):
        return "json"
    if "webnn_graph" in text or (ext == ".webnn" and text.isprintable()):
        return "webnn"
    if ext == ".onnx" or _looks_like_onnx(head):
        return "onnx"
    if ext == ".weights":
        return "weights"  # a headerless (webnn-graph 0.2) weights file
    return "unknown"


def sniff(path: PathLike) -> str:
    """The kind of the file at `path` (FileError when it cannot be read)."""
    return sniff_bytes(read_head(path), os.path.splitext(os.fspath(path))[1])


def expect(
    path: PathLike, kinds: tuple[str, ...], error: type[WebxnnError] = FormatError, what: str = ""
) -> str:
    """The kind of `path` when it is one of `kinds`; otherwise `error` naming what the file is and what to do
    with it. `what` says what was expected where (default: the kinds' descriptions)."""
    return expect_head(read_head(path), os.fspath(path), kinds, error, what)


def expect_head(
    head: bytes, name: str, kinds: tuple[str, ...], error: type[WebxnnError] = FormatError, what: str = ""
) -> str:
    """`expect` for a file already read (`head`: its first bytes, `name`: its path): for a pipe, which
    cannot be read twice."""
    kind = sniff_bytes(head, os.path.splitext(name)[1])
    if kind in kinds:
        return kind
    desc, hint = KINDS[kind]
    wanted = what or " or ".join(KINDS[k][0] for k in kinds)
    if kind == "unknown":
        raise error(f"{name}: {desc}; expected {wanted}")
    raise error(f"{name}: this is {desc}, not {wanted}; {hint}")


__all__ = [
    "HEAD_BYTES",
    "KINDS",
    "expect",
    "expect_head",
    "read_head",
    "require_file",
    "sniff",
    "sniff_bytes",
]
