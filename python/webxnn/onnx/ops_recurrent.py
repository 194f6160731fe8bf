"""ONNX LSTM and GRU → WebNN lstm / gru; RNN as a gru whose gates are held open (see _rnn_as_gru).

The layouts agree: ONNX's gate orders (LSTM i o f c, GRU z r h) are WebNN's `iofg` and `zrn`, and the
outputs ([steps, dirs, batch, hidden] sequence, [dirs, batch, hidden] last states) are WebNN's. ONNX's
bias B holds the input and recurrent biases side by side; batch-major models (layout=1) are transposed in
and out. Clipping, input_forget, per-direction activations that differ, real sequence_lens and peepholes
(whose output gate reads another cell state than WebNN's) are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from ..graph import DTYPES
from .convert import Converter, attrs_of, text, where
from .registry import onnx_op

_ACTS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}
_DIRECTIONS = {"forward": "forward", "reverse": "backward", "bidirectional": "both"}


def _activations(a: dict[str, Any], dirs: int, default: list[str]) -> list[str] | None:
    """WebNN activations for ONNX's list (one set per direction), None for the default."""
    if a.get("activation_alpha") is not None or a.get("activation_beta") is not None:
        raise UnsupportedError("recurrent activations with alpha/beta")
    names = [text(v) for v in a.get("activations") or []]
    if not names:
        return None
    per = len(names) // dirs
    if dirs == 2 and names[:per] != names[per:]:
        raise UnsupportedError(f"different activations per direction {names}")
    got = []
    for nm in names[:per]:
        if nm not in _ACTS:
            raise UnsupportedError(f"recurrent activation {nm!r}")
        got.append(_ACTS[nm])
    return None if got == default else got


@onnx_op("LSTM", "GRU", "RNN")
def recurrent(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    lstm = node.op_type == "LSTM"
    rnn = node.op_type == "RNN"
    gates = 4 if lstm else 3
    if a.get("clip") is not None:
        raise UnsupportedError(f"{node.op_type} clip")
    if lstm and int(a.get("input_forget", 0)):
        raise UnsupportedError("LSTM input_forget=1")
    direction = _DIRECTIONS.get(text(a.get("direction", "forward")))
    if direction is None:
        raise UnsupportedError(f"direction {a['direction']!r}")
    dirs = 2 if direction == "both" else 1
    batch_major = bool(int(a.get("layout", 0)))
    for i, what in ((0, "X"), (1, "W"), (2, "R")):
        if ctx.rank(node.input[i]) != 3:
            raise ValidationError(
                f"{where(node)}: input {i} ({what}) has rank {ctx.rank(node.input[i])}, not 3"
            )
    shape = ctx.static_shape(node.input[0], node.op_type)
    steps, batch = (shape[1], shape[0]) if batch_major else (shape[0], shape[1])
    hidden = int(a.get("hidden_size") or ctx.static_shape(node.input[2], node.op_type)[-1])
    if ctx.has(node, 4):
        lens = ctx.const_input(node, 4, "sequence_lens")
        if not (np.asarray(lens) == steps).all():
            raise UnsupportedError("sequence_lens shorter than the sequence")
    x = ctx.x(node, 0)
    if batch_major:
        x = ctx.emit("transpose", [x], {"permutation": [1, 0, 2]})
    opts: dict[str, Any] = {
        "hiddenSize": hidden,
        "steps": steps,
        "direction": direction,
        "returnSequence": bool(node.output[0]),
    }
    if rnn:
        acts = ["sigmoid", *(_activations(a, dirs, ["tanh"]) or ["tanh"])]
        opts["activations"] = acts
    else:
        acts = _activations(a, dirs, ["sigmoid", "tanh", "tanh"] if lstm else ["sigmoid", "tanh"])
        if acts is not None:
            opts["activations"] = acts
    if not lstm:
        opts["resetAfter"] = bool(int(a.get("linear_before_reset", 0)))
    weights = [ctx.x(node, 1), ctx.x(node, 2)]
    if rnn:
        weights = _rnn_as_gru(ctx, node, hidden, dirs, opts)
    elif ctx.has(node, 3):
        opts["bias"], opts["recurrentBias"] = _split_bias(ctx, node, gates * hidden)
    states = [(5, "initialHiddenState")] + ([(6, "initialCellState")] if lstm else [])
    for i, role in states:
        if ctx.has(node, i):
            s = ctx.x(node, i)
            opts[role] = ctx.emit("transpose", [s], {"permutation": [1, 0, 2]}) if batch_major else s
    if lstm and ctx.has(node, 7):
        if not (ctx.is_const(node.input[7]) and not np.asarray(ctx.const(node.input[7])).any()):
            raise UnsupportedError(
                "LSTM peepholes: ONNX's output gate reads the new cell state, WebNN's the previous one"
            )
    _emit(ctx, node, "lstm" if lstm else "gru", [x, *weights], opts, batch_major)


def _rnn_as_gru(ctx: Converter, node: Any, hidden: int, dirs: int, opts: dict[str, Any]) -> list[str]:
    """A simple RNN, H = f(X W + H R + Wb + Rb), is a GRU whose update gate is 0 and reset gate 1: zero
    weights and biases of -/+1e4 for those gates (sigmoid gives exactly 0 and 1), the RNN's weights for
    the candidate. Returns the GRU's weight and recurrent weight (zrn layout); sets the biases."""
    dt = DTYPES[ctx.dtype(node.input[1])]
    z = np.zeros((dirs, hidden), dt)
    big = np.full((dirs, hidden), 1e4, dt)
    if ctx.has(node, 3):
        b, rb = _split_bias(ctx, node, hidden)
    else:
        b = rb = ctx.new_const(f"{ctx.namer.of(node.output[0] or node.output[1])}/zero_bias", z)
    opts["bias"] = _gates(ctx, node, [-big, big], b, "bias")
    opts["recurrentBias"] = _gates(ctx, node, [z, z], rb, "recurrent_bias")
    return [
        _gates(ctx, node, [np.zeros((dirs, hidden, d), dt)] * 2, ctx.x(node, i), what)
        for i, what, d in (
            (1, "weight", ctx.static_shape(node.input[1], "RNN")[2]),
            (2, "recurrent_weight", hidden),
        )
    ]


def _gates(ctx: Converter, node: Any, fixed: list[np.ndarray], last: str, what: str) -> str:
    """Constant gate blocks `fixed` followed by operand `last`, along the gate axis (1)."""
    base = ctx.namer.of(node.output[0] or node.output[1])
    parts = [ctx.new_const(f"{base}/{what}_gate{k}", f) for k, f in enumerate(fixed)]
    return ctx.emit("concat", [*parts, last], {"axis": 1})


def _split_bias(ctx: Converter, node: Any, n: int) -> tuple[str, str]:
    """ONNX B [dirs, 2n] as WebNN's bias and recurrentBias [dirs, n]."""
    name = node.input[3]
    shape = list(ctx.shape(name))
    if len(shape) != 2 or shape[1] != 2 * n:
        raise ValidationError(f"{where(node)}: B has shape {shape}, expected [num_directions, {2 * n}]")
    if ctx.is_const(name):
        return (
            ctx.derived_const(name, "input_bias", lambda b: np.ascontiguousarray(b[:, :n])),
            ctx.derived_const(name, "recurrent_bias", lambda b: np.ascontiguousarray(b[:, n:])),
        )
    outs = [f"{node.output[0] or node.name}__bias{k}" for k in range(2)]
    ctx.emit("split", [ctx.x(node, 3)], {"splits": [n, n], "axis": 1}, out=outs)
    return ctx.operand(outs[0]), ctx.operand(outs[1])


def _emit(
    ctx: Converter, node: Any, op: str, ins: list[str], opts: dict[str, Any], batch_major: bool
) -> None:
    """WebNN's outputs are (last hidden, [last cell,] [sequence]); ONNX's are (Y, Y_h[, Y_c])."""
    base = next(o for o in node.output if o)
    onnx_states = list(node.output[1:3] if op == "lstm" else node.output[1:2])
    n_states = 2 if op == "lstm" else 1
    onnx_states += [""] * (n_states - len(onnx_states))
    wanted = onnx_states + ([node.output[0]] if opts["returnSequence"] else [])
    outs = [f"{base}__{op}{k}" for k in range(len(wanted))]
    ctx.emit(op, ins, opts, out=outs)
    for k, (onnx_name, tmp) in enumerate(zip(wanted, outs)):
        if not onnx_name:
            continue
        seq = k == n_states
        if batch_major:  # sequence [steps, dirs, batch, h] -> [batch, steps, dirs, h]; states likewise
            perm = [2, 0, 1, 3] if seq else [1, 0, 2]
            ctx.emit("transpose", [ctx.operand(tmp)], {"permutation": perm}, out=onnx_name)
        else:
            ctx.alias(onnx_name, tmp)
