"""ONNX ops the node suite found missing (issue 27), each built with onnx.helper and compared with onnx's
reference evaluator or onnxruntime: the integer linear algebra (QLinearMatMul/QLinearConv through QDQ onto
the int8 kernels, MatMulInteger/ConvInteger exact), AffineGrid, Col2Im, GridSample, STFT, BitCast, an If on
a constant condition, Scan of static length, ONNX's preview-domain functions; and the by-design refusals
that remain say why."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import webxnn  # noqa: E402
from test_onnx_import import NP_TO_TP, model  # noqa: E402
from webxnn.errors import UnsupportedError  # noqa: E402
from webxnn.onnx import refusals  # noqa: E402


def _model(
    nodes: list[Any],
    feeds: dict[str, np.ndarray],
    outs: dict[str, int],
    inits: dict[str, Any],
    opset: int = 21,
) -> Any:
    """test_onnx_import.model with the inputs' types and shapes taken from the feeds, outputs as TensorProto
    types."""
    inputs = {k: (v.dtype.type, list(v.shape)) for k, v in feeds.items()}
    outputs = {k: helper.tensor_dtype_to_np_dtype(t).type for k, t in outs.items()}
    return model(nodes, inputs, outputs, inits, opset=opset)


def _run(m: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    prog = webxnn.load(webxnn.compile(webxnn.from_onnx(m)))
    return list(prog.run(list(feeds.values())).values())


def _reference(m: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(ReferenceEvaluator(m).run(None, feeds))


RNG = np.random.default_rng(27)


# ------------------------------------------------------------------------- integer linear algebra


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_qlinear_matmul_with_run_time_operands_is_exact(dt: type) -> None:
    info = np.iinfo(dt)
    feeds = {
        "a": RNG.integers(info.min, info.max + 1, (3, 5, 7)).astype(dt),
        "b": RNG.integers(info.min, info.max + 1, (7, 4)).astype(dt),
    }
    inits = {
        "sa": np.float32(0.02),
        "za": np.array(3, dt),
        "sb": np.float32(0.01),
        "zb": np.array(-2 if dt == np.int8 else 130, dt),
        "sy": np.float32(0.3),
        "zy": np.array(5, dt),
    }
    m = _model(
        [helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])],
        feeds,
        {"y": NP_TO_TP[np.dtype(dt).type]},
        inits,
    )
    (got,) = _run(m, feeds)
    (want,) = _reference(m, feeds)
    assert got.dtype == want.dtype
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1


def _qlinear_conv_model() -> tuple[Any, dict[str, np.ndarray]]:
    """onnxruntime's QOperator form: float in, QuantizeLinear, QLinearConv (constant int8 weights, per-channel
    scales, int32 bias), DequantizeLinear, float out."""
    c_in, c_out = 8, 16
    inits = {
        "sx": np.float32(0.05),
        "zx": np.uint8(120),
        # 7-bit weights: onnxruntime's AVX2 u8s8 kernels saturate pairs of full-range products (up to 58 steps
        # off the ONNX reference here with weights in [-127, 127]; webxnn matches the reference exactly)
        "w": RNG.integers(-64, 64, (c_out, c_in, 3, 3)).astype(np.int8),
        "sw": (RNG.random(c_out) * 0.01 + 0.001).astype(np.float32),
        "zw": np.zeros(c_out, np.int8),
        "sy": np.float32(0.2),
        "zy": np.uint8(110),
        "bias": RNG.integers(-2000, 2000, c_out).astype(np.int32),
    }
    feeds = {"x": (RNG.standard_normal((1, c_in, 10, 10)) * 3).astype(np.float32)}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node(
            "QLinearConv", ["xq", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"], ["yq"], pads=[1, 1, 1, 1]
        ),
        helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"]),
    ]
    return _model(nodes, feeds, {"y": TP.FLOAT}, inits), feeds


def test_qlinear_conv_runs_on_the_int8_kernels_within_one_step_of_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    from webxnn.xnn.describe import node_precisions
    from webxnn.xnn.reader import read

    m, feeds = _qlinear_conv_model()
    blob = webxnn.compile(webxnn.from_onnx(m))
    prog = webxnn.load(blob)
    precisions = node_precisions(read(blob))
    steps = {(r["kind"], precisions[r["node"]]) for r in prog.profile(list(feeds.values()), repeat=1)}
    assert ("XNNConv2d", "int8") in steps
    got = list(prog.run(list(feeds.values())).values())[0]
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert np.abs(got - want).max() <= 0.2 * 1.001  # one step of y_scale
    np.testing.assert_allclose(got, _reference(m, feeds)[0], atol=0.2 * 1.001)


def test_matmul_integer_exact_past_float32_integers() -> None:
    """K = 600 > 258 products: the sum is cut into slices, each exact in float32, added in int32."""
    feeds = {
        "a": RNG.integers(0, 256, (3, 600)).astype(np.uint8),
        "b": RNG.integers(0, 256, (600, 5)).astype(np.uint8),
    }
    inits = {"za": np.array(7, np.uint8), "zb": np.array([1, 2, 250, 4, 5], np.uint8)}
    m = _model(
        [helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])], feeds, {"y": TP.INT32}, inits
    )
    (got,) = _run(m, feeds)
    want = (feeds["a"].astype(np.int64) - 7) @ (feeds["b"].astype(np.int64) - inits["zb"].astype(np.int64))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def _conv_integer_exact(c_in: int, c_out: int, zw: np.ndarray) -> None:
    """A 3x3 ConvInteger over 12x12 uint8 pixels (zero point 128) equals ONNX's reference exactly."""
    feeds = {
        "x": RNG.integers(0, 256, (1, c_in, 12, 12)).astype(np.uint8),
        "w": RNG.integers(0, 256, (c_out, c_in, 3, 3)).astype(np.uint8),
    }
    inits = {"zx": np.array(128, np.uint8), "zw": zw}
    m = _model(
        [helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], pads=[1, 1, 1, 1])],
        feeds,
        {"y": TP.INT32},
        inits,
    )
    (got,) = _run(m, feeds)
    (want,) = _reference(m, feeds)
    np.testing.assert_array_equal(got, want)


def test_conv_integer_exact_with_many_channels() -> None:
    """40 input channels of a 3x3 kernel: 360 products an output, cut into slices below Winograd's reach."""
    _conv_integer_exact(40, 20, RNG.integers(0, 256, 20).astype(np.uint8))


def test_conv_integer_exact_at_winograds_channel_threshold() -> None:
    """16 input and output channels, 3x3, 12x12: exactly where the kernels' Winograd starts (winograd.cc's
    winograd_applies), whose transforms round; ops_qlinear._DIRECT_CHANNELS keeps each slice below it."""
    _conv_integer_exact(16, 16, np.array(250, np.uint8))


# ------------------------------------------------------------------------- image coordinates


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 2, 3, 4, 5]])
def test_affine_grid(align: int, size: list[int]) -> None:
    r = len(size) - 2
    feeds = {"theta": RNG.standard_normal((size[0], r, r + 1)).astype(np.float32)}
    m = _model(
        [helper.make_node("AffineGrid", ["theta", "size"], ["g"], align_corners=align)],
        feeds,
        {"g": TP.FLOAT},
        {"size": np.array(size, np.int64)},
    )
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-5, atol=1e-6)


def test_col2im_and_its_size_limit() -> None:
    feeds = {"x": RNG.standard_normal((2, 3 * 4, 15)).astype(np.float32)}
    node = helper.make_node(
        "Col2Im", ["x", "image", "block"], ["y"], strides=[2, 1], pads=[1, 0, 1, 1], dilations=[1, 2]
    )
    inits = {"image": np.array([5, 6], np.int64), "block": np.array([2, 2], np.int64)}
    m = _model([node], feeds, {"y": TP.FLOAT}, inits)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-5, atol=1e-6)
    big = {"x": np.zeros((1, 9, 254 * 254), np.float32)}
    inits = {"image": np.array([256, 256], np.int64), "block": np.array([3, 3], np.int64)}
    m = _model([helper.make_node("Col2Im", ["x", "image", "block"], ["y"])], big, {"y": TP.FLOAT}, inits)
    with pytest.raises(UnsupportedError, match="no scatter-add"):
        webxnn.from_onnx(m)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(mode: str, pad: str, align: int) -> None:
    feeds = {
        "x": RNG.standard_normal((2, 3, 5, 6)).astype(np.float32),
        "grid": (RNG.random((2, 4, 7, 2)) * 3.2 - 1.6).astype(np.float32),  # a third falls outside
    }
    node = helper.make_node(
        "GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=pad, align_corners=align
    )
    m = _model([node], feeds, {"y": TP.FLOAT}, {}, opset=22)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-4, atol=1e-5)


def test_grid_sample_volumetric() -> None:
    feeds = {
        "x": RNG.standard_normal((1, 2, 3, 4, 5)).astype(np.float32),
        "grid": (RNG.random((1, 2, 3, 4, 3)) * 2.4 - 1.2).astype(np.float32),
    }
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode="linear", padding_mode="border")
    m = _model([node], feeds, {"y": TP.FLOAT}, {}, opset=22)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-4, atol=1e-5)


def test_stft() -> None:
    feeds = {"s": RNG.standard_normal((2, 64, 1)).astype(np.float32), "w": np.hanning(16).astype(np.float32)}
    node = helper.make_node("STFT", ["s", "step", "w", "len"], ["y"], onesided=1)
    inits = {"step": np.array(6, np.int64), "len": np.array(16, np.int64)}
    m = _model([node], feeds, {"y": TP.FLOAT}, inits, opset=17)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------- bits, control flow, refusals


def test_bitcast_between_integers_wraps_and_float_bits_are_refused() -> None:
    feeds = {"x": np.array([-128, -1, 0, 1, 127], np.int8)}
    m = _model([helper.make_node("BitCast", ["x"], ["y"], to=TP.UINT8)], feeds, {"y": TP.UINT8}, {}, opset=26)
    np.testing.assert_array_equal(_run(m, feeds)[0], feeds["x"].view(np.uint8))
    f = {"x": np.ones(3, np.float32)}
    m = _model([helper.make_node("BitCast", ["x"], ["y"], to=TP.INT32)], f, {"y": TP.INT32}, {}, opset=26)
    with pytest.raises(UnsupportedError, match=refusals.BIT_REINTERPRET.split(": ")[1]):
        webxnn.from_onnx(m)


def test_if_on_a_constant_condition_and_a_static_scan_are_unrolled() -> None:
    then = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", TP.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", TP.FLOAT, None)],
    )
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "row"], ["s_out"]),
            helper.make_node("Mul", ["s_out", "row"], ["o"]),
        ],
        "body",
        [vi("s_in", TP.FLOAT, [4]), vi("row", TP.FLOAT, [4])],
        [vi("s_out", TP.FLOAT, [4]), vi("o", TP.FLOAT, [4])],
    )
    nodes = [
        helper.make_node("If", ["cond"], ["b"], then_branch=then, else_branch=other),
        helper.make_node("Scan", ["s0", "b"], ["final", "rows"], body=body, num_scan_inputs=1),
    ]
    feeds = {"x": RNG.standard_normal((3, 4)).astype(np.float32), "s0": np.zeros(4, np.float32)}
    inits = {"cond": np.array(True), "two": np.float32(2.0)}
    m = _model(nodes, feeds, {"final": TP.FLOAT, "rows": TP.FLOAT}, inits, opset=17)
    for got, want in zip(_run(m, feeds), _reference(m, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_resize_by_run_time_scales_is_refused_by_design() -> None:
    feeds = {"x": np.ones((1, 1, 2, 2), np.float32), "scales": np.ones(4, np.float32)}
    m = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"])], feeds, {"y": TP.FLOAT}, {}, opset=19)
    with pytest.raises(UnsupportedError, match=refusals.DATA_SHAPED):
        webxnn.from_onnx(m)


@pytest.mark.parametrize("time_axis", [0, 1])
def test_reverse_sequence(time_axis: int) -> None:
    x = RNG.standard_normal((4, 4, 3)).astype(np.float32)
    feeds = {"x": x}
    node = helper.make_node(
        "ReverseSequence", ["x", "lens"], ["y"], time_axis=time_axis, batch_axis=1 - time_axis
    )
    m = _model([node], feeds, {"y": TP.FLOAT}, {"lens": np.array([4, 3, 1, 2], np.int64)}, opset=10)
    np.testing.assert_array_equal(_run(m, feeds)[0], _reference(m, feeds)[0])


def test_pad_wrap() -> None:
    feeds = {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32)}
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")
    m = _model([node], feeds, {"y": TP.FLOAT}, {"pads": np.array([0, 2, 1, 1, 4, 3], np.int64)}, opset=19)
    np.testing.assert_array_equal(_run(m, feeds)[0], _reference(m, feeds)[0])


@pytest.mark.parametrize("op", ["Atan", "Asin", "Acos"])
def test_inverse_trigonometric_functions_to_float32_precision(op: str) -> None:
    x = np.concatenate([np.linspace(-1, 1, 2001), [-0.0, 1e-8, -1e-8, 0.9999999]]).astype(np.float32)
    if op == "Atan":
        x = np.concatenate([x * 50, [np.inf, -np.inf, 1e30, 0.41421, 2.4142]]).astype(np.float32)
    feeds = {"x": x}
    m = _model([helper.make_node(op, ["x"], ["y"])], feeds, {"y": TP.FLOAT}, {})
    want = getattr(np, "arc" + op[1:].lower())(x.astype(np.float64))
    np.testing.assert_allclose(_run(m, feeds)[0], want, rtol=4e-7, atol=1e-7)


@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_max_pool_of_8_bit_integers_and_pow_of_an_integer_base(dt: type) -> None:
    feeds = {"x": RNG.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, (1, 2, 5, 5)).astype(dt)}
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    m = _model([node], feeds, {"y": NP_TO_TP[np.dtype(dt).type]}, {})
    np.testing.assert_array_equal(_run(m, feeds)[0], _reference(m, feeds)[0])
    feeds = {"b": np.array([1, 2, 3, -2], np.int32), "e": np.array([4.0, 5.0, 0.5, 3.0], np.float32)}
    m = _model([helper.make_node("Pow", ["b", "e"], ["y"])], feeds, {"y": TP.INT32}, {}, opset=15)
    np.testing.assert_array_equal(_run(m, feeds)[0], _reference(m, feeds)[0])


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumprod_with_a_constant_axis(exclusive: int, reverse: int) -> None:
    feeds = {"x": RNG.integers(-3, 4, (3, 7, 2)).astype(np.int32)}
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    m = _model([node], feeds, {"y": TP.INT32}, {"axis": np.array(1, np.int64)}, opset=26)
    np.testing.assert_array_equal(_run(m, feeds)[0], _reference(m, feeds)[0])


def test_det_of_3x3_matrices() -> None:
    feeds = {"x": RNG.standard_normal((4, 3, 3)).astype(np.float32)}
    m = _model([helper.make_node("Det", ["x"], ["y"])], feeds, {"y": TP.FLOAT}, {})
    np.testing.assert_allclose(
        _run(m, feeds)[0], np.linalg.det(feeds["x"].astype(np.float64)), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "attrs, scales",
    [
        ({"mode": "cubic"}, [1, 1, 0.6, 1.7]),
        ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, [1, 1, 0.8, 2.0]),
        ({"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, [1, 1, 1.5, 0.5]),
        ({"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 2.0, 1.25]),
        ({"mode": "cubic", "antialias": 1}, [1, 1, 0.5, 0.7]),
        ({"mode": "linear", "antialias": 1}, [1, 1, 0.3, 0.6]),
    ],
)
def test_resize_cubic_and_antialiased_by_constant_scales(attrs: dict[str, Any], scales: list[float]) -> None:
    feeds = {"x": RNG.standard_normal((2, 3, 6, 8)).astype(np.float32)}
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
    m = _model([node], feeds, {"y": TP.FLOAT}, {"scales": np.array(scales, np.float32)}, opset=19)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-4, atol=1e-5)


def test_resize_tf_crop_and_resize_with_a_constant_roi() -> None:
    feeds = {"x": RNG.standard_normal((1, 2, 5, 6)).astype(np.float32)}
    node = helper.make_node(
        "Resize",
        ["x", "roi", "", "sizes"],
        ["y"],
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=7.0,
        axes=[2, 3],
    )
    inits = {"roi": np.array([0.2, -0.3, 0.9, 1.4], np.float32), "sizes": np.array([4, 7], np.int64)}
    m = _model([node], feeds, {"y": TP.FLOAT}, inits, opset=19)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-4, atol=1e-5)


def test_gathernd_with_batch_dims_and_constant_indices() -> None:
    feeds = {"x": RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)}
    idx = np.stack([RNG.integers(-3, 3, (2, 6)), RNG.integers(0, 4, (2, 6))], axis=-1).astype(np.int64)
    node = helper.make_node("GatherND", ["x", "idx"], ["y"], batch_dims=1)
    m = _model([node], feeds, {"y": TP.FLOAT}, {"idx": idx}, opset=13)
    np.testing.assert_array_equal(_run(m, feeds)[0], _reference(m, feeds)[0])


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_with_constant_write_indices(mode: str) -> None:
    feeds = {
        "past": RNG.standard_normal((3, 2, 6, 4)).astype(np.float32),
        "upd": RNG.standard_normal((3, 2, 2, 4)).astype(np.float32),
    }
    w = np.array([0, 3, 5 if mode == "circular" else 4], np.int64)
    node = helper.make_node("TensorScatter", ["past", "upd", "w"], ["y"], mode=mode)
    m = _model([node], feeds, {"y": TP.FLOAT}, {"w": w}, opset=24)
    np.testing.assert_array_equal(_run(m, feeds)[0], _reference(m, feeds)[0])


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(storage_order: int) -> None:
    feeds = {"x": RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)}
    node = helper.make_node(
        "MaxPool",
        ["x"],
        ["y", "i"],
        kernel_shape=[3, 2],
        strides=[2, 1],
        pads=[1, 0, 1, 1],
        dilations=[1, 2],
        storage_order=storage_order,
    )
    m = _model([node], feeds, {"y": TP.FLOAT, "i": TP.INT64}, {}, opset=12)
    for got, want in zip(_run(m, feeds), _reference(m, feeds)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("largest", [0, 1])
def test_topk_orders_nan_as_onnx_does(largest: int) -> None:
    x = np.array([[1.0, np.nan, -np.inf, 3.0, np.nan, np.inf, 3.0, -1.0]], np.float32)
    feeds = {"x": x}
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], largest=largest)
    m = _model([node], feeds, {"v": TP.FLOAT, "i": TP.INT64}, {"k": np.array([6], np.int64)}, opset=11)
    for got, want in zip(_run(m, feeds), _reference(m, feeds)):
        np.testing.assert_array_equal(got, want)


def test_an_input_declared_empty_is_a_constant_that_reductions_fold() -> None:
    feeds = {"x": np.zeros((2, 0, 4), np.float32), "y": RNG.standard_normal((2, 1, 4)).astype(np.float32)}
    nodes = [
        helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=1),
        helper.make_node("ReduceMax", ["x", "axes"], ["mx"], keepdims=1),
        helper.make_node("Add", ["s", "y"], ["z"]),
    ]
    m = _model(nodes, feeds, {"z": TP.FLOAT, "mx": TP.FLOAT}, {"axes": np.array([1], np.int64)}, opset=18)
    prog = webxnn.load(webxnn.compile(webxnn.from_onnx(m)))
    assert [i.name for i in prog.inputs] == ["y"]
    got = list(prog.run([feeds["y"]]).values())
    for g, w in zip(got, _reference(m, feeds)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER"])
@pytest.mark.parametrize("out_hw", [[10, 12], [9, 12]])  # one beyond the default 9 x 11 (onnx's own limit)
def test_conv_transpose_output_shape_larger_than_the_default(auto_pad: str, out_hw: list[int]) -> None:
    feeds = {"x": RNG.standard_normal((2, 4, 4, 5)).astype(np.float32)}
    inits = {
        "w": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "b": RNG.standard_normal(3).astype(np.float32),  # the grown border holds the bias, as in ONNX
    }
    node = helper.make_node(
        "ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], output_shape=out_hw, auto_pad=auto_pad
    )
    m = _model([node], feeds, {"y": TP.FLOAT}, inits)
    got, want = _run(m, feeds)[0], _reference(m, feeds)[0]
    assert got.shape == want.shape == (2, 3, *out_hw)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_1d_output_shape_larger_than_the_default() -> None:
    feeds = {"x": RNG.standard_normal((1, 2, 5)).astype(np.float32)}
    inits = {"w": RNG.standard_normal((2, 3, 3)).astype(np.float32)}
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2], output_shape=[12])
    m = _model([node], feeds, {"y": TP.FLOAT}, inits)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-5, atol=1e-5)


def test_3d_convolutions_tree_ensembles_and_run_time_mel_matrices_are_refused_by_design() -> None:
    feeds = {"x": np.ones((1, 1, 2, 2, 2), np.float32)}
    w = {"w": np.ones((1, 1, 1, 1, 1), np.float32)}
    for op in ("Conv", "ConvTranspose"):
        m = _model([helper.make_node(op, ["x", "w"], ["y"])], feeds, {"y": TP.FLOAT}, w)
        with pytest.raises(UnsupportedError, match="WebNN has 2-D conv2d/convTranspose2d only"):
            webxnn.from_onnx(m)
    tree = helper.make_node(
        "TreeEnsemble",
        ["t"],
        ["y"],
        domain="ai.onnx.ml",
        aggregate_function=1,
        leaf_targetids=[0, 0],
        leaf_weights=numpy_helper.from_array(np.array([1, 2], np.float32)),
        membership_values=None,
        n_targets=1,
        nodes_falseleafs=[1],
        nodes_falsenodeids=[1],
        nodes_featureids=[0],
        nodes_modes=numpy_helper.from_array(np.array([0], np.uint8)),
        nodes_splits=numpy_helper.from_array(np.array([0.5], np.float32)),
        nodes_trueleafs=[1],
        nodes_truenodeids=[0],
        post_transform=0,
        tree_roots=[0],
    )
    t = {"t": np.ones((2, 1), np.float32)}
    m = _model([tree], t, {"y": TP.FLOAT}, {})
    m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 5))
    with pytest.raises(UnsupportedError, match="tree ensembles: these are not neural-network graphs"):
        webxnn.from_onnx(m)
    ints = {"bins": np.array(8, np.int32), "dft": np.array(16, np.int32), "sr": np.array(8192, np.int32)}
    edges = {"lo": np.array(0, np.float32), "hi": np.array(4096, np.float32)}
    mel = helper.make_node("MelWeightMatrix", ["bins", "dft", "sr", "lo", "hi"], ["y"])
    m = _model([mel], {**ints, **edges}, {"y": TP.FLOAT}, {}, opset=17)
    with pytest.raises(UnsupportedError, match=refusals.DATA_SHAPED):
        webxnn.from_onnx(m)


def test_mel_weight_matrix_with_constant_inputs_folds() -> None:
    feeds = {"x": np.ones((1, 9), np.float32)}
    inits = {
        "bins": np.array(8, np.int32),
        "dft": np.array(16, np.int32),
        "sr": np.array(8192, np.int32),
        "lo": np.array(0, np.float32),
        "hi": np.array(4096, np.float32),
    }
    nodes = [
        helper.make_node("MelWeightMatrix", ["bins", "dft", "sr", "lo", "hi"], ["m"]),
        helper.make_node("MatMul", ["x", "m"], ["y"]),
    ]
    m = _model(nodes, feeds, {"y": TP.FLOAT}, inits, opset=17)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-6)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
def test_roi_align(mode: str, ctm: str) -> None:
    feeds = {
        "x": RNG.standard_normal((2, 3, 6, 7)).astype(np.float32),
        # one roi reaching past the image, one smaller than a pixel, one ordinary
        "rois": np.array([[-2.0, 1.0, 9.5, 8.0], [2.2, 3.1, 2.4, 3.3], [1.0, 0.5, 5.0, 4.5]], np.float32),
    }
    node = helper.make_node(
        "RoiAlign",
        ["x", "rois", "bi"],
        ["y"],
        mode=mode,
        coordinate_transformation_mode=ctm,
        output_height=3,
        output_width=2,
        sampling_ratio=2,
        spatial_scale=0.9,
    )
    m = _model([node], feeds, {"y": TP.FLOAT}, {"bi": np.array([1, 0, 1], np.int64)}, opset=16)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-4, atol=1e-5)


def test_roi_align_with_an_adaptive_sampling_ratio_is_refused_by_design() -> None:
    feeds = {"x": np.ones((1, 1, 4, 4), np.float32), "rois": np.ones((1, 4), np.float32)}
    node = helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], sampling_ratio=0)
    m = _model([node], feeds, {"y": TP.FLOAT}, {"bi": np.array([0], np.int64)}, opset=16)
    with pytest.raises(UnsupportedError, match=refusals.RUN_TIME_PARAMETER):
        webxnn.from_onnx(m)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"pads": [1, 0, 1, 2], "strides": [2, 1], "dilations": [1, 2]},
        {"offset_group": 2, "group": 2},
    ],
)
@pytest.mark.parametrize("with_mask", [False, True])
def test_deform_conv(attrs: dict[str, Any], with_mask: bool) -> None:
    x = RNG.standard_normal((2, 4, 5, 6)).astype(np.float32)
    group, og = attrs.get("group", 1), attrs.get("offset_group", 1)
    wgt = RNG.standard_normal((6, 4 // group, 3, 2)).astype(np.float32)
    pads, (sh, sw), (dh, dw) = (
        attrs.get("pads", [0] * 4),
        attrs.get("strides", [1, 1]),
        attrs.get("dilations", [1, 1]),
    )
    oh = (5 + pads[0] + pads[2] - (3 - 1) * dh - 1) // sh + 1
    ow = (6 + pads[1] + pads[3] - (2 - 1) * dw - 1) // sw + 1
    feeds = {"x": x, "off": (RNG.standard_normal((2, og * 2 * 6, oh, ow)) * 1.5).astype(np.float32)}
    ins = ["x", "w", "off", "b"]
    if with_mask:
        feeds["mask"] = RNG.random((2, og * 6, oh, ow)).astype(np.float32)
        ins.append("mask")
    inits = {"w": wgt, "b": RNG.standard_normal(6).astype(np.float32)}
    m = _model([helper.make_node("DeformConv", ins, ["y"], **attrs)], feeds, {"y": TP.FLOAT}, inits, opset=19)
    np.testing.assert_allclose(_run(m, feeds)[0], _reference(m, feeds)[0], rtol=1e-4, atol=1e-4)
