"""ONNX value names → unique `.webnn` identifiers ([A-Za-z_/$][A-Za-z0-9_./]*), kept readable.

`onnx::MatMul_12` becomes `onnx__MatMul_12`, `/encoder/layer.0/Add_output_0` stays as is, `123` becomes
`_123`. Names that webnn-graph 0.3 would misread as literals in value position (a prefix of true/false/null)
get a leading `_`. Clashes after sanitizing get `_2`, `_3`, ... suffixes.
"""

from __future__ import annotations

import re

_BAD = re.compile(r"[^A-Za-z0-9_./]")
_QUIRK_PREFIXES = ("true", "false", "null")


def sanitize(name: str) -> str:
    s = name.replace("::", "__")
    s = _BAD.sub("_", s)
    if not s or not (s[0].isascii() and (s[0].isalpha() or s[0] in "_/$")):
        s = "_" + s
    if s.startswith(_QUIRK_PREFIXES):
        s = "_" + s
    return s


class Namer:
    """Stable mapping from ONNX names to unique identifiers, plus fresh names for helper values."""

    def __init__(self) -> None:
        self._map: dict[str, str] = {}
        self._used: set[str] = set()

    def reserve(self, ident: str) -> str:
        base = ident
        k = 2
        while ident in self._used:
            ident = f"{base}_{k}"
            k += 1
        self._used.add(ident)
        return ident

    def of(self, onnx_name: str) -> str:
        """The identifier of ONNX value `onnx_name` (allocated on first use)."""
        got = self._map.get(onnx_name)
        if got is None:
            got = self._map[onnx_name] = self.reserve(sanitize(onnx_name))
        return got

    def fresh(self, hint: str) -> str:
        """A new identifier for a helper value, derived from `hint`."""
        return self.reserve(sanitize(hint))
