"""Every file webxnn writes is written atomically: into a temporary file in the target's folder, flushed and
fsync'ed, then renamed over the target. A write that fails half-way (an error while streaming constants, a
full disk, Ctrl-C) leaves the old file whole, and a Program that has the old `.xnn` memory-mapped keeps
running on it: the rename gives the path a new inode and never truncates the mapped one in place."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PathLike = str | os.PathLike[str]


def _umask() -> int:
    mask = os.umask(0)  # the only portable way to read it
    os.umask(mask)
    return mask


_UMASK = _umask()


@contextlib.contextmanager
def atomic_open(path: PathLike, mode: str = "wb", encoding: str | None = None) -> Iterator[IO[Any]]:
    """A file object to write `path` through; the target is replaced only when the block ends without an
    exception. The new file gets the old one's permissions, or the usual 0o666 minus the umask."""
    target = Path(os.fspath(path))
    folder = target.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        try:
            perms = os.stat(target).st_mode & 0o7777
        except OSError:
            perms = 0o666 & ~_UMASK
        os.chmod(tmp, perms)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(folder)


def _sync_folder(folder: Path) -> None:
    """fsync the folder so the rename itself survives a crash (best effort: not every system allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_bytes(path: PathLike, data: bytes | bytearray | memoryview) -> None:
    with atomic_open(path, "wb") as f:
        f.write(data)


def write_text(path: PathLike, text: str) -> None:
    with atomic_open(path, "w", encoding="utf-8") as f:
        f.write(text)
