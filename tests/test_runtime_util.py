"""Helpers shared by the runtime tests: a tiny graph builder over the XNN IR and numpy references.

(No tests in here; the module name only follows the runtime's test-file ownership pattern.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conftest import conv_fields, pool_fields
from webxnn.xnn.ir import (
    INVALID_ID,
    Datatype,
    Metadata,
    Node,
    PerChannelQuant,
    PerTensorQuant,
    Value,
    XnnGraph,
)

FP32 = Datatype.FP32


class GraphBuilder:
    """Builds an XnnGraph value by value. Inputs get external ids first, outputs after them (FORMAT.md)."""

    def __init__(self) -> None:
        self.g = XnnGraph()
        self._inputs: list[tuple[int, str]] = []
        self._outputs: list[tuple[int, str]] = []
        self._next = 0

    def _add(self, dims: list[int], dt: Datatype, quant: Any = None, cidx: int = 0) -> int:
        vid = self._next
        self._next += 1
        self.g.values.append(Value(vid, dt, [int(d) for d in dims], constant_buffer_idx=cidx, quant=quant))
        return vid

    def input(self, name: str, dims: list[int], dt: Datatype = FP32, quant: Any = None) -> int:
        vid = self._add(dims, dt, quant)
        self._inputs.append((vid, name))
        return vid

    def const(self, arr: np.ndarray, dt: Datatype = FP32, quant: Any = None) -> int:
        arr = np.ascontiguousarray(arr)
        cidx = self.g.add_constant(arr.tobytes())
        return self._add(list(arr.shape), dt, quant, cidx)

    def value(self, dims: list[int], dt: Datatype = FP32, quant: Any = None) -> int:
        return self._add(dims, dt, quant)

    def node(self, kind: str, output_min_max: tuple[float, float] | None = None, **fields: Any) -> None:
        self.g.nodes.append(Node(kind, dict(fields), output_min_max=output_min_max))

    def output(self, vid: int, name: str) -> int:
        self._outputs.append((vid, name))
        return vid

    def graph(self) -> XnnGraph:
        g = self.g
        ext = 0
        for vid, _ in self._inputs:
            v = g.value(vid)
            v.flags, v.external_id = 1, ext
            ext += 1
        for vid, _ in self._outputs:
            v = g.value(vid)
            v.flags, v.external_id = 2, ext
            ext += 1
        g.num_externs = ext
        g.input_ids = [vid for vid, _ in self._inputs]
        g.output_ids = [vid for vid, _ in self._outputs]
        g.metadata = Metadata(
            producer="test",
            input_names=[n for _, n in self._inputs],
            output_names=[n for _, n in self._outputs],
        )
        return g

    def build(self) -> bytes:
        from webxnn.xnn.writer import serialize

        return serialize(self.graph())


def unary_graph(kind: str, dims: list[int], **fields: Any) -> bytes:
    b = GraphBuilder()
    x = b.input("x", dims)
    y = b.output(b.value(dims), "y")
    b.node(kind, input_id=x, output_id=y, flags=0, **fields)
    return b.build()


def simple_fc_blob() -> bytes:
    """x[2,3] -> FullyConnected(W[4,3], bias) -> relu -> y[2,4]; a small valid blob with constants."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", [2, 3])
    w = b.const(rng.standard_normal((4, 3)).astype(np.float32))
    bias = b.const(rng.standard_normal(4).astype(np.float32))
    h = b.value([2, 4])
    b.node(
        "XNNFullyConnected",
        output_min_max=(0.0, float("inf")),
        input1_id=x,
        filter_id=w,
        bias_id=bias,
        output_id=h,
        flags=0,
    )
    y = b.output(b.value([2, 4]), "y")
    b.node("XNNSigmoid", input_id=h, output_id=y, flags=0)
    return b.build()


def conv_chain_blob() -> bytes:
    """NHWC conv -> add(const) -> maxpool -> reshape -> fc: exercises constants, packing and the planner."""
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", [1, 5, 5, 2])
    w = b.const(rng.standard_normal((3, 3, 3, 2)).astype(np.float32))
    c = b.value([1, 5, 5, 3])
    b.node(
        "XNNConv2d",
        **conv_fields((3, 3), (1, 1, 1, 1), gic=2, goc=3),
        input1_id=x,
        filter_id=w,
        bias_id=INVALID_ID,
        output_id=c,
        flags=0,
    )
    k = b.const(rng.standard_normal(3).astype(np.float32))
    a = b.value([1, 5, 5, 3])
    b.node("XNNAdd", input1_id=c, input2_id=k, output_id=a, flags=0)
    p = b.value([1, 2, 2, 3])
    b.node(
        "XNNMaxPooling2d",
        **pool_fields((2, 2), (2, 2)),
        input_id=a,
        output_id=p,
        flags=0,
    )
    r = b.value([1, 12])
    b.node("XNNStaticReshape", new_shape=[1, 0], input_id=p, output_id=r, flags=0)
    fw = b.const(rng.standard_normal((4, 12)).astype(np.float32))
    y = b.output(b.value([1, 4]), "y")
    b.node("XNNFullyConnected", input1_id=r, filter_id=fw, bias_id=INVALID_ID, output_id=y, flags=0)
    return b.build()


# ---- numpy references, written straightforwardly ----


def _window(xp: np.ndarray, y0: int, x0: int, oh: int, ow: int, stride: tuple[int, int]) -> np.ndarray:
    """The [N, oh, ow, C] pixels of padded input xp one filter tap sees (tap offset y0, x0); a view."""
    sh, sw = stride
    return xp[:, y0 : y0 + sh * (oh - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw, :]


def conv2d_ref(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    pads: tuple[int, int, int, int],
    stride: tuple[int, int],
    dil: tuple[int, int],
    groups: int,
) -> np.ndarray:
    """NHWC input, OHWI filter [groups*goc, kh, kw, gic]; pads = (top, right, bottom, left). Sliding windows:
    one float64 matmul per tap and group."""
    pt, pr, pb, pl = pads
    n, h, wd, _ = x.shape
    o, kh, kw, gic = w.shape
    goc = o // groups
    xp = np.pad(x.astype(np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    w = w.astype(np.float64)
    oh = (h + pt + pb - (dil[0] * (kh - 1) + 1)) // stride[0] + 1
    ow = (wd + pl + pr - (dil[1] * (kw - 1) + 1)) // stride[1] + 1
    out = np.zeros((n, oh, ow, o))
    for ky in range(kh):
        for kx in range(kw):
            win = _window(xp, ky * dil[0], kx * dil[1], oh, ow, stride)
            for g in range(groups):
                out[..., g * goc : (g + 1) * goc] += (
                    win[..., g * gic : (g + 1) * gic] @ w[g * goc : (g + 1) * goc, ky, kx, :].T
                )
    if bias is not None:
        out += bias
    return out


def dwconv2d_ref(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    pads: tuple[int, int, int, int],
    stride: tuple[int, int],
    dil: tuple[int, int],
) -> np.ndarray:
    """Depthwise: filter [1, kh, kw, C*dm], output channel c reads input channel c // dm (a grouped conv with
    one input channel per group)."""
    _, kh, kw, oc = w.shape
    w_ohwi = w.reshape(kh, kw, oc).transpose(2, 0, 1)[..., None]
    return conv2d_ref(x, w_ohwi, bias, pads, stride, dil, x.shape[3])


def deconv2d_ref(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    pads: tuple[int, int, int, int],
    stride: tuple[int, int],
    dil: tuple[int, int],
    adj: tuple[int, int],
    groups: int,
) -> np.ndarray:
    """Transposed conv as a scatter: input pixel (iy, ix) adds x @ w[tap] at (iy*s + k*d) of the full output,
    which the padding then crops. Filter OHWI [groups*goc, kh, kw, gic]."""
    pt, pr, pb, pl = pads
    n, h, wd, _ = x.shape
    o, kh, kw, gic = w.shape
    goc = o // groups
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    fh = stride[0] * (h - 1) + adj[0] + dil[0] * (kh - 1) + 1
    fw = stride[1] * (wd - 1) + adj[1] + dil[1] * (kw - 1) + 1
    full = np.zeros((n, fh, fw, o))
    for ky in range(kh):
        for kx in range(kw):
            dst = _window(full, ky * dil[0], kx * dil[1], h, wd, stride)  # the outputs this tap reaches
            for g in range(groups):
                wg = w[g * goc : (g + 1) * goc, ky, kx, :]
                dst[..., g * goc : (g + 1) * goc] += x[..., g * gic : (g + 1) * gic] @ wg.T
    out = full[:, pt : fh - pb, pl : fw - pr, :]
    if bias is not None:
        out = out + bias
    return out


def pool_ref(
    x: np.ndarray,
    kind: str,
    pads: tuple[int, int, int, int],
    size: tuple[int, int],
    stride: tuple[int, int],
    dil: tuple[int, int] = (1, 1),
) -> np.ndarray:
    pt, pr, pb, pl = pads
    n, h, wd, c = x.shape
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x.astype(np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    oh = (h + pt + pb - (dil[0] * (size[0] - 1) + 1)) // stride[0] + 1
    ow = (wd + pl + pr - (dil[1] * (size[1] - 1) + 1)) // stride[1] + 1
    out = np.zeros((n, oh, ow, c))
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * stride[0], ox * stride[1]
            win = xp[
                :,
                y0 : y0 + dil[0] * (size[0] - 1) + 1 : dil[0],
                x0 : x0 + dil[1] * (size[1] - 1) + 1 : dil[1],
                :,
            ]
            if kind == "max":
                out[:, oy, ox, :] = win.max(axis=(1, 2))
                continue
            # Average over the real pixels only; a window of padding alone (possible with dilation) gives 0,
            # the kernels' convention (its max is -inf).
            count = np.sum(~np.isnan(win), axis=(1, 2))
            out[:, oy, ox, :] = np.nansum(win, axis=(1, 2)) / np.maximum(count, 1)
    return out


def per_tensor(scale: float, zp: int) -> PerTensorQuant:
    return PerTensorQuant(scale=scale, zero_point=zp)


def per_channel(scales: list[float], dim: int = 0) -> PerChannelQuant:
    return PerChannelQuant(scale=list(scales), channel_dim=dim)


def mixed_chain_blob() -> bytes:
    """deconv -> avgpool -> depthwise -> transpose -> slice -> pad -> concat -> bmm -> global pool -> softmax:
    one graph touching most node kinds (a seed for the mutation tests)."""
    rng = np.random.default_rng(2)
    b = GraphBuilder()
    x = b.input("x", [1, 6, 5, 4])
    y = b.value([1, 6, 4, 4])
    b.node(
        "XNNConvTranspose2d",
        input1_id=x,
        filter_id=b.const(rng.standard_normal((4, 3, 2, 2)).astype(np.float32)),
        bias_id=INVALID_ID,
        output_id=y,
        flags=0,
        **conv_fields((3, 2), (1, 1, 1, 1), groups=2, gic=2, goc=2),
    )
    p = b.value([1, 3, 2, 4])
    b.node(
        "XNNAvgPooling2d",
        **pool_fields((3, 3), (2, 2), (1, 1, 1, 1), (0, 0)),
        input_id=y,
        output_id=p,
        flags=0,
    )
    d = b.value([1, 3, 2, 4])
    b.node(
        "XNNDepthwiseConv2d",
        input1_id=p,
        filter_id=b.const(rng.standard_normal((1, 3, 3, 4)).astype(np.float32)),
        bias_id=b.const(np.ones(4, np.float32)),
        output_id=d,
        flags=0,
        **conv_fields((3, 3), (1, 1, 1, 1), groups=4, gic=1, goc=1),
    )
    t = b.value([1, 4, 3, 2])
    b.node("XNNStaticTranspose", perm=[0, 3, 1, 2], input_id=d, output_id=t, flags=0)
    s = b.value([1, 2, 3, 1])
    b.node("XNNStaticSlice", offsets=[0, 1, 0, 1], sizes=[0, 2, 0, 0], input_id=t, output_id=s, flags=0)
    pd = b.value([1, 3, 4, 3])
    b.node(
        "XNNStaticConstantPad",
        pre_paddings=[0, 1, 0, 1],
        post_paddings=[0, 0, 1, 1],
        padding_value=1.5,
        input_id=s,
        output_id=pd,
        flags=0,
    )
    c = b.value([1, 3, 4, 6])
    b.node("XNNConcatenate2", axis=3, input1_id=pd, input2_id=pd, output_id=c, flags=0)
    m = b.value([1, 3, 4, 4])
    b.node(
        "XNNBatchMatrixMultiply",
        input1_id=c,
        input2_id=b.const(rng.standard_normal((6, 4)).astype(np.float32)),
        output_id=m,
        flags=0,
    )
    g = b.value([1, 4])
    b.node("XNNGlobalAvgPooling2d", input_id=m, output_id=g, flags=0)
    sm = b.output(b.value([1, 4]), "y")
    b.node("XNNSoftmax", input_id=g, output_id=sm, flags=0)
    return b.build()


def wx_chain_blob() -> bytes:
    """A graph through most webxnn nodes and datatypes (for hostile-blob mutations): gather with int64
    indices, where, reflection pad, strided slice, normalize, reduce, arg_max, tile, scatterND, cumulative
    sum, resample, l2 pool, quantize/dequantize, fp16 convert."""
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", [2, 4, 4, 3])
    cond = b.input("c", [4, 1], Datatype.WX_UINT8)
    g = b.value([2, 2, 4, 3])
    b.node(
        "WXGather",
        axis=1,
        input_id=x,
        indices_id=b.const(np.array([3, -1], np.int64), Datatype.WX_INT64),
        output_id=g,
        flags=0,
    )
    w = b.value([2, 2, 4, 3])
    b.node("WXWhere", condition_id=cond, true_id=g, false_id=b.const(np.float32(0.5)), output_id=w, flags=0)
    p = b.value([2, 4, 6, 3])
    b.node(
        "WXPad",
        mode="reflection",
        pre_paddings=[0, 1, 1, 0],
        post_paddings=[0, 1, 1, 0],
        value=0.0,
        input_id=w,
        output_id=p,
        flags=0,
    )
    s = b.value([2, 2, 3, 3])
    b.node("WXSlice", starts=[0, 1, 0, 0], strides=[1, 2, 2, 1], input_id=p, output_id=s, flags=0)
    n = b.value([2, 2, 3, 3])
    b.node(
        "WXNormalize",
        axes=[1, 2],
        epsilon=1e-5,
        input_id=s,
        scale_id=b.const(rng.standard_normal(3).astype(np.float32)),
        bias_id=INVALID_ID,
        output_id=n,
        flags=0,
    )
    r = b.value([2, 4, 6, 3])
    b.node("WXResample2d", mode="linear", axes=[1, 2], scales=[2.0, 2.0], input_id=n, output_id=r, flags=0)
    pl = b.value([2, 2, 3, 3])
    b.node(
        "WXPool2d",
        op="l2",
        **pool_fields((2, 2), (2, 2)),
        input_id=r,
        output_id=pl,
        flags=0,
    )
    red = b.value([2, 3])
    b.node("WXReduce", op="mean", axes=[1, 2], keep_dims=False, input_id=pl, output_id=red, flags=0)
    am = b.output(b.value([2], Datatype.WX_INT64), "am")
    b.node("WXReduce", op="arg_max", axes=[1], keep_dims=False, input_id=red, output_id=am, flags=0)
    t = b.value([4, 6])
    b.node("WXTile", repetitions=[2, 2], input_id=red, output_id=t, flags=0)
    sc = b.value([4, 6])
    b.node(
        "WXScatterND",
        input_id=t,
        indices_id=b.const(np.array([[1], [7]], np.int32), Datatype.INT32),
        updates_id=b.const(np.ones((2, 6), np.float32)),
        output_id=sc,
        flags=0,
    )
    cs = b.value([4, 6])
    b.node("WXCumulativeSum", axis=1, exclusive=True, reversed=False, input_id=sc, output_id=cs, flags=0)
    q = b.value([4, 6], Datatype.WX_INT8)
    b.node(
        "WXQuantize",
        op="quantize",
        input_id=cs,
        scale_id=b.const(np.float32([0.5, 0.25])),
        zero_point_id=b.const(np.int8([1, -1]), Datatype.WX_INT8),
        output_id=q,
        flags=0,
    )
    dq = b.value([4, 6])
    b.node(
        "WXQuantize",
        op="dequantize",
        input_id=q,
        scale_id=b.const(np.float32([0.5, 0.25])),
        zero_point_id=b.const(np.int8([1, -1]), Datatype.WX_INT8),
        output_id=dq,
        flags=0,
    )
    h = b.output(b.value([4, 6], Datatype.FP16), "h")
    b.node("XNNConvert", input_id=dq, output_id=h, flags=0)
    return b.build()


def chain_blob(width: int = 24) -> bytes:
    """Four 3x3 convs and an add: enough parallel steps, with task counts that do not divide evenly."""
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    dims = [1, 23, 19, width]
    x = b.input("x", dims)
    y = x
    for _ in range(4):
        w = b.const(rng.standard_normal((width, 3, 3, width)).astype(np.float32) * 0.1)
        bias = b.const(rng.standard_normal(width).astype(np.float32))
        out = b.value(dims)
        b.node(
            "XNNConv2d",
            **conv_fields((3, 3), (1, 1, 1, 1), gic=width, goc=width),
            input1_id=y,
            filter_id=w,
            bias_id=bias,
            output_id=out,
            flags=0,
        )
        y = out
    z = b.output(b.value(dims), "y")
    b.node("XNNAdd", input1_id=x, input2_id=y, output_id=z, flags=0)
    return b.build()
