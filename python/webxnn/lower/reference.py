"""A slow, plain numpy interpreter of XNN IR (`xnn.ir.XnnGraph`), used to check lowering without the C++
runtime: run the lowered graph here and compare with numpy written straightforwardly on the WebNN graph.

Semantics follow design/reference/executorch-xnnpack-format.md §4 (NHWC activations, OHWI / 1HWO filters,
padding excluded from averages, output_min_max clamps). Every node's result is checked against the dims
its output value declares, so shape mistakes in lowering fail loudly here.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..xnn.ir import FLAG_EXTERNAL_INPUT, FLAG_EXTERNAL_OUTPUT, INVALID_ID, NUMPY_DTYPE, Node, XnnGraph

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _pad_nhwc(x: np.ndarray, f: dict[str, Any], value: float = 0.0) -> np.ndarray:
    pads = ((0, 0), (f["padding_top"], f["padding_bottom"]), (f["padding_left"], f["padding_right"]), (0, 0))
    return np.pad(x, pads, constant_values=value)


def _windows(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int) -> np.ndarray:
    """[N, OH, OW, kh, kw, C] windows of a padded NHWC tensor."""
    n, h, w, c = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    out = np.empty((n, oh, ow, kh, kw, c), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, :, i, j, :] = x[:, i * dh: i * dh + (oh - 1) * sh + 1: sh,
                                      j * dw: j * dw + (ow - 1) * sw + 1: sw, :]
    return out


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, f: dict[str, Any],
          depthwise: bool) -> np.ndarray:
    xp = _pad_nhwc(x.astype(np.float64), f)
    kh, kw = f["kernel_height"], f["kernel_width"]
    win = _windows(xp, kh, kw, f["subsampling_height"], f["subsampling_width"],
                   max(1, f["dilation_height"]), max(1, f["dilation_width"]))
    g = f["groups"]
    if depthwise:
        c = x.shape[3]
        mult = w.shape[3] // c
        # output channel o reads input channel o // mult
        src = np.repeat(win, mult, axis=5)
        y = np.einsum("nhwijo,ijo->nhwo", src, w[0].astype(np.float64))
    else:
        gic, goc = f["group_input_channels"], f["group_output_channels"]
        ys = []
        for k in range(g):
            wk = w[k * goc:(k + 1) * goc].astype(np.float64)  # [goc, kh, kw, gic]
            ys.append(np.einsum("nhwijc,oijc->nhwo", win[..., k * gic:(k + 1) * gic], wk))
        y = np.concatenate(ys, axis=3)
    if b is not None:
        y = y + b
    return y


def _deconv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, f: dict[str, Any]) -> np.ndarray:
    n, h, wd, _ = x.shape
    kh, kw = f["kernel_height"], f["kernel_width"]
    sh, sw = f["subsampling_height"], f["subsampling_width"]
    dh, dw = max(1, f["dilation_height"]), max(1, f["dilation_width"])
    g, gic, goc = f["groups"], f["group_input_channels"], f["group_output_channels"]
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + f["adjustment_height"]
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + f["adjustment_width"]
    y = np.zeros((n, full_h, full_w, g * goc))
    xd = x.astype(np.float64)
    for k in range(g):
        wk = w[k * goc:(k + 1) * goc].astype(np.float64)  # [goc, kh, kw, gic]
        xk = xd[..., k * gic:(k + 1) * gic]
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nhwc,oc->nhwo", xk, wk[:, i, j, :])
                y[:, i * dh: i * dh + (h - 1) * sh + 1: sh, j * dw: j * dw + (wd - 1) * sw + 1: sw,
                  k * goc:(k + 1) * goc] += contrib
    y = y[:, f["padding_top"]: full_h - f["padding_bottom"],
          f["padding_left"]: full_w - f["padding_right"], :]
    if b is not None:
        y = y + b
    return y


def _pool(x: np.ndarray, f: dict[str, Any], kind: str) -> np.ndarray:
    kh, kw = f["pooling_height"], f["pooling_width"]
    sh, sw = f["stride_height"], f["stride_width"]
    dh, dw = max(1, f.get("dilation_height", 1)), max(1, f.get("dilation_width", 1))
    if kind == "max":
        return _windows(_pad_nhwc(x, f, -np.inf), kh, kw, sh, sw, dh, dw).max(axis=(3, 4))
    s = _windows(_pad_nhwc(x.astype(np.float64), f), kh, kw, sh, sw, dh, dw).sum(axis=(3, 4))
    cnt = _windows(_pad_nhwc(np.ones_like(x, dtype=np.float64), f), kh, kw, sh, sw, dh, dw).sum(axis=(3, 4))
    return s / cnt


def _reshape(x: np.ndarray, new_shape: list[int]) -> np.ndarray:
    shape = list(new_shape)
    if 0 in shape:
        known = int(np.prod([d for d in shape if d != 0]))
        shape[shape.index(0)] = x.size // known
    return x.reshape(shape)


def _slice(x: np.ndarray, f: dict[str, Any]) -> np.ndarray:
    idx = tuple(slice(o, o + s if s > 0 else d + s) for o, s, d in zip(f["offsets"], f["sizes"], x.shape))
    return x[idx]


def _cat(n: Node, get: Callable[[int], np.ndarray]) -> np.ndarray:
    ids = [n.fields.get(f"input{k}_id", INVALID_ID) for k in range(1, 6)]
    return np.concatenate([get(i) for i in ids if i != INVALID_ID], axis=n.fields["axis"])


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "XNNSigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "XNNTanh": np.tanh, "XNNExp": np.exp,
    "XNNLog": np.log, "XNNAbs": np.abs, "XNNNegate": np.negative, "XNNFloor": np.floor,
    "XNNCeiling": np.ceil, "XNNSquareRoot": np.sqrt, "XNNSin": np.sin, "XNNCos": np.cos,
    "XNNSquare": np.square, "XNNReciprocalSquareRoot": lambda x: 1.0 / np.sqrt(x), "XNNCopy": lambda x: x,
    "XNNGelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "XNNHardswish": lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
    "XNNClamp": lambda x: x,  # the bounds are the node's output_min_max
}
_BINARY = {"XNNAdd": np.add, "XNNSubtract": np.subtract, "XNNMultiply": np.multiply, "XNNDiv": np.divide,
           "XNNMinimum": np.minimum, "XNNMaximum": np.maximum}


def run(xg: XnnGraph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Execute `xg` on `inputs` (by the metadata's input names); returns outputs by name."""
    env: dict[int, np.ndarray] = {}
    by_id = {v.id: v for v in xg.values}
    names_in = xg.metadata.input_names if xg.metadata else []
    names_out = xg.metadata.output_names if xg.metadata else []
    for v in xg.values:
        if v.constant_buffer_idx:
            data = xg.constants[v.constant_buffer_idx]
            arr = np.frombuffer(memoryview(data).cast("B"), dtype=NUMPY_DTYPE[v.datatype]) \
                if not isinstance(data, np.ndarray) else data
            env[v.id] = np.asarray(arr).reshape(v.dims)
        elif v.flags & FLAG_EXTERNAL_INPUT:
            env[v.id] = np.asarray(inputs[names_in[v.external_id]])

    def get(i: int) -> np.ndarray:
        return env[i]

    for n in xg.nodes:
        f = n.fields
        k = n.kind
        if k in _BINARY:
            y = _BINARY[k](get(f["input1_id"]), get(f["input2_id"]))
        elif k in _UNARY:
            y = _UNARY[k](get(f["input_id"]))
        elif k == "XNNSoftmax":
            x = get(f["input_id"]).astype(np.float64)
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            y = e / e.sum(axis=-1, keepdims=True)
        elif k == "XNNLeakyReLU":
            x = get(f["input_id"])
            y = np.where(x >= 0, x, x * f["negative_slope"])
        elif k == "XNNELU":
            x = get(f["input_id"])
            y = np.where(x >= 0, x, f["alpha"] * np.expm1(np.minimum(x, 0)))
        elif k == "XNNPReLU":
            x, s = get(f["input1_id"]), get(f["input2_id"])
            y = np.where(x >= 0, x, x * s)
        elif k == "XNNFullyConnected":
            x, w = get(f["input1_id"]).astype(np.float64), get(f["filter_id"]).astype(np.float64)
            y = x @ (w if f.get("flags", 0) & 1 else w.T)
            if f.get("bias_id", INVALID_ID) != INVALID_ID:
                y = y + get(f["bias_id"])
        elif k == "XNNBatchMatrixMultiply":
            b = get(f["input2_id"])
            if f.get("flags", 0) & 1:
                b = np.swapaxes(b, -1, -2)
            y = np.matmul(get(f["input1_id"]).astype(np.float64), b)
        elif k in ("XNNConv2d", "XNNDepthwiseConv2d"):
            b = get(f["bias_id"]) if f.get("bias_id", INVALID_ID) != INVALID_ID else None
            y = _conv(get(f["input1_id"]), get(f["filter_id"]), b, f, k == "XNNDepthwiseConv2d")
        elif k == "XNNConvTranspose2d":
            b = get(f["bias_id"]) if f.get("bias_id", INVALID_ID) != INVALID_ID else None
            y = _deconv(get(f["input1_id"]), get(f["filter_id"]), b, f)
        elif k == "XNNMaxPooling2d":
            y = _pool(get(f["input_id"]), f, "max")
        elif k == "XNNAvgPooling2d":
            y = _pool(get(f["input_id"]), f, "avg")
        elif k == "XNNGlobalAvgPooling2d":
            y = get(f["input_id"]).astype(np.float64).mean(axis=(1, 2), keepdims=True)
        elif k == "XNNStaticTranspose":
            y = np.transpose(get(f["input_id"]), f["perm"])
        elif k == "XNNStaticReshape":
            y = _reshape(get(f["input_id"]), f["new_shape"])
        elif k == "XNNStaticSlice":
            y = _slice(get(f["input_id"]), f)
        elif k == "XNNStaticConstantPad":
            y = np.pad(get(f["input_id"]), list(zip(f["pre_paddings"], f["post_paddings"])),
                       constant_values=f["padding_value"])
        elif k.startswith("XNNConcatenate"):
            y = _cat(n, get)
        else:
            raise NotImplementedError(f"reference interpreter: no {k}")
        if n.output_min_max is not None:
            y = np.clip(y, *n.output_min_max)
        out = by_id[f["output_id"]]
        y = np.asarray(y)
        if list(y.shape) != list(out.dims):
            raise AssertionError(f"{k} (value {out.id}): computed shape {list(y.shape)}, declared {out.dims}")
        env[out.id] = y.astype(NUMPY_DTYPE[out.datatype])
    n_in = len(names_in)
    return {names_out[v.external_id - n_in]: env[v.id] for v in xg.values if v.flags & FLAG_EXTERNAL_OUTPUT}
