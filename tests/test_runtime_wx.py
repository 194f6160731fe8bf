"""The runtime's webxnn (WX*) nodes, datatypes, fp16 conversion, load-time constant folding, dynamic weights,
dynamic dims and rank-0 values, each against numpy written straightforwardly here."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import conv_fields, pool_fields
from test_runtime_util import GraphBuilder, conv2d_ref
from webxnn import runtime
from webxnn.errors import FormatError, InputError, UnsupportedError
from webxnn.xnn.ir import INVALID_ID, Datatype

RNG = np.random.default_rng(7)

DT = {
    np.dtype("float32"): Datatype.FP32,
    np.dtype("float16"): Datatype.FP16,
    np.dtype("int8"): Datatype.WX_INT8,
    np.dtype("uint8"): Datatype.WX_UINT8,
    np.dtype("int32"): Datatype.INT32,
    np.dtype("uint32"): Datatype.WX_UINT32,
    np.dtype("int64"): Datatype.WX_INT64,
    np.dtype("uint64"): Datatype.WX_UINT64,
}
INTS = ["int8", "uint8", "int32", "uint32", "int64", "uint64"]


def rand(shape: tuple[int, ...] | list[int], dtype: str = "float32") -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)


def run_node(
    kind: str,
    ins: list[np.ndarray | None],
    names: list[str],
    out_shape: Any,
    out_dtype: Any,
    consts: tuple[int, ...] = (),
    **fields: Any,
) -> np.ndarray:
    """One-node graph: ins[k] bound to field names[k] (graph inputs, or constants for k in consts; None =
    absent). Returns the single output."""
    b = GraphBuilder()
    feeds = []
    for k, (a, name) in enumerate(zip(ins, names)):
        if a is None:
            fields[name] = INVALID_ID
        elif k in consts:
            fields[name] = b.const(a, DT[a.dtype])
        else:
            fields[name] = b.input(f"in{k}", list(a.shape), DT[a.dtype])
            feeds.append(a)
    out_dtype = np.dtype(out_dtype)
    fields["output_id"] = b.output(b.value(list(out_shape), DT[out_dtype]), "y")
    fields.setdefault("flags", 0)
    b.node(kind, **fields)
    got = runtime.load(b.build(), threads=2).run(feeds)["y"]
    assert got.dtype == out_dtype and got.shape == tuple(out_shape)
    return got


def unary(op: str, x: np.ndarray, out_dtype: Any = None, alpha: float = 0.0, beta: float = 0.0) -> np.ndarray:
    return run_node(
        "WXUnary", [x], ["input_id"], x.shape, out_dtype or x.dtype, op=op, alpha=alpha, beta=beta
    )


# ---------------------------------------------------------------- element-wise


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf)(x.astype(np.float64))


FLOAT_UNARY = {
    "relu": lambda x: np.maximum(x, 0),
    "erf": _erf,
    "sign": np.sign,
    "round_even": np.round,
    "reciprocal": lambda x: 1.0 / x,
    "softplus": lambda x: np.log1p(np.exp(x.astype(np.float64))),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "tan": np.tan,
    "abs": np.abs,
    "neg": np.negative,
    "identity": lambda x: x,
}


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_unary_float(op: str, dtype: str) -> None:
    x = (rand((3, 17)) * 3).astype(dtype)
    x[0, :4] = [2.5, -0.5, 0.5, 1.5]
    got = unary(op, x)
    want = FLOAT_UNARY[op](x.astype(np.float64)).astype(dtype)
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=2e-3 if dtype == "float16" else 1e-6, atol=1e-6
    )


def test_unary_clamp_hard_sigmoid_and_predicates() -> None:
    x = rand((4, 5))
    np.testing.assert_array_equal(unary("clamp", x, alpha=-0.5, beta=0.25), np.clip(x, -0.5, 0.25))
    np.testing.assert_allclose(
        unary("hard_sigmoid", x, alpha=0.2, beta=0.5), np.clip(0.2 * x + 0.5, 0, 1), rtol=1e-6
    )
    x[0, :3] = [np.nan, np.inf, -np.inf]
    np.testing.assert_array_equal(unary("is_nan", x, "uint8"), np.isnan(x).astype(np.uint8))
    np.testing.assert_array_equal(unary("is_infinite", x, "uint8"), np.isinf(x).astype(np.uint8))
    u = np.array([0, 1, 7, 0], np.uint8)
    np.testing.assert_array_equal(unary("logical_not", u), [1, 0, 0, 1])


@pytest.mark.parametrize("dtype", INTS)
def test_unary_integer(dtype: str) -> None:
    x = rand((2, 9), dtype)
    np.testing.assert_array_equal(unary("relu", x), np.maximum(x, 0).astype(dtype))
    np.testing.assert_array_equal(unary("abs", x), np.abs(x).astype(dtype))
    np.testing.assert_array_equal(unary("neg", x), np.negative(x))
    np.testing.assert_array_equal(unary("sign", x), np.sign(x).astype(dtype))
    np.testing.assert_array_equal(
        unary("clamp", x, alpha=-3, beta=40), np.clip(x, -3 if dtype[0] == "i" else 0, 40)
    )


@pytest.mark.parametrize("src", ["float32", "float16", *INTS])
@pytest.mark.parametrize("dst", ["float32", "float16", *INTS])
def test_cast_all_pairs(src: str, dst: str) -> None:
    x = np.array([0, 1, 2, 7, 100, 126, 3, 50], src)
    if np.dtype(src).kind == "f":
        x = x.astype(src) + np.array(0.75, src)
    got = unary("cast", x, dst)
    want = x.astype(np.float64).astype(np.int64).astype(dst) if np.dtype(dst).kind != "f" else x.astype(dst)
    np.testing.assert_array_equal(got, want)


def test_cast_float_to_int_truncates_and_saturates() -> None:
    x = np.array([-2.7, 2.7, 1e10, -1e10, np.nan, 300.0, -0.5], np.float32)
    np.testing.assert_array_equal(unary("cast", x, "int32"), [-2, 2, 2**31 - 1, -(2**31), 0, 300, 0])
    np.testing.assert_array_equal(unary("cast", x, "uint8"), [0, 2, 255, 0, 0, 255, 0])
    np.testing.assert_array_equal(unary("cast", np.array([300, -1], np.int32), "uint8"), [44, 255])  # wraps


BIN = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
}
CMP = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_or_equal": np.greater_equal,
    "lesser": np.less,
    "lesser_or_equal": np.less_equal,
}


@pytest.mark.parametrize("dtype", ["float32", "float16", *INTS])
@pytest.mark.parametrize("shapes", [((2, 1, 3), (4, 1)), ((5,), (5,)), ((), (2, 3)), ((1, 17), (3, 1))])
def test_binary_broadcast(dtype: str, shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = rand(shapes[0], dtype), rand(shapes[1], dtype)
    b[b == 0] = 1
    o = np.broadcast_shapes(a.shape, b.shape)
    for op, f in BIN.items():
        got = run_node("WXBinary", [a, b], ["input1_id", "input2_id"], o, dtype, op=op)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(got, f(a, b).astype(dtype), err_msg=op)
    for op, f in CMP.items():
        got = run_node("WXBinary", [a, b], ["input1_id", "input2_id"], o, "uint8", op=op)
        np.testing.assert_array_equal(got, f(a, b).astype(np.uint8), err_msg=op)


def test_binary_div_pow_logical() -> None:
    a = np.array([7, -7, 7, -7, 5, -128], np.int8)
    b = np.array([2, 2, -2, -2, 0, -1], np.int8)
    got = run_node("WXBinary", [a, b], ["input1_id", "input2_id"], [6], "int8", op="div")
    np.testing.assert_array_equal(got, [3, -3, -3, 3, 0, -128])  # truncation; /0 -> 0; overflow wraps
    x, y = np.abs(rand((3, 4))) + 0.1, rand((3, 4))
    got = run_node("WXBinary", [x, y], ["input1_id", "input2_id"], [3, 4], "float32", op="pow")
    np.testing.assert_allclose(got, np.power(x, y), rtol=1e-6)
    got = run_node("WXBinary", [x, y], ["input1_id", "input2_id"], [3, 4], "float32", op="div")
    np.testing.assert_array_equal(got, x / y)
    i = np.array([2, 3, -2, 5], np.int32)
    e = np.array([3, 0, 3, 2], np.int32)
    np.testing.assert_array_equal(
        run_node("WXBinary", [i, e], ["input1_id", "input2_id"], [4], "int32", op="pow"), [8, 1, -8, 25]
    )
    p = np.array([0, 1, 0, 1], np.uint8)
    q = np.array([0, 0, 1, 3], np.uint8)
    for op, want in {
        "logical_and": [0, 0, 0, 1],
        "logical_or": [0, 1, 1, 1],
        "logical_xor": [0, 1, 1, 0],
    }.items():
        np.testing.assert_array_equal(
            run_node("WXBinary", [p, q], ["input1_id", "input2_id"], [4], "uint8", op=op), want
        )


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_where(dtype: str) -> None:
    c = (rand((2, 1, 4)) > 0).astype(np.uint8)
    t, f = rand((3, 1), dtype), rand((4,), dtype)
    got = run_node("WXWhere", [c, t, f], ["condition_id", "true_id", "false_id"], [2, 3, 4], dtype)
    np.testing.assert_array_equal(got, np.where(c != 0, t, f))


@pytest.mark.parametrize("dtype", ["float16", "int64"])
def test_expand_and_tile(dtype: str) -> None:
    x = rand((3, 1), dtype)
    np.testing.assert_array_equal(
        run_node("WXExpand", [x], ["input_id"], [2, 3, 4], dtype), np.broadcast_to(x, (2, 3, 4))
    )
    np.testing.assert_array_equal(
        run_node("WXTile", [x], ["input_id"], [6, 4], dtype, repetitions=[2, 4]), np.tile(x, (2, 4))
    )


# ---------------------------------------------------------------- reductions

REDUCE = {
    "sum": lambda x, a, k: np.sum(x, axis=a, keepdims=k),
    "mean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
    "max": lambda x, a, k: np.max(x, axis=a, keepdims=k),
    "min": lambda x, a, k: np.min(x, axis=a, keepdims=k),
    "product": lambda x, a, k: np.prod(x, axis=a, keepdims=k),
    "l1": lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k),
    "l2": lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)),
    "log_sum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
    "log_sum_exp": lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k)),
    "sum_square": lambda x, a, k: np.sum(x * x, axis=a, keepdims=k),
}


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize("axes,keep", [((1,), False), ((0, 2), True), ((), False), ((0, 1, 2), False)])
def test_reduce_float(op: str, axes: tuple[int, ...], keep: bool) -> None:
    x = np.abs(rand((3, 4, 5))) + 0.5
    want = (
        REDUCE[op](x.astype(np.float64), axes, keep)
        if axes
        else REDUCE[op](x.astype(np.float64)[None], 0, False)
    )
    got = run_node(
        "WXReduce", [x], ["input_id"], want.shape, "float32", op=op, axes=list(axes), keep_dims=keep
    )
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "int8"])
def test_reduce_integer(dtype: str) -> None:
    x = rand((3, 4), dtype) // 8
    for op in ("sum", "max", "min", "product", "l1", "sum_square"):
        want = REDUCE[op](x.astype(np.int64), 1, False).astype(dtype)
        got = run_node("WXReduce", [x], ["input_id"], [3], dtype, op=op, axes=[1], keep_dims=False)
        np.testing.assert_array_equal(got, want, err_msg=op)


@pytest.mark.parametrize("out", ["int32", "int64", "uint32"])
def test_arg_max_min(out: str) -> None:
    x = np.array([[1, 5, 5, 0], [3, 3, -1, -1], [2, 0, 2, 7]], np.float32)
    got = run_node("WXReduce", [x], ["input_id"], [3], out, op="arg_max", axes=[1], keep_dims=False)
    np.testing.assert_array_equal(got, [1, 0, 3])  # ties: first index
    got = run_node("WXReduce", [x], ["input_id"], [1, 4], out, op="arg_min", axes=[0], keep_dims=True)
    np.testing.assert_array_equal(got, [[0, 2, 1, 1]])
    with pytest.raises(FormatError, match="exactly one axis"):
        run_node("WXReduce", [x], ["input_id"], [], out, op="arg_max", axes=[0, 1], keep_dims=False)


def test_normalize_layer_and_instance() -> None:
    x = rand((2, 3, 4, 5))
    scale, bias = rand((4, 5)), rand((5,))
    got = run_node(
        "WXNormalize",
        [x, scale, bias],
        ["input_id", "scale_id", "bias_id"],
        x.shape,
        "float32",
        consts=(1, 2),
        axes=[2, 3],
        epsilon=1e-5,
    )
    xd = x.astype(np.float64)
    m, v = xd.mean(axis=(2, 3), keepdims=True), xd.var(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(got, (xd - m) / np.sqrt(v + 1e-5) * scale + bias, rtol=1e-5, atol=1e-5)
    got = run_node(
        "WXNormalize",
        [x, None, None],
        ["input_id", "scale_id", "bias_id"],
        x.shape,
        "float32",
        axes=[1],
        epsilon=1e-3,
    )
    m, v = xd.mean(axis=1, keepdims=True), xd.var(axis=1, keepdims=True)
    np.testing.assert_allclose(got, (xd - m) / np.sqrt(v + 1e-3), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axes", [[3], [3, 2], [1, 2, 3]])
def test_normalize_trailing_axes(axes: list[int]) -> None:
    """Trailing axes with flat scale/bias take the kernel table's fused row kernel."""
    x = rand((2, 3, 4, 5)) * 3 + 1
    pshape = [x.shape[a] for a in sorted(axes)]
    scale, bias = rand(pshape), rand(pshape)
    got = run_node(
        "WXNormalize",
        [x, scale, bias],
        ["input_id", "scale_id", "bias_id"],
        x.shape,
        "float32",
        consts=(1, 2),
        axes=axes,
        epsilon=1e-5,
    )
    xd = x.astype(np.float64)
    ax = tuple(axes)
    m, v = xd.mean(axis=ax, keepdims=True), xd.var(axis=ax, keepdims=True)
    np.testing.assert_allclose(got, (xd - m) / np.sqrt(v + 1e-5) * scale + bias, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reversed_", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cumulative_sum(exclusive: bool, reversed_: bool, dtype: str) -> None:
    x = rand((3, 5, 2), dtype)
    y = np.flip(x, 1) if reversed_ else x
    c = np.cumsum(y.astype(np.float64), axis=1)
    if exclusive:
        c = c - y
    want = (np.flip(c, 1) if reversed_ else c).astype(dtype)
    got = run_node(
        "WXCumulativeSum", [x], ["input_id"], x.shape, dtype, axis=1, exclusive=exclusive, reversed=reversed_
    )
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ---------------------------------------------------------------- indexing


@pytest.mark.parametrize("idx_dtype", ["int32", "uint32", "int64"])
def test_gather_clamps_and_wraps_negative(idx_dtype: str) -> None:
    x = rand((3, 4, 2), "int8")
    raw = np.array([[0, 3], [1, 2]] if idx_dtype == "uint32" else [[0, -1], [9, -9]], np.int64)
    idx = raw.astype(idx_dtype)
    got = run_node("WXGather", [x, idx], ["input_id", "indices_id"], [3, 2, 2, 2], "int8", axis=1)
    fixed = np.clip(np.where(raw < 0, raw + 4, raw), 0, 3)
    np.testing.assert_array_equal(got, np.take(x, fixed, axis=1))


def test_gather_scalar_index_gives_lower_rank() -> None:
    x = rand((3, 4))
    got = run_node("WXGather", [x, np.array(2, np.int32)], ["input_id", "indices_id"], [3], "float32", axis=1)
    np.testing.assert_array_equal(got, x[:, 2])


def test_gather_elements_and_nd() -> None:
    x = rand((3, 4))
    idx = np.array([[0, 2, 1, 3], [3, 3, 0, 0]], np.int32)
    got = run_node("WXGatherElements", [x, idx], ["input_id", "indices_id"], [2, 4], "float32", axis=1)
    np.testing.assert_array_equal(got, np.take_along_axis(x[:2], idx, axis=1))
    ind = np.array([[0, 1], [2, 3], [1, -1]], np.int64)
    got = run_node("WXGatherND", [x, ind], ["input_id", "indices_id"], [3], "float32")
    np.testing.assert_array_equal(got, [x[0, 1], x[2, 3], x[1, 3]])
    ind = np.array([[2], [0]], np.int32)
    got = run_node("WXGatherND", [x, ind], ["input_id", "indices_id"], [2, 4], "float32")
    np.testing.assert_array_equal(got, x[[2, 0]])


def test_scatter_elements_and_nd() -> None:
    x = rand((3, 4))
    idx = np.array([[1, 0], [2, 3]], np.int32)
    upd = rand((2, 2))
    got = run_node(
        "WXScatterElements",
        [x, idx, upd],
        ["input_id", "indices_id", "updates_id"],
        [3, 4],
        "float32",
        axis=1,
    )
    want = x.copy()
    np.put_along_axis(want[:2], idx, upd, axis=1)
    np.testing.assert_array_equal(got, want)
    ind = np.array([[2], [0]], np.int64)
    upd = rand((2, 4))
    got = run_node("WXScatterND", [x, ind, upd], ["input_id", "indices_id", "updates_id"], [3, 4], "float32")
    want = x.copy()
    want[[2, 0]] = upd
    np.testing.assert_array_equal(got, want)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=9))
def test_hostile_gather_indices_are_clamped(raw: list[int]) -> None:
    x = np.arange(5, dtype=np.float32)
    idx = np.array(raw, np.int64)
    got = run_node("WXGather", [x, idx], ["input_id", "indices_id"], [len(raw)], "float32", axis=0)
    fixed = np.clip(np.where(idx < 0, idx + 5, idx), 0, 4)
    np.testing.assert_array_equal(got, x[fixed])
    upd = np.ones(len(raw), np.float32)
    run_node(
        "WXScatterElements", [x, idx, upd], ["input_id", "indices_id", "updates_id"], [5], "float32", axis=0
    )


# ---------------------------------------------------------------- layout


def test_reverse_triangular() -> None:
    x = rand((2, 3, 4), "uint32")
    np.testing.assert_array_equal(
        run_node("WXReverse", [x], ["input_id"], x.shape, "uint32", axes=[0, 2]), x[::-1, :, ::-1]
    )
    for upper in (False, True):
        for diag in (-1, 0, 2):
            want = np.triu(x, diag) if upper else np.tril(x, diag)
            got = run_node("WXTriangular", [x], ["input_id"], x.shape, "uint32", upper=upper, diagonal=diag)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "mode,np_mode",
    [("constant", "constant"), ("edge", "edge"), ("reflection", "reflect"), ("symmetric", "symmetric")],
)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_pad_modes(mode: str, np_mode: str, dtype: str) -> None:
    x = rand((3, 4), dtype)
    pre, post = [2, 1], [1, 3]
    kw = {"constant_values": 5} if mode == "constant" else {}
    want = np.pad(x, list(zip(pre, post)), mode=np_mode, **kw)
    got = run_node(
        "WXPad",
        [x],
        ["input_id"],
        want.shape,
        dtype,
        mode=mode,
        pre_paddings=pre,
        post_paddings=post,
        value=5.0,
    )
    np.testing.assert_array_equal(got, want)


def test_strided_slice() -> None:
    x = rand((7, 9, 2))
    got = run_node("WXSlice", [x], ["input_id"], [3, 2, 1], "float32", starts=[1, 2, 1], strides=[2, 4, 1])
    np.testing.assert_array_equal(got, x[1:7:2, 2:9:4, 1:2])
    with pytest.raises(FormatError, match="out of range"):
        run_node("WXSlice", [x], ["input_id"], [4, 2, 1], "float32", starts=[1, 2, 1], strides=[2, 4, 1])


# ---------------------------------------------------------------- spatial, quantization


def _resample_ref(x: np.ndarray, axes: tuple[int, int], out: tuple[int, int], linear: bool) -> np.ndarray:
    y = x.astype(np.float64)
    for ax, on in zip(axes, out):
        n = y.shape[ax]
        scale = on / n
        pos = (np.arange(on) + 0.5) / scale
        if linear:
            src = np.clip(pos - 0.5, 0, n - 1)
            i0 = np.floor(src).astype(int)
            i1 = np.minimum(i0 + 1, n - 1)
            w = (src - i0).reshape([-1 if d == ax else 1 for d in range(y.ndim)])
            y = np.take(y, i0, axis=ax) * (1 - w) + np.take(y, i1, axis=ax) * w
        else:
            y = np.take(y, np.minimum(np.floor(pos).astype(int), n - 1), axis=ax)
    return y


@pytest.mark.parametrize("mode", ["linear", "nearest_neighbor"])
@pytest.mark.parametrize("axes,out", [((1, 2), (7, 3)), ((2, 3), (4, 10)), ((0, 2), (3, 2))])
def test_resample2d(mode: str, axes: tuple[int, int], out: tuple[int, int]) -> None:
    x = rand((2, 3, 4, 5))
    shape = list(x.shape)
    for a, o in zip(axes, out):
        shape[a] = o
    scales = [o / x.shape[a] for a, o in zip(axes, out)]
    got = run_node(
        "WXResample2d", [x], ["input_id"], shape, "float32", mode=mode, axes=list(axes), scales=scales
    )
    np.testing.assert_allclose(got, _resample_ref(x, axes, out, mode == "linear"), rtol=1e-5, atol=1e-6)


def _pool_ref(
    x: np.ndarray,
    op: str,
    k: tuple[int, int],
    s: tuple[int, int],
    pads: tuple[int, int, int, int],
    oh: int,
    ow: int,
) -> np.ndarray:
    n, h, w, c = x.shape
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * s[0] - pads[0], j * s[1] - pads[3]
            win = x[:, max(0, y0) : max(0, y0 + k[0]), max(0, x0) : max(0, x0 + k[1]), :].astype(np.float64)
            if op == "max":
                out[:, i, j] = win.max(axis=(1, 2))
            elif op == "average":
                out[:, i, j] = win.mean(axis=(1, 2))
            else:
                out[:, i, j] = np.sqrt((win * win).sum(axis=(1, 2)))
    return out


@pytest.mark.parametrize("op", ["max", "average", "l2"])
@pytest.mark.parametrize("ceil", [False, True])
def test_pool2d(op: str, ceil: bool) -> None:
    x = rand((2, 6, 7, 3))
    pads = (1, 0, 0, 1)  # top, right, bottom, left
    oh = (6 + 1 - 3 + (1 if ceil else 0)) // 2 + 1
    ow = (7 + 1 - 3 + (1 if ceil else 0)) // 2 + 1
    got = run_node(
        "WXPool2d",
        [x],
        ["input_id"],
        [2, oh, ow, 3],
        "float32",
        op=op,
        **pool_fields((3, 3), (2, 2), (1, 0, 0, 1)),
    )
    np.testing.assert_allclose(got, _pool_ref(x, op, (3, 3), (2, 2), pads, oh, ow), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("out", ["int8", "uint8", "int32"])
def test_quantize_dequantize_blockwise(out: str) -> None:
    x = rand((2, 6)) * 20
    scale = np.array([[0.5, 2.0, 1.0]], np.float32)  # blocks of 2 along dim 1, broadcast along dim 0
    zp = np.array([[1, 3, 0]], out)
    s_full = np.repeat(scale, 2, axis=1)
    z_full = np.repeat(zp, 2, axis=1).astype(np.float64)
    info = np.iinfo(out)
    want = np.clip(np.round(x.astype(np.float64) / s_full) + z_full, info.min, info.max).astype(out)
    got = run_node(
        "WXQuantize",
        [x, scale, zp],
        ["input_id", "scale_id", "zero_point_id"],
        x.shape,
        out,
        consts=(1, 2),
        op="quantize",
    )
    np.testing.assert_array_equal(got, want)
    back = run_node(
        "WXQuantize",
        [want, scale, zp],
        ["input_id", "scale_id", "zero_point_id"],
        x.shape,
        "float32",
        consts=(1, 2),
        op="dequantize",
    )
    np.testing.assert_allclose(back, (want.astype(np.float64) - z_full) * s_full, rtol=1e-6)
    with pytest.raises(FormatError, match="block-wise"):
        run_node(
            "WXQuantize",
            [x, np.ones((4,), np.float32), None],
            ["input_id", "scale_id", "zero_point_id"],
            x.shape,
            out,
            consts=(1,),
            op="quantize",
        )


@pytest.mark.parametrize("flags", [0, 0x8, 0x4])
def test_static_resize_bilinear(flags: int) -> None:
    x = rand((1, 3, 4, 2))
    oh, ow = 5, 7
    got = run_node(
        "XNNStaticResizeBilinear2D",
        [x],
        ["input_id"],
        [1, oh, ow, 2],
        "float32",
        new_height=oh,
        new_width=ow,
        flags=flags,
    )

    def src(o: int, n: int, on: int) -> np.ndarray:
        k = np.arange(on, dtype=np.float64)
        if flags & 0x8:
            s = k * (n - 1) / (on - 1)
        elif flags & 0x4:
            s = k * n / on
        else:
            s = (k + 0.5) * n / on - 0.5
        return np.clip(s, 0, n - 1)

    y = x.astype(np.float64)
    for ax, (n, on) in zip((1, 2), ((3, oh), (4, ow))):
        s = src(0, n, on)
        i0 = np.floor(s).astype(int)
        i1 = np.minimum(i0 + 1, n - 1)
        w = (s - i0).reshape([-1 if d == ax else 1 for d in range(4)])
        y = np.take(y, i0, axis=ax) * (1 - w) + np.take(y, i1, axis=ax) * w
    np.testing.assert_allclose(got, y, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- fp16


def test_fp16_to_fp32_all_patterns_bit_exact() -> None:
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = run_node("XNNConvert", [h], ["input_id"], h.shape, "float32")
    want = h.astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])


def test_fp32_to_fp16_bit_exact() -> None:
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    bits = RNG.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    # ties and neighbours of every half-way point between adjacent halves, plus random patterns
    hb = np.arange(0, 0x7C00, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    hb = hb.view(np.uint32).astype(np.int64)
    mids = np.concatenate([hb[:-1] + ((hb[1:] - hb[:-1]) // 2) + d for d in (-1, 0, 1)])
    mids = mids[mids >= 0].astype(np.uint32)
    x = np.concatenate(
        [
            halves,
            bits.view(np.float32),
            mids.view(np.float32),
            -mids.view(np.float32),
            np.float32([65519.99, 65520.0, 2.0**-25, 2.0**-25 * 1.0001, 2.0**-26, 1e-45]),
        ]
    )
    got = run_node("XNNConvert", [x], ["input_id"], x.shape, "float16")
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


def test_fp16_through_layout_ops_and_io() -> None:
    x = rand((2, 3), "float16")
    b = GraphBuilder()
    xi = b.input("x", [2, 3], Datatype.FP16)
    t = b.value([3, 2], Datatype.FP16)
    b.node("XNNStaticTranspose", perm=[1, 0], input_id=xi, output_id=t, flags=0)
    y = b.output(b.value([3, 4], Datatype.FP16), "y")
    b.node(
        "XNNStaticConstantPad",
        pre_paddings=[0, 1],
        post_paddings=[0, 1],
        padding_value=1.5,
        input_id=t,
        output_id=y,
        flags=0,
    )
    got = runtime.load(b.build()).run({"x": x})["y"]
    np.testing.assert_array_equal(got, np.pad(x.T, ((0, 0), (1, 1)), constant_values=1.5))


# ---------------------------------------------------------------- folding, dynamic weights, dims, rank 0


def test_constant_subgraph_is_folded_at_load() -> None:
    """Convert(fp16 const) -> Add: the convert runs once at load, so the run's arena holds nothing."""
    w = rand((1000,), "float16")
    b = GraphBuilder()
    xi = b.input("x", [1000])
    wc = b.const(w, Datatype.FP16)
    w32 = b.value([1000])
    b.node("XNNConvert", input_id=wc, output_id=w32, flags=0)
    y = b.output(b.value([1000]), "y")
    b.node("XNNAdd", input1_id=xi, input2_id=w32, output_id=y, flags=0)
    p = runtime.load(b.build())
    assert p.peak_arena_bytes == 0
    x = rand((1000,))
    np.testing.assert_array_equal(p.run({"x": x})["y"], x + w.astype(np.float32))


def test_dynamic_conv_and_fc_weights() -> None:
    x, w, bias = rand((1, 5, 5, 2)), rand((3, 3, 3, 2)), rand((3,))
    b = GraphBuilder()
    xi = b.input("x", [1, 5, 5, 2])
    wi = b.input("w", [3, 3, 3, 2])
    bi = b.input("b", [3])
    c = b.value([1, 5, 5, 3])
    conv = conv_fields((3, 3), (1, 1, 1, 1), gic=2, goc=3)
    b.node("XNNConv2d", input1_id=xi, filter_id=wi, bias_id=bi, output_id=c, flags=0, **conv)
    r = b.value([25, 3])
    b.node("XNNStaticReshape", new_shape=[25, 3], input_id=c, output_id=r, flags=0)
    fw = b.input("fw", [4, 3])
    y = b.output(b.value([25, 4]), "y")
    b.node("XNNFullyConnected", input1_id=r, filter_id=fw, bias_id=INVALID_ID, output_id=y, flags=0)
    p = runtime.load(b.build(), threads=2)
    for _ in range(2):  # different weights each run
        w, bias, f = rand((3, 3, 3, 2)), rand((3,)), rand((4, 3))
        got = p.run({"x": x, "w": w, "b": bias, "fw": f})["y"]
        want = conv2d_ref(x, w, bias, (1, 1, 1, 1), (1, 1), (1, 1), 1).reshape(25, 3) @ f.T.astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_rank0_values_are_scalars() -> None:
    x = np.array(-2.5, np.float32)
    got = unary("abs", x)
    assert got.shape == () and got == 2.5
    i = np.array(7, np.int64)
    got = run_node("WXBinary", [i, i], ["input1_id", "input2_id"], [], "int64", op="mul")
    assert got.shape == () and got == 49


def test_wrong_datatypes_are_unsupported() -> None:
    x = rand((3,))
    with pytest.raises(UnsupportedError, match=r"comparisons and logical ops give uint8"):
        run_node("WXBinary", [x, x], ["input1_id", "input2_id"], [3], "float32", op="equal")
    with pytest.raises(UnsupportedError, match="indices must be an integer"):
        run_node("WXGather", [x, x], ["input_id", "indices_id"], [3], "float32", axis=0)


def test_input_error_names_axis_and_dims() -> None:
    x = rand((2, 3))
    b = GraphBuilder()
    xi = b.input("x", [2, 3])
    y = b.output(b.value([2, 3]), "y")
    b.node("WXUnary", op="relu", alpha=0.0, beta=0.0, input_id=xi, output_id=y, flags=0)
    p = runtime.load(b.build())
    with pytest.raises(
        InputError, match=r"input 'x': expected shape \[2, 3\], got \[2, 5\]: axis 1 is fixed at 3"
    ):
        p.run({"x": rand((2, 5))})
    np.testing.assert_array_equal(p.run({"x": x})["y"], np.maximum(x, 0))


def test_format_reference_runs_with_batch_3() -> None:
    base = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "webnn-graph"
    path = base / "examples-0.4.0" / "format_reference.webnn"
    if not path.exists():
        pytest.skip("webnn-graph examples not present")
    import webxnn

    p = webxnn.load(webxnn.compile(webxnn.load_graph(path)))
    info = p.inputs[0]
    axis = next(d for d, n in enumerate(info.dynamic) if n)
    shape = list(info.shape)
    shape[axis] = 3
    x = rand(shape)
    out = next(iter(p.run({info.name: x}).values()))
    np.testing.assert_allclose(out, x + 0.5, rtol=1e-6)
