"""Load a graph file (`.webnn` text or GraphJson) and its weight sidecars (found by
`constants.find_sidecars`, the way webnn-graph 0.3 finds them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..constants import Manifest, PathLike, attach_weights, find_sidecars
from ..errors import FileError, ParseError
from ..graph import Graph
from .json_codec import parse_json
from .parser import parse


def read_graph_file(path: PathLike) -> Graph:
    """Parse a graph file without touching weights. JSON if its first non-blank character is `{`."""
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise FileError.from_os_error(p, e) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        from ..filekind import KINDS, sniff_bytes

        kind = sniff_bytes(raw[:4096], os.path.splitext(p)[1])
        if kind not in ("unknown", "webnn", "json"):  # a known binary kind: say which, and what to do
            desc, hint = KINDS[kind]
            raise ParseError(f"this is {desc}, not a .webnn/.json graph; {hint}", file=p) from None
        raise ParseError(f"not UTF-8 text (bad byte at offset {e.start})", file=p) from None
    if text.lstrip(" \t\r\n").startswith("{"):
        return parse_json(text, file=p)
    return parse(text, file=p)


def load_graph(
    path: PathLike,
    weights: PathLike | Mapping[str, Any] | None = None,
    manifest: PathLike | Manifest | None = None,
) -> Graph:
    """Read a `.webnn` or `.json` graph and, when it has `@weights` consts, its weights.

    `weights`/`manifest` may be given explicitly (paths relative to the graph file, or a dict of arrays);
    otherwise sidecars are looked up next to the graph. Missing sidecars are not an error here: the
    graph loads, and reading an unresolved const (const_array) raises WeightsError naming it."""
    g = read_graph_file(path)
    if not any(c.init.kind == "weights" for c in g.consts.values()):
        return g
    if isinstance(weights, Mapping):
        return attach_weights(g, weights)
    found = find_sidecars(Path(os.fspath(path)), weights, manifest)
    if found is not None:
        attach_weights(g, found[0], found[1])
    return g
