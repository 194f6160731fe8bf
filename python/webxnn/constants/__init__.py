"""Constant data: the weights manifest and `.weights` files (files.py) and each const's array, wherever it
comes from (resolve.py). Imported by the graph AST, the readers (dsl) and the lowering; imports none of them.

    const_array(g, name) -> ndarray            any const's data
    attach_weights(g, weights=None, manifest=None) -> g     resolve `@weights` consts (dict, path or sidecars)
    find_sidecars(graph_path, weights, manifest)           a graph file's .weights and manifest
    load_manifest / parse_manifest / read_weights / pack_weights / unpack_weights
"""

from __future__ import annotations

from .files import (
    Manifest,
    PathLike,
    TensorEntry,
    WeightsFile,
    load_manifest,
    pack_weights,
    parse_manifest,
    read_weights,
    unpack_weights,
)
from .resolve import attach_weights, const_array, find_sidecars

__all__ = [
    "Manifest",
    "PathLike",
    "TensorEntry",
    "WeightsFile",
    "attach_weights",
    "const_array",
    "find_sidecars",
    "load_manifest",
    "pack_weights",
    "parse_manifest",
    "read_weights",
    "unpack_weights",
]
