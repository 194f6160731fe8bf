"""Const data: what a const of a graph holds, wherever it comes from (`@weights` resolved from a `.weights`
file and manifest or a dict of arrays, `@scalar`, `@bytes`), and where a graph file's weight sidecars are.

Below the graph AST, the readers (dsl) and the lowering, which all read const data through here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dtypes import DTYPES, scalar_problem
from ..errors import FileError, UnsupportedError, ValidationError, WeightsError
from .files import Manifest, PathLike, const_shape, read_weights, weights_consts, weights_ref

if TYPE_CHECKING:  # the graph AST sits above this package (graph.py reads const data through it)
    from ..graph import Graph


def const_array(g: Graph, name: str) -> np.ndarray:
    """The data of const `name` as an array of its declared dtype and shape: `@weights` data from
    `g.weights` (see attach_weights), `@scalar` as a read-only broadcast view of its one value (never
    materialised here: the blob writer, which needs the full data, fills it), `@bytes` reinterpreted."""
    c = g.consts.get(name)
    if c is None:
        raise ValidationError(f"no const named {name!r}")
    dt = DTYPES[c.dtype]
    shape = const_shape(c)
    init = c.init
    if init.kind == "weights":
        arr = g.weights.get(name)
        if arr is None:
            src = f" of {g.source}" if g.source else ""
            raise WeightsError(
                f"const '{name}'{src} uses external weights @weights({weights_ref(c)!r}) but "
                "no weights are loaded: pass weights= and manifest= (a .weights file and its "
                "manifest, or a dict of arrays)"
            )
        return arr
    if init.kind == "scalar":
        problem = scalar_problem(c.dtype, init.value)
        if problem:
            raise WeightsError(f"const '{name}': {problem}")
        return np.broadcast_to(np.array(init.value, dtype=dt), shape)
    if init.kind == "bytes":
        data = init.data or b""
        if len(data) != math.prod(shape) * dt.itemsize:
            raise WeightsError(
                f"const '{name}': @bytes has {len(data)} bytes, {c.dtype}{list(shape)} needs "
                f"{math.prod(shape) * dt.itemsize}"
            )
        return np.frombuffer(data, dtype=dt).reshape(shape)
    raise WeightsError(f"const '{name}': unknown init kind {init.kind!r}")


def _from_dict(g: Graph, arrays: Mapping[str, Any]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for c in weights_consts(g):
        ref = weights_ref(c)
        key = ref if ref in arrays else c.name if c.name in arrays else None
        if key is None:
            continue  # left unresolved; const_array names it if someone needs it
        arr = np.asarray(arrays[key])
        dt = DTYPES[c.dtype]
        if arr.dtype != dt:
            raise WeightsError(
                f"const '{c.name}': array {key!r} has dtype {arr.dtype}, expected {c.dtype} ({dt})"
            )
        if list(arr.shape) != list(c.shape):
            raise WeightsError(
                f"const '{c.name}': array {key!r} has shape {list(arr.shape)}, expected {list(c.shape)}"
            )
        out[c.name] = arr
    return out


def attach_weights(
    g: Graph, weights: PathLike | Mapping[str, Any] | None = None, manifest: PathLike | Manifest | None = None
) -> Graph:
    """Resolve the graph's `@weights` consts into `g.weights` (keyed by const name) and return `g`.

    `weights` is a dict (keyed by weights ref or const name), a `.weights` path, or None to look for
    sidecars next to `g.source` (<stem>.weights / model.weights with <stem>.manifest.json / manifest.json).
    A `.weights` path needs a manifest: explicit, else `<weights stem>.manifest.json` or `manifest.json`
    next to it. A graph without weights consts is returned unchanged."""
    if not weights_consts(g):
        return g
    if isinstance(weights, Mapping):
        g.weights.update(_from_dict(g, weights))
        return g
    if weights is None:
        if g.source is None:
            if manifest is not None:
                raise WeightsError("a manifest was given without a weights file")
            return g
        found = find_sidecars(Path(g.source), None, manifest)
        if found is None:
            return g
        weights, manifest = found
    wpath = Path(os.fspath(weights))
    if manifest is None:
        manifest = _manifest_next_to(wpath)
    g.weights.update(read_weights(g, wpath, manifest))
    return g


def _manifest_next_to(wpath: Path) -> Path:
    stem = wpath.name[: -len(".weights")] if wpath.name.endswith(".weights") else wpath.stem
    for cand in (wpath.with_name(stem + ".manifest.json"), wpath.with_name("manifest.json")):
        if cand.is_file():
            return cand
    raise WeightsError(
        f"no manifest for {wpath}: looked for {stem}.manifest.json and manifest.json next to "
        "it; pass manifest="
    )


def _resolve(base: Path, p: PathLike) -> Path:
    """Explicit sidecar paths are relative to the graph file (as in 0.3), falling back to the cwd."""
    q = Path(os.fspath(p))
    if q.is_absolute():
        return q
    rel = base.parent / q
    return rel if rel.exists() or not q.exists() else q


def find_sidecars(
    graph_path: Path, weights: PathLike | None, manifest: PathLike | Manifest | None
) -> tuple[Path, Path | Manifest] | None:
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
                        "convert them to a .weights file and manifest (pack_weights)"
                    )
            if manifest is not None:
                raise WeightsError(
                    f"{graph_path}: a manifest was given but no weights file was found "
                    f"(looked for {stem}.weights and model.weights)"
                )
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
    raise WeightsError(
        f"{graph_path}: found weights file {wpath.name} but no manifest (looked for "
        f"{stem}.manifest.json and manifest.json); pass manifest="
    )
