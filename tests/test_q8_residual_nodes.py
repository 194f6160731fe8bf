"""The qint8 residual Add fused into the int8 conv / FC before it (plan_fusion.cc's int8 residual rule: the
step runs qconv2d_residual / qgemm_residual): the plan shows the fused step, and the sum is bit for bit the
one of the same graph with the conv's output also a graph output (two readers: not fused) and of a numpy
integer reference (the conv's requantization and clamp, then qadd's arithmetic and the Add's clamp), on
1 and 2 threads and every int8 kernel table (WEBXNN_ISA). What must not fuse (a depthwise producer, a
broadcast residual, a producer read twice) runs apart and still gives the reference."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from conftest import INT8_TABLES, load_testing_module, outputs_with_isa, table_params
from test_q8_conv_nodes import QConv, conv_node, quantize_bound, reference
from test_q8_elementwise_nodes import add_ref
from test_runtime_util import GraphBuilder, per_channel, per_tensor
from webxnn import runtime
from webxnn.xnn.ir import INVALID_ID, Datatype

Q8 = Datatype.QINT8
TABLES = table_params(load_testing_module().kernels, INT8_TABLES)


def residual_blob(
    c: QConv,
    r_q: tuple[float, int],
    s_q: tuple[float, int],
    relu: bool,
    swap: bool = False,
    expose: bool = False,
    identity: bool = False,
    r_shape: list[int] | None = None,
) -> bytes:
    """y = Add(conv(x), r) (swap: Add(r, conv(x))), with a Relu folded into the Add's range when relu; r is a
    second input (identity: x itself, the ResNet identity shortcut); expose: the conv's output is a graph
    output too."""
    b = GraphBuilder()
    x = c.arrays["x"]
    xi = b.input("x", list(x.shape), Q8, per_tensor(*c.in_q))
    shape = list(reference(c).shape)
    ri = xi if identity else b.input("r", r_shape or shape, Q8, per_tensor(*r_q))
    p = b.value(shape, Q8, per_tensor(*c.out_q))
    conv_node(b, c, xi, p)
    if expose:
        b.output(p, "p")
    y = b.output(b.value(shape, Q8, per_tensor(*s_q)), "y")
    ins = (ri, p) if swap else (p, ri)
    b.node(
        "XNNAdd",
        output_min_max=(0.0, math.inf) if relu else None,
        input1_id=ins[0],
        input2_id=ins[1],
        output_id=y,
        flags=0,
    )
    return b.build()


def sum_reference(c: QConv, r: np.ndarray, r_q, s_q, relu: bool) -> np.ndarray:  # noqa: ANN001
    lo = quantize_bound(0.0, *s_q) if relu else -128
    return add_ref(reference(c), r, *c.out_q, *r_q, *s_q, lo, 127)


def fused_kinds(blob: bytes) -> list[str]:
    return [s["kind"] for s in runtime.load(blob).plan() if s.get("fused")]


CASES = [
    # conv, residual quant, sum quant (a sum scale below the conv's: the sum saturates at both ends)
    (QConv(7, 9, groups=1, gic=16, goc=17, k=(1, 1), pads=(0, 0, 0, 0)), (0.08, 5), (0.06, -3)),
    (QConv(5, 5, groups=1, gic=7, goc=7, in_q=(0.05, -128), out_q=(0.2, 127)), (0.1, -128), (0.05, -128)),
    (QConv(9, 8, groups=1, gic=17, goc=33, stride=(1, 1), clamp=(0.0, 6.0)), (0.15, 0), (0.07, 0)),
    (QConv(8, 7, groups=2, gic=3, goc=5, pads=(1, 0, 2, 1)), (0.1, -20), (0.04, 10)),
    (QConv(6, 6, groups=1, gic=1, goc=1, k=(3, 3), out_q=(0.5, 0)), (0.5, 0), (0.2, 0)),
]


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_conv_residual_fuses_and_matches(i: int, relu: bool) -> None:
    c, r_q, s_q = CASES[i]
    c.seed = i
    c.make()
    r = np.random.default_rng(i).integers(-128, 128, reference(c).shape).astype(np.int8)
    want = sum_reference(c, r, r_q, s_q, relu)
    assert (want == 127).any() and (want == (quantize_bound(0.0, *s_q) if relu else -128)).any()
    for swap in (False, True):
        fused = residual_blob(c, r_q, s_q, relu, swap=swap)
        apart = residual_blob(c, r_q, s_q, relu, swap=swap, expose=True)
        assert fused_kinds(fused) == ["XNNConv2d"] and fused_kinds(apart) == []
        for t in (1, 2):
            got = runtime.load(fused, threads=t).run({"x": c.arrays["x"], "r": r})["y"]
            sep = runtime.load(apart, threads=t).run({"x": c.arrays["x"], "r": r})
            np.testing.assert_array_equal(sep["p"], reference(c))
            np.testing.assert_array_equal(sep["y"], want, err_msg=f"apart, swap {swap}, {t} threads")
            np.testing.assert_array_equal(got, want, err_msg=f"fused, swap {swap}, {t} threads")


def test_identity_shortcut() -> None:
    """Add(conv(x), x): the residual is the conv's own input (ResNet's identity block)."""
    c = QConv(6, 7, groups=1, gic=12, goc=12, in_q=(0.04, 9), out_q=(0.09, -4)).make()
    blob = residual_blob(c, c.in_q, (0.07, -10), True, identity=True)
    assert fused_kinds(blob) == ["XNNConv2d"]
    want = sum_reference(c, c.arrays["x"], c.in_q, (0.07, -10), True)
    for t in (1, 2):
        np.testing.assert_array_equal(runtime.load(blob, threads=t).run([c.arrays["x"]])["y"], want)


def test_not_fused_but_exact() -> None:
    """A depthwise producer (qdwconv2d has no residual epilogue) and a broadcast residual run apart."""
    dw = QConv(6, 6, groups=5, gic=1, goc=1, dw=True).make()
    r = np.random.default_rng(3).integers(-128, 128, reference(dw).shape).astype(np.int8)
    blob = residual_blob(dw, (0.1, 2), (0.08, -1), False)
    assert fused_kinds(blob) == []
    got = runtime.load(blob, threads=2).run({"x": dw.arrays["x"], "r": r})["y"]
    np.testing.assert_array_equal(got, sum_reference(dw, r, (0.1, 2), (0.08, -1), False))
    c = QConv(5, 5, groups=1, gic=4, goc=6).make()
    row = np.random.default_rng(4).integers(-128, 128, (1, 1, 1, 6)).astype(np.int8)
    blob = residual_blob(c, (0.1, 2), (0.08, -1), True, r_shape=[1, 1, 1, 6])
    assert fused_kinds(blob) == []
    got = runtime.load(blob).run({"x": c.arrays["x"], "r": row})["y"]
    np.testing.assert_array_equal(
        got, sum_reference(c, np.broadcast_to(row, (1, 5, 5, 6)), (0.1, 2), (0.08, -1), True)
    )


def fc_blob(x: np.ndarray, w: np.ndarray, bias: np.ndarray, ws: np.ndarray, expose: bool) -> bytes:
    """y = relu(Add(r, FullyConnected(x))), x qint8 [1, M, K], w qcint8 [N, K]."""
    b = GraphBuilder()
    m, n = x.shape[1], w.shape[0]
    xi = b.input("x", list(x.shape), Q8, per_tensor(0.05, -7))
    ri = b.input("r", [1, m, n], Q8, per_tensor(0.2, 3))
    p = b.value([1, m, n], Q8, per_tensor(0.3, 11))
    wi = b.const(w, Datatype.QCINT8, per_channel([float(s) for s in ws], 0))
    bi = b.const(bias, Datatype.QCINT32, per_channel([0.05 * float(s) for s in ws], 0))
    b.node(
        "XNNFullyConnected",
        input1_id=xi,
        filter_id=wi,
        bias_id=bi if bias is not None else INVALID_ID,
        output_id=p,
        flags=0,
    )
    if expose:
        b.output(p, "p")
    y = b.output(b.value([1, m, n], Q8, per_tensor(0.25, -20)), "y")
    b.node("XNNAdd", output_min_max=(0.0, math.inf), input1_id=ri, input2_id=p, output_id=y, flags=0)
    return b.build()


def fc_reference(x, w, bias, ws, r) -> np.ndarray:  # noqa: ANN001
    acc = (x[0].astype(np.int64) + 7) @ w.astype(np.int64).T + bias
    scale = np.float32(0.05) * ws / np.float32(0.3)
    p = np.clip(np.rint(acc.astype(np.int32).astype(np.float32) * scale) + 11, -128, 127).astype(np.int8)
    return add_ref(r[0], p, 0.2, 3, 0.3, 11, 0.25, -20, quantize_bound(0.0, 0.25, -20), 127)[None]


@pytest.mark.parametrize("m,n,k", [(1, 7, 17), (9, 16, 33), (17, 40, 64)])
def test_fully_connected_residual(m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * n)
    x = rng.integers(-128, 128, (1, m, k)).astype(np.int8)
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    ws = rng.uniform(0.002, 0.02, n).astype(np.float32)
    r = rng.integers(-128, 128, (1, m, n)).astype(np.int8)
    want = fc_reference(x, w, bias, ws, r)
    fused, apart = fc_blob(x, w, bias, ws, False), fc_blob(x, w, bias, ws, True)
    assert fused_kinds(fused) == ["XNNFullyConnected"] and fused_kinds(apart) == []
    for t in (1, 2):
        np.testing.assert_array_equal(runtime.load(fused, threads=t).run({"x": x, "r": r})["y"], want)
        np.testing.assert_array_equal(runtime.load(apart, threads=t).run({"x": x, "r": r})["y"], want)


IDENTITY = [  # convs whose output has their input's shape: Add(conv(x), x) needs one graph input
    QConv(7, 9, groups=1, gic=16, goc=16, k=(1, 1), pads=(0, 0, 0, 0), in_q=(0.05, -128)),
    QConv(5, 6, groups=1, gic=7, goc=7, in_q=(0.05, 127), out_q=(0.2, -128)),
    QConv(8, 7, groups=2, gic=3, goc=3, clamp=(0.0, 6.0)),
    QConv(9, 9, groups=1, gic=33, goc=33, k=(3, 3), out_q=(0.03, 3)),
]


@pytest.mark.parametrize("isa", TABLES)
def test_every_table(isa: str, tmp_path: Path) -> None:
    """The fused steps on each int8 table (a process forced onto it by WEBXNN_ISA), 1 and 2 threads: the
    reference's bytes."""
    items, wants = [], []
    for i, c in enumerate(IDENTITY):
        c.seed = 10 + i
        c.make()
        s_q = (0.06, (-5, 0, 127, -128)[i])
        items.append((residual_blob(c, c.in_q, s_q, i % 2 == 0, identity=True), c.arrays["x"]))
        wants.append(sum_reference(c, c.arrays["x"], c.in_q, s_q, i % 2 == 0))
    assert all(fused_kinds(b) == ["XNNConv2d"] for b, _ in items)
    outs = outputs_with_isa(isa, items, tmp_path)
    for i, want in enumerate(wants):
        for t in range(2):
            np.testing.assert_array_equal(outs[2 * i + t]["y"], want, err_msg=f"case {i}, {t + 1} threads")
