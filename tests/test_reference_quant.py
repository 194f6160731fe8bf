"""The reference interpreter's quantized nodes on hand-made graphs: rounding half to even, saturation at
both ends, zero points at the extremes, per-channel scales, output ranges applied in the int8 domain."""

from __future__ import annotations

import numpy as np

from conftest import pool_fields
from test_runtime_util import GraphBuilder
from webxnn.xnn import reference, reference_quant
from webxnn.xnn.ir import Datatype, PerChannelQuant, PerTensorQuant, Value


def _run(g: GraphBuilder, kind: str, fields: dict, out: int, feeds: dict, clamp=None) -> np.ndarray:
    """Adds the one node writing `out` (the graph's output "y") and runs the graph in the reference."""
    g.output(out, "y")
    g.node(kind, clamp, **fields, output_id=out)
    return reference.run(g.graph(), feeds)["y"]


def test_convert_fp32_to_qint8_rounds_half_to_even_and_saturates() -> None:
    g = GraphBuilder()
    x = g.input("x", [7], Datatype.FP32)
    y = g.value([7], Datatype.QINT8, PerTensorQuant(0.5, -128))
    got = _run(
        g, "XNNConvert", {"input_id": x}, y, {"x": np.array([0.25, 0.75, 1.25, -3, 1e6, -1e6, 127.5], "f4")}
    )
    # 0.5 -> 0 (even), 1.5 -> 2, 2.5 -> 2; the zero point -128 leaves no room below 0
    np.testing.assert_array_equal(got, [-128, -126, -126, -128, 127, -128, 127])


def test_requantize_qint8_to_qint8() -> None:
    g = GraphBuilder()
    x = g.input("x", [4], Datatype.QINT8, PerTensorQuant(0.1, 127))
    y = g.value([4], Datatype.QINT8, PerTensorQuant(0.3, -5))
    got = _run(g, "XNNConvert", {"input_id": x}, y, {"x": np.array([-128, 127, 97, 112], "i1")})
    real = (np.array([-128, 127, 97, 112]) - 127) * np.float32(0.1)
    np.testing.assert_array_equal(got, np.clip(np.rint(real / np.float32(0.3)) - 5, -128, 127))


def test_add_broadcasts_and_clamps_in_the_int8_domain() -> None:
    g = GraphBuilder()
    a = g.input("a", [2, 3], Datatype.QINT8, PerTensorQuant(0.05, 10))
    b = g.input("b", [3], Datatype.QINT8, PerTensorQuant(0.2, -20))
    y = g.value([2, 3], Datatype.QINT8, PerTensorQuant(0.1, 0))
    av = np.array([[-128, 0, 127], [10, 50, 90]], "i1")
    bv = np.array([-128, 0, 127], "i1")
    got = _run(g, "XNNAdd", {"input1_id": a, "input2_id": b}, y, {"a": av, "b": bv}, clamp=(0.0, 6.0))
    real = (av.astype(np.float64) - 10) * 0.05 + (bv.astype(np.float64) + 20) * 0.2
    want = np.clip(np.rint(real / 0.1), 0, 60)  # relu6 as [0, 60] in output units
    np.testing.assert_array_equal(got, want)


def test_fully_connected_per_channel_weights_and_bias() -> None:
    rng = np.random.default_rng(0)
    g = GraphBuilder()
    xs, ws, ys = 0.02, np.array([0.01, 0.003, 0.05], np.float32), 0.07
    w = rng.integers(-127, 128, (3, 5)).astype(np.int8)
    bias = np.array([100, -2000, 7], np.int32)
    x = g.input("x", [2, 5], Datatype.QINT8, PerTensorQuant(xs, -3))
    wid = g.const(w, Datatype.QCINT8, PerChannelQuant(list(map(float, ws)), 0))
    bid = g.const(bias, Datatype.QCINT32, PerChannelQuant(list(map(float, np.float32(xs) * ws)), 0))
    y = g.value([2, 3], Datatype.QINT8, PerTensorQuant(ys, 4))
    xv = rng.integers(-128, 128, (2, 5)).astype(np.int8)
    fields = {"input1_id": x, "filter_id": wid, "bias_id": bid, "flags": 0}
    got = _run(g, "XNNFullyConnected", fields, y, {"x": xv})
    acc = (xv.astype(np.int64) + 3) @ w.T.astype(np.int64) + bias
    want = np.clip(np.rint(acc * (np.float32(xs) * ws / np.float32(ys))) + 4, -128, 127)
    np.testing.assert_array_equal(got, want)


def test_sigmoid_by_table_and_max_pool_stay_in_int8() -> None:
    g = GraphBuilder()
    x = g.input("x", [1, 2, 2, 1], Datatype.QINT8, PerTensorQuant(0.1, 0))
    y = g.value([1, 2, 2, 1], Datatype.QINT8, PerTensorQuant(1 / 256, -128))
    xv = np.array([-128, -1, 0, 127], "i1").reshape(1, 2, 2, 1)
    got = _run(g, "XNNSigmoid", {"input_id": x}, y, {"x": xv})
    want = np.clip(np.rint(1 / (1 + np.exp(-xv.astype(np.float64) * 0.1)) * 256) - 128, -128, 127)
    np.testing.assert_array_equal(got, want)
    g = GraphBuilder()
    x = g.input("x", [1, 2, 2, 1], Datatype.QINT8, PerTensorQuant(0.1, 0))
    y = g.value([1, 1, 1, 1], Datatype.QINT8, PerTensorQuant(0.1, 0))
    pool = dict(pool_fields((2, 2), (2, 2)), input_id=x, flags=0)
    assert _run(g, "XNNMaxPooling2d", pool, y, {"x": xv}).reshape(-1).tolist() == [127]


def test_lowering_quantizes_constants_as_xnnconvert() -> None:
    """The qdq pass's QParams.quantize divides in float32 like XNNConvert (and the reference): -11.95 / 0.1 is
    exactly -119.5 in float32 (-> -120, half to even) but just above it in float64 (-> -119)."""
    from webxnn.lower.qdq.params import QParams

    x = np.array([-11.95], np.float32)
    scale = float(np.float32(0.1))
    ref = reference_quant.quantize(
        Value(id=0, datatype=Datatype.QINT8, dims=[1], quant=PerTensorQuant(scale)), x
    )
    assert QParams(scale, 0).quantize(x).tolist() == ref.tolist() == [-120]
