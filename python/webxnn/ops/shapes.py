"""Shape arithmetic shared by the op entries and by `lower`: broadcasting, axes, conv/pool output sizes and
the autoPad padding rule. Dims are `int` or `graph.DynDim`; helpers that need a number say which dim."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import ValidationError
from ..graph import Dim, DynDim


def is_static(shape: Sequence[Dim]) -> bool:
    return all(isinstance(d, int) for d in shape)


def dim_str(d: Dim) -> str:
    return f"dyn({d.name!r}, {d.max_size})" if isinstance(d, DynDim) else str(d)


def shape_str(shape: Sequence[Dim]) -> str:
    return "[" + ", ".join(dim_str(d) for d in shape) + "]"


def need_int(d: Dim, what: str) -> int:
    """The concrete value of `d`; a dynamic dim here is an error that names the dim and the use."""
    if isinstance(d, DynDim):
        raise ValidationError(f"{what} needs a static size but dimension {d.name!r} is dynamic")
    return d


def numel(shape: Sequence[Dim]) -> int:
    n = 1
    for d in shape:
        n *= need_int(d, "element count")
    return n


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    """numpy broadcasting of one dim pair. A dynamic dim broadcasts with 1 or with itself; against a
    static n > 1 the result is n (the dyn dim must then be 1 or n at run time)."""
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, DynDim) and isinstance(b, int):
        return b
    if isinstance(b, DynDim) and isinstance(a, int):
        return a
    raise ValueError(f"{dim_str(a)} vs {dim_str(b)}")


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """Bidirectional (numpy) broadcasting; ValidationError when incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = [1] * rank
    for s in shapes:
        padded = [1] * (rank - len(s)) + list(s)
        for i, d in enumerate(padded):
            try:
                out[i] = broadcast_dim(out[i], d)
            except ValueError:
                raise ValidationError(
                    "shapes " + " and ".join(shape_str(x) for x in shapes) + " are not broadcastable "
                    f"(dimension {i - rank} of the result: {dim_str(out[i])} vs {dim_str(d)})"
                ) from None
    return tuple(out)


def unidirectional_ok(src: Sequence[Dim], dst: Sequence[Dim]) -> bool:
    """True when `src` broadcasts to exactly `dst` (src's dims are 1 or equal, rank <= dst's)."""
    if len(src) > len(dst):
        return False
    for s, d in zip(reversed(src), reversed(dst)):
        if s != 1 and s != d:
            return False
    return True


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis as 0..rank-1 (converters emit -1)."""
    if not -rank <= axis < rank:
        raise ValidationError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def norm_axes(axes: Sequence[int], rank: int, what: str = "axes", unique: bool = True) -> list[int]:
    out = [norm_axis(a, rank, what) for a in axes]
    if unique and len(set(out)) != len(out):
        raise ValidationError(f"{what} {list(axes)} has duplicates")
    return out


def conv_out_size(size: int, k: int, stride: int, dil: int, pb: int, pe: int) -> int:
    """WebNN conv2d: floor((in + pb + pe - dil*(k-1) - 1) / stride) + 1."""
    return (size + pb + pe - dil * (k - 1) - 1) // stride + 1


def pool_out_size(size: int, k: int, stride: int, dil: int, pb: int, pe: int, ceil: bool) -> int:
    """WebNN pooling: like conv, rounding the division down ("floor") or up ("ceil")."""
    num = size + pb + pe - dil * (k - 1) - 1
    return (-(-num // stride) if ceil else num // stride) + 1


def conv_transpose_out_size(size: int, k: int, stride: int, dil: int, pb: int, pe: int, out_pad: int) -> int:
    """WebNN convTranspose2d: (in-1)*stride + dil*(k-1) + 1 - pb - pe + outputPadding."""
    return (size - 1) * stride + dil * (k - 1) + 1 - pb - pe + out_pad


def auto_pad(size: int, k: int, stride: int, dil: int, upper: bool) -> tuple[int, int]:
    """(begin, end) padding of one spatial dim for autoPad "same-upper" (`upper`) / "same-lower".

    The output size is ceil(size / stride); the total padding is what makes the dilated window cover the
    input for that many steps. An odd total puts the extra element at the end (upper) or beginning (lower).
    """
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + dil * (k - 1) + 1 - size)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def auto_pad_transpose(
    size: int, k: int, stride: int, dil: int, out_pad: int, upper: bool
) -> tuple[int, int]:
    """autoPad for convTranspose2d: the output size is size*stride; the padding to remove is split like
    `auto_pad` (extra at the end for "same-upper")."""
    total = max(0, (size - 1) * stride + dil * (k - 1) + 1 + out_pad - size * stride)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def isclose_int(x: float) -> bool:
    return math.isfinite(x) and float(x).is_integer()
