"""Neural-net ONNX ops: Conv/ConvTranspose (1-D and 2-D), pools, normalizations, Gemm/MatMul, Softmax."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, text, where
from .ops_decomposed import scalar
from .ops_shape import norm_axis, reshape_value
from .refusals import CONV_3D, TRAINING_MODE
from .registry import onnx_op


def _same_pads(in_hw: list[int], k: list[int], s: list[int], d: list[int], upper: bool) -> list[int]:
    """ONNX SAME_UPPER/SAME_LOWER as explicit [begin..., end...] pads."""
    begin, end = [], []
    for i, kk, ss, dd in zip(in_hw, k, s, d):
        out = -(-i // ss)
        total = max(0, (out - 1) * ss + (kk - 1) * dd + 1 - i)
        small, big = total // 2, total - total // 2
        begin.append(small if upper else big)
        end.append(big if upper else small)
    return begin + end


def _webnn_padding(pads: list[int]) -> list[int]:
    # ONNX [h_begin, w_begin, h_end, w_end] -> WebNN [top, bottom, left, right]
    return [pads[0], pads[2], pads[1], pads[3]]


def _to_2d_filter(ctx: Converter, name: str) -> str:
    """A rank-3 filter [a, b, k] as [a, b, 1, k] (1-D conv via conv2d)."""
    shp = ctx.static_shape(name, "Conv1D filter")
    target = [shp[0], shp[1], 1, shp[2]]
    if ctx.is_const(name):
        return ctx.new_const(f"{ctx.namer.of(name)}/2d", ctx.const(name).reshape(target))
    return reshape_value(ctx, ctx.operand(name), target)


def check_window(node: Any, a: dict[str, Any], spatial: int) -> None:
    """The window attributes of a conv or pool over `spatial` dims: one entry per dim (pads two), kernel,
    strides and dilations >= 1, pads >= 0 (ValidationError naming the node and attribute otherwise). An
    attribute of another type is one this op's schema does not declare (checks.check_node has checked the
    declared ones), which no translator reads: left alone."""
    a = {k: v for k, v in a.items() if isinstance(v, int if k == "group" else list)}
    lengths = {
        "kernel_shape": spatial,
        "strides": spatial,
        "dilations": spatial,
        "pads": 2 * spatial,
        "output_padding": spatial,
    }
    for key, n in lengths.items():
        if key in a and len(a[key]) != n:
            raise ValidationError(
                f"{where(node)}: {key} has {len(a[key])} entries, but the input has "
                f"{spatial} spatial dims (needs {n})"
            )
    least = {"kernel_shape": 1, "strides": 1, "dilations": 1, "pads": 0, "output_padding": 0}
    for key, low in least.items():
        if key in a and any(int(v) < low or int(v) > 1 << 31 for v in a[key]):
            raise ValidationError(f"{where(node)}: {key} {list(a[key])} must be in {low}..2^31")
    if "output_shape" in a and len(a["output_shape"]) not in (spatial, spatial + 2):
        raise ValidationError(f"{where(node)}: output_shape has {len(a['output_shape'])} entries")
    if "group" in a and not 1 <= int(a["group"]) <= 1 << 31:
        raise ValidationError(f"{where(node)}: group {a['group']} must be >= 1")


@onnx_op("Conv", "ConvTranspose")
def conv(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    xshape = ctx.static_shape(node.input[0], node.op_type)
    wshape = ctx.static_shape(node.input[1], node.op_type)
    rank = len(xshape)
    if rank not in (3, 4):
        if rank == 5:
            raise UnsupportedError(f"{where(node)}: {CONV_3D}")
        raise UnsupportedError(f"{rank - 2}-D {node.op_type} (WebNN has 2-D convolutions; 1-D is reshaped)")
    if len(wshape) != rank:
        raise ValidationError(f"{where(node)}: the filter has rank {len(wshape)}, the input {rank}")
    check_window(node, a, rank - 2)
    kernel = [int(v) for v in a.get("kernel_shape", wshape[2:])]
    is_t = node.op_type == "ConvTranspose"
    x = ctx.x(node, 0)
    w = ctx.x(node, 1)
    if rank == 3:  # [N, C, L] -> [N, C, 1, L]
        x = reshape_value(ctx, x, [xshape[0], xshape[1], 1, xshape[2]])
        w = _to_2d_filter(ctx, node.input[1])
        kernel = [1, *kernel]
        a = dict(a)
        for key in ("strides", "dilations", "output_padding", "output_shape"):
            if key in a:
                a[key] = [1, *a[key]]
        if "pads" in a:
            a["pads"] = [0, a["pads"][0], 0, a["pads"][1]]
    in_sp = [1, xshape[2]] if rank == 3 else list(xshape[2:])
    strides = [int(v) for v in a.get("strides", [1, 1])]
    dil = [int(v) for v in a.get("dilations", [1, 1])]
    group = int(a.get("group", 1))
    auto = text(a.get("auto_pad", "NOTSET"))
    opts: dict[str, Any] = {}
    if not is_t:
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pads = _same_pads(in_sp, kernel, strides, dil, auto == "SAME_UPPER")
        elif auto == "VALID":
            pads = [0, 0, 0, 0]
        else:
            pads = [int(v) for v in a.get("pads", [0, 0, 0, 0])]
    else:
        out_pad = [int(v) for v in a.get("output_padding", [0, 0])]
        out_shape = a.get("output_shape")
        if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
            want = (
                [int(v) for v in out_shape][-2:]
                if out_shape is not None
                else [i * s for i, s in zip(in_sp, strides)]
            )
            pads = [0, 0, 0, 0]
            for i in range(2):
                total = strides[i] * (in_sp[i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 - want[i]
                small, big = total // 2, total - total // 2
                upper = auto == "SAME_UPPER"  # NOTSET with output_shape: start gets the larger half
                pads[i], pads[i + 2] = (small, big) if upper else (big, small)
        elif auto == "VALID":
            pads = [0, 0, 0, 0]
        else:
            pads = [int(v) for v in a.get("pads", [0, 0, 0, 0])]
        if any(out_pad):
            opts["outputPadding"] = out_pad
    # an output_shape larger than the default size gives negative pads: the default result grown by zeros
    # there, plus the bias (ONNX adds it everywhere), so the bias is added after the pad
    grow = [max(0, -p) for p in pads]
    pads = [max(0, p) for p in pads]
    if any(pads):
        opts["padding"] = _webnn_padding(pads)
    if strides != [1, 1]:
        opts["strides"] = strides
    if dil != [1, 1]:
        opts["dilations"] = dil
    if group != 1:
        opts["groups"] = group
    ins = [x, w]
    if ctx.has(node, 2) and not any(grow):
        ins.append(ctx.x(node, 2))
    op = "convTranspose2d" if is_t else "conv2d"
    if any(grow):
        _grown_conv_transpose(ctx, node, ins, opts, grow, rank)
        return
    if rank == 4:
        ctx.emit(op, ins, opts, out=node.output[0])
        return
    y = ctx.emit(op, ins, opts)
    shp = list(ctx.types[y].shape)
    reshape_value(ctx, y, [shp[0], shp[1], shp[3]], out=node.output[0])


def _grown_conv_transpose(
    ctx: Converter, node: Any, ins: list[str], opts: dict[str, Any], grow: list[int], rank: int
) -> None:
    """convTranspose2d (without bias), zero-padded by `grow` ([h_begin, w_begin, h_end, w_end]), then the
    bias as [C, 1, 1] over the whole output."""
    y = ctx.emit("convTranspose2d", ins, opts)
    has_bias = ctx.has(node, 2)
    pad_opts = {"beginningPadding": [0, 0, *grow[:2]], "endingPadding": [0, 0, *grow[2:]]}
    y = ctx.emit("pad", [y], pad_opts, out=node.output[0] if rank == 4 and not has_bias else None)
    if has_bias:
        b = reshape_value(ctx, ctx.x(node, 2), [ctx.types[y].shape[1], 1, 1])
        y = ctx.emit("add", [y, b], out=node.output[0] if rank == 4 else None)
    if rank == 3:
        shp = list(ctx.types[y].shape)
        reshape_value(ctx, y, [shp[0], shp[1], shp[3]], out=node.output[0])


@onnx_op("MaxPool", "AveragePool", "LpPool")
def pool(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    indices = node.op_type == "MaxPool" and len(node.output) > 1 and bool(node.output[1])
    xshape = ctx.static_shape(node.input[0], node.op_type)
    if indices and len(xshape) != 4:
        raise UnsupportedError(f"MaxPool Indices output of a {len(xshape) - 2}-D pool")
    rank = len(xshape)
    if rank >= 3:
        check_window(node, a, rank - 2)
    if rank == 5:
        _pool3d(ctx, node, a, xshape)
        return
    if rank not in (3, 4):
        raise UnsupportedError(f"{rank - 2}-D {node.op_type}")
    kernel = [int(v) for v in a["kernel_shape"]]
    x = ctx.x(node, 0)
    in_sp = list(xshape[2:])
    if rank == 3:
        x = reshape_value(ctx, x, [xshape[0], xshape[1], 1, xshape[2]])
        kernel, in_sp = [1, *kernel], [1, *in_sp]
        a = dict(a)
        for key in ("strides", "dilations"):
            if key in a:
                a[key] = [1, *a[key]]
        if "pads" in a:
            a["pads"] = [0, a["pads"][0], 0, a["pads"][1]]
        if "kernel_shape" in a:
            a["kernel_shape"] = kernel
    if rank == 4:
        y = _pool2d(ctx, node.op_type, x, a, in_sp, kernel, out=node.output[0])
        if indices:
            _maxpool_indices(ctx, node, x, a, list(xshape), kernel, list(ctx.types[y].shape))
        return
    y = _pool2d(ctx, node.op_type, x, a, in_sp, kernel)
    shp = list(ctx.types[y].shape)
    reshape_value(ctx, y, [shp[0], shp[1], shp[3]], out=node.output[0])


def _maxpool_indices(
    ctx: Converter, node: Any, x: str, a: dict[str, Any], xs: list[int], kernel: list[int], ys: list[int]
) -> None:
    """MaxPool's Indices: each window's elements gathered from x (flattened, a -inf slot standing for the
    padding), argMax over the window, and the winner's flat index (row-major, or column-major with
    storage_order=1) looked up from constant tables plus the (batch, channel) offset."""
    n, c, h, w = xs
    oh, ow = ys[2], ys[3]
    pads, strides, dil = _pads_from(a, [h, w], kernel)
    col_major = bool(int(a.get("storage_order", 0)))
    ki, kj = np.divmod(np.arange(kernel[0] * kernel[1]), kernel[1])
    hh = np.arange(oh)[:, None, None] * strides[0] - pads[0] + ki[None, None, :] * dil[0]  # [OH, 1, K]
    ww = np.arange(ow)[None, :, None] * strides[1] - pads[1] + kj[None, None, :] * dil[1]  # [1, OW, K]
    inside = (hh >= 0) & (hh < h) & (ww >= 0) & (ww < w)
    slot = np.where(inside, hh * w + ww, h * w).reshape(-1)  # x's element, or the -inf slot
    where_is = (ww * h + hh) if col_major else (hh * w + ww)  # the index ONNX reports
    name = ctx.namer.of(node.output[1])
    dt = ctx.types[x].dtype
    e = ctx.emit
    flat = e("reshape", [x], {"newShape": [n, c, h * w]})
    # the -inf slot: one element expanded to [N, C, 1] in the graph, not an N*C array made here
    low = ctx.new_const(f"{name}/pad", np.full((1, 1, 1), -np.inf, DTYPES[dt]))
    low = e("expand", [low], {"newShape": [n, c, 1]})
    flat = e("concat", [flat, low], {"axis": 2})
    win = e("gather", [flat, ctx.new_const(f"{name}/windows", slot.astype(np.int32))], {"axis": 2})
    win = e("reshape", [win], {"newShape": [n, c, oh * ow, kernel[0] * kernel[1]]})
    best = e(
        "argMax", [win], {"axis": 3, "keepDimensions": False, "outputDataType": "int32"}
    )  # [N, C, OH*OW]
    table = np.broadcast_to(where_is, (oh, ow, kernel[0] * kernel[1])).reshape(oh * ow, -1)
    # row q of the table picks best[..., q]: flatten (q, k) and gather at q * K + best
    pick = e(
        "add", [best, ctx.new_const(f"{name}/rows", (np.arange(oh * ow) * table.shape[1]).astype(np.int32))]
    )
    got = e("gather", [ctx.new_const(f"{name}/where", table.reshape(-1).astype(np.int64)), pick], {"axis": 0})
    # the (batch, channel) plane's offset, as a batch part and a channel part added by broadcasting: N + C
    # elements made here, not N * C
    plane_n = (np.arange(n, dtype=np.int64) * (c * h * w)).reshape(n, 1, 1)
    got = e("add", [got, ctx.new_const(f"{name}/plane_n", plane_n)])
    plane_c = (np.arange(c, dtype=np.int64) * (h * w)).reshape(1, c, 1)
    got = e("add", [got, ctx.new_const(f"{name}/plane_c", plane_c)])
    e("reshape", [got], {"newShape": [n, c, oh, ow]}, out=node.output[1])


def _pool3d(ctx: Converter, node: Any, a: dict[str, Any], xshape: tuple[int, ...]) -> None:
    """A 3-D pool as two 2-D pools, exactly: the window is a box, so its max (or valid-element average,
    or sum of squares) over (D, H, W) is that over D of that over (H, W); each axis keeps its own pads,
    strides, dilations and ceil rounding. [N, C, D, H, W] -> [N, C*D, H, W] pooled over (H, W), then
    [N, C, D, H'*W'] pooled over (D, 1)."""
    if text(a.get("auto_pad", "NOTSET")) in ("SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedError(f"3-D {node.op_type} with auto_pad SAME")
    n, c, d, h, w = xshape
    kernel = [int(v) for v in a["kernel_shape"]]
    strides = [int(v) for v in a.get("strides", [1, 1, 1])]
    dil = [int(v) for v in a.get("dilations", [1, 1, 1])]
    pads = (
        [int(v) for v in a.get("pads", [0] * 6)] if text(a.get("auto_pad", "NOTSET")) == "NOTSET" else [0] * 6
    )
    common = {k: v for k, v in a.items() if k in ("ceil_mode", "count_include_pad", "p")}
    hw = {
        **common,
        "kernel_shape": kernel[1:],
        "strides": strides[1:],
        "dilations": dil[1:],
        "pads": [pads[1], pads[2], pads[4], pads[5]],
    }
    x = reshape_value(ctx, ctx.x(node, 0), [n, c * d, h, w])
    y = _pool2d(ctx, node.op_type, x, hw, [h, w], kernel[1:])
    _, _, h2, w2 = ctx.types[y].shape
    dd = {
        **common,
        "kernel_shape": [kernel[0], 1],
        "strides": [strides[0], 1],
        "dilations": [dil[0], 1],
        "pads": [pads[0], 0, pads[3], 0],
    }
    y = reshape_value(ctx, y, [n, c, d, h2 * w2])
    z = _pool2d(ctx, node.op_type, y, dd, [d, h2 * w2], [kernel[0], 1])
    reshape_value(ctx, z, [n, c, ctx.types[z].shape[2], h2, w2], out=node.output[0])


def _pool2d(
    ctx: Converter,
    op_type: str,
    x: str,
    a: dict[str, Any],
    in_sp: list[int],
    kernel: list[int],
    out: str | None = None,
) -> str:
    """The WebNN pool of the 4-D value x for ONNX pool attributes `a` (2-D)."""
    pads, strides, dil = _pads_from(a, in_sp, kernel)
    op = {"MaxPool": "maxPool2d", "AveragePool": "averagePool2d", "LpPool": "l2Pool2d"}[op_type]
    ceil = bool(int(a.get("ceil_mode", 0))) and _onnx_ceil(in_sp, kernel, pads, strides, dil)
    p = int(a.get("p", 2))
    lp = op_type == "LpPool" and p != 2
    if lp:
        # (sum |x|^p)^(1/p) over the window, zero padding included: an average of |x|^p over a zero-padded
        # x times the window size (ceil windows would be averaged over fewer elements: refused)
        if ceil:
            raise UnsupportedError("LpPool with p != 2 and ceil_mode")
        op = "averagePool2d"
        x = ctx.emit("pow", [ctx.emit("abs", [x]), scalar(ctx, p, x, "p")])
    if (lp or op_type == "AveragePool" and int(a.get("count_include_pad", 0))) and any(pads):
        # WebNN averages over the valid window only: pad with zeros explicitly to count the padding
        x = ctx.emit(
            "pad",
            [x],
            {"beginningPadding": [0, 0, pads[0], pads[1]], "endingPadding": [0, 0, pads[2], pads[3]]},
        )
        pads = [0, 0, 0, 0]
    opts: dict[str, Any] = {"windowDimensions": kernel}
    if any(pads):
        opts["padding"] = _webnn_padding(pads)
    if strides != [1, 1]:
        opts["strides"] = strides
    if dil != [1, 1]:
        opts["dilations"] = dil
    if ceil:
        opts["roundingType"] = "ceil"
    if lp:
        y = ctx.emit("mul", [ctx.emit(op, [x], opts), scalar(ctx, kernel[0] * kernel[1], x, "area")])
        return ctx.emit("pow", [y, scalar(ctx, 1.0 / p, x, "inv_p")], out=out)
    return ctx.emit(op, [x], opts, out=out)


def _onnx_ceil(
    in_sp: list[int], kernel: list[int], pads: list[int], strides: list[int], dil: list[int]
) -> bool:
    """Whether ONNX ceil_mode pooling is WebNN's ceil rounding (True) or its floor rounding (False).

    ONNX (like PyTorch) drops a last window that would start in the end padding; WebNN's ceil keeps it.
    Dropping it gives the floor size, so each axis is one or the other; axes that disagree are refused."""
    modes = set()
    for j in range(2):
        span = in_sp[j] + pads[j] + pads[j + 2] - dil[j] * (kernel[j] - 1) - 1
        lo, hi = span // strides[j] + 1, -(-span // strides[j]) + 1
        if hi != lo:
            modes.add((hi - 1) * strides[j] < in_sp[j] + pads[j])  # the last window starts inside
    if len(modes) > 1:
        raise UnsupportedError("ceil_mode pooling whose last window starts in the padding on one axis only")
    return modes != {False}


def _pads_from(
    a: dict[str, Any], in_sp: list[int], kernel: list[int]
) -> tuple[list[int], list[int], list[int]]:
    strides = [int(v) for v in a.get("strides", [1, 1])]
    dil = [int(v) for v in a.get("dilations", [1, 1])]
    auto = text(a.get("auto_pad", "NOTSET"))
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return _same_pads(in_sp, kernel, strides, dil, auto == "SAME_UPPER"), strides, dil
    if auto == "VALID":
        return [0, 0, 0, 0], strides, dil
    if auto != "NOTSET":
        raise UnsupportedError(f"auto_pad {auto!r}")
    return [int(v) for v in a.get("pads", [0, 0, 0, 0])], strides, dil


@onnx_op("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx: Converter, node: Any) -> None:
    shape = ctx.static_shape(node.input[0], node.op_type)
    if len(shape) == 4:
        op = "averagePool2d" if node.op_type == "GlobalAveragePool" else "maxPool2d"
        ctx.emit(op, [ctx.x(node, 0)], {"windowDimensions": list(shape[2:])}, out=node.output[0])
        return
    op = "reduceMean" if node.op_type == "GlobalAveragePool" else "reduceMax"
    ctx.emit(
        op, [ctx.x(node, 0)], {"axes": list(range(2, len(shape))), "keepDimensions": True}, out=node.output[0]
    )


@onnx_op("BatchNormalization")
def batch_norm(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    if int(a.get("training_mode", 0)) or any(o for o in node.output[1:]):
        raise UnsupportedError(f"BatchNormalization {TRAINING_MODE}")
    ctx.emit(
        "batchNormalization",
        [ctx.x(node, 0), ctx.x(node, 3), ctx.x(node, 4)],
        {"scale": ctx.x(node, 1), "bias": ctx.x(node, 2), "epsilon": float(a.get("epsilon", 1e-5))},
        out=node.output[0],
    )


@onnx_op("InstanceNormalization")
def instance_norm(ctx: Converter, node: Any) -> None:
    if ctx.rank(node.input[0]) != 4:
        raise UnsupportedError("InstanceNormalization of a non-4-D tensor")
    ctx.emit(
        "instanceNormalization",
        [ctx.x(node, 0)],
        {
            "scale": ctx.x(node, 1),
            "bias": ctx.x(node, 2),
            "epsilon": float(attrs_of(node).get("epsilon", 1e-5)),
        },
        out=node.output[0],
    )


def _param_for(ctx: Converter, name: str, target: list[Any], what: str) -> str:
    """A scale/bias operand shaped exactly `target` (WebNN requires it; ONNX only broadcasts)."""
    if list(ctx.shape(name)) == list(target):
        return ctx.operand(name)
    if not ctx.is_const(name):
        raise UnsupportedError(
            f"{what} of shape {list(ctx.shape(name))} computed at run time; WebNN needs shape {list(target)}"
        )
    if not all(isinstance(d, int) for d in target):
        raise UnsupportedError(
            f"{what} broadcast to {list(target)} needs the symbolic dims fixed (override_dims)"
        )
    try:
        arr = np.broadcast_to(ctx.const(name), target)
    except ValueError:
        raise ValidationError(
            f"{where(ctx.node)}: {what} of shape {list(ctx.shape(name))} does not broadcast to {list(target)}"
        ) from None
    return ctx.new_const(f"{ctx.namer.of(name)}/{what}", np.asarray(arr, order="C"))


@onnx_op("LayerNormalization")
def layer_norm(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    if any(o for o in node.output[1:]):
        raise UnsupportedError("LayerNormalization Mean/InvStdDev outputs")
    shape = list(ctx.shape(node.input[0]))
    rank = len(shape)
    axis = norm_axis(int(a.get("axis", -1)), rank)
    axes = list(range(axis, rank))
    norm_shape = shape[axis:]
    ins = [ctx.x(node, 0), _param_for(ctx, node.input[1], norm_shape, "scale")]
    if ctx.has(node, 2):
        ins.append(_param_for(ctx, node.input[2], norm_shape, "bias"))
    ctx.emit(
        "layerNormalization",
        ins,
        {"axes": axes, "epsilon": float(a.get("epsilon", 1e-5))},
        out=node.output[0],
    )


@onnx_op("Gemm")
def gemm(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    opts: dict[str, Any] = {}
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if alpha != 1.0:
        opts["alpha"] = alpha
    if int(a.get("transA", 0)):
        opts["aTranspose"] = True
    if int(a.get("transB", 0)):
        opts["bTranspose"] = True
    ins = [ctx.x(node, 0), ctx.x(node, 1)]
    if ctx.has(node, 2):
        if beta != 1.0:
            opts["beta"] = beta
        ins.append(ctx.x(node, 2))
    ctx.emit("gemm", ins, opts, out=node.output[0])


@onnx_op("MatMul")
def matmul(ctx: Converter, node: Any) -> None:
    sa, sb = list(ctx.shape(node.input[0])), list(ctx.shape(node.input[1]))
    a, b = ctx.x(node, 0), ctx.x(node, 1)
    if len(sa) >= 2 and len(sb) >= 2:
        ctx.emit("matmul", [a, b], out=node.output[0])
        return
    # numpy 1-D rules: a vector operand gains a dim that is removed again from the result
    if len(sa) == 1:
        a = reshape_value(ctx, a, [1, sa[0]])
    if len(sb) == 1:
        b = reshape_value(ctx, b, [sb[0], 1])
    y = ctx.emit("matmul", [a, b])
    shp = list(ctx.types[y].shape)
    if len(sb) == 1:
        shp = shp[:-1]
    if len(sa) == 1:
        shp = shp[:-2] + shp[-1:] if len(sb) != 1 else shp[:-1]
    ctx.emit("reshape", [y], {"newShape": shp}, out=node.output[0])


@onnx_op("Softmax", "LogSoftmax")
def softmax(ctx: Converter, node: Any) -> None:
    shape = list(ctx.shape(node.input[0]))
    rank = len(shape)
    default = -1 if ctx.opset >= 13 else 1
    axis = norm_axis(int(attrs_of(node).get("axis", default)), rank)
    log = node.op_type == "LogSoftmax"
    x = ctx.x(node, 0)
    if ctx.opset >= 13 or axis == rank - 1:
        y = ctx.emit("softmax", [x], {"axis": axis}, out=None if log else node.output[0])
    else:  # before opset 13: softmax over the flattened trailing dims [axis:]
        st = ctx.static_shape(node.input[0], node.op_type)
        flat = reshape_value(ctx, x, [math.prod(st[:axis]), math.prod(st[axis:])])
        y = ctx.emit("softmax", [flat], {"axis": 1})
        y = reshape_value(ctx, y, list(st), out=None if log else node.output[0])
    if log:
        ctx.emit("log", [y], out=node.output[0])
