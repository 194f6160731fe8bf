"""Reductions, argMin/argMax, quantization, resample2d and the recurrent ops (gru, gruCell, lstm,
lstmCell)."""

from __future__ import annotations

from typing import Any

from ..graph import Dim
from .common import ALL, FLOAT, QUANT, REQUIRED, TT, define, dtype_in, rank_is, same_dtype, shape_is
from .registry import Ctx
from .shapes import need_int, norm_axes, norm_axis, shape_str

# -------------------------------------------------------------------------------------------- reductions

_SUMLIKE = FLOAT | {"int32", "uint32", "int64", "uint64"}
_REDUCE = {
    "reduceL1": (_SUMLIKE, "sum of |x|"),
    "reduceL2": (FLOAT, "sqrt of the sum of x^2"),
    "reduceLogSum": (FLOAT, "log of the sum"),
    "reduceLogSumExp": (FLOAT, "log of the sum of exp(x)"),
    "reduceMax": (ALL, "maximum"),
    "reduceMin": (ALL, "minimum"),
    "reduceMean": (FLOAT, "mean"),
    "reduceProduct": (_SUMLIKE, "product"),
    "reduceSum": (_SUMLIKE, "sum"),
    "reduceSumSquare": (_SUMLIKE, "sum of x^2"),
}


def _reduced_shape(shape: tuple[Dim, ...], axes: list[int], keep: bool) -> list[Dim]:
    if keep:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


def _reduce(allowed: frozenset[str]):
    def infer(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
        x = t["input"]
        dtype_in(ctx, x, "input", allowed)
        axes = list(range(x.rank)) if opts["axes"] is None else opts["axes"]
        axes = opts["axes"] = norm_axes(axes, x.rank)
        return [TT(x.dtype, _reduced_shape(x.shape, axes, opts["keepDimensions"]))]

    return infer


for _name, (_allowed, _what) in _REDUCE.items():
    define(
        _name,
        ["input"],
        _reduce(_allowed),
        f"The {_what} over `axes` (default: all; negative accepted; [] = no reduction); reduced dims "
        "are kept as 1 when keepDimensions. WebNN §7.6.26 Reduction operations.",
        options={"axes": ("ints", None), "keepDimensions": ("bool", False)},
    )


def _arg(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    if x.rank == 0:
        ctx.fail("input must have rank >= 1")
    axis = opts["axis"] = norm_axis(opts["axis"], x.rank)
    return [TT(opts["outputDataType"], _reduced_shape(x.shape, [axis], opts["keepDimensions"]))]


for _name, _what in (("argMin", "smallest"), ("argMax", "largest")):
    define(
        _name,
        ["input"],
        _arg,
        f"Index of the {_what} element along `axis` (first on ties), as outputDataType int32 (default) "
        "or int64; keepDimensions keeps the axis as 1. WebNN MLGraphBuilder.argMin()/argMax().",
        options={
            "axis": ("int", REQUIRED),
            "keepDimensions": ("bool", False),
            "outputDataType": (("int32", "int64"), "int32"),
        },
    )

# -------------------------------------------------------------------------------------------- quantization


def _check_block(ctx: Ctx, x: Any, role: str, s: Any) -> None:
    """scale/zeroPoint broadcast to the input, or tile it block-wise (each dim divides the input's)."""
    if s.rank > x.rank:
        ctx.fail(f"{role} {shape_str(s.shape)} has a higher rank than input {shape_str(x.shape)}")
    for ds, dx in zip(reversed(s.shape), reversed(x.shape)):
        if ds == 1 or ds == dx:
            continue
        if need_int(dx, f"{ctx.op} block size") % need_int(ds, f"{ctx.op} block size"):
            ctx.fail(
                f"{role} {shape_str(s.shape)} neither broadcasts to nor evenly blocks input "
                f"{shape_str(x.shape)}"
            )


def _quantize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, s, z = t["input"], t["scale"], t["zeroPoint"]
    same_dtype(ctx, {"input": x, "scale": s})
    dtype_in(ctx, x, "input", FLOAT)
    dtype_in(ctx, z, "zeroPoint", QUANT)
    _check_block(ctx, x, "scale", s)
    _check_block(ctx, x, "zeroPoint", z)
    return [TT(z.dtype, x.shape)]


define(
    "quantizeLinear",
    ["input", "scale", "zeroPoint"],
    _quantize,
    "clamp(round_half_even(x / scale) + zeroPoint) to the zeroPoint's type (int8/uint8/int32/int4/uint4); "
    "scale and zeroPoint broadcast or apply block-wise. WebNN MLGraphBuilder.quantizeLinear().",
)


def _dequantize(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x, s, z = t["input"], t["scale"], t["zeroPoint"]
    same_dtype(ctx, {"input": x, "zeroPoint": z})
    dtype_in(ctx, x, "input", QUANT)
    dtype_in(ctx, s, "scale", FLOAT)
    _check_block(ctx, x, "scale", s)
    _check_block(ctx, x, "zeroPoint", z)
    return [TT(s.dtype, x.shape)]


define(
    "dequantizeLinear",
    ["input", "scale", "zeroPoint"],
    _dequantize,
    "(x - zeroPoint) * scale in the scale's float type; scale and zeroPoint broadcast or apply "
    "block-wise. WebNN MLGraphBuilder.dequantizeLinear().",
)

# -------------------------------------------------------------------------------------------- resample2d


def _resample(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    x = t["input"]
    dtype_in(ctx, x, "input", FLOAT)
    rank_is(ctx, x, "input", 4)
    axes = opts["axes"] = norm_axes(opts["axes"], 4)
    if len(axes) != 2 or axes[1] != axes[0] + 1:
        ctx.fail(f"axes {axes} must be two consecutive dimensions")
    ins = [need_int(x.shape[a], "resample2d spatial size") for a in axes]
    if opts["sizes"] is not None:  # sizes win over scales
        sizes = opts["sizes"]
        if len(sizes) != 2 or min(sizes) < 1:
            ctx.fail(f"sizes {sizes} must be two positive integers")
        given = opts["scales"]
        # the effective scales (they drive coordinate mapping): the given ones when they agree with sizes
        # (a bound node fed back in), else out / in, since the spec ignores scales when sizes are given
        if not (given and len(given) == 2 and [int(ins[i] * given[i]) for i in range(2)] == sizes):
            opts["scales"] = [sizes[i] / ins[i] for i in range(2)]
    else:
        scales = opts["scales"] if opts["scales"] is not None else [1.0, 1.0]
        if len(scales) != 2 or min(scales) <= 0:
            ctx.fail(f"scales {scales} must be two positive numbers")
        sizes = [int(ins[i] * scales[i]) for i in range(2)]
        if min(sizes) < 1:
            ctx.fail(f"scales {scales} give an empty output for input {shape_str(x.shape)}")
        opts["scales"] = list(scales)
    opts["sizes"] = list(sizes)
    out = list(x.shape)
    out[axes[0]], out[axes[1]] = sizes
    return [TT(x.dtype, out)]


define(
    "resample2d",
    ["input"],
    _resample,
    "Resize two consecutive dims `axes` (default [2, 3]) of a 4-D input by nearest-neighbor or linear "
    "interpolation to `sizes`, or floor(size * scales) (sizes win). bind fills both `sizes` and the "
    "effective `scales`. WebNN §7.6.28 resample2d().",
    options={
        "mode": (("nearest-neighbor", "linear"), "nearest-neighbor"),
        "scales": ("floats", None),
        "sizes": ("ints", None),
        "axes": ("ints", [2, 3]),
    },
)

# -------------------------------------------------------------------------------------------- recurrent

_ACTS = ("relu", "sigmoid", "tanh")
_DIRECTION = ("forward", "backward", "both")


def _rnn_common(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any], gates: int, cell: bool) -> tuple:
    """Check shapes shared by gru/lstm (cell=False) and their cells; returns (batch, hidden, num_dirs)."""
    x, w, r = t["input"], t["weight"], t["recurrentWeight"]
    dt = same_dtype(ctx, dict(t))
    dtype_in(ctx, x, "input", FLOAT)
    h = opts["hiddenSize"]
    if h < 1:
        ctx.fail(f"hiddenSize {h} must be positive")
    nd = 2 if opts.get("direction") == "both" else 1
    if cell:
        rank_is(ctx, x, "input", 2)
        batch, in_size = x.shape
        lead: tuple = ()
    else:
        rank_is(ctx, x, "input", 3)
        steps, batch, in_size = x.shape
        if opts["steps"] != steps:
            ctx.fail(f"steps={opts['steps']} but input {shape_str(x.shape)} has {steps} steps")
        lead = (nd,)
    shape_is(ctx, w, "weight", (*lead, gates * h, in_size))
    shape_is(ctx, r, "recurrentWeight", (*lead, gates * h, h))
    shape_is(ctx, t.get("bias"), "bias", (*lead, gates * h))
    shape_is(ctx, t.get("recurrentBias"), "recurrentBias", (*lead, gates * h))
    shape_is(ctx, t.get("peepholeWeight"), "peepholeWeight", (*lead, 3 * h))
    state = (*lead, batch, h)
    for role in ("initialHiddenState", "initialCellState", "hiddenState", "cellState"):
        shape_is(ctx, t.get(role), role, state)
    acts = opts["activations"]
    want = 2 if gates == 3 else 3
    if len(acts) != want:
        ctx.fail(f"activations {acts} must list {want} functions")
    return dt, batch, h, nd


def _gru(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dt, batch, h, nd = _rnn_common(ctx, t, opts, 3, cell=False)
    outs = [TT(dt, (nd, batch, h))]
    if opts["returnSequence"]:
        outs.append(TT(dt, (opts["steps"], nd, batch, h)))
    return outs


def _lstm(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dt, batch, h, nd = _rnn_common(ctx, t, opts, 4, cell=False)
    outs = [TT(dt, (nd, batch, h)), TT(dt, (nd, batch, h))]
    if opts["returnSequence"]:
        outs.append(TT(dt, (opts["steps"], nd, batch, h)))
    return outs


def _gru_cell(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dt, batch, h, _ = _rnn_common(ctx, t, opts, 3, cell=True)
    return [TT(dt, (batch, h))]


def _lstm_cell(ctx: Ctx, t: dict[str, Any], opts: dict[str, Any]) -> list:
    dt, batch, h, _ = _rnn_common(ctx, t, opts, 4, cell=True)
    return [TT(dt, (batch, h)), TT(dt, (batch, h))]


_GRU_OPTS = {
    "hiddenSize": ("int", REQUIRED),
    "resetAfter": ("bool", True),
    "layout": (("zrn", "rzn"), "zrn"),
    "activations": ([_ACTS], ["sigmoid", "tanh"]),
}
_LSTM_OPTS = {
    "hiddenSize": ("int", REQUIRED),
    "layout": (("iofg", "ifgo"), "iofg"),
    "activations": ([_ACTS], ["sigmoid", "tanh", "tanh"]),
}
_SEQ_OPTS = {
    "steps": ("int", REQUIRED),
    "returnSequence": ("bool", False),
    "direction": (_DIRECTION, "forward"),
}

define(
    "gru",
    ["input", "weight", "recurrentWeight"],
    _gru,
    "Gated recurrent unit over input [steps, batch, inputSize] with weights [dirs, 3*hidden, ...] in "
    "`layout` (zrn|rzn); outputs the last hidden state [dirs, batch, hidden] and, with returnSequence, "
    "every step's [steps, dirs, batch, hidden]. steps and hiddenSize are named options. "
    "WebNN §7.6.13 gru().",
    operand_options=["bias", "recurrentBias", "initialHiddenState"],
    options={**_GRU_OPTS, **_SEQ_OPTS},
    num_outputs=lambda o: 2 if o["returnSequence"] else 1,
)
define(
    "gruCell",
    ["input", "weight", "recurrentWeight", "hiddenState"],
    _gru_cell,
    "One GRU step: input [batch, inputSize], hiddenState [batch, hidden], weights [3*hidden, ...]; "
    "outputs the new hidden state [batch, hidden]. WebNN §7.6.14 gruCell().",
    operand_options=["bias", "recurrentBias"],
    options=dict(_GRU_OPTS),
)
define(
    "lstm",
    ["input", "weight", "recurrentWeight"],
    _lstm,
    "Long short-term memory over input [steps, batch, inputSize] with weights [dirs, 4*hidden, ...] in "
    "`layout` (iofg|ifgo); outputs last hidden and cell state [dirs, batch, hidden] and, with "
    "returnSequence, every step's hidden state [steps, dirs, batch, hidden]. WebNN §7.6.20 lstm().",
    operand_options=["bias", "recurrentBias", "peepholeWeight", "initialHiddenState", "initialCellState"],
    options={**_LSTM_OPTS, **_SEQ_OPTS},
    num_outputs=lambda o: 3 if o["returnSequence"] else 2,
)
define(
    "lstmCell",
    ["input", "weight", "recurrentWeight", "hiddenState", "cellState"],
    _lstm_cell,
    "One LSTM step: input [batch, inputSize], hidden and cell state [batch, hidden], weights "
    "[4*hidden, ...]; outputs the new hidden and cell state. WebNN §7.6.21 lstmCell().",
    operand_options=["bias", "recurrentBias", "peepholeWeight"],
    options=dict(_LSTM_OPTS),
    num_outputs=2,
)
