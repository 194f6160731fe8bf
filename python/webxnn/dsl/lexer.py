"""Tokenizer for the `.webnn` text dialect (webnn-graph 0.3).

One compiled regex, applied at successive positions, so lexing is linear in the input. Whitespace and `#`
comments are skipped as a prefix of every match. Keywords are not reserved: `inputs`, `true`, `f32`, ... are
all `id` tokens and the parser decides by context, which is how 0.3's PEG grammar behaves (it has no word
boundaries, so e.g. `webnn_graph"t"v1{` is a valid header).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..errors import ParseError

# Token kinds: "id", "num", "str", "at" (`@name`), "eof", or the punctuation character itself.
_TOKEN = re.compile(
    r"""
    (?:[ \t\r\n]+|\#[^\n]*)*                      # whitespace and comments (only these four spaces)
    (?:
       (?P<id>[A-Za-z_/$][A-Za-z0-9_./]*)          # ASCII only; `$` only as the first character
      |(?P<num>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
      # The only escapes are \" and \\; any other backslash is a literal character. Written so that a
      # backslash before a quote can only be read as an escape (0.3's PEG never backtracks into it).
      |(?P<str>"(?:\\["\\]|\\(?!["\\])|[^"\\])*")
      |(?P<p>[{}()\[\];:,=])
      |(?P<at>@[A-Za-z_][A-Za-z0-9_]*)
      |(?P<eof>\Z)
      |(?P<bad>.)
    )""",
    re.X | re.S,
)
_GROUP_NAMES = {i: name for name, i in _TOKEN.groupindex.items()}
_UNESCAPE = re.compile(r'\\(["\\])')


@dataclass
class Tokens:
    """Parallel lists (faster than one object per token): kinds[i], texts[i], starts[i] (char offset)."""

    kinds: list[str]
    texts: list[str]
    starts: list[int]
    source: str
    file: str | None
    _line_starts: list[int] | None = None

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column (in characters) of a character offset."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.source)]
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def error(self, message: str, offset: int) -> ParseError:
        line, col = self.line_col(offset)
        return ParseError(message, file=self.file, line=line, col=col)


def describe(kind: str, text: str) -> str:
    """How an offending token is named in an error message."""
    if kind == "eof":
        return "end of input"
    if len(text) > 40:
        text = text[:37] + "..."
    return repr(text) if kind != "str" else text


def unescape(literal: str) -> str:
    """The value of a string token (with its quotes)."""
    inner = literal[1:-1]
    return _UNESCAPE.sub(r"\1", inner) if "\\" in inner else inner


def tokenize(text: str, file: str | None = None) -> Tokens:
    # The pattern matches at every position (`bad` takes any character), so finditer yields the tokens
    # back to back; the last match is the empty `eof`.
    matches = list(_TOKEN.finditer(text))
    idx = [m.lastindex for m in matches]
    kinds = [_GROUP_NAMES[i] for i in idx]  # type: ignore[index]
    texts = [m.group(i) for m, i in zip(matches, idx)]
    starts = [m.start(i) for m, i in zip(matches, idx)]
    toks = Tokens(kinds, texts, starts, text, file)
    if "bad" in kinds:
        _bad_character(toks, starts[kinds.index("bad")])
    if "p" in kinds:
        # punctuation tokens are their own kind
        toks.kinds = kinds = [t if k == "p" else k for k, t in zip(kinds, texts)]
    return toks


def _bad_character(toks: Tokens, start: int) -> None:
    ch = toks.source[start]
    if ch == '"':
        raise toks.error("unterminated string literal (missing closing '\"')", start)
    if ch == "-":
        raise toks.error("'-' must be followed directly by digits (a number like -1 or -0.5)", start)
    hint = ""
    if ch == "." or ch == "+":
        hint = " (numbers are written like 1, -2, 0.5 or 1e-5)"
    elif ch == "'":
        hint = " (strings use double quotes)"
    elif not ch.isascii():
        hint = " (identifiers are ASCII only; non-ASCII text is allowed only inside strings)"
    raise toks.error(f"unexpected character {ch!r}{hint}", start)
