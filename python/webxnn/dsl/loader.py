"""Load a graph file (`.webnn` text or GraphJson) and its weight sidecars, found the way webnn-graph 0.3
finds them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from ..errors import FileError, ParseError, UnsupportedError, WeightsError
from ..graph import Graph
from .json_codec import parse_json
from .parser import parse
from .weights import Manifest, attach_weights

PathLike = Union[str, "os.PathLike[str]"]


def _resolve(base: Path, p: PathLike) -> Path:
    """Explicit sidecar paths are relative to the graph file (as in 0.3), falling back to the cwd."""
    q = Path(os.fspath(p))
    if q.is_absolute():
        return q
    rel = base.parent / q
    return rel if rel.exists() or not q.exists() else q


def find_sidecars(graph_path: Path, weights: PathLike | None,
                  manifest: PathLike | Manifest | None) -> tuple[Path, Path | Manifest] | None:
    """(weights file, manifest) for a graph file, or None when there is no weights file to use.
    Weights: explicit, else the first existing of `<stem>.weights`, `model.weights`. Manifest: explicit,
    else `<stem>.manifest.json`, else `manifest.json` (all next to the graph)."""
    d, stem = graph_path.parent, graph_path.stem
    if weights is not None:
        wpath = _resolve(graph_path, weights)
        if not wpath.is_file():
            raise FileError(wpath, "no such file (the weights file)")
    else:
        cands = [d / f"{stem}.weights", d / "model.weights"]
        found = [c for c in cands if c.is_file()]
        if not found:
            for st in (d / f"{stem}.safetensors", d / "model.safetensors"):
                if st.is_file():
                    raise UnsupportedError(
                        f"{graph_path}: weights are in {st.name}, but safetensors files are not supported; "
                        "convert them to a .weights file and manifest (pack_weights)")
            if manifest is not None:
                raise WeightsError(f"{graph_path}: a manifest was given but no weights file was found "
                                   f"(looked for {stem}.weights and model.weights)")
            return None
        wpath = found[0]
    if isinstance(manifest, Manifest):
        return wpath, manifest
    if manifest is not None:
        mpath = _resolve(graph_path, manifest)
        if not mpath.is_file():
            raise FileError(mpath, "no such file (the weights manifest)")
        return wpath, mpath
    for cand in (d / f"{stem}.manifest.json", d / "manifest.json"):
        if cand.is_file():
            return wpath, cand
    raise WeightsError(f"{graph_path}: found weights file {wpath.name} but no manifest (looked for "
                       f"{stem}.manifest.json and manifest.json); pass manifest=")


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


def load_graph(path: PathLike, weights: PathLike | Mapping[str, Any] | None = None,
               manifest: PathLike | Manifest | None = None) -> Graph:
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
