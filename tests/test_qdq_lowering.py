"""QDQ models (onnxruntime's quantize_static) compile to int8 XNN values and nodes: which nodes run int8,
the quantized values' datatypes and parameters, and the output against onnxruntime's on the same file —
through the reference interpreter (independent of the C++ runtime) and through the runtime."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import webxnn
from webxnn.compiler import compile_graph, read_model
from webxnn.xnn import reference
from webxnn.xnn.ir import Datatype, PerChannelQuant, PerTensorQuant, XnnGraph
from webxnn.xnn.reader import read

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")
import qdq_models as qm  # noqa: E402

# model -> (node kinds that must run int8, node kinds that must stay fp32)
EXPECT: dict[str, tuple[set[str], set[str]]] = {
    "conv_relu": ({"XNNConv2d"}, set()),
    "conv_plain": ({"XNNConv2d"}, set()),
    "depthwise": ({"XNNDepthwiseConv2d", "XNNConv2d"}, set()),
    "grouped": ({"XNNConv2d"}, set()),
    "residual": ({"XNNConv2d", "XNNAdd"}, set()),
    "pools_gemm": (
        {"XNNConv2d", "XNNMaxPooling2d", "XNNGlobalAvgPooling2d", "XNNStaticReshape", "XNNFullyConnected"},
        set(),
    ),
    "concat_reshape": ({"XNNConv2d", "XNNConcatenate2", "XNNStaticReshape"}, set()),
    "activations_softmax": (
        {"XNNConv2d", "XNNSigmoid", "XNNHardswish", "XNNGlobalAvgPooling2d", "XNNFullyConnected"},
        {"XNNSoftmax"},
    ),
    "movement": (
        {
            "XNNConv2d",
            "XNNAvgPooling2d",
            "XNNStaticResizeBilinear2D",
            "XNNStaticSlice",
            "XNNStaticConstantPad",
        },
        set(),
    ),
}
# output steps the reference may differ from the QDQ graph's float32 meaning by: 1, except where averages
# of 2 or 4 values (the ×2 linear resize) land on exact .5 steps, which int8 rounds to even and float32
# arithmetic puts on either side; the conv after it spreads such a step (and onnxruntime's own int8 resize
# and pools stray further: the cosine against its optimized run is lower there)
STEPS = {"movement": 3}
ORT_COSINE = {"movement": 0.995}
# quantize_static settings: (per-channel weights, activation type, ActivationSymmetric, other options)
RECIPES: dict[str, tuple[bool, str, bool, dict]] = {
    "pc-u8": (True, "QUInt8", False, {}),
    "pt-u8": (False, "QUInt8", False, {}),
    "pc-s8": (True, "QInt8", False, {}),
    "pc-s8-sym": (True, "QInt8", True, {}),
    "pt-u8-sym": (False, "QUInt8", True, {}),
    # relu / clip kept as their own QDQ-wrapped nodes; weights as fp32 constants through quantizeLinear
    "pc-u8-keep-relu-wpair": (
        True,
        "QUInt8",
        False,
        {"QDQKeepRemovableActivations": True, "AddQDQPairToWeight": True},
    ),
}


@pytest.fixture(scope="module")
def qdq_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("qdq")


def _model(qdq_dir: Path, name: str, recipe: str) -> Path:
    path = qdq_dir / f"{name}.{recipe}.onnx"
    if not path.exists():
        pc, act, sym, extra = RECIPES[recipe]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            qm.qdq(qm.MODELS[name](), path, qm.IN, per_channel=pc, activation=act, symmetric=sym, extra=extra)
    return path


def _compile(path: Path) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("error", webxnn.WebxnnWarning)  # these graphs must not stay mostly fp32
        return webxnn.compile(path)


def _kinds(xg: XnnGraph) -> tuple[set[str], set[str]]:
    """(kinds of nodes with a quantized output, kinds of nodes with an fp32 output)."""
    q, f = set(), set()
    for n in xg.nodes:
        (q if xg.value(n.output_ids()[0]).quant is not None else f).add(n.kind)
    return q, f


def _ort(path: Path, x: np.ndarray, optimized: bool) -> np.ndarray:
    so = ort.SessionOptions()
    if not optimized:  # the QDQ graph's own meaning: fp32 ops between exact quantize / dequantize steps
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _output_step(path: Path) -> float:
    """The scale of the quantizeLinear that makes the graph output."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    out = m.graph.output[0].name
    dq = next(n for n in m.graph.node if out in n.output)
    return float(inits[dq.input[1]])


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _inputs() -> list[np.ndarray]:
    # like the calibration data, other draws (far outside it, onnxruntime's u8 x s8 kernels saturate)
    rng = np.random.default_rng(11)
    return [rng.standard_normal(qm.IN).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("recipe", list(RECIPES))
@pytest.mark.parametrize("name", list(EXPECT))
def test_int8_nodes_and_values(qdq_dir: Path, name: str, recipe: str) -> None:
    xg = read(_compile(_model(qdq_dir, name, recipe)))
    q, f = _kinds(xg)
    want_q, want_f = EXPECT[name]
    assert want_q <= q, f"{name}: int8 {sorted(q)}, fp32 {sorted(f)}"
    assert want_f <= f
    assert not any(n.kind == "WXQuantize" for n in xg.nodes)
    for n in xg.nodes:
        if n.kind not in ("XNNConv2d", "XNNDepthwiseConv2d", "XNNFullyConnected"):
            continue
        x, w = xg.value(n.fields["input1_id"]), xg.value(n.fields["filter_id"])
        assert x.datatype == Datatype.QINT8 and isinstance(x.quant, PerTensorQuant)
        assert -128 <= x.quant.zero_point <= 127
        assert w.datatype == Datatype.QCINT8 and isinstance(w.quant, PerChannelQuant)
        assert w.quant.channel_dim == (3 if n.kind == "XNNDepthwiseConv2d" else 0)
        assert len(w.quant.scale) == w.dims[w.quant.channel_dim]
        b = xg.value(n.fields["bias_id"])
        assert b.datatype == Datatype.QCINT32
        want = np.float32(x.quant.scale) * np.asarray(w.quant.scale, np.float32)
        np.testing.assert_allclose(b.quant.scale, want, rtol=1e-6)


@pytest.mark.parametrize("recipe", list(RECIPES))
@pytest.mark.parametrize("name", list(EXPECT))
def test_reference_matches_onnxruntime(qdq_dir: Path, name: str, recipe: str) -> None:
    path = _model(qdq_dir, name, recipe)
    prog = reference.load(_compile(path))
    step = _output_step(path)
    for x in _inputs():
        got = prog.run({"x": x})["y"]
        exact = _ort(path, x, optimized=False)
        assert np.max(np.abs(got.reshape(exact.shape) - exact)) <= step * STEPS.get(name, 1) * 1.001
        # onnxruntime's own int8 kernels differ from the QDQ meaning by a few steps here and there (u8 x s8
        # pair sums saturating), more with s8 activations (its s8 x s8 path): judged by cosine only
        want = ORT_COSINE.get(name, 0.999) if RECIPES[recipe][1] == "QUInt8" else 0.99
        assert _cosine(got, _ort(path, x, optimized=True)) >= want


@pytest.mark.parametrize("recipe", list(RECIPES))
@pytest.mark.parametrize("name", list(EXPECT))
def test_runtime_matches_reference(qdq_dir: Path, name: str, recipe: str) -> None:
    path = _model(qdq_dir, name, recipe)
    blob = _compile(path)
    prog = webxnn.load(blob)
    ref = reference.load(blob)
    step = _output_step(path)
    for x in _inputs():
        got = prog.run({"x": x})["y"]
        want = ref.run({"x": x})["y"]
        # the runtime's requantization may round a different way than the reference on exact ties
        assert np.max(np.abs(got - want)) <= step * 1.001
        assert _cosine(got, _ort(path, x, optimized=False)) >= 0.999


def test_executorch_profile_takes_the_int8_graph(qdq_dir: Path) -> None:
    """qint8 activations, qcint8 filters (channel_dim 0, depthwise 3), qcint32 biases: what ExecuTorch's
    XNNPACK delegate payloads hold for quantized CNNs, so the executorch profile accepts them."""
    for name in ("depthwise", "pools_gemm", "residual"):
        g = read_model(_model(qdq_dir, name, "pc-u8"))
        xg = compile_graph(g, profile="executorch")
        assert {n.kind for n in xg.nodes if xg.value(n.output_ids()[0]).quant is not None} >= EXPECT[name][0]


def test_webnn_graph_with_quantize_dequantize() -> None:
    """The .webnn DSL's quantizeLinear / dequantizeLinear around a conv: the same pass (ONNX arrives as
    these WebNN ops too)."""
    rng = np.random.default_rng(5)
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    ws = (rng.random((4, 1, 1, 1)) * 0.01 + 0.005).astype(np.float32)
    text = (
        'webnn_graph "q" v1 { inputs { x: f32[1, 3, 6, 6]; } consts { '
        "xs: f32[] @scalar(0.02); xz: u8[] @scalar(120); ys: f32[] @scalar(0.05); yz: i8[] @scalar(-10); "
        'w: i8[4, 3, 3, 3] @weights("w"); ws: f32[4, 1, 1, 1] @weights("ws"); '
        'wz: i8[4, 1, 1, 1] @weights("wz"); } nodes { '
        "xq = quantizeLinear(x, xs, xz); xd = dequantizeLinear(xq, xs, xz); "
        "wd = dequantizeLinear(w, ws, wz); c = conv2d(xd, wd, padding=[1, 1, 1, 1]); r = relu(c); "
        "yq = quantizeLinear(r, ys, yz); y = dequantizeLinear(yq, ys, yz); } outputs { y; } }"
    )
    weights = {"w": w, "ws": ws, "wz": np.zeros((4, 1, 1, 1), np.int8)}
    g = webxnn.parse(text)
    xg = read(webxnn.compile(g, weights))
    conv = next(n for n in xg.nodes if n.kind == "XNNConv2d")
    assert xg.value(conv.fields["input1_id"]).quant == PerTensorQuant(np.float32(0.02), -8)
    assert conv.output_min_max == (0.0, np.inf)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    got = reference.run(xg, {"x": x})["y"]
    # the QDQ graph's meaning, in numpy: conv of the dequantized values, relu, quantize, dequantize
    xd = (np.clip(np.rint(x / np.float32(0.02)) + 120, 0, 255) - 120) * np.float32(0.02)
    wd = w.astype(np.float64) * ws
    xp = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)))
    c = np.zeros((1, 4, 6, 6))
    for i in range(3):
        for j in range(3):
            c += np.einsum("nchw,oc->nohw", xp[:, :, i : i + 6, j : j + 6], wd[:, :, i, j])
    want = (np.clip(np.rint(np.maximum(c, 0) / 0.05) - 10, -128, 127) + 10) * 0.05
    assert np.max(np.abs(got - want)) <= 0.05 * 1.001


def test_compile_warns_when_a_qdq_model_stays_fp32(qdq_dir: Path, capsys: pytest.CaptureFixture) -> None:
    """uint8 weights with a zero point other than 128 have no int8 node: the convs stay fp32, and compile
    says which."""
    from webxnn.cli import main

    path = qdq_dir / "u8w.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qm.qdq(qm.conv_relu(), path, qm.IN, per_channel=False, weights="QUInt8")
    with pytest.warns(
        webxnn.WebxnnWarning, match=r"1 of its 1 convolutions and matrix products stay fp32: conv2d ×1"
    ):
        webxnn.compile(path)
    assert main(["compile", str(path), "-o", str(qdq_dir / "u8w.xnn")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("webxnn: warning: the graph has quantize/dequantize nodes") and "conv2d ×1" in err


def test_inspect_marks_int8_steps(qdq_dir: Path, capsys: pytest.CaptureFixture) -> None:
    from webxnn.cli import main

    blob = qdq_dir / "pools_gemm.xnn"
    blob.write_bytes(_compile(_model(qdq_dir, "pools_gemm", "pc-u8")))
    assert main(["inspect", str(blob)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"XNNConv2d\s+int8", out) and re.search(r"XNNConvert\s+convert", out)
    assert "precision    convert 2, int8 7" in out


@pytest.mark.parametrize("axis", [None, 1, 0, -1])
def test_per_tensor_bias_dequantize_of_rank_1(axis: int | None) -> None:
    """quantize_static's per-tensor bias: DequantizeLinear of an int32 vector, a 1-element scale, the
    default axis 1 (out of range for rank 1, and unused: ONNX ignores axis for per-tensor parameters)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    attrs = {} if axis is None else {"axis": axis}
    nodes = [
        helper.make_node("DequantizeLinear", ["bq", "bs"], ["bd"], **attrs),
        helper.make_node("Add", ["x", "bd"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array([5, -3, 7], np.int32), "bq"),
        numpy_helper.from_array(np.array([0.5], np.float32), "bs"),
    ]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("x", "y")]
    m = helper.make_model(
        helper.make_graph(nodes, "g", io[:1], io[1:], inits), opset_imports=[helper.make_opsetid("", 13)]
    )
    m.ir_version = 8
    onnx.checker.check_model(m)
    out = reference.load(webxnn.compile(webxnn.from_onnx(m))).run({"x": np.zeros(3, np.float32)})
    np.testing.assert_array_equal(out["y"], [2.5, -1.5, 3.5])


def test_inspect_of_a_qdq_graph_tells_the_compiled_precision(
    qdq_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    import json

    from webxnn.cli import main

    assert main(["inspect", str(_model(qdq_dir, "activations_softmax", "pc-u8")), "--json"]) == 0
    p = json.loads(capsys.readouterr().out)["precision"]
    assert p["fp32"] == {"softmax": 1} and p["int8"]["gemm"] == 1 and p["int8"]["sigmoid"] == 1
    assert p["convert"] == {"dequantizeLinear": 2, "quantizeLinear": 2}
