"""Data-movement ops: reshape (and the squeeze/unsqueeze DSL aliases), transpose, concat, slice, pad, split,
expand, tile, reverse, gather*/scatter*, triangular, cumulativeSum, and the nodes-block `constant`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ValidationError
from ..graph import Dim, DynDim
from .common import FLOAT, INDEX, REQUIRED, TT, define, dtype_in, rank_is, same_dtype
from .registry import Ctx, coerce_option
from .shapes import broadcast_shapes, dim_str, need_int, norm_axes, norm_axis, shape_str

# -------------------------------------------------------------------------------------------- reshape


def resolve_new_shape(ctx: Ctx, in_shape: Sequence[Dim], new: Sequence[Dim]) -> list[Dim]:
    """newShape with its one -1 (or null) entry inferred. With dynamic input dims, -1 can stand for one
    dynamic dim when the static sizes match exactly (e.g. [dyn, 3, 4] -> [-1, 12]); a DynDim entry (from a
    bound shape fed back in) stands for the same input dim."""
    shown = shape_str(new)
    if sum(1 for d in new if d == -1) > 1:
        ctx.fail(f"newShape {shown} has more than one -1")
    for d in new:
        if isinstance(d, int) and (d == 0 or d < -1):
            ctx.fail(f"newShape {shown} has a dimension {d}; dimensions must be positive (or one -1)")
    static_in = 1
    dyn_in = [d for d in in_shape if isinstance(d, DynDim)]
    for d in in_shape:
        if isinstance(d, int):
            static_in *= d
    static_new = 1
    for d in new:
        if isinstance(d, DynDim):
            if d not in dyn_in:
                ctx.fail(
                    f"newShape {shown} names dynamic dimension {d.name!r}, which the input "
                    f"{shape_str(in_shape)} does not have"
                )
            dyn_in.remove(d)
        elif d != -1:
            static_new *= d
    if -1 not in new:
        if dyn_in:
            ctx.fail(
                f"reshape of {shape_str(in_shape)} to {shown}: dimension "
                f"{dyn_in[0].name!r} is dynamic (write -1 for it)"
            )
        if static_in != static_new:
            ctx.fail(
                f"newShape {shown} has {static_new} elements but the input {shape_str(in_shape)} "
                f"has {static_in}"
            )
        return list(new)
    if static_in % static_new:
        ctx.fail(f"newShape {shown}: {static_in} input elements do not divide into {static_new}")
    q = static_in // static_new
    if not dyn_in:
        fill: Dim = q
    elif len(dyn_in) == 1 and q == 1:
        fill = dyn_in[0]
    else:
        ctx.fail(
            f"newShape {shown}: cannot infer -1 from input {shape_str(in_shape)} with dynamic "
            f"dimension {dyn_in[0].name!r}"
        )
    return [fill if d == -1 else d for d in new]


def squeeze_shape(ctx: Ctx, shape: Sequence[Dim], axes: Sequence[int] | None) -> list[Dim]:
    if axes is None:  # every static 1
        return [d for d in shape if d != 1]
    ax = norm_axes(axes, len(shape))
    for a in ax:
        if shape[a] != 1:
            ctx.fail(f"cannot squeeze axis {a} of {shape_str(shape)}: its size is {dim_str(shape[a])}, not 1")
    return [d for i, d in enumerate(shape) if i not in ax]


def _reshape_normalize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    if "axes" in opts:  # the ONNX converter writes Squeeze as reshape(axes=...)
        if opts.get("newShape") is not None:
            ctx.fail("give either newShape or axes (squeeze), not both")
        axes = coerce_option(ctx, "axes", "ints", opts.pop("axes"))
        # the squeezed shape may hold dynamic dims, which newShape cannot spell: hand it over via ctx
        ctx.extra["squeezed"] = squeeze_shape(ctx, t["input"].shape, axes)
        opts["newShape"] = []
    return opts


def _reshape(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    if "squeezed" in ctx.extra:  # already resolved by the squeeze form
        shape = ctx.extra["squeezed"]
    else:
        shape = resolve_new_shape(ctx, x.shape, opts["newShape"])
    opts["newShape"] = list(shape)
    return [TT(x.dtype, shape)]


define(
    "reshape",
    ["input"],
    _reshape,
    "Same data, new shape newShape (one -1 or null entry is inferred). The converter form "
    "reshape(axes=[..]) without newShape means squeeze. bind leaves the resolved shape in `newShape`. "
    "WebNN §7.6.29 reshape().",
    options={"newShape": ("shape", REQUIRED)},
    accepts=("axes",),
    normalize=_reshape_normalize,
)


def _squeeze(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    shape = squeeze_shape(ctx, x.shape, opts["axes"])
    opts.clear()
    opts.update({"newShape": list(shape), "__op__": "reshape"})
    return [TT(x.dtype, shape)]


define(
    "squeeze",
    ["input"],
    _squeeze,
    "Remove size-1 dims at `axes` (default: every static size-1 dim). A DSL alias: binds to a reshape "
    "BoundNode with the resolved newShape. WebNN §7.6.36 squeeze() (earlier edition).",
    options={"axes": ("ints", None)},
)


def _unsqueeze(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    out_rank = x.rank + len(opts["axes"])
    ax = norm_axes(opts["axes"], out_rank)
    it = iter(x.shape)
    shape = [1 if i in ax else next(it) for i in range(out_rank)]
    opts.clear()
    opts.update({"newShape": list(shape), "__op__": "reshape"})
    return [TT(x.dtype, shape)]


define(
    "unsqueeze",
    ["input"],
    _unsqueeze,
    "Insert size-1 dims at `axes` (positions in the output, negative counted from its end; ONNX "
    "Unsqueeze). A DSL alias: binds to a reshape BoundNode with the resolved newShape.",
    options={"axes": ("ints", REQUIRED)},
)

# -------------------------------------------------------------------------------------------- transpose


def _transpose(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    perm = list(range(x.rank))[::-1] if opts["permutation"] is None else opts["permutation"]
    if len(perm) != x.rank:
        ctx.fail(f"permutation {perm} must have {x.rank} entries for input {shape_str(x.shape)}")
    perm = opts["permutation"] = norm_axes(perm, x.rank, "permutation")
    return [TT(x.dtype, [x.shape[p] for p in perm])]


define(
    "transpose",
    ["input"],
    _transpose,
    "Permute dims: output dim i is input dim permutation[i] (default: reversed). WebNN §7.6.38 transpose().",
    options={"permutation": ("ints", None)},
)

# -------------------------------------------------------------------------------------------- concat


def _concat(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    xs = t["inputs"]
    names = ctx.node.inputs
    dt = same_dtype(ctx, dict(zip(names, xs)))
    r = xs[0].rank
    if r == 0:
        ctx.fail("inputs must have rank >= 1")
    axis = opts["axis"] = norm_axis(opts["axis"], r)
    out = list(xs[0].shape)
    for n, x in zip(names[1:], xs[1:]):
        if x.rank != r or any(x.shape[i] != out[i] for i in range(r) if i != axis):
            ctx.fail(
                f"input {n!r} of shape {shape_str(x.shape)} does not match {shape_str(xs[0].shape)} "
                f"outside axis {axis}"
            )
    if len(xs) > 1:
        out[axis] = sum(need_int(x.shape[axis], "concat axis size") for x in xs)
    return [TT(dt, out)]


define(
    "concat",
    ["inputs"],
    _concat,
    "Join the inputs (same dtype, same shape except along `axis`; negative counts from the end) along "
    "`axis`. Inputs are positional (variadic). WebNN §7.6.6 concat().",
    variadic=True,
    options={"axis": ("int", REQUIRED)},
)

# -------------------------------------------------------------------------------------------- slice

_INT64_MAX = 2**63 - 1


def _slice_normalize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    onnx = [k for k in ("ends", "axes", "steps") if k in opts]
    if not onnx:
        return opts
    # ONNX form: starts/ends (negative = from the end, clamped to the dim), optional axes and steps
    if "sizes" in opts or "strides" in opts:
        ctx.fail(f"mixes the WebNN form (starts/sizes/strides) with the ONNX form ({', '.join(onnx)})")
    if "ends" not in opts or "starts" not in opts:
        ctx.fail("the ONNX form needs both starts and ends")
    shape = t["input"].shape
    starts = coerce_option(ctx, "starts", "ints", opts.pop("starts"))
    ends = coerce_option(ctx, "ends", "ints", opts.pop("ends"))
    axes = coerce_option(ctx, "axes", "ints", opts.pop("axes", list(range(len(starts)))))
    steps = coerce_option(ctx, "steps", "ints", opts.pop("steps", [1] * len(starts)))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        ctx.fail(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    axes = norm_axes(axes, len(shape))
    dense_starts = [0] * len(shape)
    dense_sizes: list[int] = [-1] * len(shape)
    dense_strides = [1] * len(shape)
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st < 1:
            ctx.fail(f"slice step {st} on axis {a}: only positive steps are supported")
        dim = need_int(shape[a], f"slice on axis {a}")
        s = min(max(s + dim if s < 0 else s, 0), dim)
        e = min(max(e + dim if e < 0 else e, 0), dim)
        if e <= s:
            ctx.fail(f"slice on axis {a} is empty (start {s}, end {e}); empty tensors are not supported")
        dense_starts[a], dense_sizes[a], dense_strides[a] = s, e - s, st
    opts.update(starts=dense_starts, sizes=dense_sizes, strides=dense_strides)
    return opts


def _slice(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    r = x.rank
    starts, sizes = opts["starts"], opts["sizes"]
    strides = [1] * r if opts["strides"] is None else opts["strides"]
    for key, v in (("starts", starts), ("sizes", sizes), ("strides", strides)):
        if len(v) != r:
            ctx.fail(f"option {key!r} {v} must have {r} entries for input {shape_str(x.shape)}")
    out: list[Dim] = []
    res_starts, res_sizes = [], []
    for i in range(r):
        d, s, n, st = x.shape[i], starts[i], sizes[i], strides[i]
        if st < 1:
            ctx.fail(f"strides {strides} must be positive")
        if isinstance(d, DynDim) and s == 0 and n in (-1, d) and st == 1:
            out.append(d)  # whole dynamic dim
            res_starts.append(0)
            res_sizes.append(d)
            continue
        d = need_int(d, f"slice on axis {i}")
        if isinstance(n, DynDim):
            ctx.fail(f"slice on axis {i}: size {dim_str(n)} does not match dimension {d}")
        if s < 0:
            s += d
        if n == -1:  # earlier editions: -1 = to the end
            n = d - s
        if s < 0 or n < 1 or s + n > d:
            ctx.fail(f"slice on axis {i}: start {starts[i]} and size {sizes[i]} do not fit dimension {d}")
        res_starts.append(s)
        res_sizes.append(n)
        out.append(-(-n // st))
    opts.update(starts=res_starts, sizes=res_sizes, strides=list(strides))
    return [TT(x.dtype, out)]


define(
    "slice",
    ["input"],
    _slice,
    "Take sizes[d] elements from starts[d] with step strides[d] in every dim (output ceil(size/stride)). "
    "The ONNX form starts/ends/axes/steps is rewritten to this one; bind leaves dense, non-negative "
    "starts/sizes/strides (a size is a DynDim only for an untouched dynamic dim). "
    "WebNN §7.6.31 slice().",
    options={"starts": ("ints", REQUIRED), "sizes": ("shape", REQUIRED), "strides": ("ints", None)},
    accepts=("ends", "axes", "steps"),
    normalize=_slice_normalize,
)

# -------------------------------------------------------------------------------------------- pad


def _pad(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    b, e = opts["beginningPadding"], opts["endingPadding"]
    for key, v in (("beginningPadding", b), ("endingPadding", e)):
        if len(v) != x.rank:
            ctx.fail(f"option {key!r} {v} must have {x.rank} entries for input {shape_str(x.shape)}")
        if min(v, default=0) < 0:
            ctx.fail(f"option {key!r} {v} must not be negative")
    out: list[Dim] = []
    for i, d in enumerate(x.shape):
        if b[i] == 0 and e[i] == 0:
            out.append(d)
            continue
        d = need_int(d, f"pad on axis {i}")
        limit = {"reflection": d - 1, "symmetric": d}.get(opts["mode"])
        if limit is not None and max(b[i], e[i]) > limit:
            ctx.fail(f"{opts['mode']} padding {b[i]}/{e[i]} on axis {i} exceeds {limit} for size {d}")
        out.append(b[i] + d + e[i])
    return [TT(x.dtype, out)]


define(
    "pad",
    ["input"],
    _pad,
    "Add beginningPadding[d] / endingPadding[d] elements around each dim, filled per mode: constant "
    "(value), edge, reflection or symmetric. WebNN §7.6.23 pad().",
    options={
        "beginningPadding": ("ints", REQUIRED),
        "endingPadding": ("ints", REQUIRED),
        "mode": (("constant", "edge", "reflection", "symmetric"), "constant"),
        "value": ("float", 0.0),
    },
)

# -------------------------------------------------------------------------------------------- split


def _split_normalize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    if opts.get("splits") is None:  # the converter omits splits for an equal split over the outputs
        opts["splits"] = len(ctx.node.outputs)
    return opts


def _split(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    if x.rank == 0:
        ctx.fail("input must have rank >= 1")
    axis = opts["axis"] = norm_axis(opts["axis"], x.rank)
    size = need_int(x.shape[axis], "split axis size")
    splits = opts["splits"]
    if isinstance(splits, int):
        if splits < 1 or size % splits:
            ctx.fail(f"splits={splits} does not evenly divide dimension {axis} of size {size}")
        splits = [size // splits] * splits
    if not splits or min(splits) < 1 or sum(splits) != size:
        ctx.fail(f"splits {splits} must be positive and sum to {size} (dimension {axis})")
    opts["splits"] = list(splits)
    return [TT(x.dtype, [s if i == axis else d for i, d in enumerate(x.shape)]) for s in splits]


define(
    "split",
    ["input"],
    _split,
    "Split along `axis` (default 0) into `splits` equal parts, or parts of the listed sizes; one output "
    "per part (omitted splits = as many equal parts as the node has outputs). bind leaves the list of "
    "sizes in `splits`. WebNN §7.6.35 split().",
    options={"splits": ("int|ints", None), "axis": ("int", 0)},
    normalize=_split_normalize,
    num_outputs=lambda o: o["splits"] if isinstance(o["splits"], int) else len(o["splits"]),
)

# -------------------------------------------------------------------------------------------- expand, tile


def _expand(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    new = opts["newShape"]
    if min(new, default=1) < 1:
        ctx.fail(f"newShape {new} must be positive")
    try:
        out = broadcast_shapes(x.shape, new)
    except ValidationError as e:
        ctx.fail(f"input {shape_str(x.shape)} cannot expand to {new}: {e}")
    return [TT(x.dtype, out)]


define(
    "expand",
    ["input"],
    _expand,
    "Broadcast the input to newShape (numpy rules; the output is the broadcast of both shapes). "
    "WebNN MLGraphBuilder.expand().",
    options={"newShape": ("ints", REQUIRED)},
)


def _tile(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    reps = opts["repetitions"]
    if len(reps) != x.rank or min(reps, default=1) < 1:
        ctx.fail(f"repetitions {reps} must be {x.rank} positive integers")
    return [TT(x.dtype, [d if r == 1 else need_int(d, "tile") * r for d, r in zip(x.shape, reps)])]


define(
    "tile",
    ["input"],
    _tile,
    "Repeat the input repetitions[d] times along each dim. WebNN MLGraphBuilder.tile().",
    options={"repetitions": ("ints", REQUIRED)},
)


def _reverse(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    axes = list(range(x.rank)) if opts["axes"] is None else opts["axes"]
    opts["axes"] = norm_axes(axes, x.rank)
    return [x]


define(
    "reverse",
    ["input"],
    _reverse,
    "Reverse the element order along `axes` (default: all). WebNN MLGraphBuilder.reverse().",
    options={"axes": ("ints", None)},
)

# -------------------------------------------------------------------------------------------- gather/scatter


def _gather_normalize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    opts.pop("shape", None)  # the converter's output-shape note; we infer it
    return opts


def _gather(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, idx = t["input"], t["indices"]
    dtype_in(ctx, idx, "indices", INDEX)
    if x.rank == 0:
        ctx.fail("input must have rank >= 1")
    axis = opts["axis"] = norm_axis(opts["axis"], x.rank)
    return [TT(x.dtype, [*x.shape[:axis], *idx.shape, *x.shape[axis + 1 :]])]


define(
    "gather",
    ["input", "indices"],
    _gather,
    "Take slices of the input along `axis` (default 0) at `indices` (int32/uint32/int64); output shape "
    "input[:axis] + indices + input[axis+1:]. WebNN MLGraphBuilder.gather().",
    options={"axis": ("int", 0)},
    accepts=("shape",),
    normalize=_gather_normalize,
)


def _gather_elements(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, idx = t["input"], t["indices"]
    dtype_in(ctx, idx, "indices", INDEX)
    if x.rank == 0 or idx.rank != x.rank:
        ctx.fail(f"indices {shape_str(idx.shape)} must have the input's rank ({shape_str(x.shape)}), >= 1")
    opts["axis"] = norm_axis(opts["axis"], x.rank)
    return [TT(x.dtype, idx.shape)]


define(
    "gatherElements",
    ["input", "indices"],
    _gather_elements,
    "output[i] = input[i with dim axis replaced by indices[i]]; output has the indices' shape. "
    "WebNN MLGraphBuilder.gatherElements().",
    options={"axis": ("int", 0)},
)


def _gather_nd(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, idx = t["input"], t["indices"]
    dtype_in(ctx, idx, "indices", INDEX)
    if idx.rank < 1:
        ctx.fail("indices must have rank >= 1")
    k = need_int(idx.shape[-1], "gatherND index depth")
    if not 1 <= k <= x.rank:
        ctx.fail(f"the last indices dim ({k}) must be in [1, input rank {x.rank}]")
    return [TT(x.dtype, [*idx.shape[:-1], *x.shape[k:]])]


define(
    "gatherND",
    ["input", "indices"],
    _gather_nd,
    "Gather slices addressed by the last indices dim (k coordinates); output indices[:-1] + input[k:]. "
    "WebNN MLGraphBuilder.gatherND().",
)


def _scatter_elements(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, idx, upd = t["input"], t["indices"], t["updates"]
    dtype_in(ctx, idx, "indices", INDEX)
    same_dtype(ctx, {"input": x, "updates": upd})
    if idx.shape != upd.shape or idx.rank != x.rank or x.rank == 0:
        ctx.fail(
            f"indices {shape_str(idx.shape)} and updates {shape_str(upd.shape)} must match and have "
            f"the input's rank ({shape_str(x.shape)})"
        )
    opts["axis"] = norm_axis(opts["axis"], x.rank)
    return [x]


define(
    "scatterElements",
    ["input", "indices", "updates"],
    _scatter_elements,
    "A copy of the input with updates written at indices along `axis`; output has the input's shape. "
    "WebNN MLGraphBuilder.scatterElements().",
    options={"axis": ("int", 0)},
)


def _scatter_nd(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, idx, upd = t["input"], t["indices"], t["updates"]
    dtype_in(ctx, idx, "indices", INDEX)
    same_dtype(ctx, {"input": x, "updates": upd})
    if idx.rank < 1:
        ctx.fail("indices must have rank >= 1")
    k = need_int(idx.shape[-1], "scatterND index depth")
    want = (*idx.shape[:-1], *x.shape[k:])
    if not 1 <= k <= x.rank or tuple(upd.shape) != want:
        ctx.fail(
            f"updates {shape_str(upd.shape)} must have shape {shape_str(want)} (indices "
            f"{shape_str(idx.shape)}, input {shape_str(x.shape)})"
        )
    return [x]


define(
    "scatterND",
    ["input", "indices", "updates"],
    _scatter_nd,
    "A copy of the input with slices replaced at the coordinates in indices' last dim; output has the "
    "input's shape. WebNN MLGraphBuilder.scatterND().",
)

# ------------------------------------------------------------------------------------ triangular, cumsum


def _triangular_normalize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    if "k" in opts:  # the ONNX converter's Trilu `k`
        if "diagonal" in opts:
            ctx.fail("give either diagonal or k, not both")
        opts["diagonal"] = opts.pop("k")
    return opts


def _triangular(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    rank_is(ctx, t["input"], "input", range(2, 9))
    return [t["input"]]


define(
    "triangular",
    ["input"],
    _triangular,
    "Keep the upper (upper=true, default) or lower triangle of the last two dims relative to diagonal "
    "`diagonal` (converter `k`), zeroing the rest. WebNN MLGraphBuilder.triangular().",
    options={"upper": ("bool", True), "diagonal": ("int", 0)},
    accepts=("k",),
    normalize=_triangular_normalize,
)


def _cumsum(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    dtype_in(ctx, x, "input", FLOAT | {"int32", "uint32", "int64", "uint64"})
    if x.rank == 0:
        ctx.fail("input must have rank >= 1")
    opts["axis"] = norm_axis(opts["axis"], x.rank)
    return [x]


define(
    "cumulativeSum",
    ["input"],
    _cumsum,
    "Running sum along `axis`; `exclusive` leaves out the current element, `reversed` sums from the end. "
    "WebNN MLGraphBuilder.cumulativeSum().",
    options={"axis": ("int", REQUIRED), "exclusive": ("bool", False), "reversed": ("bool", False)},
)

# -------------------------------------------------------------------------------------------- constant


def _constant(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    if min(opts["shape"], default=1) < 1:
        ctx.fail(f"shape {opts['shape']} must be positive")
    return [TT(opts["dataType"], opts["shape"])]


define(
    "constant",
    [],
    _constant,
    "A constant written in the nodes block (the ONNX converter's Constant): dataType, shape and `data` "
    "(base64 of raw little-endian bytes) or a scalar `value`. WebNN §7.6.3 constant().",
    options={
        "dataType": ("dtype", REQUIRED),
        "shape": ("ints", REQUIRED),
        "data": ("str", None),
        "value": ("float", None),
    },
)
