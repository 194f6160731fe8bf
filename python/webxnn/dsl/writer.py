"""Writing a Graph to files: `.webnn` text or GraphJson, with its external weights beside it."""

from __future__ import annotations

import os
from pathlib import Path

from ..atomic import write_text
from ..constants import pack_weights
from ..graph import Graph
from .json_codec import to_json
from .printer import to_text


def write_graph(g: Graph, output: str | os.PathLike, fmt: str | None = None) -> list[Path]:
    """Write `g` as `.webnn` text or GraphJson (`fmt` "webnn" / "json", default: by the suffix), plus
    `<stem>.weights` and `<stem>.manifest.json` beside it when it has external weights (without them the text
    names weights nobody can load). Returns the paths written."""
    out = Path(os.fspath(output))
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    as_json = fmt == "json" if fmt else out.suffix.lower() == ".json"
    text = to_json(g) if as_json else to_text(g)
    written = [out]
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, text)
    weights = {
        c.init.ref or c.name: g.weights[c.name]
        for c in g.consts.values()
        if c.init.kind == "weights" and c.name in g.weights  # (a graph read without its weights: none)
    }
    if weights:
        wpath = out.with_name(stem + ".weights")
        mpath = out.with_name(stem + ".manifest.json")
        pack_weights(weights, wpath, mpath, dtypes={k: g.consts[k].dtype for k in weights if k in g.consts})
        written += [wpath, mpath]
    return written
