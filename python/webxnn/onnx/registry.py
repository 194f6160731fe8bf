"""The ONNX op → WebNN translation table: one small function per ONNX op type, registered by decorator.

A translator is `fn(ctx: Converter, node: onnx.NodeProto) -> None`; it reads inputs through the converter
(constant or graph value), emits WebNN nodes with `ctx.emit`, and binds the node's outputs. It raises
UnsupportedError for an attribute combination it cannot express; the converter collects those per node so
every problem in a model is reported at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .convert import Converter

Translator = Callable[["Converter", Any], None]

TRANSLATORS: dict[str, Translator] = {}


def onnx_op(*op_types: str) -> Callable[[Translator], Translator]:
    """Register `fn` as the translator of each ONNX op type (default domain)."""

    def deco(fn: Translator) -> Translator:
        for t in op_types:
            if t in TRANSLATORS:
                raise RuntimeError(f"ONNX op {t!r} registered twice")
            TRANSLATORS[t] = fn
        return fn

    return deco


# Translators of ops in other domains (onnxruntime's com.microsoft contrib ops), by (domain, op type).
CONTRIB_TRANSLATORS: dict[tuple[str, str], Translator] = {}


def contrib_op(domain: str, *op_types: str) -> Callable[[Translator], Translator]:
    """Register `fn` as the translator of each op type of `domain`."""

    def deco(fn: Translator) -> Translator:
        for t in op_types:
            if (domain, t) in CONTRIB_TRANSLATORS:
                raise RuntimeError(f"ONNX op {domain}.{t} registered twice")
            CONTRIB_TRANSLATORS[(domain, t)] = fn
        return fn

    return deco


def load_translators() -> None:
    """Import the ops_* modules, which register their translators."""
    from . import (  # noqa: F401
        ops_bitwise,
        ops_decomposed,
        ops_deform,
        ops_dft,
        ops_dynquant,
        ops_more,
        ops_nn,
        ops_qlinear,
        ops_quant,
        ops_recurrent,
        ops_resize,
        ops_roi,
        ops_shape,
        ops_simple,
        ops_spatial,
        ops_topk,
    )


def supported_ops() -> list[str]:
    """The ONNX op types the importer translates (constant-only ops are folded beyond these)."""
    load_translators()
    return sorted(TRANSLATORS)
