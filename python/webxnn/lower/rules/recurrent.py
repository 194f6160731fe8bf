"""gru, gruCell, lstm, lstmCell → matmul / add / mul / sub / activations / slice / reshape / concat, one
cell per time step and direction (steps are static), following the WebNN spec's decomposition
(§7.6.13-14, §7.6.20-21). Weights are constants in practice, so `fold` slices and transposes them at compile
time and each gate's matmul becomes an XNNFullyConnected."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import DTYPES, Dim
from ..ir import LGraph, LNode
from ..registry import decomposes, operand

# gate → position in the weight/bias rows, per layout
GRU_GATES = {"zrn": {"z": 0, "r": 1, "n": 2}, "rzn": {"r": 0, "z": 1, "n": 2}}
LSTM_GATES = {"iofg": {"i": 0, "o": 1, "f": 2, "g": 3}, "ifgo": {"i": 0, "f": 1, "g": 2, "o": 3}}
PEEPHOLE = {"i": 0, "o": 1, "f": 2}


class _Nodes:
    """Appends WebNN-level nodes that replace `node` (values in the node's float type)."""

    def __init__(self, graph: LGraph, node: LNode) -> None:
        self.graph, self.node, self.nodes = graph, node, []
        self.dtype = graph.values[node.outputs[0]].dtype

    def shape(self, name: str) -> tuple[Dim, ...]:
        return self.graph.values[name].shape

    def op(
        self, kind: str, operands: dict[str, Any], shape: tuple, out: str | None = None, **attrs: Any
    ) -> str:
        name = out or self.graph.add_value(f"{self.node.outputs[0]}.{kind}", self.dtype, shape)
        self.nodes.append(LNode(kind, operands, [name], attrs, self.node.src))
        return name

    def const(self, data: np.ndarray) -> str:
        arr = np.asarray(data, dtype=DTYPES[self.dtype], order="C")
        return self.graph.add_const(f"{self.node.outputs[0]}.k", arr, self.dtype)

    def slice(self, x: str, starts: list[int], sizes: list[int]) -> str:
        return self.op("slice", {"input": x}, tuple(sizes), starts=starts, sizes=sizes, strides=None)

    def reshape(self, x: str, shape: tuple, out: str | None = None) -> str:
        if tuple(self.shape(x)) == tuple(shape) and out is None:
            return x
        return self.op("reshape", {"input": x}, shape, out, newShape=list(shape))

    def rows(self, x: str | None, gate: int, h: int) -> str | None:
        """Rows gate·h .. gate·h + h of a [k·h, ...] weight or [k·h] bias."""
        if x is None:
            return None
        shape = self.shape(x)
        return self.slice(x, [gate * h] + [0] * (len(shape) - 1), [h, *shape[1:]])

    def matmul_t(self, a: str, w: str) -> str:
        """a @ wᵀ for a [B, K] and w [N, K]."""
        wt = self.op("transpose", {"input": w}, (self.shape(w)[1], self.shape(w)[0]), permutation=[1, 0])
        return self.op("matmul", {"a": a, "b": wt}, (self.shape(a)[0], self.shape(w)[0]))

    def bin(self, kind: str, a: str | None, b: str | None, out: str | None = None) -> str | None:
        """a (kind) b, where a missing operand of an add is the spec's zero."""
        if a is None or b is None:
            assert kind == "add" and out is None
            return a if b is None else b
        shape = np.broadcast_shapes(tuple(self.shape(a)), tuple(self.shape(b)))
        return self.op(kind, {"a": a, "b": b}, shape, out)

    def act(self, fn: str, x: str, out: str | None = None) -> str:
        return self.op(fn, {"input": x}, self.shape(x), out)


def _gru_cell(
    b: _Nodes,
    x: str,
    w: str,
    r: str,
    h: str,
    bias: str | None,
    rbias: str | None,
    attrs: dict[str, Any],
    out: str | None = None,
) -> str:
    hs = int(attrs["hiddenSize"])
    gates = GRU_GATES[attrs.get("layout") or "zrn"]
    f, g = attrs.get("activations") or ["sigmoid", "tanh"]
    reset_after = attrs.get("resetAfter", True)
    reset_after = True if reset_after is None else bool(reset_after)

    def pre(name: str) -> str:
        k = gates[name]
        s = b.bin("add", b.rows(bias, k, hs), b.rows(rbias, k, hs))
        mm = b.bin("add", b.matmul_t(x, b.rows(w, k, hs)), b.matmul_t(h, b.rows(r, k, hs)))
        return b.bin("add", s, mm) if s is not None else mm  # type: ignore[return-value]

    pz = pre("z")
    z = b.act(f, pz)
    rr = b.act(f, pre("r"))
    k = gates["n"]
    xn = b.matmul_t(x, b.rows(w, k, hs))
    if reset_after:
        hn = b.bin("add", b.rows(rbias, k, hs), b.matmul_t(h, b.rows(r, k, hs)))
        inner = b.bin("add", xn, b.bin("mul", rr, hn))
        pre = b.bin("add", b.rows(bias, k, hs), inner)
    else:
        s = b.bin("add", b.rows(bias, k, hs), b.rows(rbias, k, hs))
        inner = b.bin("add", xn, b.matmul_t(b.bin("mul", rr, h), b.rows(r, k, hs)))
        pre = b.bin("add", s, inner)
    n = b.act(g, pre)
    if f == "sigmoid":
        # 1 - sigmoid(p) = sigmoid(-p): in float32, 1 - z loses z's relative precision when z is near 1
        one_minus_z = b.act("sigmoid", b.act("neg", pz))
    else:
        one_minus_z = b.bin("sub", b.const(np.array(1.0)), z)
    return b.bin("add", b.bin("mul", z, h), b.bin("mul", n, one_minus_z), out)


def _lstm_cell(
    b: _Nodes,
    x: str,
    w: str,
    r: str,
    h: str,
    c: str,
    bias: str | None,
    rbias: str | None,
    peep: str | None,
    attrs: dict[str, Any],
    outs: tuple[str | None, str | None] = (None, None),
) -> tuple[str, str]:
    hs = int(attrs["hiddenSize"])
    gates = LSTM_GATES[attrs.get("layout") or "iofg"]
    f_act, g_act, h_act = attrs.get("activations") or ["sigmoid", "tanh", "tanh"]

    def gate(name: str, fn: str) -> str:
        k = gates[name]
        s = b.bin("add", b.rows(bias, k, hs), b.rows(rbias, k, hs))
        mm = b.bin("add", b.matmul_t(x, b.rows(w, k, hs)), b.matmul_t(h, b.rows(r, k, hs)))
        pre = b.bin("add", s, mm) if s is not None else mm
        if name in PEEPHOLE and peep is not None:
            pre = b.bin("add", b.bin("mul", c, b.rows(peep, PEEPHOLE[name], hs)), pre)
        return b.act(fn, pre)

    i, f, g, o = gate("i", f_act), gate("f", f_act), gate("g", g_act), gate("o", f_act)
    ct = b.bin("add", b.bin("mul", f, c), b.bin("mul", i, g), outs[1])
    ht = b.bin("mul", o, b.act(h_act, ct), outs[0])
    return ht, ct


def _roles(node: LNode, names: tuple[str, ...]) -> list[Any]:
    return [operand(node, r) for r in names]


@decomposes("gruCell")
def decompose_gru_cell(graph: LGraph, node: LNode) -> list[LNode]:
    b = _Nodes(graph, node)
    x, w, r, h, bias, rbias = _roles(
        node, ("input", "weight", "recurrentWeight", "hiddenState", "bias", "recurrentBias")
    )
    _gru_cell(b, x, w, r, h, bias, rbias, node.attrs, node.outputs[0])
    return b.nodes


@decomposes("lstmCell")
def decompose_lstm_cell(graph: LGraph, node: LNode) -> list[LNode]:
    b = _Nodes(graph, node)
    x, w, r, h, c, bias, rbias, peep = _roles(
        node,
        (
            "input",
            "weight",
            "recurrentWeight",
            "hiddenState",
            "cellState",
            "bias",
            "recurrentBias",
            "peepholeWeight",
        ),
    )
    _lstm_cell(b, x, w, r, h, c, bias, rbias, peep, node.attrs, (node.outputs[0], node.outputs[1]))
    return b.nodes


def _direction_slice(b: _Nodes, x: str | None, d: int) -> str | None:
    """[D, ...] → the [...] of direction d."""
    if x is None:
        return None
    shape = b.shape(x)
    return b.reshape(b.slice(x, [d] + [0] * (len(shape) - 1), [1, *shape[1:]]), tuple(shape[1:]))


def _sequence(graph: LGraph, node: LNode, lstm: bool) -> list[LNode]:
    """The spec's loop: per step, per direction, one cell on that step's input; states concatenated over
    directions; the sequence output concatenates each step's states in step order."""
    b = _Nodes(graph, node)
    a = node.attrs
    x, w, r = _roles(node, ("input", "weight", "recurrentWeight"))
    bias, rbias, peep, h0, c0 = _roles(
        node, ("bias", "recurrentBias", "peepholeWeight", "initialHiddenState", "initialCellState")
    )
    steps, batch, in_size = (int(d) for d in b.shape(x))
    hs = int(a["hiddenSize"])
    dirs = 2 if a.get("direction") == "both" else 1
    backward = a.get("direction") == "backward"
    zeros = None

    def state(init: str | None, d: int) -> str:
        nonlocal zeros
        if init is not None:
            return _direction_slice(b, init, d)  # type: ignore[return-value]
        if zeros is None:
            zeros = b.const(np.zeros((batch, hs)))
        return zeros

    hidden = [state(h0, d) for d in range(dirs)]
    cell = [state(c0, d) for d in range(dirs)] if lstm else []
    per_dir = [tuple(_direction_slice(b, t, d) for t in (w, r, bias, rbias, peep)) for d in range(dirs)]
    want_seq = bool(a.get("returnSequence"))
    out_h, out_c = node.outputs[0], node.outputs[1] if lstm else None
    out_seq = node.outputs[-1] if want_seq else None
    # the sequence output holds each direction's state at the time index it was computed for (a backward
    # direction's first step fills the last row), as webnn-baseline and the WPT data do
    at_time: dict[int, list[str]] = {t: [""] * dirs for t in range(steps)}
    for step in range(steps):
        for d in range(dirs):
            t = steps - step - 1 if (d == 1 or backward) else step
            xt = b.reshape(b.slice(x, [t, 0, 0], [1, batch, in_size]), (batch, in_size))
            wd, rd, bd, rbd, pd = per_dir[d]
            if lstm:
                hidden[d], cell[d] = _lstm_cell(b, xt, wd, rd, hidden[d], cell[d], bd, rbd, pd, a)
            else:
                hidden[d] = _gru_cell(b, xt, wd, rd, hidden[d], bd, rbd, a)
            at_time[t][d] = hidden[d]
    seq_parts: list[str] = []
    if want_seq:
        for t in range(steps):
            parts = [b.reshape(hd, (1, 1, batch, hs)) for hd in at_time[t]]
            seq_parts.append(
                parts[0] if dirs == 1 else b.op("concat", {"inputs": parts}, (1, dirs, batch, hs), axis=1)
            )

    def stack(states: list[str], out: str) -> None:
        parts = [b.reshape(s, (1, batch, hs)) for s in states]
        if dirs == 1:
            b.reshape(parts[0], (1, batch, hs), out=out)
        else:
            b.op("concat", {"inputs": parts}, (dirs, batch, hs), out, axis=0)

    stack(hidden, out_h)
    if lstm:
        stack(cell, out_c)  # type: ignore[arg-type]
    if out_seq is not None:
        if len(seq_parts) == 1:
            b.reshape(seq_parts[0], (1, dirs, batch, hs), out=out_seq)
        else:
            b.op("concat", {"inputs": seq_parts}, (steps, dirs, batch, hs), out_seq, axis=0)
    return b.nodes


@decomposes("gru")
def decompose_gru(graph: LGraph, node: LNode) -> list[LNode]:
    return _sequence(graph, node, lstm=False)


@decomposes("lstm")
def decompose_lstm(graph: LGraph, node: LNode) -> list[LNode]:
    return _sequence(graph, node, lstm=True)
