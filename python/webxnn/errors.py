"""The exceptions webxnn raises. Every one names the place: file:line:col for text, node and op for graphs,
byte offset or value id for blobs, input name for run-time mismatches."""

from __future__ import annotations

import errno
import os


class WebxnnError(Exception):
    """Base class of every error webxnn raises on bad input."""


class FileError(WebxnnError, FileNotFoundError):
    """A file that does not exist or cannot be read (a folder, no permission). Also a `FileNotFoundError`, so
    `except OSError` and `except WebxnnError` both catch it; `path` (and `filename`) name the file."""

    def __init__(self, path: str | os.PathLike[str], reason: str = "no such file") -> None:
        super().__init__(errno.ENOENT, reason, os.fspath(path))
        self.path, self.reason = os.fspath(path), reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    @classmethod
    def from_os_error(cls, path: str | os.PathLike[str], e: OSError) -> FileError:
        """The one wording of every OSError met opening or reading `path`."""
        if isinstance(e, FileNotFoundError):
            return cls(path)
        if isinstance(e, IsADirectoryError):
            return cls(path, "is a folder, not a file")
        return cls(path, f"cannot read ({e.strerror or e})")


class ParseError(WebxnnError):
    """Malformed `.webnn` text or JSON. Carries `file`, `line`, `col` (1-based) when known."""

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, col: int | None = None
    ) -> None:
        self.file, self.line, self.col = file, line, col
        self.message = message
        where = ""
        if line is not None:
            where = f"{file or '<text>'}:{line}:{col or 0}: "
        elif file:
            where = f"{file}: "
        super().__init__(where + message)


class ValidationError(WebxnnError):
    """A graph that parses but is not valid WebNN: unknown op or option, wrong dtype or shape, bad
    reference."""


class WeightsError(WebxnnError):
    """The manifest or `.weights` file does not match the graph's constants."""


class FormatError(WebxnnError):
    """A `.xnn` blob that is truncated, corrupt or not what it claims to be."""


class UnsupportedError(WebxnnError):
    """Valid input that webxnn cannot compile or run (yet), or not in the requested profile."""


class InputError(WebxnnError):
    """Wrong inputs to `Program.run`: missing or unknown names, wrong dtype or shape."""


class OptionError(WebxnnError, ValueError):
    """A bad option value given to the API (`threads`, `spin_us`, `pool`, `repeat`). Also a `ValueError`, so
    `except ValueError` and `except WebxnnError` both catch it."""


__all__ = [
    "WebxnnError",
    "FileError",
    "ParseError",
    "ValidationError",
    "WeightsError",
    "FormatError",
    "UnsupportedError",
    "InputError",
    "OptionError",
]


class WebxnnWarning(UserWarning):
    """Something worth knowing about a model that still compiles, e.g. a quantized (Q/DQ) model whose
    compute stays mostly fp32. The command line prints it as `webxnn: warning: ...`."""
