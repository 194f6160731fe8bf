"""Small helpers for writing op entries: a compact `define(...)` and dtype/rank checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..graph import DTYPES, Dim
from .base import REQUIRED, OpSpec, TensorType
from .registry import Ctx, register
from .shapes import shape_str

FLOAT = frozenset({"float32", "float16"})
ALL = frozenset(DTYPES)
SIGNED_INT = frozenset({"int8", "int32", "int64", "int4"})
SIGNED = FLOAT | SIGNED_INT
INDEX = frozenset({"int32", "uint32", "int64"})
QUANT = frozenset({"int8", "uint8", "int32", "int4", "uint4"})
NUMERIC_NOT_SMALL_INT = FLOAT | frozenset({"int32", "uint32", "int64", "uint64"})

__all__ = [
    "FLOAT",
    "ALL",
    "SIGNED",
    "INDEX",
    "QUANT",
    "REQUIRED",
    "define",
    "dtype_in",
    "same_dtype",
    "rank_is",
    "TT",
    "shape_str",
]


def define(
    name: str,
    inputs: Sequence[str],
    infer: Callable[..., list[TensorType]],
    doc: str,
    *,
    options: dict[str, tuple[Any, Any]] | None = None,
    operand_options: Sequence[str] = (),
    optional_inputs: Sequence[str] = (),
    variadic: bool = False,
    aliases: Sequence[str] = (),
    accepts: Sequence[str] = (),
    normalize: Callable[..., dict[str, Any]] | None = None,
    num_outputs: Any = 1,
) -> OpSpec:
    """Register an op. `options` maps key -> (kind, default)."""
    options = options or {}
    return register(
        OpSpec(
            name=name,
            inputs=list(inputs),
            optional_inputs=list(optional_inputs),
            operand_options=list(operand_options),
            options={k: d for k, (_, d) in options.items()},
            option_types={k: kind for k, (kind, _) in options.items()},
            variadic=variadic,
            num_outputs=num_outputs,
            infer=infer,
            aliases=list(aliases),
            doc=doc,
            accepts=frozenset(accepts),
            normalize=normalize,
        )
    )


def TT(dtype: str, shape: Sequence[Dim]) -> TensorType:  # noqa: N802 - reads like a constructor
    return TensorType(dtype, tuple(shape))


def dtype_in(ctx: Ctx, t: TensorType, role: str, allowed: frozenset[str]) -> None:
    if t.dtype not in allowed:
        ctx.fail(f"operand {role!r} has data type {t.dtype}; {ctx.op} accepts " + ", ".join(sorted(allowed)))


def same_dtype(ctx: Ctx, roles: dict[str, TensorType | None]) -> str:
    """All present operands share one dtype; returns it."""
    present = [(r, t) for r, t in roles.items() if t is not None]
    first_role, first = present[0]
    for r, t in present[1:]:
        if t.dtype != first.dtype:
            ctx.fail(f"operand {r!r} has data type {t.dtype} but {first_role!r} has {first.dtype}")
    return first.dtype


def rank_is(ctx: Ctx, t: TensorType, role: str, ranks: int | Sequence[int]) -> None:
    ok = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if t.rank not in ok:
        want = " or ".join(str(r) for r in ok)
        ctx.fail(f"operand {role!r} must have rank {want}, got shape {shape_str(t.shape)}")


def shape_is(ctx: Ctx, t: TensorType | None, role: str, shape: Sequence[Dim]) -> None:
    if t is not None and tuple(t.shape) != tuple(shape):
        ctx.fail(f"operand {role!r} must have shape {shape_str(shape)}, got {shape_str(t.shape)}")


def length_is(ctx: Ctx, opts: dict[str, Any], key: str, n: int) -> None:
    v = opts.get(key)
    if v is not None and len(v) != n:
        ctx.fail(f"option {key!r} must have {n} entries, got {v}")
