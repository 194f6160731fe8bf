"""The exceptions webxnn raises. Every one names the place: file:line:col for text, node and op for graphs,
byte offset or value id for blobs, input name for run-time mismatches."""

from __future__ import annotations


class WebxnnError(Exception):
    """Base class of every error webxnn raises on bad input."""


class ParseError(WebxnnError):
    """Malformed `.webnn` text or JSON. Carries `file`, `line`, `col` (1-based) when known."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 col: int | None = None) -> None:
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


__all__ = [
    "WebxnnError", "ParseError", "ValidationError", "WeightsError", "FormatError", "UnsupportedError",
    "InputError",
]
