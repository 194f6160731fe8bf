"""The `.webnn` text dialect and GraphJson (webnn-graph 0.3), the weights manifest and `.weights` files.

    parse(text, file=None) -> Graph            .webnn text
    parse_json(s, file=None) -> Graph          GraphJson
    load_graph(path, weights=None, manifest=None) -> Graph   either, plus weight sidecars
    to_text(g) / to_json(g) -> str             canonical forms (text -> JSON -> text -> JSON is byte-stable)
    const_array(g, name) -> ndarray            any const's data
    attach_weights / load_manifest / pack_weights / unpack_weights
    to_js(g, manifest=None) -> str             JavaScript building the graph with MLGraphBuilder
    write_graph(g, path) -> [paths]            .webnn / .json file plus its weight sidecars

No op semantics live here: option values are passed through, operand-valued options stay strings.
"""

from __future__ import annotations

# the weights manifest and const data live in ..constants (below the graph AST); re-exported here as before
from ..constants import (
    Manifest,
    TensorEntry,
    attach_weights,
    const_array,
    load_manifest,
    pack_weights,
    unpack_weights,
)
from .emit_js import to_js
from .json_codec import parse_json, to_json
from .loader import load_graph
from .parser import parse
from .printer import to_text
from .writer import write_graph

__all__ = [
    "parse",
    "parse_json",
    "load_graph",
    "to_text",
    "to_json",
    "const_array",
    "attach_weights",
    "pack_weights",
    "unpack_weights",
    "load_manifest",
    "Manifest",
    "TensorEntry",
    "to_js",
    "write_graph",
]
