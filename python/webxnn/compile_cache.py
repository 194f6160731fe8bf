"""The on-disk compile cache of `webxnn.load(path, cache=...)` and `webxnn run --cache`: a `.webnn` / `.json`
graph or `.onnx` model is compiled once, and its blob is kept as `<folder>/<key>.xnn`.

The key is a SHA-256 over everything that changes the blob: the model file's bytes; the files it draws on
(an ONNX model's external data files; a graph's `.weights` file and manifest, found as the loader finds
them); the import options; webxnn's version, the blob format and a fingerprint of the compiler's own files
(so an edited checkout never reuses a blob compiled by older code). A changed input is a new key, never a
stale hit; entries are not evicted (delete the folder to clear it).

Entries are written atomically (`atomic.write_bytes`: a temporary file renamed over the entry), so two
processes compiling the same model at once each write a whole entry, the last one wins, and a reader sees
one whole file or the other. A damaged entry (truncated, overwritten) fails the loader's verification like
any untrusted blob and is compiled again and replaced; a folder that cannot be written is a WebxnnWarning,
and the model is loaded from memory as without a cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from .errors import OptionError, WebxnnError, WebxnnWarning

PathLike = Union[str, "os.PathLike[str]"]
Cache = Union[bool, str, "os.PathLike[str]"]

ENV_DIR = "WEBXNN_CACHE_DIR"
_CHUNK = 1 << 20


def cache_folder(cache: Cache) -> Path | None:
    """The folder `cache` names: None for False; for True `$WEBXNN_CACHE_DIR`, else `$XDG_CACHE_HOME/webxnn`,
    else `~/.cache/webxnn`; a path as given."""
    if cache is False:
        return None
    if cache is True:
        if os.environ.get(ENV_DIR):
            return Path(os.environ[ENV_DIR]).expanduser()
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        # the XDG spec: a relative path in the variable is invalid and is ignored
        return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "webxnn"
    if isinstance(cache, (str, os.PathLike)) and os.fspath(cache):
        return Path(os.fspath(cache)).expanduser()
    raise OptionError(f"cache must be False, True or a folder path, got {cache!r}")


def _file_digest(path: PathLike) -> bytes:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.digest()


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """webxnn's version, the blob format and the size and mtime of every module of the package."""
    from . import __version__
    from .xnn.writer import FILE_IDENTIFIER, HEADER_MAGIC

    package = Path(__file__).resolve().parent
    h = hashlib.sha256(f"{__version__} {HEADER_MAGIC!r} {FILE_IDENTIFIER!r}".encode())
    for f in sorted(package.rglob("*.py")):
        st = f.stat()
        h.update(f"{f.relative_to(package)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return f"{__version__}:{h.hexdigest()}"


def _dependencies(
    path: str, kind: str, weights: PathLike | None, manifest: PathLike | None
) -> list[tuple[str, Path]]:
    """(role, file) of every file besides `path` that the compiled blob depends on."""
    if kind == "onnx":
        from .onnx import external_data_files

        return [("external data", f) for f in external_data_files(path)]
    from .constants import find_sidecars

    found = find_sidecars(Path(path), weights, manifest)
    if found is None:
        return []
    wpath, mpath = found
    assert isinstance(mpath, Path)  # a Manifest object comes back only when one is given, never here
    return [("weights", wpath), ("manifest", mpath)]


def cache_key(
    path: PathLike,
    kind: str,
    weights: PathLike | None = None,
    manifest: PathLike | None = None,
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> str:
    """The hex SHA-256 naming the blob compiled from the model at `path` (of `kind`: "onnx", "webnn",
    "json") with these options. WebxnnError or OSError when a file it depends on cannot be read."""
    p = os.fspath(path)
    h = hashlib.sha256()

    def part(label: str, data: bytes) -> None:  # length-prefixed: no two inputs hash alike by concatenation
        h.update(f"{label}\0{len(data)}\0".encode() + data)

    options = {
        "override_dims": sorted((override_dims or {}).items()),
        "dyn_max": sorted(dyn_max.items()) if isinstance(dyn_max, Mapping) else dyn_max,
    }
    part("webxnn", _code_fingerprint().encode())
    part("kind", kind.encode())
    part("options", json.dumps(options).encode())
    part("model", _file_digest(p))
    for role, f in _dependencies(p, kind, weights, manifest):
        part(role, _file_digest(f))
    return h.hexdigest()


def cache_entry(folder: Path, path: PathLike, kind: str, **options: Any) -> Path | None:
    """Where the blob of the model at `path` is kept in `folder`, or None when its key cannot be computed (a
    file it depends on is missing or unreadable: compiling it reports that properly)."""
    try:
        return folder / f"{cache_key(path, kind, **options)}.xnn"
    except (WebxnnError, OSError):
        return None


def store(entry: Path, blob: bytes) -> None:
    """Write `blob` as `entry`, atomically; a WebxnnWarning (not an error) when the folder cannot be
    written."""
    from .atomic import write_bytes

    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(entry, blob)
    except OSError as e:
        warnings.warn(
            WebxnnWarning(
                f"compile cache {entry.parent}: cannot write ({e.strerror or e}); the model was compiled "
                "without caching"
            ),
            stacklevel=3,
        )


__all__ = ["ENV_DIR", "cache_entry", "cache_folder", "cache_key", "store"]
