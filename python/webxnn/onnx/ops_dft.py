"""ONNX DFT of a static length as matrix products with a constant DFT matrix (exact to float rounding):
the signal axis is moved last, its real and imaginary parts each multiplied by the real and imaginary
parts of the matrix, and the two results stacked as ONNX's trailing [real, imag] dimension. STFT likewise;
MelWeightMatrix is folded when its inputs are constants (only its refusals live here)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..graph import DTYPES
from .convert import Converter, attrs_of
from .ops_shape import norm_axis
from .refusals import DATA_SHAPED_WHY
from .registry import onnx_op


def dft_matrix(n: int, length: int, inverse: bool, onesided: bool) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) with Y = X @ (A + iB) over the signal axis: X has n samples (rows past `length` are zero: ONNX
    truncates to dft_length, and zero-pads when it is longer). An inverse one-sided DFT reads n bins of a
    Hermitian spectrum and gives `length` real samples (B is then unused: the output has no imag part)."""
    if inverse and onesided:
        k = np.arange(n)[:, None]
        t = np.arange(length)[None, :]
        # bin k stands for itself and its mirror length - k, except DC and (even length) Nyquist
        w = np.where((k == 0) | (2 * k == length), 1.0, 2.0) * (k <= length // 2)
        theta = 2 * np.pi * k * t / length
        return w * np.cos(theta) / length, w * np.sin(theta) / length  # real part: Xr cos - Xi sin
    m = length // 2 + 1 if onesided else length
    j = np.arange(n)[:, None]
    theta = 2 * np.pi * ((j * np.arange(m)[None, :]) % length) / length
    sign = 1.0 if inverse else -1.0
    scale = (1.0 / length if inverse else 1.0) * (j < length)
    return np.cos(theta) * scale, sign * np.sin(theta) * scale


@onnx_op("DFT")
def dft(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    x = ctx.x(node, 0)
    dt = ctx.types[x].dtype
    if dt not in ("float32", "float16"):
        raise UnsupportedError(f"DFT of {dt}")
    shape = ctx.static_shape(node.input[0], "DFT")
    r = len(shape)
    if r < 3 or shape[-1] not in (1, 2):
        raise UnsupportedError(f"DFT of shape {list(shape)} (needs [batch, ..., signal, 1 or 2])")
    inverse, onesided = bool(int(a.get("inverse", 0))), bool(int(a.get("onesided", 0)))
    if ctx.opset >= 20:
        ax = ctx.opt_const(node, 2, "axis")
        axis = int(ax.reshape(-1)[0]) if ax is not None else -2
    else:
        axis = int(a.get("axis", 1))
    axis = norm_axis(axis, r)
    if axis in (0, r - 1):
        raise UnsupportedError(f"DFT over axis {axis} of a rank-{r} input (a signal axis is 1..rank-2)")
    n = shape[axis]
    length_in = ctx.opt_const(node, 1, "dft_length")
    if inverse and onesided:
        length = int(length_in.reshape(-1)[0]) if length_in is not None else 2 * (n - 1)
    else:
        length = int(length_in.reshape(-1)[0]) if length_in is not None else n
    if length < 1:
        raise UnsupportedError(f"DFT length {length}")
    mat_a, mat_b = dft_matrix(n, length, inverse, onesided)
    name = ctx.namer.of(node.output[0])
    npdt = DTYPES[dt]
    ma, mb = ctx.new_const(f"{name}/re", mat_a.astype(npdt)), ctx.new_const(f"{name}/im", mat_b.astype(npdt))

    # [..., n, ..., c] -> real/imag parts [..., rest..., n] (signal axis last)
    perm = [d for d in range(r - 1) if d != axis] + [axis]

    def part(c: int) -> str:
        starts, sizes = [0] * r, list(shape)
        starts[-1], sizes[-1] = c, 1
        p = ctx.emit("slice", [x], {"starts": starts, "sizes": sizes})
        p = ctx.emit("reshape", [p], {"newShape": list(shape[:-1])})
        return ctx.emit("transpose", [p], {"permutation": perm})

    xr = part(0)
    xi = part(1) if shape[-1] == 2 else None
    # Y = (Xr + i Xi)(A + iB): real Xr A - Xi B, imag Xr B + Xi A
    yr = ctx.emit("matmul", [xr, ma])
    if xi is not None:
        yr = ctx.emit("sub", [yr, ctx.emit("matmul", [xi, mb])])
    parts = [yr]
    if not (inverse and onesided):
        yi = ctx.emit("matmul", [xr, mb])
        if xi is not None:
            yi = ctx.emit("add", [yi, ctx.emit("matmul", [xi, ma])])
        parts.append(yi)
    back = [perm.index(d) for d in range(r - 1)]
    m = int(mat_a.shape[1])
    out_shape = [m if d == axis else shape[d] for d in range(r - 1)] + [1]
    outs = [
        ctx.emit("reshape", [ctx.emit("transpose", [p], {"permutation": back})], {"newShape": out_shape})
        for p in parts
    ]
    if len(outs) == 1:
        ctx.emit("identity", outs, out=node.output[0])
    else:
        ctx.emit("concat", outs, {"axis": r - 1}, out=node.output[0])


@onnx_op("STFT")
def stft(ctx: Converter, node: Any) -> None:
    """Frames gathered at constant positions, windowed, and each DFT'd with the constant DFT matrix."""
    x = ctx.x(node, 0)
    dt = ctx.types[x].dtype
    if dt not in ("float32", "float16"):
        raise UnsupportedError(f"STFT of {dt}")
    shape = ctx.static_shape(node.input[0], "STFT")
    if len(shape) != 3 or shape[2] not in (1, 2):
        raise UnsupportedError(f"STFT of shape {list(shape)} (needs [batch, signal, 1 or 2])")
    b, n, c = shape
    step = int(ctx.const_scalar(node, 1, "frame_step"))
    length = int(ctx.const_scalar(node, 3, "frame_length")) if ctx.has(node, 3) else 0
    if ctx.has(node, 2):
        length = length or int(ctx.shape(node.input[2])[0])
    length = length or n
    if step < 1 or not 1 <= length <= n:
        raise UnsupportedError(f"STFT frame_step {step}, frame_length {length} of a {n}-sample signal")
    frames = (n - length) // step + 1
    onesided = bool(int(attrs_of(node).get("onesided", 1)))
    name = ctx.namer.of(node.output[0])
    npdt = DTYPES[dt]
    pos = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    f = ctx.emit("gather", [x, ctx.new_const(f"{name}/frames", pos.astype(np.int32))], {"axis": 1})
    if ctx.has(node, 2):  # [B, F, L, C] * window [L]
        w = ctx.emit("reshape", [ctx.x(node, 2)], {"newShape": [1, 1, length, 1]})
        f = ctx.emit("mul", [f, w])
    mat_a, mat_b = dft_matrix(length, length, False, onesided)
    ma, mb = ctx.new_const(f"{name}/re", mat_a.astype(npdt)), ctx.new_const(f"{name}/im", mat_b.astype(npdt))

    def part(k: int) -> str:
        p = ctx.emit("slice", [f], {"starts": [0, 0, 0, k], "sizes": [b, frames, length, 1]})
        return ctx.emit("reshape", [p], {"newShape": [b, frames, length]})

    xr = part(0)
    xi = part(1) if c == 2 else None
    yr, yi = ctx.emit("matmul", [xr, ma]), ctx.emit("matmul", [xr, mb])
    if xi is not None:
        yr = ctx.emit("sub", [yr, ctx.emit("matmul", [xi, mb])])
        yi = ctx.emit("add", [yi, ctx.emit("matmul", [xi, ma])])
    m = int(mat_a.shape[1])
    outs = [ctx.emit("reshape", [p], {"newShape": [b, frames, m, 1]}) for p in (yr, yi)]
    ctx.emit("concat", outs, {"axis": 3}, out=node.output[0])


@onnx_op("MelWeightMatrix")
def mel_weight_matrix(ctx: Converter, node: Any) -> None:
    """Constant inputs are folded before this translator runs (onnx's own definition); here some input is
    computed at run time. num_mel_bins and dft_length set the output shape [dft_length // 2 + 1,
    num_mel_bins]."""
    if not (ctx.is_const(node.input[0]) and ctx.is_const(node.input[1])):
        raise UnsupportedError(
            f"MelWeightMatrix with a run-time num_mel_bins or dft_length: {DATA_SHAPED_WHY}"
        )
    raise UnsupportedError(
        "MelWeightMatrix with run-time sample rate or edge frequencies (only constants fold)"
    )
