"""Shape and data-movement ONNX ops: Reshape family, Transpose, Concat, Split, Slice, Gather, Pad, Expand,
Tile, reductions, and the shape-chain ops (Shape, Size, ConstantOfShape, Range) that fold away."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES, Dim, DynDim
from .convert import Converter, attrs_of, text, where
from .refusals import DATA_SHAPED, ZERO_SIZED
from .registry import onnx_op


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise UnsupportedError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def axes_input(ctx: Converter, node: Any, idx: int, rank: int) -> list[int] | None:
    """Axes given as attribute (older opsets) or as constant input `idx` (newer ones), normalized."""
    if ctx.has(node, idx):
        raw = ctx.const_ints(node, idx, "axes")
    else:
        got = attrs_of(node).get("axes")
        if got is None:
            return None
        raw = [int(v) for v in got]
    return [norm_axis(a, rank, "axes entry") for a in raw]


def reshape_to(ctx: Converter, src: str, target: list[Dim], out: str | None, hint: str | None = None) -> str:
    """Emit `reshape(src)` to `target` (ints and at most one DynDim, written as -1). A reshape to the same
    shape defines `out` as an alias when `out` is an ONNX name."""
    if list(ctx.shape(src)) == list(target) and out is not None:
        ctx.alias(out, src)
        return ctx.operand(src)
    dyn = [d for d in target if isinstance(d, DynDim)]
    if len(dyn) > 1:
        names = ", ".join(d.name for d in dyn)
        raise UnsupportedError(
            f"reshape to a shape with several symbolic dims ({names}); pass override_dims for them"
        )
    new = [-1 if isinstance(d, DynDim) else int(d) for d in target]
    return ctx.emit("reshape", [ctx.operand(src)], {"newShape": new}, out=out, hint=hint)


def reshape_value(
    ctx: Converter, wname: str, target: list[int], out: str | None = None, hint: str | None = None
) -> str:
    """Reshape a WebNN value (helper values that have no ONNX name)."""
    if list(ctx.types[wname].shape) == list(target) and out is None:
        return wname
    dyn = [d for d in target if isinstance(d, DynDim)]
    if dyn:  # e.g. a 1-D MatMul operand of symbolic length, made 2-D here
        raise UnsupportedError(
            f"a reshape to {list(target)} needs the symbolic dim {dyn[0].name!r} fixed: pass "
            f"override_dims={{{dyn[0].name!r}: N}} (CLI: --override-dim {dyn[0].name}=N)"
        )
    return ctx.emit("reshape", [wname], {"newShape": [int(d) for d in target]}, out=out, hint=hint)


@onnx_op("Reshape")
def reshape(ctx: Converter, node: Any) -> None:
    shape_in = list(ctx.shape(node.input[0]))
    spec = ctx.const_ints(node, 1, "shape")
    allowzero = int(attrs_of(node).get("allowzero", 0))
    target: list[Dim] = []
    for i, s in enumerate(spec):
        if s == 0 and not allowzero:
            if i >= len(shape_in):
                raise UnsupportedError(f"shape entry {i} is 0 (copy) but the input has rank {len(shape_in)}")
            target.append(shape_in[i])
        else:
            target.append(s)
    if -1 in target:
        k = target.index(-1)
        known = [d for j, d in enumerate(target) if j != k]
        dyn_in = [d for d in shape_in if isinstance(d, DynDim)]
        dyn_known = [d for d in known if isinstance(d, DynDim)]
        if dyn_in != dyn_known:
            missing = [d.name for d in dyn_in if d not in dyn_known]
            raise UnsupportedError(
                f"static reshape of {node.input[0]!r} needs symbolic dim "
                f"{', '.join(map(repr, missing))}: pass override_dims for it"
            )
        total = math.prod(int(d) for d in shape_in if isinstance(d, int))
        part = math.prod(int(d) for d in known if isinstance(d, int))
        if part == 0 or total % part:
            raise UnsupportedError(f"cannot reshape {shape_in} to {spec}")
        target[k] = total // part
    elif any(isinstance(d, DynDim) for d in shape_in) and not any(isinstance(d, DynDim) for d in target):
        name = next(d.name for d in shape_in if isinstance(d, DynDim))
        raise UnsupportedError(
            f"static reshape of {node.input[0]!r} to {spec} needs symbolic dim {name!r}: "
            "pass override_dims for it"
        )
    reshape_to(ctx, node.input[0], target, node.output[0])


@onnx_op("Flatten")
def flatten(ctx: Converter, node: Any) -> None:
    shape = ctx.static_shape(node.input[0], "Flatten")
    axis = int(attrs_of(node).get("axis", 1))
    if not -len(shape) <= axis <= len(shape):  # Flatten's axis may equal the rank; -1 is rank - 1
        raise UnsupportedError(f"axis {axis} is out of range for rank {len(shape)}")
    axis = axis + len(shape) if axis < 0 else axis
    reshape_to(ctx, node.input[0], [math.prod(shape[:axis]), math.prod(shape[axis:])], node.output[0])


@onnx_op("Squeeze")
def squeeze(ctx: Converter, node: Any) -> None:
    shape = list(ctx.shape(node.input[0]))
    axes = axes_input(ctx, node, 1, len(shape))
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    reshape_to(ctx, node.input[0], [d for i, d in enumerate(shape) if i not in axes], node.output[0])


@onnx_op("Unsqueeze")
def unsqueeze(ctx: Converter, node: Any) -> None:
    shape = list(ctx.shape(node.input[0]))
    if ctx.has(node, 1):
        raw = ctx.const_ints(node, 1, "axes")
    else:
        raw = [int(v) for v in attrs_of(node).get("axes", [])]
    rank = len(shape) + len(raw)
    for a in sorted(norm_axis(a, rank, "axes entry") for a in raw):
        shape.insert(a, 1)
    reshape_to(ctx, node.input[0], shape, node.output[0])


@onnx_op("Transpose")
def transpose(ctx: Converter, node: Any) -> None:
    rank = ctx.rank(node.input[0])
    perm = attrs_of(node).get("perm")
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if perm == list(range(rank)):
        ctx.alias(node.output[0], node.input[0])
        return
    ctx.emit("transpose", [ctx.x(node, 0)], {"permutation": perm}, out=node.output[0])


@onnx_op("Concat")
def concat(ctx: Converter, node: Any) -> None:
    ins = [n for n in node.input if n]
    rank = ctx.rank(ins[0])
    if any(ctx.rank(n) != rank for n in ins):
        raise ValidationError(f"{where(node)}: inputs of ranks {[ctx.rank(n) for n in ins]} (must be equal)")
    axis = norm_axis(int(attrs_of(node)["axis"]), rank)
    ins = [n for n in ins if ctx.shape(n)[axis] != 0]  # ONNX allows empty pieces; WebNN does not
    if len(ins) == 1:
        ctx.alias(node.output[0], ins[0])
        return
    ctx.emit("concat", [ctx.operand(n) for n in ins], {"axis": axis}, out=node.output[0])


@onnx_op("Split")
def split(ctx: Converter, node: Any) -> None:
    shape = ctx.shape(node.input[0])
    if not shape:
        raise ValidationError(f"{where(node)}: a scalar cannot be split")
    a = attrs_of(node)
    axis = norm_axis(int(a.get("axis", 0)), len(shape))
    n_out = len(node.output)
    if ctx.has(node, 1):
        splits = ctx.const_ints(node, 1, "split")
    elif a.get("split") is not None:
        splits = [int(v) for v in a["split"]]
    else:
        dim = shape[axis]
        if isinstance(dim, DynDim):
            raise UnsupportedError(f"split of symbolic dim {dim.name!r}: pass override_dims for it")
        n = int(a.get("num_outputs", n_out))
        if n != n_out:
            raise ValidationError(f"{where(node)}: num_outputs {n}, but the node has {n_out} outputs")
        chunk = -(-dim // n)
        splits = [min(chunk, dim - k * chunk) for k in range(n)]
    if len(splits) != n_out:
        raise UnsupportedError(f"{len(splits)} split sizes for {n_out} outputs")
    outs = [o if o else f"{node.output[0]}__unused{k}" for k, o in enumerate(node.output)]
    if 0 in splits:  # an empty piece is an empty constant: Concat drops it, other consumers refuse it
        empty = list(ctx.static_shape(node.input[0], f"Split with sizes {splits}"))
        empty[axis] = 0
        for o, s in zip(outs, splits):
            if s == 0:
                ctx.set_const(o, np.zeros(empty, DTYPES[ctx.dtype(node.input[0])]))
        outs = [o for o, s in zip(outs, splits) if s]
        splits = [s for s in splits if s]
    if len(outs) == 1:
        ctx.alias(outs[0], node.input[0])
        return
    ctx.emit("split", [ctx.x(node, 0)], {"splits": splits, "axis": axis}, out=outs)


@onnx_op("Slice")
def slice_(ctx: Converter, node: Any) -> None:
    shape = ctx.shape(node.input[0])
    rank = len(shape)
    a = attrs_of(node)
    if ctx.has(node, 1):
        starts = ctx.const_ints(node, 1, "starts")
        ends = ctx.const_ints(node, 2, "ends")
        axes = ctx.const_ints(node, 3, "axes") if ctx.has(node, 3) else list(range(len(starts)))
        steps = ctx.const_ints(node, 4, "steps") if ctx.has(node, 4) else [1] * len(starts)
    else:  # opset < 10
        starts, ends = list(a["starts"]), list(a["ends"])
        axes = list(a.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    begin = [0] * rank
    sizes: list[Dim] = list(shape)
    strides = [1] * rank
    reverse: list[int] = []
    for ax, s, e, st in zip(axes, starts, ends, steps):
        ax = norm_axis(ax, rank)
        dim = shape[ax]
        if isinstance(dim, DynDim):
            if s == 0 and st == 1 and e >= 2**31 - 1:
                continue  # the whole symbolic dim: untouched
            raise UnsupportedError(f"slice of symbolic dim {dim.name!r}: pass override_dims for it")
        if st == 0:
            raise UnsupportedError("slice step 0")
        lo, hi, step = slice(s, e, st).indices(dim)
        count = len(range(lo, hi, step))
        if count == 0:
            raise UnsupportedError(f"slice of axis {ax} is empty: {ZERO_SIZED}")
        if step < 0:
            reverse.append(ax)
            lo, step = dim - 1 - lo, -step
        begin[ax], strides[ax] = lo, step
        sizes[ax] = (count - 1) * step + 1  # the spec's sizes is the input extent the window covers
    src = ctx.x(node, 0)
    if reverse:
        src = ctx.emit("reverse", [src], {"axes": sorted(reverse)})
    if begin == [0] * rank and list(sizes) == list(shape) and strides == [1] * rank:
        if reverse:
            ctx.emit("identity", [src], out=node.output[0])
        else:
            ctx.alias(node.output[0], node.input[0])
        return
    opts: dict[str, Any] = {"starts": begin, "sizes": [-1 if isinstance(d, DynDim) else d for d in sizes]}
    if any(isinstance(d, DynDim) for d in sizes):
        raise UnsupportedError("slice of a tensor with symbolic dims: pass override_dims")
    if strides != [1] * rank:
        opts["strides"] = strides
    ctx.emit("slice", [src], opts, out=node.output[0])


def _broadcast(a: list[Dim], b: list[int]) -> list[Dim]:
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out: list[Dim] = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        else:
            raise UnsupportedError(f"shapes {a} and {b} do not broadcast")
    return out


@onnx_op("Expand")
def expand(ctx: Converter, node: Any) -> None:
    target = ctx.const_ints(node, 1, "shape")
    out_shape = _broadcast(list(ctx.shape(node.input[0])), target)
    if out_shape == list(ctx.shape(node.input[0])):
        ctx.alias(node.output[0], node.input[0])
        return
    if any(isinstance(d, DynDim) for d in out_shape):
        raise UnsupportedError("expand of a tensor with symbolic dims: pass override_dims")
    ctx.emit("expand", [ctx.x(node, 0)], {"newShape": out_shape}, out=node.output[0])


@onnx_op("Tile")
def tile(ctx: Converter, node: Any) -> None:
    reps = ctx.const_ints(node, 1, "repeats")
    ctx.emit("tile", [ctx.x(node, 0)], {"repetitions": reps}, out=node.output[0])


@onnx_op("Gather")
def gather(ctx: Converter, node: Any) -> None:
    shape = ctx.shape(node.input[0])
    axis = norm_axis(int(attrs_of(node).get("axis", 0)), len(shape))
    if ctx.is_const(node.input[1]):
        idx = np.asarray(ctx.const(node.input[1])).astype(np.int64)
        dim = shape[axis]
        if isinstance(dim, int):
            if ((idx < -dim) | (idx >= dim)).any():
                raise UnsupportedError(f"gather index out of range for axis {axis} of size {dim}")
        elif (idx < 0).any():
            raise UnsupportedError(f"negative gather indices on symbolic dim {dim.name!r}")

        def fix(a: np.ndarray, dim: Any = dim) -> np.ndarray:
            a = np.asarray(a).astype(np.int64)
            a = np.where(a < 0, a + dim, a) if isinstance(dim, int) else a  # WebNN indices are >= 0
            return a.astype(np.int32) if a.size == 0 or a.max() < 2**31 else a

        ind = ctx.derived_const(node.input[1], f"axis{dim}", fix)
        ctx.emit("gather", [ctx.x(node, 0), ind], {"axis": axis}, out=node.output[0])
    else:
        _gather_run_time_ids(ctx, node, "gather", {"axis": axis})


def _gather_run_time_ids(ctx: Converter, node: Any, op: str, options: dict[str, Any] | None = None) -> None:
    """`op` of the node's data and indices, whose ids follow ONNX's rule: outside [-n, n-1] is an error
    (`Graph.onnx_indices`), not clamped as WebNN's are. The runtime checks ids that are a graph input; ids
    computed in the graph (through a Cast, a Reshape, arithmetic) still clamp. Constant ids are checked
    here."""
    shape = ctx.shape(node.input[0])
    if ctx.is_const(node.input[1]):
        idx = np.asarray(ctx.const(node.input[1])).astype(np.int64)
        if op == "gatherND":
            cols = [(idx[..., k], shape[k]) for k in range(min(idx.shape[-1] if idx.ndim else 0, len(shape)))]
        else:
            cols = [(idx, shape[int((options or {}).get("axis", 0))])]
        _check_bounds([(c, d) for c, d in cols if isinstance(d, int)], node.op_type)
    node_id = ctx.emit(op, [ctx.x(node, 0), ctx.x(node, 1)], options, out=node.output[0])
    ctx.graph.onnx_indices.add(node_id)


@onnx_op("Compress")
def compress(ctx: Converter, node: Any) -> None:
    """Compress by a constant condition is a gather of the kept indices (of the flattened input when no
    axis is given); a condition computed at run time decides the output's shape."""
    if not ctx.is_const(node.input[1]):
        raise UnsupportedError(f"Compress by a condition computed at run time: {DATA_SHAPED}")
    keep = np.flatnonzero(np.asarray(ctx.const(node.input[1])).reshape(-1)).astype(np.int32)
    if keep.size == 0:
        raise UnsupportedError(f"Compress keeps nothing: {ZERO_SIZED}")
    x = ctx.x(node, 0)
    axis = attrs_of(node).get("axis")
    if axis is None:
        x = reshape_value(ctx, x, [math.prod(ctx.static_shape(node.input[0], "Compress"))])
        axis = 0
    axis = norm_axis(int(axis), len(ctx.types[x].shape))
    idx = ctx.new_const(f"{ctx.namer.of(node.output[0])}/kept", keep)
    ctx.emit("gather", [x, idx], {"axis": axis}, out=node.output[0])


@onnx_op("GatherElements")
def gather_elements(ctx: Converter, node: Any) -> None:
    axis = norm_axis(int(attrs_of(node).get("axis", 0)), ctx.rank(node.input[0]))
    _gather_run_time_ids(ctx, node, "gatherElements", {"axis": axis})


@onnx_op("GatherND")
def gather_nd(ctx: Converter, node: Any) -> None:
    bd = int(attrs_of(node).get("batch_dims", 0))
    if bd:  # constant indices: rows of the data flattened over the batch and indexed dims, one gather
        shape = list(ctx.static_shape(node.input[0], "GatherND with batch_dims"))
        idx = np.asarray(ctx.const_input(node, 1, "indices (with batch_dims)")).astype(np.int64)
        q = idx.shape[-1]
        lead = shape[: bd + q]
        if idx.ndim < bd + 1 or list(idx.shape[:bd]) != shape[:bd] or bd + q > len(shape):
            raise ValidationError(
                f"{where(node)}: indices {list(idx.shape)} for data {shape}, batch_dims {bd}"
            )
        _check_bounds([(idx[..., k], shape[bd + k]) for k in range(q)], node.op_type)
        batch = np.indices(idx.shape[:-1])[:bd]  # each output row's batch coordinates
        coords = [*batch, *np.moveaxis(np.where(idx < 0, idx + np.array(shape[bd : bd + q]), idx), -1, 0)]
        rows = np.ravel_multi_index(coords, lead).astype(np.int32)
        x = ctx.emit("reshape", [ctx.x(node, 0)], {"newShape": [int(np.prod(lead)), *shape[bd + q :]]})
        ind = ctx.new_const(f"{ctx.namer.of(node.output[0])}/rows", rows)
        ctx.emit("gather", [x, ind], {"axis": 0}, out=node.output[0])
        return
    _gather_run_time_ids(ctx, node, "gatherND")


@onnx_op("ScatterND")
def scatter_nd(ctx: Converter, node: Any) -> None:
    reduction = text(attrs_of(node).get("reduction", "none"))
    if reduction != "none":
        shape = ctx.static_shape(node.input[0], "ScatterND")
        idx = ctx.const_input(node, 1, "indices (with a reduction)").astype(np.int64)
        positions = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        _check_bounds([(idx[..., k], shape[k]) for k in range(idx.shape[-1])], node.op_type)
        _scatter_reduce(ctx, node, positions[tuple(np.moveaxis(idx, -1, 0))], reduction)
        return
    ctx.emit("scatterND", [ctx.x(node, 0), ctx.x(node, 1), ctx.x(node, 2)], out=node.output[0])


@onnx_op("ScatterElements", "Scatter")
def scatter_elements(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    reduction = text(a.get("reduction", "none"))
    axis = norm_axis(int(a.get("axis", 0)), ctx.rank(node.input[0]))
    if reduction != "none":
        shape = ctx.static_shape(node.input[0], node.op_type)
        idx = ctx.const_input(node, 1, "indices (with a reduction)").astype(np.int64)
        _check_bounds([(idx, shape[axis])], node.op_type)
        positions = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        lead = tuple(slice(0, d) for d in idx.shape)
        block = positions[lead[:axis] + (slice(None),) + lead[axis + 1 :]]
        _scatter_reduce(ctx, node, np.take_along_axis(block, idx % shape[axis], axis), reduction)
        return
    ctx.emit(
        "scatterElements",
        [ctx.x(node, 0), ctx.x(node, 1), ctx.x(node, 2)],
        {"axis": axis},
        out=node.output[0],
    )


def _check_bounds(cols: list[tuple[np.ndarray, int]], op: str) -> None:
    for col, d in cols:
        if col.size and (col.min() < -d or col.max() >= d):
            raise ValidationError(f"{op}: an index is out of range for a dimension of {d}")


_REDUCE_OPS = {"none": None, "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _scatter_reduce(ctx: Converter, node: Any, targets: np.ndarray, reduction: str) -> None:
    """Scatter with a reduction and constant indices: `targets` holds each update's flat position in the
    data. Updates meeting at one position are applied in ONNX's order, one layer at a time: layer t gathers
    every position's t-th update (where it has one) and combines it with the running result."""
    if reduction not in _REDUCE_OPS:
        raise UnsupportedError(f"{node.op_type} reduction {reduction!r}")
    shape = list(ctx.static_shape(node.input[0], node.op_type))
    size = int(np.prod(shape))
    flat_t = targets.reshape(-1)
    out = ctx.emit("reshape", [ctx.x(node, 0)], {"newShape": [size]})
    upd = ctx.emit("reshape", [ctx.x(node, 2)], {"newShape": [int(flat_t.size)]})
    seen = np.zeros(size, np.int64)
    layer_of = np.empty(flat_t.size, np.int64)
    for u, p in enumerate(flat_t):
        layer_of[u], seen[p] = seen[p], seen[p] + 1
    name = ctx.namer.of(node.output[0])
    for t in range(int(seen.max(initial=0))):
        idx = np.zeros(size, np.int32)
        mask = np.zeros(size, np.uint8)
        us = np.flatnonzero(layer_of == t)
        idx[flat_t[us]], mask[flat_t[us]] = us, 1
        g = ctx.emit("gather", [upd, ctx.new_const(f"{name}/idx{t}", idx)], {"axis": 0})
        op = _REDUCE_OPS[reduction]
        new = ctx.emit(op, [out, g]) if op else g
        out = ctx.emit("where", [ctx.new_const(f"{name}/mask{t}", mask), new, out])
    ctx.emit("reshape", [out], {"newShape": shape}, out=node.output[0])


@onnx_op("Pad")
def pad(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    rank = ctx.rank(node.input[0])
    mode = text(a.get("mode", b"constant"))
    wmode = {"constant": "constant", "reflect": "reflection", "edge": "edge", "wrap": "wrap"}.get(mode)
    if wmode is None:
        raise UnsupportedError(f"Pad mode {mode!r}")
    run_time_value = None  # a constant_value computed at run time
    if ctx.has(node, 1):
        pads = ctx.const_ints(node, 1, "pads")
        if ctx.has(node, 2) and not ctx.is_const(node.input[2]) and wmode == "constant":
            run_time_value, value = ctx.x(node, 2), 0.0
        else:
            value = ctx.opt_const(node, 2, "constant_value")
            value = 0.0 if value is None or value.size == 0 else value.reshape(-1)[0].item()
        axes = axes_input(ctx, node, 3, rank)
    else:
        pads = [int(v) for v in a["pads"]]
        value = float(a.get("value", 0.0))
        axes = None
    axes = list(range(rank)) if axes is None else axes
    n = len(axes)
    if len(pads) != 2 * n:
        raise ValidationError(f"{where(node)}: {len(pads)} pads for {n} axes (needs {2 * n})")
    begin, end = [0] * rank, [0] * rank
    for k, ax in enumerate(axes):
        begin[ax], end[ax] = pads[k], pads[k + n]
    src = ctx.x(node, 0)
    if any(p < 0 for p in begin + end):  # negative pads crop: a slice first
        shape = ctx.static_shape(node.input[0], "Pad with negative pads")
        starts = [max(0, -p) for p in begin]
        sizes = [d - s - max(0, -p) for d, s, p in zip(shape, starts, end)]
        if min(sizes) < 1:
            raise UnsupportedError(f"pads {pads} crop {list(shape)} to nothing")
        src = ctx.emit("slice", [src], {"starts": starts, "sizes": sizes})
        begin, end = [max(0, p) for p in begin], [max(0, p) for p in end]
    if not any(begin + end):
        if src == ctx.x(node, 0):
            ctx.alias(node.output[0], node.input[0])
        else:
            ctx.emit("identity", [src], out=node.output[0])
        return
    if wmode == "wrap":  # WebNN has no circular padding: a gather of the wrapped indices per padded axis
        ctx.static_shape(node.input[0], "Pad mode 'wrap'")  # the gathers need every dim
        for ax in range(rank):
            if begin[ax] or end[ax]:
                d = int(ctx.types[src].shape[ax])
                idx = np.arange(-begin[ax], d + end[ax]) % d
                ind = ctx.new_const(f"{ctx.namer.of(node.output[0])}/wrap{ax}", idx.astype(np.int32))
                last = not any(begin[ax + 1 :] + end[ax + 1 :])
                src = ctx.emit("gather", [src, ind], {"axis": ax}, out=node.output[0] if last else None)
        return
    opts: dict[str, Any] = {"beginningPadding": begin, "endingPadding": end}
    if wmode != "constant":
        opts["mode"] = wmode
    elif value:
        opts["value"] = float(value) if not isinstance(value, bool) else float(value)
    if run_time_value is None:
        ctx.emit("pad", [src], opts, out=node.output[0])
        return
    # the fill is a run-time value: pad with zeros, then put it where the padding is
    padded = ctx.emit("pad", [src], opts)
    inner = np.zeros(ctx.types[padded].shape, np.uint8)
    inner[tuple(slice(b, b + d) for b, d in zip(begin, ctx.types[src].shape))] = 1
    mask = ctx.new_const(f"{ctx.namer.of(node.output[0])}/inside", inner)
    ctx.emit("where", [mask, padded, run_time_value], out=node.output[0])


# -- shape chains: these fold to constants whenever the shapes they read are static ---------------------


@onnx_op("Shape")
def shape_(ctx: Converter, node: Any) -> None:
    shape = list(ctx.shape(node.input[0]))
    a = attrs_of(node)
    rank = len(shape)
    start = int(a.get("start", 0))
    end = a.get("end")
    start = max(0, min(rank, start + rank if start < 0 else start))
    end = rank if end is None else int(end)
    end = max(0, min(rank, end + rank if end < 0 else end))
    part = shape[start:end]
    dyn = [d.name for d in part if isinstance(d, DynDim)]
    if dyn:
        raise UnsupportedError(
            f"the shape of {node.input[0]!r} has symbolic dim {dyn[0]!r}; pass "
            f"override_dims={{{dyn[0]!r}: N}} to fold it"
        )
    ctx.set_const(node.output[0], np.array(part, dtype=np.int64))


@onnx_op("Size")
def size_(ctx: Converter, node: Any) -> None:
    shape = ctx.static_shape(node.input[0], "Size")
    ctx.set_const(node.output[0], np.array(math.prod(shape), dtype=np.int64))


@onnx_op("ConstantOfShape", "Range")
def needs_constant(ctx: Converter, node: Any) -> None:
    raise UnsupportedError(f"{node.op_type} with inputs computed at run time: {DATA_SHAPED}")


# -- reductions ---------------------------------------------------------------------------------------

_REDUCE = {
    "ReduceMean": "reduceMean",
    "ReduceSum": "reduceSum",
    "ReduceMax": "reduceMax",
    "ReduceMin": "reduceMin",
    "ReduceProd": "reduceProduct",
    "ReduceL1": "reduceL1",
    "ReduceL2": "reduceL2",
    "ReduceLogSum": "reduceLogSum",
    "ReduceLogSumExp": "reduceLogSumExp",
    "ReduceSumSquare": "reduceSumSquare",
}


@onnx_op(*_REDUCE)
def reduce(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    rank = ctx.rank(node.input[0])
    axes = axes_input(ctx, node, 1, rank)
    if axes is not None and not axes:
        axes = None
    if axes is None and int(a.get("noop_with_empty_axes", 0)):
        ctx.alias(node.output[0], node.input[0])
        return
    axes = sorted(set(range(rank) if axes is None else axes))
    keep = bool(int(a.get("keepdims", 1)))
    ctx.emit(
        _REDUCE[node.op_type], [ctx.x(node, 0)], {"axes": axes, "keepDimensions": keep}, out=node.output[0]
    )


@onnx_op("ArgMax", "ArgMin")
def arg_reduce(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    shape = ctx.shape(node.input[0])
    axis = norm_axis(int(a.get("axis", 0)), len(shape))
    op = "argMax" if node.op_type == "ArgMax" else "argMin"
    opts = {"axis": axis, "keepDimensions": bool(int(a.get("keepdims", 1))), "outputDataType": "int64"}
    if not int(a.get("select_last_index", 0)):
        ctx.emit(op, [ctx.x(node, 0)], opts, out=node.output[0])
        return
    # the last extreme: the first one of the reversed axis, counted from the end
    n = shape[axis]
    if isinstance(n, DynDim):
        raise UnsupportedError(f"select_last_index on symbolic dim {n.name!r}: pass override_dims for it")
    first = ctx.emit(op, [ctx.emit("reverse", [ctx.x(node, 0)], {"axes": [axis]})], opts)
    last = ctx.new_const(f"{ctx.namer.of(node.output[0])}/last", np.array(n - 1, np.int64))
    ctx.emit("sub", [last, first], out=node.output[0])


@onnx_op("Trilu")
def trilu(ctx: Converter, node: Any) -> None:
    k = 0
    if ctx.has(node, 1):
        ks = ctx.const_ints(node, 1, "k")
        if len(ks) != 1:
            raise ValidationError(f"{where(node)}: input 1 (k) must be one value, not {len(ks)}")
        k = ks[0]
    ctx.emit(
        "triangular",
        [ctx.x(node, 0)],
        {"upper": bool(int(attrs_of(node).get("upper", 1))), "diagonal": k},
        out=node.output[0],
    )


@onnx_op("CumSum")
def cumsum(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    axis = norm_axis(int(ctx.const_scalar(node, 1, "axis")), ctx.rank(node.input[0]))
    ctx.emit(
        "cumulativeSum",
        [ctx.x(node, 0)],
        {"axis": axis, "exclusive": bool(a.get("exclusive", 0)), "reversed": bool(a.get("reverse", 0))},
        out=node.output[0],
    )


@onnx_op("DepthToSpace", "SpaceToDepth")
def depth_space(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    n, c, h, w = ctx.static_shape(node.input[0], node.op_type)
    b = int(a["blocksize"])
    mode = a.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("DCR", "CRD"):
        raise UnsupportedError(f"{node.op_type} mode {mode!r}")
    x = ctx.x(node, 0)
    # DCR: channel (bh * b + bw) * C + ch; CRD: ch * b * b + bh * b + bw (C: the channels of the small map)
    if node.op_type == "DepthToSpace":
        if mode == "DCR":
            t = reshape_value(ctx, x, [n, b, b, c // (b * b), h, w])
            perm = [0, 3, 4, 1, 5, 2]
        else:
            t = reshape_value(ctx, x, [n, c // (b * b), b, b, h, w])
            perm = [0, 1, 4, 2, 5, 3]
        t = ctx.emit("transpose", [t], {"permutation": perm})
        reshape_value(ctx, t, [n, c // (b * b), h * b, w * b], out=node.output[0])
    else:
        t = reshape_value(ctx, x, [n, c, h // b, b, w // b, b])
        perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
        t = ctx.emit("transpose", [t], {"permutation": perm})
        reshape_value(ctx, t, [n, c * b * b, h // b, w // b], out=node.output[0])


@onnx_op("ReverseSequence")
def reverse_sequence(ctx: Converter, node: Any) -> None:
    """Constant sequence_lens: one gather over the (batch, time) pairs flattened together, each pair reading
    the time step its sequence's reversal puts there."""
    a = attrs_of(node)
    shape = ctx.static_shape(node.input[0], "ReverseSequence")
    lens = ctx.const_ints(node, 1, "sequence_lens")
    t_ax, b_ax = int(a.get("time_axis", 0)), int(a.get("batch_axis", 1))
    if len(shape) < 2 or {t_ax, b_ax} != {0, 1} or len(lens) != shape[b_ax]:
        raise ValidationError(
            f"{where(node)}: time axis {t_ax}, batch axis {b_ax}, lengths {lens} for {shape}"
        )
    lens_a = np.clip(np.array(lens, np.int64), 0, shape[t_ax])[:, None]  # [B, 1]
    t = np.arange(shape[t_ax])[None, :]  # [1, T]
    src = np.where(t < lens_a, lens_a - 1 - t, t)  # [B, T]: the time step each output step reads
    b = np.arange(shape[b_ax])[:, None]
    flat = src * shape[1] + b if t_ax == 0 else b * shape[1] + src  # row of x flattened to [d0 * d1, ...]
    idx = flat.T if t_ax == 0 else flat
    rest = list(shape[2:])
    x = ctx.emit("reshape", [ctx.x(node, 0)], {"newShape": [shape[0] * shape[1], *rest]})
    ind = ctx.new_const(f"{ctx.namer.of(node.output[0])}/index", idx.astype(np.int32))
    ctx.emit("gather", [x, ind], {"axis": 0}, out=node.output[0])


@onnx_op("TensorScatter")
def tensor_scatter(ctx: Converter, node: Any) -> None:
    """Constant write_indices (a KV cache update): past and update stacked along the (moved first after the
    batch) sequence axis, and one gather with constant rows picks, per batch, the update where it is written
    and the past elsewhere."""
    a = attrs_of(node)
    past = list(ctx.static_shape(node.input[0], "TensorScatter"))
    upd = list(ctx.static_shape(node.input[1], "TensorScatter"))
    r = len(past)
    axis = norm_axis(int(a.get("axis", -2)), r)
    circular = text(a.get("mode", "linear")) == "circular"
    if axis == 0 or len(upd) != r or any(p != u for d, (p, u) in enumerate(zip(past, upd)) if d != axis):
        raise ValidationError(f"{where(node)}: update {upd} does not fit the cache {past} along axis {axis}")
    b, s, t = past[0], past[axis], upd[axis]
    w = (
        np.asarray(ctx.const_input(node, 2, "write_indices")).reshape(-1).astype(np.int64)
        if ctx.has(node, 2)
        else np.zeros(b, np.int64)
    )
    if w.size != b or t > s or (not circular and (w.min() < 0 or (w + t).max() > s)):
        raise ValidationError(f"{where(node)}: write indices {w.tolist()} for {t} of {s} positions")
    # [B, pre..., S, post...] -> [B * pre, S, post] rows: position (g, j) of group g = (batch, pre...)
    pre = int(np.prod(past[1:axis]))
    post = past[axis + 1 :]
    groups = b * pre
    rows = np.arange(groups * s).reshape(groups, s)
    for g in range(groups):
        pos = w[g // pre] + np.arange(t)
        pos = pos % s if circular else pos
        rows[g, pos] = groups * s + g * t + np.arange(t)
    x = ctx.emit("reshape", [ctx.x(node, 0)], {"newShape": [groups * s, *post]})
    u = ctx.emit("reshape", [ctx.x(node, 1)], {"newShape": [groups * t, *post]})
    both = ctx.emit("concat", [x, u], {"axis": 0})
    ind = ctx.new_const(f"{ctx.namer.of(node.output[0])}/rows", rows.reshape(-1).astype(np.int32))
    y = ctx.emit("gather", [both, ind], {"axis": 0})
    ctx.emit("reshape", [y], {"newShape": past}, out=node.output[0])
