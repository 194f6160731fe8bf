"""ONNX import (`webxnn.onnx`): models built with onnx.helper, imported to WebNN graphs.

Numeric tests compile the imported graph with webxnn and run it in the runtime, comparing with
onnxruntime (or onnx's reference evaluator when onnxruntime is absent). When lowering does not support an
op yet, `compile` raises UnsupportedError and the test skips saying so, so coverage lights up as lowering
grows. Structure tests (ops emitted, shapes, folding, names, errors) need no runtime.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import webxnn  # noqa: E402
from webxnn.errors import UnsupportedError  # noqa: E402
from webxnn.onnx import from_onnx, import_onnx  # noqa: E402

NEWEST = onnx.defs.onnx_opset_version()
RNG = np.random.default_rng(1234)
NP_TO_TP = {
    np.float32: TP.FLOAT,
    np.int64: TP.INT64,
    np.int32: TP.INT32,
    np.uint8: TP.UINT8,
    np.int8: TP.INT8,
    np.bool_: TP.BOOL,
    np.float16: TP.FLOAT16,
    np.uint32: TP.UINT32,
    np.uint64: TP.UINT64,
}


# --------------------------------------------------------------------------------------------- building


def model(
    nodes: list[Any],
    inputs: dict[str, tuple[Any, list[Any]]],
    outputs: dict[str, Any],
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    name: str = "m",
) -> Any:
    """A ModelProto: inputs {name: (np dtype, shape)}, outputs {name: np dtype}, inits {name: array}."""
    g = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(k, NP_TO_TP[dt], shape) for k, (dt, shape) in inputs.items()],
        [helper.make_tensor_value_info(k, NP_TO_TP[dt], None) for k, dt in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = min(m.ir_version, 10)  # what current onnxruntime accepts
    return m


def n(op: str, ins: list[str], outs: list[str] | str, **attrs: Any) -> Any:
    outs = [outs] if isinstance(outs, str) else outs
    return helper.make_node(op, ins, outs, name=f"{op}_{_next()}", **attrs)


_COUNTER = [0]


def _next() -> int:
    _COUNTER[0] += 1
    return _COUNTER[0]


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def i64(*vals: int) -> np.ndarray:
    return np.array(vals, dtype=np.int64)


def feeds_for(m: Any, override: dict[str, int] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    inits = {t.name for t in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.dim_value else (override or {})[d.dim_param] for d in tt.shape.dim]
        if tt.elem_type == TP.FLOAT:
            out[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif tt.elem_type == TP.INT64:
            out[vi.name] = rng.integers(0, 2, shape).astype(np.int64)
        elif tt.elem_type == TP.BOOL:
            out[vi.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            raise AssertionError(tt.elem_type)
    return out


# --------------------------------------------------------------------------------------------- running


def oracle(m: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What ONNX says: onnxruntime when installed, else onnx's reference evaluator."""
    names = [o.name for o in m.graph.output]
    try:
        import onnxruntime as ort
    except ImportError:
        from onnx.reference import ReferenceEvaluator

        return dict(zip(names, ReferenceEvaluator(m).run(None, feeds)))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip(names, sess.run(None, feeds)))


def run_webxnn(g: webxnn.Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    try:
        blob = webxnn.compile(g)
    except UnsupportedError as e:
        pytest.skip(f"lowering does not support this yet: {e}")
    try:
        prog = webxnn.load(blob)
    except ImportError as e:  # the C++ runtime is not built in this environment
        pytest.skip(f"runtime unavailable: {e}")
    ins = {}
    for name, op in g.inputs.items():
        ins[name] = feeds[name].astype(webxnn.graph.DTYPES[op.dtype])
    return prog.run(ins)


def compare(
    got: dict[str, np.ndarray], want: dict[str, np.ndarray], atol: float, rtol: float, who: str
) -> None:
    for name, ref in want.items():
        out = np.asarray(got[name])
        ref = ref.astype(np.uint8) if ref.dtype == np.bool_ else ref
        assert out.shape == ref.shape, (who, name, out.shape, ref.shape)
        np.testing.assert_allclose(
            out.astype(np.float64),
            ref.astype(np.float64),
            atol=atol,
            rtol=rtol,
            err_msg=f"{who}: output {name}",
        )


def check(
    m: Any,
    override: dict[str, int] | None = None,
    atol: float = 1e-4,
    rtol: float = 1e-4,
    seed: int = 0,
    feeds: dict[str, np.ndarray] | None = None,
    runtime: bool = True,
) -> webxnn.Graph:
    """Import `m`; the WebNN graph interpreted with numpy must match ONNX; then (when `runtime`) so must
    webxnn's compiled blob, which skips while lowering lacks an op."""
    g = from_onnx(m, override_dims=override)
    webxnn.validate(g)
    text = g.to_text()  # must print and re-parse to the same graph
    assert webxnn.parse(text) == g
    feeds = feeds if feeds is not None else feeds_for(m, override, seed)
    want = oracle(m, feeds)
    compare(run_numpy(g, feeds), want, atol, rtol, "numpy WebNN semantics")
    if runtime:
        compare(run_webxnn(g, feeds), want, atol, rtol, "webxnn runtime")
    return g


def ops_of(g: webxnn.Graph) -> Counter:
    return Counter(nd.op for nd in g.nodes)


# --------------------------------------------------------------------------------------------- numpy WebNN
# A straightforward numpy interpreter of the WebNN ops the importer emits, written from the WebNN spec
# (NCHW/OIHW, padding [t, b, l, r], averages exclude padding). It checks the *translation* ONNX → WebNN
# against onnxruntime independently of webxnn's lowering and runtime.


def _np_conv(x, w, b, o):
    t, bo, le, r = o.get("padding", [0, 0, 0, 0])
    sh, sw = o.get("strides", [1, 1])
    dh, dw = o.get("dilations", [1, 1])
    g = o.get("groups", 1)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, bo), (le, r)))
    n_, c, h, wd = xp.shape
    oc, icg, kh, kw = w.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (wd - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n_, oc, oh, ow))
    ocg = oc // g
    for gi in range(g):
        xs = xp[:, gi * icg : (gi + 1) * icg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[
                    :, :, i * dh : i * dh + (oh - 1) * sh + 1 : sh, j * dw : j * dw + (ow - 1) * sw + 1 : sw
                ]
                wk = w[gi * ocg : (gi + 1) * ocg, :, i, j]
                y[:, gi * ocg : (gi + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, wk)
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def _np_conv_t(x, w, b, o):
    t, bo, le, r = o.get("padding", [0, 0, 0, 0])
    sh, sw = o.get("strides", [1, 1])
    dh, dw = o.get("dilations", [1, 1])
    ph, pw = o.get("outputPadding", [0, 0])
    g = o.get("groups", 1)
    n_, c, h, wd = x.shape
    ic, ocg, kh, kw = w.shape  # iohw
    fh, fw = (h - 1) * sh + dh * (kh - 1) + 1 + ph, (wd - 1) * sw + dw * (kw - 1) + 1 + pw
    y = np.zeros((n_, ocg * g, fh, fw))
    icg = ic // g
    for gi in range(g):
        xs = x[:, gi * icg : (gi + 1) * icg].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, w[gi * icg : (gi + 1) * icg, :, i, j])
                y[
                    :,
                    gi * ocg : (gi + 1) * ocg,
                    i * dh : i * dh + (h - 1) * sh + 1 : sh,
                    j * dw : j * dw + (wd - 1) * sw + 1 : sw,
                ] += contrib
    y = y[:, :, t : fh - bo, le : fw - r]
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def _np_pool(x, o, kind):
    kh, kw = o.get("windowDimensions") or x.shape[2:]
    t, bo, le, r = o.get("padding", [0, 0, 0, 0])
    sh, sw = o.get("strides", [1, 1])
    dh, dw = o.get("dilations", [1, 1])
    n_, c, h, wd = x.shape
    rnd = math.ceil if o.get("roundingType") == "ceil" else math.floor
    oh = rnd((h + t + bo - dh * (kh - 1) - 1) / sh) + 1
    ow = rnd((wd + le + r - dw * (kw - 1) - 1) / sw) + 1
    eh = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + t + bo))
    ew = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (wd + le + r))
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, bo + eh), (le, r + ew)), constant_values=fill)
    valid = np.pad(np.ones((h, wd)), ((t, bo + eh), (le, r + ew)))
    wins = [
        xp[:, :, i * dh : i * dh + (oh - 1) * sh + 1 : sh, j * dw : j * dw + (ow - 1) * sw + 1 : sw]
        for i in range(kh)
        for j in range(kw)
    ]
    if kind == "max":
        return np.max(wins, axis=0)
    cnt = sum(
        valid[i * dh : i * dh + (oh - 1) * sh + 1 : sh, j * dw : j * dw + (ow - 1) * sw + 1 : sw]
        for i in range(kh)
        for j in range(kw)
    )
    if kind == "l2":
        return np.sqrt(np.sum(np.square(wins), axis=0))
    return np.sum(wins, axis=0) / cnt


def _np_resample(x, o):
    n_, c, h, w = x.shape
    oh, ow = o.get("sizes") or [int(h * o["scales"][0]), int(w * o["scales"][1])]
    if o.get("mode", "nearest-neighbor") == "nearest-neighbor":  # floor((o + 0.5) / scale)
        sh, sw = o.get("scales") or [oh / h, ow / w]
        iy = np.minimum(np.floor((np.arange(oh) + 0.5) / np.float32(sh)).astype(int), h - 1)
        ix = np.minimum(np.floor((np.arange(ow) + 0.5) / np.float32(sw)).astype(int), w - 1)
        return x[:, :, iy][:, :, :, ix]

    def coords(n_in, n_out):
        src = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, src - lo

    y0, y1, fy = coords(h, oh)
    x0, x1, fx = coords(w, ow)
    top = x[:, :, y0][:, :, :, x0] * (1 - fx) + x[:, :, y0][:, :, :, x1] * fx
    bot = x[:, :, y1][:, :, :, x0] * (1 - fx) + x[:, :, y1][:, :, :, x1] * fx
    return top * (1 - fy[:, None]) + bot * fy[:, None]


def _np_norm(x, axes, scale, bias, eps):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1 if scale is None else scale) + (0 if bias is None else bias)


_erf = np.vectorize(math.erf)
_NP_UNARY = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "abs": np.abs,
    "neg": np.negative,
    "sqrt": np.sqrt,
    "erf": _erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "reciprocal": lambda x: 1 / x,
    "identity": lambda x: x,
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "logicalNot": lambda x: x == 0,
    "hardSwish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}
_NP_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "max": np.maximum,
    "min": np.minimum,
    "equal": np.equal,
    "notEqual": np.not_equal,
    "greater": np.greater,
    "lesser": np.less,
    "greaterOrEqual": np.greater_equal,
    "lesserOrEqual": np.less_equal,
    "prelu": lambda x, s: np.where(x >= 0, x, x * s),
}
_NP_REDUCE = {
    "reduceMean": np.mean,
    "reduceSum": np.sum,
    "reduceMax": np.max,
    "reduceMin": np.min,
    "reduceProduct": np.prod,
}


def _np_node(op, ins, o, env):  # noqa: C901 - one branch per op, on purpose
    x = ins[0] if ins else None
    if op in _NP_UNARY:
        return [_NP_UNARY[op](x)]
    if op in _NP_BINARY:
        r = _NP_BINARY[op](ins[0], ins[1])
        return [r.astype(np.uint8) if r.dtype == np.bool_ else r]
    if op in _NP_REDUCE:
        return [_NP_REDUCE[op](x, axis=tuple(o["axes"]), keepdims=o.get("keepDimensions", False))]
    if op == "clamp":
        return [np.clip(x, o.get("minValue", -np.inf), o.get("maxValue", np.inf))]
    if op == "leakyRelu":
        return [np.where(x >= 0, x, x * o.get("alpha", 0.01))]
    if op == "elu":
        return [np.where(x >= 0, x, o.get("alpha", 1.0) * (np.exp(x) - 1))]
    if op == "hardSigmoid":
        return [np.clip(x * o.get("alpha", 0.2) + o.get("beta", 0.5), 0, 1)]
    if op == "softmax":
        e = np.exp(x - x.max(axis=o["axis"], keepdims=True))
        return [e / e.sum(axis=o["axis"], keepdims=True)]
    if op == "conv2d":
        return [_np_conv(x, ins[1], ins[2] if len(ins) > 2 else None, o)]
    if op == "convTranspose2d":
        return [_np_conv_t(x, ins[1], ins[2] if len(ins) > 2 else None, o)]
    if op in ("maxPool2d", "averagePool2d", "l2Pool2d"):
        return [_np_pool(x, o, {"maxPool2d": "max", "averagePool2d": "avg", "l2Pool2d": "l2"}[op])]
    if op == "batchNormalization":
        sh = [1, -1] + [1] * (x.ndim - 2)
        y = (x - ins[1].reshape(sh)) / np.sqrt(ins[2].reshape(sh) + o.get("epsilon", 1e-5))
        return [y * env[o["scale"]].reshape(sh) + env[o["bias"]].reshape(sh)]
    if op == "instanceNormalization":
        return [
            _np_norm(
                x,
                [2, 3],
                env[o["scale"]].reshape(1, -1, 1, 1),
                env[o["bias"]].reshape(1, -1, 1, 1),
                o.get("epsilon", 1e-5),
            )
        ]
    if op == "layerNormalization":
        return [
            _np_norm(
                x,
                o["axes"],
                ins[1] if len(ins) > 1 else None,
                ins[2] if len(ins) > 2 else None,
                o.get("epsilon", 1e-5),
            )
        ]
    if op == "gemm":
        a = x.T if o.get("aTranspose") else x
        b = ins[1].T if o.get("bTranspose") else ins[1]
        y = o.get("alpha", 1.0) * (a @ b)
        return [y + o.get("beta", 1.0) * ins[2] if len(ins) > 2 else y]
    if op == "matmul":
        return [np.matmul(x, ins[1])]
    if op == "reshape":
        return [x.reshape(o["newShape"])]
    if op == "transpose":
        return [np.transpose(x, o["permutation"])]
    if op == "concat":
        return [np.concatenate(ins, axis=o["axis"])]
    if op == "split":
        return np.split(x, np.cumsum(o["splits"])[:-1], axis=o["axis"])
    if op == "slice":
        st = o.get("strides") or [1] * x.ndim
        return [x[tuple(slice(s, s + z, k) for s, z, k in zip(o["starts"], o["sizes"], st))]]
    if op == "reverse":
        return [np.flip(x, axis=tuple(o["axes"]))]
    if op == "pad":
        mode = {"constant": "constant", "reflection": "reflect", "edge": "edge"}[o.get("mode", "constant")]
        kw = {"constant_values": o.get("value", 0.0)} if mode == "constant" else {}
        return [np.pad(x, list(zip(o["beginningPadding"], o["endingPadding"])), mode=mode, **kw)]
    if op == "resample2d":
        return [_np_resample(x, o)]
    if op == "expand":
        return [np.broadcast_to(x, o["newShape"])]
    if op == "tile":
        return [np.tile(x, o["repetitions"])]
    if op == "gather":
        return [np.take(x, ins[1], axis=o.get("axis", 0))]
    if op == "where":
        return [np.where(ins[0] != 0, ins[1], ins[2])]
    if op == "cast":
        return [x.astype(webxnn.graph.DTYPES[o["type"]])]
    if op == "quantizeLinear":
        info = np.iinfo(ins[2].dtype)
        return [np.clip(np.round(x / ins[1]) + ins[2], info.min, info.max).astype(ins[2].dtype)]
    if op == "dequantizeLinear":
        return [((x.astype(np.float64) - ins[2]) * ins[1]).astype(ins[1].dtype)]
    raise NotImplementedError(op)


def run_numpy(g: webxnn.Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    env: dict[str, Any] = {k: feeds[k].astype(webxnn.graph.DTYPES[op.dtype]) for k, op in g.inputs.items()}
    for name in g.consts:
        env[name] = g.const_array(name)
    for nd in g.nodes:
        outs = _np_node(nd.op, [env[i] for i in nd.inputs], nd.options, env)
        for name, val in zip(nd.outputs, outs):
            env[name] = np.asarray(val)
    return {k: env[v] for k, v in g.outputs.items()}


# --------------------------------------------------------------------------------------------- per-op cases
# (id, nodes, inputs, outputs, inits, opset); x is f32[2, 4, 6, 6] unless said otherwise

X = {"x": (np.float32, [2, 4, 6, 6])}
V = {"v": (np.float32, [3, 5])}


def _case(
    cid: str,
    nodes: list[Any],
    inits: dict | None = None,
    inputs: dict | None = None,
    outputs: dict | None = None,
    opset: int = 17,
) -> Any:
    return pytest.param(nodes, inputs or X, outputs or {"y": np.float32}, inits or {}, opset, id=cid)


CASES = [
    _case(
        "Conv",
        [n("Conv", ["x", "w", "b"], "y", pads=[1, 0, 1, 2], strides=[2, 1])],
        {"w": f32(3, 4, 3, 2), "b": f32(3)},
    ),
    _case(
        "Conv-same-lower",
        [n("Conv", ["x", "w"], "y", auto_pad="SAME_LOWER", strides=[2, 2])],
        {"w": f32(5, 4, 2, 2)},
    ),
    _case(
        "Conv-dilated",
        [n("Conv", ["x", "w"], "y", pads=[2, 2, 2, 2], dilations=[2, 2])],
        {"w": f32(5, 4, 3, 3)},
    ),
    _case(
        "Conv-depthwise",
        [n("Conv", ["x", "w", "b"], "y", group=4, pads=[1, 1, 1, 1])],
        {"w": f32(4, 1, 3, 3), "b": f32(4)},
    ),
    _case(
        "Conv1d",
        [n("Conv", ["v3", "w"], "y", pads=[1, 1], strides=[2])],
        {"w": f32(6, 4, 3)},
        {"v3": (np.float32, [2, 4, 9])},
    ),
    _case(
        "ConvTranspose",
        [n("ConvTranspose", ["x", "w", "b"], "y", strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])],
        {"w": f32(4, 3, 3, 3), "b": f32(3)},
    ),
    _case(
        "ConvTranspose-output_shape",
        [n("ConvTranspose", ["x", "w"], "y", strides=[2, 2], output_shape=[12, 12])],
        {"w": f32(4, 2, 3, 3)},
    ),
    _case(
        "BatchNormalization",
        [n("BatchNormalization", ["x", "s", "b", "m", "v"], "y", epsilon=1e-3)],
        {"s": f32(4), "b": f32(4), "m": f32(4), "v": np.abs(f32(4)) + 0.5},
    ),
    _case(
        "InstanceNormalization",
        [n("InstanceNormalization", ["x", "s", "b"], "y")],
        {"s": f32(4), "b": f32(4)},
    ),
    _case("Relu", [n("Relu", ["x"], "y")]),
    _case("Clip-11", [n("Clip", ["x", "lo", "hi"], "y")], {"lo": np.float32(-0.5), "hi": np.float32(0.7)}),
    _case("Clip-6", [n("Clip", ["x"], "y", min=-0.5, max=0.7)], opset=6),
    _case("Clip-relu6", [n("Clip", ["x", "lo", "hi"], "y")], {"lo": np.float32(0), "hi": np.float32(6)}),
    _case("LeakyRelu", [n("LeakyRelu", ["x"], "y", alpha=0.2)]),
    _case("HardSigmoid", [n("HardSigmoid", ["x"], "y", alpha=0.3, beta=0.4)]),
    _case("HardSwish", [n("HardSwish", ["x"], "y")]),
    _case("Sigmoid", [n("Sigmoid", ["x"], "y")]),
    _case("Tanh", [n("Tanh", ["x"], "y")]),
    _case("Elu", [n("Elu", ["x"], "y", alpha=0.5)]),
    _case("PRelu", [n("PRelu", ["x", "s"], "y")], {"s": f32(4, 1, 1)}),
    _case("Add-broadcast", [n("Add", ["x", "c"], "y")], {"c": f32(4, 1, 6)}),
    _case("Sub", [n("Sub", ["c", "x"], "y")], {"c": f32(6)}),
    _case("Mul", [n("Mul", ["x", "x"], "y")]),
    _case("Div", [n("Div", ["x", "c"], "y")], {"c": np.abs(f32(1, 4, 1, 1)) + 1}),
    _case("Pow", [n("Abs", ["x"], "a"), n("Pow", ["a", "c"], "y")], {"c": np.float32(1.5)}),
    _case("Pow-int-exponent", [n("Pow", ["x", "c"], "y")], {"c": np.int64(2)}),
    _case("Sqrt", [n("Abs", ["x"], "a"), n("Sqrt", ["a"], "y")]),
    _case("Erf", [n("Erf", ["x"], "y")]),
    _case("Gelu-20", [n("Gelu", ["x"], "y")], opset=20),
    _case("Max-variadic", [n("Max", ["x", "c", "d"], "y")], {"c": f32(6), "d": f32(1, 6)}),
    _case("MaxPool", [n("MaxPool", ["x"], "y", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])]),
    _case("MaxPool-ceil", [n("MaxPool", ["x"], "y", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)]),
    _case("AveragePool", [n("AveragePool", ["x"], "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]),
    # ceil_mode, but the last window would start in the end padding: ONNX drops it (WebNN ceil keeps it)
    _case(
        "AveragePool-ceil-last-window-on-pad",
        [n("AveragePool", ["x"], "y", kernel_shape=[2, 2], strides=[4, 4], pads=[1, 1, 1, 1], ceil_mode=1)],
    ),
    _case(
        "MaxPool-ceil-last-window-on-pad",
        [n("MaxPool", ["x"], "y", kernel_shape=[2, 2], strides=[4, 4], pads=[1, 1, 1, 1], ceil_mode=1)],
    ),
    _case(
        "AveragePool-include-pad",
        [
            n(
                "AveragePool",
                ["x"],
                "y",
                kernel_shape=[3, 3],
                strides=[2, 2],
                pads=[1, 1, 1, 1],
                count_include_pad=1,
            )
        ],
    ),
    _case("GlobalAveragePool", [n("GlobalAveragePool", ["x"], "y")]),
    _case("GlobalMaxPool", [n("GlobalMaxPool", ["x"], "y")]),
    _case("Flatten", [n("Flatten", ["x"], "y", axis=2)]),
    _case("Flatten-axis-minus1", [n("Flatten", ["x"], "y", axis=-1)]),  # [48, 6], not [288, 1]
    _case("Flatten-axis-minus4", [n("Flatten", ["x"], "y", axis=-4)]),
    _case("Reshape", [n("Reshape", ["x", "s"], "y")], {"s": i64(0, -1, 3)}),
    _case(
        "Gemm",
        [n("Gemm", ["v", "w", "c"], "y", transB=1, alpha=0.5, beta=2.0)],
        {"w": f32(7, 5), "c": f32(7)},
        V,
    ),
    _case("Gemm-transA", [n("Gemm", ["v", "w"], "y", transA=1)], {"w": f32(3, 2)}, V),
    _case("MatMul-batched", [n("MatMul", ["x", "w"], "y")], {"w": f32(6, 3)}),
    _case("MatMul-vector", [n("MatMul", ["v", "w"], "y")], {"w": f32(5)}, V),
    _case("Concat", [n("Concat", ["x", "c"], "y", axis=-3)], {"c": f32(2, 2, 6, 6)}),
    _case(
        "Resize-nearest",
        [n("Resize", ["x", "", "sc"], "y", mode="nearest")],
        {"sc": np.array([1, 1, 2, 2], np.float32)},
    ),
    _case(
        "Resize-nearest-asym",
        [
            n(
                "Resize",
                ["x", "", "", "sz"],
                "y",
                mode="nearest",
                coordinate_transformation_mode="asymmetric",
                nearest_mode="floor",
            )
        ],
        {"sz": i64(2, 4, 18, 12)},
    ),
    _case(
        "Resize-nearest-sizes",
        [n("Resize", ["x", "", "", "sz"], "y", mode="nearest")],
        {"sz": i64(2, 4, 12, 18)},
    ),
    _case(
        "Resize-nearest-down",
        [n("Resize", ["x", "", "sc"], "y", mode="nearest", nearest_mode="round_prefer_ceil")],
        {"sc": np.array([1, 1, 0.5, 0.5], np.float32)},
    ),
    # ONNX picks other pixels than resample2d: exact gathers instead
    _case(
        "Resize-nearest-gather",
        [n("Resize", ["x", "", "sc"], "y", mode="nearest")],
        {"sc": np.array([1, 1, 0.5, 1.5], np.float32)},
    ),
    _case(
        "Resize-linear-align-corners",
        [
            n(
                "Resize",
                ["x", "", "", "sz"],
                "y",
                mode="linear",
                coordinate_transformation_mode="align_corners",
            )
        ],
        {"sz": i64(2, 4, 11, 4)},
    ),
    _case(
        "Resize-nearest-axes-keep-ratio",
        [
            n(
                "Resize",
                ["x", "", "", "sz"],
                "y",
                mode="nearest",
                axes=[3, 2],
                keep_aspect_ratio_policy="not_larger",
            )
        ],
        {"sz": i64(9, 20)},
        opset=18,
    ),
    _case(
        "Resize-linear",
        [n("Resize", ["x", "", "sc"], "y", mode="linear")],
        {"sc": np.array([1, 1, 2, 2], np.float32)},
    ),
    _case(
        "Pad-constant",
        [n("Pad", ["x", "p", "v"], "y")],
        {"p": i64(0, 0, 1, 2, 0, 0, 3, 0), "v": np.float32(0.5)},
    ),
    _case("Pad-reflect", [n("Pad", ["x", "p"], "y", mode="reflect")], {"p": i64(0, 0, 1, 2, 0, 0, 2, 1)}),
    _case(
        "Pad-edge-axes-18",
        [n("Pad", ["x", "p", "", "ax"], "y", mode="edge")],
        {"p": i64(1, 2, 2, 1), "ax": i64(-2, -1)},
        opset=18,
    ),
    _case("Softmax-13", [n("Softmax", ["x"], "y", axis=1)], opset=13),
    _case("Softmax-11-coerce", [n("Softmax", ["x"], "y", axis=2)], opset=11),
    _case("LogSoftmax", [n("LogSoftmax", ["x"], "y", axis=-1)]),
    _case("Transpose", [n("Transpose", ["x"], "y", perm=[0, 2, 3, 1])]),
    _case(
        "Split-13",
        [n("Split", ["x", "s"], ["y", "z"], axis=3)],
        {"s": i64(2, 4)},
        outputs={"y": np.float32, "z": np.float32},
        opset=13,
    ),
    _case(
        "Split-11",
        [n("Split", ["x"], ["y", "z"], axis=1, split=[1, 3])],
        outputs={"y": np.float32, "z": np.float32},
        opset=11,
    ),
    _case(
        "Split-18-num_outputs",
        [n("Split", ["x"], ["y", "z"], axis=2, num_outputs=2)],
        outputs={"y": np.float32, "z": np.float32},
        opset=18,
    ),
    _case(
        "Slice",
        [n("Slice", ["x", "st", "en", "ax", "sp"], "y")],
        {"st": i64(1, -5), "en": i64(3, 100), "ax": i64(1, 3), "sp": i64(1, 2)},
    ),
    _case(
        "Slice-negative-step",
        [n("Slice", ["x", "st", "en", "ax", "sp"], "y")],
        {"st": i64(-1), "en": i64(-100), "ax": i64(2), "sp": i64(-2)},
    ),
    _case(
        "Squeeze-13",
        [n("ReduceMean", ["x"], "r", axes=[1], keepdims=1), n("Squeeze", ["r", "a"], "y")],
        {"a": i64(1)},
        opset=13,
    ),
    _case(
        "Squeeze-11",
        [n("ReduceMean", ["x"], "r", axes=[1], keepdims=1), n("Squeeze", ["r"], "y", axes=[1])],
        opset=11,
    ),
    _case("Unsqueeze-13", [n("Unsqueeze", ["x", "a"], "y")], {"a": i64(-1, 0)}, opset=13),
    _case("Unsqueeze-11", [n("Unsqueeze", ["x"], "y", axes=[0, 5])], opset=11),
    _case("ReduceMean-18", [n("ReduceMean", ["x", "a"], "y", keepdims=0)], {"a": i64(-1, 2)}, opset=18),
    _case("ReduceSum-13", [n("ReduceSum", ["x", "a"], "y")], {"a": i64(1)}, opset=13),
    _case("ReduceMax-all", [n("ReduceMax", ["x"], "y", keepdims=0)]),
    _case(
        "Expand",
        [
            n("Expand", ["c", "s"], "y"),
        ],
        {"c": f32(4, 1, 1), "s": i64(2, 1, 6, 6)},
    ),
    _case("Tile", [n("Tile", ["x", "r"], "y")], {"r": i64(1, 2, 1, 2)}),
    _case(
        "Where-Equal",
        [n("Equal", ["x", "x"], "e"), n("Greater", ["x", "z"], "g"), n("Where", ["g", "x", "z"], "y")],
        {"z": np.float32(0)},
    ),
    _case(
        "Compress-const",
        [n("Compress", ["x", "c"], "y", axis=-1)],
        {"c": np.array([1, 0, 1, 1, 0, 1], np.bool_)},
    ),
    _case("Compress-flat", [n("Compress", ["x", "c"], "y")], {"c": np.arange(50) % 3 == 0}),
    _case("Pad-crop", [n("Pad", ["x", "p"], "y")], {"p": i64(0, 0, -1, 2, 0, 0, 1, -2)}),
    _case("Gather-const-idx", [n("Gather", ["x", "i"], "y", axis=1)], {"i": i64(3, -1, 0)}),
    _case("Gather-scalar-idx", [n("Gather", ["x", "i"], "y", axis=-1)], {"i": np.int64(-2)}),
    _case("Cast-roundtrip", [n("Cast", ["x"], "c", to=TP.INT32), n("Cast", ["c"], "y", to=TP.FLOAT)]),
    _case("DepthToSpace", [n("DepthToSpace", ["x"], "y", blocksize=2)]),
    _case("DepthToSpace-CRD", [n("DepthToSpace", ["x"], "y", blocksize=2, mode="CRD")]),
    _case("SpaceToDepth", [n("SpaceToDepth", ["x"], "y", blocksize=2)]),
    _case("Identity-output", [n("Identity", ["x"], "y")]),
    _case("Dropout", [n("Dropout", ["x"], "d"), n("Relu", ["d"], "y")]),
    _case("Mean", [n("Mean", ["x", "x", "x"], "y")]),
]


@pytest.mark.parametrize("nodes, inputs, outputs, inits, opset", CASES)
def test_op_translation_matches_onnx(
    nodes: list[Any], inputs: dict, outputs: dict, inits: dict, opset: int
) -> None:
    check(model(nodes, inputs, outputs, inits, opset=opset), runtime=False)


@pytest.mark.parametrize("nodes, inputs, outputs, inits, opset", CASES)
def test_op_runs_in_webxnn(nodes: list[Any], inputs: dict, outputs: dict, inits: dict, opset: int) -> None:
    m = model(nodes, inputs, outputs, inits, opset=opset)
    g = from_onnx(m)
    feeds = feeds_for(m)
    compare(run_webxnn(g, feeds), oracle(m, feeds), 1e-4, 1e-4, "webxnn runtime")


# --------------------------------------------------------------------------------------------- a small CNN


def cnn_model(opset: int = 13) -> Any:
    """Every CNN op in one model: conv/bn/activations, an SE block, pools, upsampling, concat, head."""
    c = 8
    ax = {"axes": [2, 3]} if opset < 13 else {}
    inits = {
        "w1": f32(c, 3, 3, 3) * 0.3,
        "b1": f32(c),
        "bn_s": np.abs(f32(c)) + 0.5,
        "bn_b": f32(c),
        "bn_m": f32(c) * 0.1,
        "bn_v": np.abs(f32(c)) + 0.5,
        "wdw": f32(c, 1, 3, 3) * 0.3,
        "w_pw": f32(c, c, 1, 1) * 0.3,
        "se_w": f32(c, c, 1, 1) * 0.3,
        "se_b": f32(c),
        "wt": f32(c, 4, 2, 2) * 0.3,
        "lo": np.float32(0),
        "hi": np.float32(6),
        "sc": np.array([1, 1, 2, 2], np.float32),
        "roi": np.zeros(0, np.float32),
        "pads": i64(0, 0, 1, 1, 0, 0, 1, 1),
        "gw": f32(10, 3 * c) * 0.3,
        "gb": f32(10),
        "two": np.float32(2),
        "half": np.float32(0.5),
        "axes23": i64(2, 3),
        "split": i64(c // 2, c),
    }
    nodes = [
        n("Conv", ["x", "w1", "b1"], "c1", pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], "bn"),
        n("Relu", ["bn"], "r1"),
        n("Conv", ["r1", "wdw"], "dw", group=c, strides=[2, 2], auto_pad="SAME_UPPER"),
        n("Clip", ["dw", "lo", "hi"], "c6") if opset >= 11 else n("Clip", ["dw"], "c6", min=0.0, max=6.0),
        n("Conv", ["c6", "w_pw"], "pw"),
        n("LeakyRelu", ["pw"], "lr", alpha=0.1),
        n("HardSwish", ["lr"], "hs") if opset >= 14 else n("Mul", ["lr", "lr"], "hs"),
        # squeeze-excite
        n("GlobalAveragePool", ["hs"], "gap"),
        n("Conv", ["gap", "se_w", "se_b"], "se"),
        n("HardSigmoid", ["se"], "hsig"),
        n("Mul", ["hs", "hsig"], "scaled"),
        n("Sigmoid", ["scaled"], "sg"),
        n("Add", ["scaled", "sg"], "a1"),
        n("MaxPool", ["a1"], "mp", kernel_shape=[2, 2], strides=[2, 2]),
        n("AveragePool", ["mp"], "ap", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("ConvTranspose", ["ap", "wt"], "up1", strides=[2, 2]),
        n("Resize", ["mp", "roi", "sc"], "up2", mode="nearest"),
        n("Concat", ["up1", "up2"], "cat", axis=1),
        n("Pad", ["cat", "pads"], "pd"),
        n("Sub", ["pd", "half"], "s1"),
        n("Div", ["s1", "two"], "d1"),
        n("Pow", ["d1", "two"], "p1"),
        n("Transpose", ["p1"], "tr", perm=[0, 1, 3, 2]),
        n(
            "Split",
            ["tr", "split"] if opset >= 13 else ["tr"],
            ["sp1", "sp2"],
            axis=1,
            **({} if opset >= 13 else {"split": [c // 2, c]}),
        ),
        n("Concat", ["sp2", "sp1"], "cat2", axis=1),
        n(
            "ReduceMean",
            ["cat2", "axes23"] if opset >= 18 else ["cat2"],
            "rm",
            keepdims=1,
            **({} if opset >= 18 else {"axes": [2, 3]}),
        ),
        n("Flatten", ["rm"], "fl", axis=1),
        n("Unsqueeze", ["fl", "axes23"] if opset >= 13 else ["fl"], "us", **ax),
        n("Squeeze", ["us", "axes23"] if opset >= 13 else ["us"], "sq", **ax),
        n("Concat", ["sq", "sq"], "cat3", axis=1),
        n("Gemm", ["cat3", "gw", "gb"], "logits", transB=1),
        n("Softmax", ["logits"], "probs", axis=1),
    ]
    return model(
        nodes,
        {"x": (np.float32, ["batch", 3, 16, 16])},
        {"probs": np.float32},
        inits,
        opset=opset,
        name="tiny_cnn",
    )


@pytest.mark.parametrize("opset", [11, 13, 18, min(NEWEST, 21)])
def test_cnn_matches_onnx(opset: int) -> None:
    check(cnn_model(opset), {"batch": 2})


def test_mobilenetv3_block_fuses_activations() -> None:
    """A MobileNetV3 block from ONNX (1x1 expand + HardSwish, depthwise + HardSwish, squeeze-excite with a
    HardSigmoid gate, 1x1 project, residual): matches ONNX, and at run time the expand conv and its HardSwish
    run inside the depthwise step (the 64x64x96 expanded map, 1.5 MB, never goes to memory), which applies its
    own HardSwish too: no HardSwish step is left."""
    inits = {
        "we": f32(96, 16, 1, 1) * 0.3,
        "be": f32(96),
        "wd": f32(96, 1, 3, 3) * 0.3,
        "bd": f32(96),
        "ws1": f32(24, 96) * 0.2,
        "ws2": f32(96, 24) * 0.2,
        "wp": f32(16, 96, 1, 1) * 0.1,
    }
    nodes = [
        n("Conv", ["x", "we", "be"], "e"),
        n("HardSwish", ["e"], "eh"),
        n("Conv", ["eh", "wd", "bd"], "d", pads=[1, 1, 1, 1], group=96),
        n("HardSwish", ["d"], "dh"),
        n("GlobalAveragePool", ["dh"], "sq"),
        n("Flatten", ["sq"], "sqf"),
        n("Gemm", ["sqf", "ws1"], "s1", transB=1),
        n("Relu", ["s1"], "s1r"),
        n("Gemm", ["s1r", "ws2"], "s2", transB=1),
        n("HardSigmoid", ["s2"], "gate", alpha=1 / 6, beta=0.5),
        n("Unsqueeze", ["gate", "axes"], "gate4"),
        n("Mul", ["dh", "gate4"], "se"),
        n("Conv", ["se", "wp"], "p"),
        n("Add", ["p", "x"], "y"),
    ]
    inits["axes"] = i64(2, 3)
    m = model(nodes, {"x": (np.float32, [1, 16, 64, 64])}, {"y": np.float32}, inits, opset=14, name="mnv3")
    g = check(m, atol=2e-4, rtol=2e-4)
    prog = webxnn.load(webxnn.compile(g))
    rows = prog.profile([feeds_for(m)["x"]], repeat=1)
    dw = [r for r in rows if r["kind"] == "XNNDepthwiseConv2d"]
    kinds = [r["kind"] for r in rows if not r["aliased"]]
    assert len(dw) == 1 and len(dw[0]["fused"]) == 3  # the expand conv, its HardSwish, the dw's HardSwish
    assert "XNNHardswish" not in kinds and kinds.count("XNNConv2d") == 1  # only the projection


def test_cnn_structure() -> None:
    g = from_onnx(cnn_model(13), override_dims={"batch": 1})
    ops = ops_of(g)
    assert ops["conv2d"] == 4 and ops["convTranspose2d"] == 1 and ops["batchNormalization"] == 1
    assert ops["maxPool2d"] == 1 and ops["averagePool2d"] == 2 and ops["resample2d"] == 1
    assert ops["gemm"] == 1 and ops["softmax"] == 1 and ops["clamp"] == 1 and ops["split"] == 1
    assert g.inputs["x"].shape == [1, 3, 16, 16]
    types = webxnn.infer(g)
    assert tuple(types["probs"].shape) == (1, 10)
    assert set(g.weights) == {c for c in g.consts}  # every const carries its array


# --------------------------------------------------------------------------------------------- a transformer


def transformer_model(
    opset: int = 17, fused_ln: bool = True, d: int = 16, heads: int = 2, vocab: int = 50
) -> Any:
    """Embedding + one attention block with an attention mask, shape chains computed from Shape ops the
    way exported BERTs do, layer norm fused (LayerNormalization) or decomposed, an erf-GELU FFN."""
    dh = d // heads
    inits = {
        "emb": f32(vocab, d),
        "pos": f32(64, d),
        "ln_s": np.abs(f32(d)) + 0.5,
        "ln_b": f32(d),
        "wq": f32(d, d) * 0.3,
        "bq": f32(d),
        "wk": f32(d, d) * 0.3,
        "bk": f32(d),
        "wv": f32(d, d) * 0.3,
        "bv": f32(d),
        "wo": f32(d, d) * 0.3,
        "bo": f32(d),
        "w1": f32(d, 4 * d) * 0.3,
        "b1": f32(4 * d),
        "w2": f32(4 * d, d) * 0.3,
        "b2": f32(d),
        "i0": np.int64(0),
        "i1": np.int64(1),
        "a0": i64(0),
        "a1": i64(1),
        "a12": i64(1, 2),
        "heads": i64(heads),
        "dh": i64(dh),
        "dd": i64(d),
        "one": np.float32(1),
        "neg": np.float32(-1e4),
        "sqrt_dh": np.float32(math.sqrt(dh)),
        "sqrt2": np.float32(math.sqrt(2)),
        "half": np.float32(0.5),
        "two": np.float32(2),
        "eps": np.float32(1e-5),
        "am1": i64(-1),
        "zero_f": np.float32(0),
    }
    nodes = [
        # positions: Range(0, seq) from Shape(ids)[1]
        n("Shape", ["ids"], "ids_shape"),
        n("Gather", ["ids_shape", "i0"], "batch", axis=0),
        n("Gather", ["ids_shape", "i1"], "seq", axis=0),
        n("Range", ["i0", "seq", "i1"], "positions"),
        n("Unsqueeze", ["positions", "a0"], "pos_ids"),
        n("Gather", ["emb", "ids"], "tok_e", axis=0),
        n("Gather", ["pos", "pos_ids"], "pos_e", axis=0),
        n("Add", ["tok_e", "pos_e"], "h0"),
    ]
    if fused_ln:
        nodes.append(n("LayerNormalization", ["h0", "ln_s", "ln_b"], "h", axis=-1, epsilon=1e-5))
    else:
        nodes += [
            n("ReduceMean", ["h0", "am1"], "mu") if opset >= 18 else n("ReduceMean", ["h0"], "mu", axes=[-1]),
            n("Sub", ["h0", "mu"], "xc"),
            n("Pow", ["xc", "two"], "sq"),
            (
                n("ReduceMean", ["sq", "am1"], "var")
                if opset >= 18
                else n("ReduceMean", ["sq"], "var", axes=[-1])
            ),
            n("Add", ["var", "eps"], "ve"),
            n("Sqrt", ["ve"], "sd"),
            n("Div", ["xc", "sd"], "xn"),
            n("Mul", ["xn", "ln_s"], "xs"),
            n("Add", ["xs", "ln_b"], "h"),
        ]
    # [B, S, heads, dh] from Shape-derived pieces
    nodes += [
        n("Unsqueeze", ["batch", "a0"], "b1d"),
        n("Unsqueeze", ["seq", "a0"], "s1d"),
        n("Concat", ["b1d", "s1d", "heads", "dh"], "split_shape", axis=0),
        n("Concat", ["b1d", "s1d", "dd"], "merge_shape", axis=0),
    ]
    for p in "qkv":
        nodes += [
            n("MatMul", ["h", f"w{p}"], f"{p}0"),
            n("Add", [f"{p}0", f"b{p}"], f"{p}1"),
            n("Reshape", [f"{p}1", "split_shape"], f"{p}2"),
            n("Transpose", [f"{p}2"], f"{p}3", perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]),
        ]
    nodes += [
        n("MatMul", ["q3", "k3"], "scores0"),
        n("Div", ["scores0", "sqrt_dh"], "scores1"),
        # mask: (1 - float(mask)) * -1e4, broadcast as [B, 1, 1, S]; also a Where on Equal(mask, 0)
        n("Unsqueeze", ["mask", "a12"], "m4"),
        n("Cast", ["m4"], "mf", to=TP.FLOAT),
        n("Sub", ["one", "mf"], "inv"),
        n("Mul", ["inv", "neg"], "bias"),
        n("Add", ["scores1", "bias"], "scores2"),
        n("Equal", ["m4", "i0"], "is_pad"),
        n("Shape", ["scores2"], "sc_shape"),
        n(
            "ConstantOfShape",
            ["sc_shape"],
            "neg_fill",
            value=numpy_helper.from_array(np.array([-1e4], np.float32)),
        ),
        n("Expand", ["is_pad", "sc_shape"], "is_pad_full"),
        n("Where", ["is_pad_full", "neg_fill", "scores2"], "scores3"),
        n("Softmax", ["scores3"], "probs", axis=-1),
        n("MatMul", ["probs", "v3"], "ctx0"),
        n("Transpose", ["ctx0"], "ctx1", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "merge_shape"], "ctx2"),
        n("MatMul", ["ctx2", "wo"], "o0"),
        n("Add", ["o0", "bo"], "o1"),
        n("Add", ["o1", "h"], "res1"),
        # erf-GELU FFN
        n("MatMul", ["res1", "w1"], "f0"),
        n("Add", ["f0", "b1"], "f1"),
        n("Div", ["f1", "sqrt2"], "g0"),
        n("Erf", ["g0"], "g1"),
        n("Add", ["g1", "one"], "g2"),
        n("Mul", ["f1", "g2"], "g3"),
        n("Mul", ["g3", "half"], "g4"),
        n("MatMul", ["g4", "w2"], "f2"),
        n("Add", ["f2", "b2"], "f3"),
        n("Add", ["f3", "res1"], "out"),
    ]
    return model(
        nodes,
        {
            "ids": (np.int64, ["batch_size", "sequence_length"]),
            "mask": (np.int64, ["batch_size", "sequence_length"]),
        },
        {"out": np.float32},
        inits,
        opset=opset,
        name="tiny_bert",
    )


TF_DIMS = {"batch_size": 2, "sequence_length": 7}


@pytest.mark.parametrize("fused_ln, opset", [(True, 17), (False, 13), (False, 18), (True, min(NEWEST, 21))])
def test_transformer_matches_onnx(fused_ln: bool, opset: int) -> None:
    m = transformer_model(opset=opset, fused_ln=fused_ln)
    # token ids must be valid indices
    g = from_onnx(m, override_dims=TF_DIMS)
    feeds = feeds_for(m, TF_DIMS)
    feeds["ids"] = np.random.default_rng(3).integers(0, 50, (2, 7)).astype(np.int64)
    feeds["mask"] = np.array([[1] * 7, [1] * 4 + [0] * 3], np.int64)
    want = oracle(m, feeds)
    compare(run_numpy(g, feeds), want, 2e-4, 2e-4, "numpy WebNN semantics")
    compare(run_webxnn(g, feeds), want, 2e-4, 2e-4, "webxnn runtime")


def test_transformer_structure_folds_shape_chains() -> None:
    m = transformer_model()
    g = from_onnx(m, override_dims=TF_DIMS)
    ops = ops_of(g)
    assert not {"shape", "range", "constantOfShape", "constant"} & set(ops)
    assert ops["layerNormalization"] == 1 and ops["softmax"] == 1 and ops["erf"] == 1
    assert ops["reshape"] == 5  # q/k/v split into heads, the merge, the mask unsqueeze: static newShapes
    for nd in g.nodes:
        if nd.op == "reshape":
            assert all(isinstance(v, int) and v > 0 for v in nd.options["newShape"])
        if nd.op == "softmax":
            assert nd.options["axis"] == 3  # negative axes normalized
    onnx_nodes = len(m.graph.node)
    assert len(g.nodes) < onnx_nodes
    assert g.inputs["ids"].shape == [2, 7] and g.inputs["ids"].dtype == "int64"
    assert tuple(webxnn.infer(g)["out"].shape) == (2, 7, 16)


def test_unresolved_dim_blocking_reshape_names_dim_and_node() -> None:
    m = transformer_model()
    with pytest.raises(UnsupportedError) as e:
        from_onnx(m, override_dims={"batch_size": 1})
    msg = str(e.value)
    assert "sequence_length" in msg and "Shape" in msg
    assert "override" in msg


def test_unresolved_dim_without_static_need() -> None:
    """A symbolic dim nobody fixes or bounds stays dynamic up to the default bound (64), as onnxruntime
    takes any batch; past the bound, the run-time error names the dim and its range."""
    from webxnn.onnx.convert import DEFAULT_DIM_MAX

    m = model([n("Relu", ["x"], "y")], {"x": (np.float32, ["N", 4])}, {"y": np.float32})
    g = from_onnx(m)
    assert g.inputs["x"].shape[0] == webxnn.DynDim("N", DEFAULT_DIM_MAX) == webxnn.DynDim("N", 64)
    prog = webxnn.load(webxnn.compile(g))
    for b in (1, 7, 64):
        x = np.random.default_rng(b).standard_normal((b, 4)).astype(np.float32)
        np.testing.assert_array_equal(prog.run({"x": x})["y"], np.maximum(x, 0))
    with pytest.raises(webxnn.InputError, match="'N'"):
        prog.run({"x": np.zeros((65, 4), np.float32)})
    g = from_onnx(m, dyn_max=8)
    assert g.inputs["x"].shape[0] == webxnn.DynDim("N", 8) and g.version == 2
    assert "dyn(" in g.to_text()
    g = from_onnx(m, override_dims={"N": 3})
    assert g.inputs["x"].shape == [3, 4]


def test_unknown_override_dim_is_a_warning() -> None:
    """One --override-dim list serves a folder of models: a dim the model lacks is named and ignored."""
    m = model([n("Relu", ["x"], "y")], {"x": (np.float32, ["N", 4])}, {"y": np.float32})
    with pytest.warns(webxnn.WebxnnWarning, match="'batch'.*ignored.*N"):
        g = from_onnx(m, override_dims={"N": 1, "batch": 2})
    assert g.inputs["x"].shape == [1, 4]


def test_cli_unknown_override_dim_warns_in_one_line(tmp_path: Path) -> None:
    m = model([n("Relu", ["x"], "y")], {"x": (np.float32, ["N", 4])}, {"y": np.float32})
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "webxnn",
            "compile",
            str(path),
            "-o",
            str(tmp_path / "m.xnn"),
            "--override-dim",
            "N=1",
            "--override-dim",
            "batch_size=1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("webxnn: warning: ") and "'batch_size'" in ln]
    assert (tmp_path / "m.xnn").stat().st_size > 0


# --------------------------------------------------------------------------------------------- errors, names


def test_unsupported_ops_listed_at_once() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu0"),
        helper.make_node("Einsum", ["r", "r"], ["e1"], name="einsum_a", equation="ij,ij->ij"),
        helper.make_node("Einsum", ["e1", "r"], ["e2"], name="einsum_b", equation="ij,ij->ij"),
        helper.make_node("NonMaxSuppression", ["e2", "e2"], ["nm"], name="nms"),
        helper.make_node(
            "Resize", ["x4", "", "sc"], ["rz"], name="odd", coordinate_transformation_mode="sideways"
        ),
        helper.make_node("MyOp", ["x"], ["c"], name="custom", domain="com.example"),
    ]
    m = model(
        nodes,
        {"x": (np.float32, [3, 3]), "x4": (np.float32, [1, 1, 2, 2])},
        {"nm": np.float32, "rz": np.float32, "c": np.float32},
        {"sc": np.array([1, 1, 2, 2], np.float32)},
    )
    with pytest.raises(UnsupportedError) as e:
        from_onnx(m)
    msg = str(e.value)
    assert "Einsum ×2" in msg and "'einsum_a'" in msg and "'einsum_b'" in msg
    assert "NonMaxSuppression ×1" in msg and "'nms'" in msg
    assert "Resize ×1" in msg and "sideways" in msg
    assert "com.example.MyOp" in msg


def test_runtime_computed_shape_is_reported() -> None:
    nodes = [n("Cast", ["x"], "xi", to=TP.INT64), n("Reshape", ["x", "xi"], "y")]
    m = model(nodes, {"x": (np.float32, [4])}, {"y": np.float32})
    with pytest.raises(UnsupportedError, match="(?s)Reshape.*computed at run time"):
        from_onnx(m)


def test_names_sanitized_unique_and_readable() -> None:
    nodes = [
        n("Relu", ["input:0"], "/encoder/layer.0/Relu_output_0"),
        n("Add", ["/encoder/layer.0/Relu_output_0", "onnx::Add_7"], "onnx::Add_7_out"),
        n("Mul", ["onnx::Add_7_out", "1weight"], "true_output"),
        n("Sub", ["true_output", "onnx::Add:7"], "out put"),
    ]
    m = model(
        nodes,
        {"input:0": (np.float32, [2, 3])},
        {"out put": np.float32},
        {"onnx::Add_7": f32(3), "1weight": f32(3), "onnx::Add:7": f32(3)},
    )
    g = from_onnx(m)
    names = set(g.inputs) | set(g.consts) | {o for nd in g.nodes for o in nd.outputs}
    assert "input_0" in g.inputs and "/encoder/layer.0/Relu_output_0" in names
    assert "onnx__Add_7" in g.consts and "_1weight" in g.consts and "_true_output" in names
    assert "onnx__Add_7_2" in g.consts  # 'onnx::Add:7' collides after sanitizing
    assert list(g.outputs) == ["out_put"]
    assert webxnn.parse(g.to_text()) == g


def test_identity_output_keeps_its_name() -> None:
    m = model(
        [n("Identity", ["x"], "y"), n("Dropout", ["x"], "z")],
        {"x": (np.float32, [2])},
        {"y": np.float32, "z": np.float32},
    )
    g = from_onnx(m)
    assert g.outputs == {"y": "y", "z": "z"}
    assert ops_of(g) == Counter({"identity": 2})


def test_constant_output_and_folding() -> None:
    nodes = [
        n("Constant", [], "k", value=numpy_helper.from_array(f32(2, 2), "k")),
        n("Transpose", ["k"], "kt"),
        n("Add", ["kt", "k"], "a"),
        n("Softmax", ["a"], "y"),
    ]  # no fast path: onnx's reference evaluator folds it
    m = model(nodes, {}, {"y": np.float32})
    g = from_onnx(m)
    assert not g.nodes and list(g.consts) == ["y"]
    k = numpy_helper.to_array(nodes[0].attribute[0].t).astype(np.float64)
    e = np.exp(k.T + k - (k.T + k).max(axis=-1, keepdims=True))
    np.testing.assert_allclose(g.weights["y"], e / e.sum(axis=-1, keepdims=True), rtol=1e-6)


@pytest.mark.filterwarnings("ignore::webxnn.WebxnnWarning")  # its conv's output is fp32: the conv stays fp32
def test_qdq_structure() -> None:
    nodes = [
        n("QuantizeLinear", ["x", "xs", "xz"], "xq"),
        n("DequantizeLinear", ["xq", "xs", "xz"], "xd"),
        n("DequantizeLinear", ["wq", "ws"], "wd", axis=0),
        n("Conv", ["xd", "wd", "b"], "y"),
    ]
    inits = {
        "xs": np.float32(0.05),
        "xz": np.uint8(128),
        "wq": RNG.integers(-50, 50, (3, 4, 3, 3)).astype(np.int8),
        "ws": np.abs(f32(3)) * 0.02,
        "b": f32(3),
    }
    m = model(nodes, X, {"y": np.float32}, inits, opset=13)
    g = from_onnx(m)
    ops = ops_of(g)
    assert ops["quantizeLinear"] == 1 and ops["dequantizeLinear"] == 2 and ops["conv2d"] == 1
    wdq = next(nd for nd in g.nodes if nd.op == "dequantizeLinear" and g.consts.get(nd.inputs[0]))
    assert g.consts[wdq.inputs[0]].dtype == "int8"
    assert g.consts[wdq.inputs[1]].shape == [3, 1, 1, 1]  # per-axis scale reshaped to broadcast
    assert g.consts[wdq.inputs[2]].dtype == "int8"  # the implicit zero point made explicit
    check(m, atol=0.06)


# --------------------------------------------------------------------------------------------- files


def test_import_onnx_writes_webnn_files(tmp_path: Any) -> None:
    m = cnn_model(13)
    path = tmp_path / "cnn.onnx"
    onnx.save(m, str(path))
    written = import_onnx(path, override_dims={"batch": 1})
    assert [p.name for p in written] == ["cnn.webnn", "cnn.weights", "cnn.manifest.json"]
    g = webxnn.load_graph(written[0])
    g2 = from_onnx(path, override_dims={"batch": 1})
    assert g == g2
    for name in g2.consts:
        np.testing.assert_array_equal(g.const_array(name), g2.weights[name])
    jw = import_onnx(path, tmp_path / "out" / "cnn.json", override_dims={"batch": 1})
    assert jw[0].suffix == ".json" and webxnn.load_graph(jw[0]) == g2


def test_external_data_is_read(tmp_path: Any) -> None:
    w = f32(5, 300)
    m = model([n("MatMul", ["v", "w"], "y")], V, {"y": np.float32}, {"w": w})
    path = tmp_path / "ext.onnx"
    onnx.save(
        m,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="ext.data",
        size_threshold=0,
    )
    g = from_onnx(path)
    arr = g.weights["w"]
    while arr.base is not None and not isinstance(arr, np.memmap):
        arr = arr.base
    assert isinstance(arr, np.memmap)  # mapped from ext.data, not read into the protobuf
    np.testing.assert_array_equal(g.weights["w"], w)


def test_cli_registration(tmp_path: Any) -> None:
    import argparse

    from webxnn.onnx.cli import add_cli, parse_override_dims

    p = argparse.ArgumentParser()
    add_cli(p.add_subparsers())
    path = tmp_path / "m.onnx"
    onnx.save(cnn_model(13), str(path))
    args = p.parse_args(
        ["import-onnx", str(path), "-o", str(tmp_path / "x.webnn"), "--override-dim", "batch=1"]
    )
    assert args.func(args) == 0 and (tmp_path / "x.weights").is_file()
    with pytest.raises(webxnn.InputError):
        parse_override_dims(["batch"])


def test_core_package_does_not_import_onnx() -> None:
    import subprocess
    import sys

    code = (
        "import sys, webxnn, webxnn.dsl, webxnn.ops, webxnn.compiler; "
        "assert 'onnx' not in sys.modules, 'onnx imported by the core'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_large_model_import_time(tmp_path: Any) -> None:
    """~100 MB of weights: import time and blob size (printed; run with -s to see them)."""
    import time

    d = 2048
    layers = 6  # 6 x 2048 x 2048 x 4 bytes = 100.7 MB
    inits = {f"w{i}": RNG.standard_normal((d, d), dtype=np.float32) * 0.02 for i in range(layers)}
    nodes, prev = [], "x"
    for i in range(layers):
        nodes += [n("MatMul", [prev, f"w{i}"], f"m{i}"), n("Relu", [f"m{i}"], f"r{i}")]
        prev = f"r{i}"
    nodes.append(n("Identity", [prev], "y"))
    m = model(nodes, {"x": (np.float32, ["batch", d])}, {"y": np.float32}, inits)
    path = tmp_path / "big.onnx"
    onnx.save(m, str(path))
    t0 = time.perf_counter()
    g = from_onnx(path, override_dims={"batch": 1})
    t1 = time.perf_counter()
    written = import_onnx(path, tmp_path / "big.webnn", override_dims={"batch": 1})
    t2 = time.perf_counter()
    blob = webxnn.compile(g)
    t3 = time.perf_counter()
    print(
        f"\nONNX {path.stat().st_size / 1e6:.1f} MB: from_onnx {t1 - t0:.2f} s, import_onnx (with files) "
        f"{t2 - t1:.2f} s, compile {t3 - t2:.2f} s, blob {len(blob) / 1e6:.1f} MB, "
        f".weights {written[1].stat().st_size / 1e6:.1f} MB"
    )
    assert t1 - t0 < 10


# --------------------------------------------------------------------------------------------- conformance
# Cases ONNX's backend suite found (tests/test_onnx_backend_suite.py): each was a silent wrong answer.


def test_space_to_depth_crd_matches_reference() -> None:
    from onnx.reference import ReferenceEvaluator

    m = model([n("SpaceToDepth", ["x"], "y", blocksize=3, mode="CRD")], X, {"y": np.float32}, opset=25)
    feeds = feeds_for(m)
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    got = run_webxnn(from_onnx(m), feeds)["y"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(  # CRD: channel c * 9 + bh * 3 + bw
        want, feeds["x"].reshape(2, 4, 2, 3, 2, 3).transpose(0, 1, 3, 5, 2, 4).reshape(2, 36, 2, 2)
    )


def _refusal(
    nodes: list[Any],
    inputs: dict,
    outputs: dict,
    inits: dict | None = None,
    opset: int = 17,
    io_types: dict[str, int] | None = None,
) -> Any:
    m = model(nodes, inputs, outputs, inits, opset=opset)
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.name in (io_types or {}):
            vi.type.tensor_type.elem_type = io_types[vi.name]
    return m


REFUSALS = [
    pytest.param(
        _refusal([n("Relu", ["x"], "y")], X, {"y": np.float32}, io_types={"x": TP.DOUBLE}),
        "float64 tensors: WebNN has no float64",
        id="float64-input",
    ),
    pytest.param(
        _refusal([n("Cast", ["x"], "y", to=TP.DOUBLE)], X, {"y": np.float32}, io_types={"y": TP.DOUBLE}),
        "float64 tensors",
        id="float64-cast",
    ),
    pytest.param(
        _refusal(
            [n("Constant", [], "y", value=numpy_helper.from_array(np.ones(3), "c"))],
            {},
            {"y": np.float32},
            io_types={"y": TP.DOUBLE},
        ),
        "float64 tensors",
        id="float64-constant-output",
    ),
    pytest.param(
        _refusal(
            [n("QuantizeLinear", ["x", "s"], "y", output_dtype=TP.INT16)],
            X,
            {"y": np.int8},
            {"s": np.float32(0.1)},
            opset=21,
            io_types={"y": TP.INT16},
        ),
        "int16 tensors",
        id="quantize-int16",
    ),
    pytest.param(
        _refusal([n("Relu", ["x"], "y")], X, {"y": np.float32}, io_types={"x": TP.BFLOAT16}),
        "bfloat16 tensors",
        id="bfloat16",
    ),
    pytest.param(
        _refusal([n("Relu", ["x"], "y")], X, {"y": np.float32}, io_types={"x": TP.FLOAT8E4M3FN}),
        "float8e4m3fn tensors",
        id="float8",
    ),
    pytest.param(
        _refusal(
            [n("Dropout", ["x", "r", "t"], "y")],
            {**X, "t": (np.bool_, [])},
            {"y": np.float32},
            {"r": np.float32(0.3)},
        ),
        "training mode",
        id="dropout-training-input",
    ),
    pytest.param(
        _refusal(
            [n("Dropout", ["x", "r", "t"], "y")],
            X,
            {"y": np.float32},
            {"r": np.float32(0.3), "t": np.bool_(True)},
        ),
        "random ops",
        id="dropout-training",
    ),
    pytest.param(
        _refusal([n("RandomNormalLike", ["x"], "y")], X, {"y": np.float32}), "random ops", id="random"
    ),
    pytest.param(
        _refusal(
            [n("MaxPool", ["x"], "y", kernel_shape=[2, 3], strides=[4, 2], pads=[1, 1, 1, 1], ceil_mode=1)],
            X,
            {"y": np.float32},
        ),
        "last window starts in the padding",
        id="ceil-pool-mixed-axes",
    ),
    pytest.param(
        _refusal([n("Mod", ["x", "x"], "y", fmod=1)], X, {"y": np.float32}),
        "floating-point Mod: WebNN has no fused multiply-add",
        id="float-mod",
    ),
    pytest.param(
        _refusal(
            [n("Split", ["x", "s"], ["y", "z"], axis=1)],
            X,
            {"y": np.float32, "z": np.float32},
            {"s": i64(4, 0)},
            opset=13,
        ),
        "zero-sized",
        id="zero-sized-split-output",
    ),
    pytest.param(
        _refusal(
            [n("Resize", ["x", "", "sc"], "y", mode="linear", coordinate_transformation_mode="sideways")],
            X,
            {"y": np.float32},
            {"sc": np.array([1, 1, 0.5, 0.5], np.float32)},
        ),
        "coordinate_transformation_mode 'sideways'",
        id="resize-unknown-coordinates",
    ),
]


@pytest.mark.parametrize("m, reason", REFUSALS)
def test_refused_with_a_reason(m: Any, reason: str) -> None:
    with pytest.raises(UnsupportedError, match=reason):
        from_onnx(m)


def test_refusal_categories_are_listed_in_the_readme() -> None:
    from webxnn.onnx.refusals import categories

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for what, _ in categories():
        assert what in readme, f"README does not list the refusal category {what!r}"


def test_schema_function_is_expanded() -> None:
    """GroupNormalization has no translator: its ONNX function body is translated instead."""
    m = model(
        [n("GroupNormalization", ["x", "s", "b"], "y", num_groups=2, epsilon=1e-3)],
        X,
        {"y": np.float32},
        {"s": f32(4), "b": f32(4)},
        opset=21,
    )
    g = from_onnx(m)
    assert "GroupNormalization" not in ops_of(g) and ops_of(g)["reduceMean"] >= 1
    feeds = feeds_for(m)
    compare(run_webxnn(g, feeds), oracle(m, feeds), 1e-4, 1e-4, "webxnn runtime")


def test_local_function_is_expanded() -> None:
    """A model-local function (custom domain) is inlined; one the importer cannot translate is named."""
    body = [helper.make_node("Mul", ["a", "a"], ["sq"]), helper.make_node("Add", ["sq", "a"], ["out"])]
    fn = helper.make_function("my.domain", "SquarePlus", ["a"], ["out"], body, [helper.make_opsetid("", 17)])
    m = model([helper.make_node("SquarePlus", ["x"], ["y"], domain="my.domain")], X, {"y": np.float32})
    m.functions.append(fn)
    m.opset_import.append(helper.make_opsetid("my.domain", 1))
    g = from_onnx(m)
    feeds = feeds_for(m)
    np.testing.assert_allclose(run_webxnn(g, feeds)["y"], feeds["x"] ** 2 + feeds["x"], rtol=1e-6)
    bad = helper.make_function(
        "my.domain",
        "SquarePlus",
        ["a"],
        ["out"],
        [helper.make_node("Unique", ["a"], ["out"])],
        [helper.make_opsetid("", 17)],
    )
    del m.functions[:]
    m.functions.append(bad)
    with pytest.raises(UnsupportedError, match="function body needs Unique: output shape depends"):
        from_onnx(m)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8])
def test_integer_mod_is_exact(fmod: int, dt: Any) -> None:
    """Mod of integers (x - trunc(x / y) * y, then the divisor's sign for fmod=0) equals numpy's, at the
    type's extremes too."""
    info = np.iinfo(dt)
    m = model(
        [n("Mod", ["x", "y"], "z", fmod=fmod)], {"x": (dt, [500]), "y": (dt, [500])}, {"z": dt}, opset=13
    )
    rng = np.random.default_rng(3)
    x = rng.integers(info.min, info.max, 500, dtype=dt, endpoint=True)
    y = rng.integers(max(info.min, -9), 10, 500).astype(dt)
    y[y == 0] = 3
    x[:3] = [info.min, info.max, info.max - 1]
    got = run_webxnn(from_onnx(m), {"x": x, "y": y})["z"]
    np.testing.assert_array_equal(got, (np.fmod if fmod else np.mod)(x, y))


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint64])
def test_bit_shift_is_exact(direction: str, dt: Any) -> None:
    """BitShift as integer arithmetic equals ONNX's reference, shifts outside [0, width) included (a
    shift of 2^32 + 3 is outside, not 3)."""
    from onnx.reference import ReferenceEvaluator

    info = np.iinfo(dt)
    m = model(
        [n("BitShift", ["x", "b"], "z", direction=direction)],
        {"x": (dt, [300]), "b": (dt, [300])},
        {"z": dt},
        opset=11,
    )
    rng = np.random.default_rng(5)
    x = rng.integers(info.min, info.max, 300, dtype=dt, endpoint=True)
    width = info.bits
    b = rng.integers(max(info.min, -3), width + 3, 300).astype(dt)
    if info.max > 2**40:
        b[:2] = [2**32 + 3, 2**63]
    got = run_webxnn(from_onnx(m), {"x": x, "b": b})["z"]
    want = ReferenceEvaluator(m).run(None, {"x": x, "b": b})[0]
    np.testing.assert_array_equal(got, want)


def test_pad_with_a_run_time_value_and_one_sided_isinf() -> None:
    m = model(
        [n("Pad", ["x", "p", "v"], "y"), n("IsInf", ["x"], "z", detect_negative=0)],
        {**X, "v": (np.float32, [])},
        {"y": np.float32, "z": np.bool_},
        {"p": i64(0, 1, 2, 0, 0, 0, 1, 3)},
    )
    feeds = feeds_for(m)
    feeds["x"][0, 0, 0, :3] = [np.inf, -np.inf, np.nan]
    compare(run_webxnn(from_onnx(m), feeds), oracle(m, feeds), 0, 0, "webxnn runtime")


@pytest.mark.parametrize("peepholes", [False, True])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_matches_onnxruntime(direction: str, peepholes: bool) -> None:
    """Peepholes are refused: ONNX's output gate reads the new cell state, WebNN's the previous one."""
    dirs, hid, inp = (2 if direction == "bidirectional" else 1), 5, 3
    ins = ["x", "w", "r", "b", "", "h0", "c0"] + (["p"] if peepholes else [])
    inits = {
        "w": f32(dirs, 4 * hid, inp),
        "r": f32(dirs, 4 * hid, hid),
        "b": f32(dirs, 8 * hid),
        "h0": f32(dirs, 2, hid),
        "c0": f32(dirs, 2, hid),
    }
    if peepholes:
        inits["p"] = f32(dirs, 3 * hid)
    m = model(
        [n("LSTM", ins, ["y", "yh", "yc"], hidden_size=hid, direction=direction)],
        {"x": (np.float32, [4, 2, inp])},
        {"y": np.float32, "yh": np.float32, "yc": np.float32},
        inits,
    )
    if peepholes:
        with pytest.raises(UnsupportedError, match="peepholes"):
            from_onnx(m)
        return
    feeds = feeds_for(m)
    compare(run_webxnn(from_onnx(m), feeds), oracle(m, feeds), 1e-5, 1e-4, "webxnn runtime")


def test_gru_batch_major_matches_reference() -> None:
    from onnx.reference import ReferenceEvaluator  # onnxruntime has no batch-major GRU

    hid = 4
    m = model(
        [n("GRU", ["x", "w", "r", "b"], ["y", "yh"], hidden_size=hid, layout=1, linear_before_reset=1)],
        {"x": (np.float32, [2, 5, 3])},
        {"y": np.float32, "yh": np.float32},
        {"w": f32(1, 3 * hid, 3), "r": f32(1, 3 * hid, hid), "b": f32(1, 6 * hid)},
        opset=14,
    )
    feeds = feeds_for(m)
    want = dict(zip(["y", "yh"], ReferenceEvaluator(m).run(None, feeds)))
    compare(run_webxnn(from_onnx(m), feeds), want, 1e-5, 1e-4, "webxnn runtime")


@pytest.mark.parametrize("act", ["Tanh", "Relu"])
def test_rnn_as_held_open_gru_matches_onnxruntime(act: str) -> None:
    hid = 4
    m = model(
        [
            n(
                "RNN",
                ["x", "w", "r", "b", "", "h0"],
                ["y", "yh"],
                hidden_size=hid,
                activations=[act] * 2,
                direction="bidirectional",
            )
        ],
        {"x": (np.float32, [5, 2, 3])},
        {"y": np.float32, "yh": np.float32},
        {"w": f32(2, hid, 3), "r": f32(2, hid, hid) * 0.5, "b": f32(2, 2 * hid), "h0": f32(2, 2, hid)},
    )
    feeds = feeds_for(m)
    compare(run_webxnn(from_onnx(m), feeds), oracle(m, feeds), 1e-5, 1e-4, "webxnn runtime")


def test_quantize_rounds_ties_as_onnx() -> None:
    # 0.5 / (5/255) is exactly 25.5 in float32 (ONNX, onnxruntime) but 25.499... in double: a runtime that
    # divides in double quantizes it to 25 instead of 26. Constant scale, so the runtime's quantize does it.
    scale = np.float32(5 / 255)
    x = np.array([0.5, -0.5, 1.5 * scale, 2.5 * scale, 0.0, 1.0], np.float32)
    m = model(
        [n("QuantizeLinear", ["x", "s", "z"], "q")],
        {"x": (np.float32, [6])},
        {"q": np.uint8},
        {"s": scale, "z": np.uint8(128)},
    )
    assert float(np.float32(0.5) / scale) == 25.5 and round(0.5 / float(scale)) == 25
    feeds = {"x": x}
    got = run_webxnn(from_onnx(m), feeds)
    compare(got, oracle(m, feeds), 0, 0, "webxnn runtime")
    assert got["q"][0] == 128 + 26


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_bitwise_ops_are_exact(dt: Any) -> None:
    info = np.iinfo(dt)
    rng = np.random.default_rng(3)
    edges = np.array([info.min, info.max, 0, 1, info.max // 2, info.min // 2 - 1 if info.min else 7], dt)
    a = np.concatenate([edges, rng.integers(info.min, info.max, 30, dtype=dt, endpoint=True)])
    b = np.concatenate([edges[::-1], rng.integers(info.min, info.max, 30, dtype=dt, endpoint=True)])
    ops = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}
    m = model(
        [n(op, ["a", "b"], op) for op in ops] + [n("BitwiseNot", ["a"], "not")],
        {"a": (dt, [36]), "b": (dt, [36])},
        {**{op: dt for op in ops}, "not": dt},
        opset=18,
    )
    got = run_webxnn(from_onnx(m), {"a": a, "b": b})
    for op, fn in ops.items():
        np.testing.assert_array_equal(got[op], fn(a, b), err_msg=op)
    np.testing.assert_array_equal(got["not"], np.bitwise_not(a))


@pytest.mark.parametrize(
    "complex_in,inverse,onesided,length",
    [
        (False, False, False, None),
        (True, False, False, 6),
        (True, True, False, 11),
        (False, False, True, 7),
        (True, True, True, 9),
        (True, True, True, None),
    ],
)
def test_dft_is_a_constant_matrix_product(
    complex_in: bool, inverse: bool, onesided: bool, length: int | None
) -> None:
    rng = np.random.default_rng(5)
    n_in = 8
    z = rng.standard_normal((2, n_in, 3)) + (1j * rng.standard_normal((2, n_in, 3)) if complex_in else 0)
    inits = {} if length is None else {"len": np.array(length, np.int64)}
    m = model(
        [
            n(
                "DFT",
                ["x", "len" if length is not None else ""],
                "y",
                axis=1,
                inverse=int(inverse),
                onesided=int(onesided),
            )
        ],
        {"x": (np.float32, [2, n_in, 3, 2 if complex_in else 1])},
        {"y": np.float32},
        inits,
    )
    x = np.stack([z.real, z.imag], -1) if complex_in else z.real[..., None]
    got = run_webxnn(from_onnx(m), {"x": x.astype(np.float32)})["y"]
    if inverse and onesided:
        want = np.fft.irfft(z, n=length, axis=1)[..., None]
    else:
        f = np.fft.ifft if inverse else np.fft.fft
        w = f(z, n=length, axis=1)
        w = w[:, : (length or n_in) // 2 + 1] if onesided else w
        want = np.stack([w.real, w.imag], -1)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "op,attrs",
    [
        ("MaxPool", {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}),
        (
            "MaxPool",
            {"kernel_shape": [3, 2, 2], "dilations": [2, 1, 2], "ceil_mode": 1, "strides": [2, 2, 2]},
        ),
        ("AveragePool", {"kernel_shape": [3, 3, 2], "pads": [1, 1, 0, 1, 1, 1], "strides": [2, 2, 1]}),
        ("AveragePool", {"kernel_shape": [2, 2, 3], "pads": [1, 0, 1, 0, 1, 1], "count_include_pad": 1}),
        ("LpPool", {"kernel_shape": [2, 2, 2], "p": 2, "pads": [1, 0, 0, 0, 1, 1]}),
        ("LpPool", {"kernel_shape": [2, 3, 2], "p": 3, "pads": [0, 1, 1, 1, 0, 0], "strides": [1, 2, 1]}),
    ],
)
def test_3d_pools_are_two_2d_pools(op: str, attrs: dict) -> None:
    m = model([n(op, ["x"], "y", **attrs)], {"x": (np.float32, [2, 3, 5, 6, 7])}, {"y": np.float32}, opset=18)
    check(m, atol=1e-5)


def test_lp_pool_of_any_p() -> None:
    m = model(
        [n("LpPool", ["x"], "y", kernel_shape=[3, 2], p=3, pads=[1, 0, 1, 1], strides=[2, 1])],
        {"x": (np.float32, [1, 2, 7, 6])},
        {"y": np.float32},
        opset=18,
    )
    check(m, atol=1e-5)


@pytest.mark.parametrize("largest,axis", [(1, 1), (0, -1), (1, 0)])
def test_top_k_without_a_sort(largest: int, axis: int) -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(-3, 4, (4, 6, 5)).astype(np.float32)  # many ties: ONNX puts the lower index first
    x[0, 0, 0], x[1, 1, 1] = np.inf, -np.inf
    m = model(
        [n("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)],
        {"x": (np.float32, [4, 6, 5])},
        {"v": np.float32, "i": np.int64},
        {"k": i64(3)},
    )
    got = run_webxnn(from_onnx(m), {"x": x})
    want = oracle(m, {"x": x})
    np.testing.assert_array_equal(got["v"], want["v"])
    np.testing.assert_array_equal(got["i"], want["i"])


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_reductions_with_constant_indices(reduction: str) -> None:
    rng = np.random.default_rng(11)
    data, upd = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    nd = model(
        [n("ScatterND", ["d", "i", "u"], "y", reduction=reduction)],
        {"d": (np.float32, [4, 5]), "u": (np.float32, [3, 5])},
        {"y": np.float32},
        {"i": np.array([[1], [-3], [3]], np.int64)},
        opset=18,
    )
    upd_e = rng.standard_normal((3, 2)).astype(np.float32)
    el = model(
        [n("ScatterElements", ["d", "i", "u"], "y", axis=1, reduction=reduction)],
        {"d": (np.float32, [4, 5]), "u": (np.float32, [3, 2])},
        {"y": np.float32},
        {"i": np.array([[0, 0], [4, -1], [2, 0]], np.int64)},
        opset=18,
    )
    for m, u in ((nd, upd), (el, upd_e)):
        feeds = {"d": data, "u": u}
        compare(run_webxnn(from_onnx(m), feeds), oracle(m, feeds), 1e-6, 1e-6, "webxnn runtime")


@pytest.mark.parametrize("axis,dt", [(-1, np.int64), (1, np.float32), (0, np.int32)])
def test_one_hot_with_a_constant_depth(axis: int, dt: Any) -> None:
    idx = np.array([[0, 3, -1, -5], [4, 5, 2, -4]], dt)  # -5 and 5 are out of range: rows of off
    m = model(
        [n("OneHot", ["i", "d", "v"], "y", axis=axis)],
        {"i": (dt, [2, 4])},
        {"y": np.float32},
        {"d": np.array(5.0, np.float32), "v": np.array([-1.0, 2.5], np.float32)},
        opset=11,
    )
    feeds = {"i": idx}
    compare(run_webxnn(from_onnx(m), feeds), oracle(m, feeds), 0, 0, "webxnn runtime")
