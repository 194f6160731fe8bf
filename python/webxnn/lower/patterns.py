"""Pass 3b, patterns (on WebNN-level nodes, after `decompose` and `fold`): recognise sub-graphs that exporters
write out op by op and replace them with the one op that computes them.

  * GELU, erf form: x·0.5·(1 + erf(x/√2)) (div by √2 or mul by 1/√2; the three factors multiplied in any
    order) → `gelu` (XNNGelu);
  * layer norm written out: (x - mean(x)) / sqrt(mean((x - mean(x))²) + eps) [· γ] [+ β] (the square as pow 2
    or d·d, the division also as d·(1/s)) → `layerNormalization` (WXNormalize);
  * attention scale: mul/div of QKᵀ (a matmul of computed operands) by a scalar constant, when Q comes from a
    matmul with constant weights [+ constant bias] through reshapes/transposes only → the scale is folded
    into those weights and bias.

Every intermediate must be read only by the pattern (and not be a graph output); constants are compared
with a relative tolerance, since exporters round 1/√2 and friends differently. Anything that does not match
exactly this shape is left alone."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..graph import DTYPES
from .ir import LGraph, LNode
from .registry import operand

RTOL = 1e-4
MOVES = ("reshape", "transpose")


class _Uses:
    """Producers and readers of every value, kept only as long as the graph is not rewritten."""

    def __init__(self, lg: LGraph) -> None:
        self.lg = lg
        self.producer: dict[str, LNode] = {o: n for n in lg.nodes for o in n.outputs}
        self.readers: dict[str, list[LNode]] = {}
        for n in lg.nodes:
            for i in dict.fromkeys(n.inputs):
                self.readers.setdefault(i, []).append(n)
        self.outputs = lg.output_values()

    def only_reader(self, name: str) -> LNode | None:
        """The one node that reads `name`, when there is exactly one and `name` is not a graph output."""
        rs = self.readers.get(name, [])
        return rs[0] if len(rs) == 1 and name not in self.outputs else None

    def private(self, name: str, *readers: LNode) -> bool:
        """`name` is read by exactly `readers` (and is not a graph output)."""
        rs = self.readers.get(name, [])
        return name not in self.outputs and {id(r) for r in rs} == {id(r) for r in readers}

    def made_by(self, name: str | None, *kinds: str) -> LNode | None:
        n = None if name is None else self.producer.get(name)
        return n if n is not None and n.kind in kinds and len(n.outputs) == 1 else None

    def scalar(self, name: str | None) -> float | None:
        """The value of a constant that holds one number (any rank), else None."""
        if name is None:
            return None
        v = self.lg.values[name]
        if v.const is None or v.const.size != 1 or v.dtype not in ("float32", "float16"):
            return None
        return float(v.const.reshape(-1)[0])


def _near(got: float | None, want: float) -> bool:
    return got is not None and math.isclose(got, want, rel_tol=RTOL, abs_tol=0.0)


def _ab(node: LNode) -> tuple[str, str]:
    return operand(node, "a", 0), operand(node, "b", 1)


def _other(node: LNode, mine: str) -> str | None:
    """The other operand of binary `node` when one of them is `mine`."""
    a, b = _ab(node)
    if a == mine:
        return b
    return a if b == mine else None


def _same_shape(lg: LGraph, x: str, y: str) -> bool:
    return tuple(lg.values[x].shape) == tuple(lg.values[y].shape)


# ---------------------------------------------------------------------------------------------- GELU


def _gelu_at(u: _Uses, erf: LNode) -> tuple[str, LNode] | None:
    """(x, the node whose output is gelu(x)) for the erf node of an erf-form GELU."""
    lg = u.lg
    d = operand(erf, "input", 0)
    scale = u.made_by(d, "div", "mul")
    if scale is None or not u.private(d, erf):
        return None
    a, b = _ab(scale)
    if scale.kind == "div":
        x = a if _near(u.scalar(b), math.sqrt(2.0)) else None
    else:
        x = a if _near(u.scalar(b), math.sqrt(0.5)) else b if _near(u.scalar(a), math.sqrt(0.5)) else None
    if x is None or lg.values[x].dtype != "float32" or not _same_shape(lg, x, d):
        return None
    e = erf.outputs[0]
    add = u.only_reader(e)
    if add is None or add.kind != "add" or not _near(u.scalar(_other(add, e)), 1.0):
        return None
    p = add.outputs[0]  # 1 + erf(x/√2)
    m1 = u.only_reader(p)
    if m1 is None or m1.kind != "mul" or not _same_shape(lg, x, p):
        return None
    q = _other(m1, p)
    if q is None or q == p:
        return None
    half = u.scalar(q)
    if _near(half, 0.5) or q == x:
        # (p·0.5)·x or (p·x)·0.5
        m2 = u.only_reader(m1.outputs[0])
        if m2 is None or m2.kind != "mul":
            return None
        r = _other(m2, m1.outputs[0])
        ok = r == x if q != x else _near(u.scalar(r), 0.5)
        return (x, m2) if ok and _same_shape(lg, x, m2.outputs[0]) else None
    # p·(x·0.5)
    h = u.made_by(q, "mul")
    if h is None or not u.private(q, m1) or _other(h, x) is None or not _near(u.scalar(_other(h, x)), 0.5):
        return None
    return (x, m1) if _same_shape(lg, x, m1.outputs[0]) else None


# ---------------------------------------------------------------------------------------------- layer norm


def _mean_axes(lg: LGraph, node: LNode) -> list[int] | None:
    """The (sorted, non-negative) axes of a dims-keeping reduceMean."""
    if node.kind != "reduceMean" or not node.attrs.get("keepDimensions"):
        return None
    rank = lg.values[operand(node, "input", 0)].rank
    axes = node.attrs.get("axes")
    return sorted({int(a) % rank for a in (range(rank) if axes is None else axes)}) if rank else None


def _per_axes(lg: LGraph, name: str | None, x: str, axes: list[int]) -> np.ndarray | None:
    """A constant that only varies along `axes` of x, as an array of x's dims at `axes` (scale/bias form)."""
    if name is None:
        return None
    v, xs = lg.values[name], lg.values[x].shape
    if v.const is None or v.rank > len(xs):
        return None
    shape = (1,) * (len(xs) - v.rank) + tuple(v.shape)
    if any(d != 1 and (i not in axes or d != xs[i]) for i, d in enumerate(shape)):
        return None
    data = np.broadcast_to(v.const.reshape(shape), tuple(xs[i] if i in axes else 1 for i in range(len(xs))))
    return np.ascontiguousarray(data.reshape([int(xs[i]) for i in axes]))


def _layer_norm_at(
    u: _Uses, mean: LNode
) -> tuple[str, list[int], float, LNode, LNode, str | None, str | None] | None:
    """For the first reduceMean of a written-out layer norm: (x, axes, eps, the normalising node, the last
    node, γ name, β name)."""
    lg = u.lg
    axes = _mean_axes(lg, mean)
    x = operand(mean, "input", 0)
    if axes is None or lg.values[x].dtype != "float32":
        return None
    m = mean.outputs[0]
    sub = u.only_reader(m)
    if sub is None or sub.kind != "sub" or _ab(sub) != (x, m) or not _same_shape(lg, x, sub.outputs[0]):
        return None
    d = sub.outputs[0]
    readers = u.readers.get(d, [])
    if len(readers) != 2 or d in u.outputs:
        return None
    sq = next(
        (
            r
            for r in readers
            if (r.kind == "pow" and _ab(r)[0] == d and _near(u.scalar(_ab(r)[1]), 2.0))
            or (r.kind == "mul" and _ab(r) == (d, d))
        ),
        None,
    )
    if sq is None:
        return None
    norm = next(r for r in readers if r is not sq)
    var = u.only_reader(sq.outputs[0])
    if var is None or _mean_axes(lg, var) != axes:
        return None
    add = u.only_reader(var.outputs[0])
    eps = None if add is None or add.kind != "add" else u.scalar(_other(add, var.outputs[0]))
    if add is None or eps is None or eps < 0:
        return None
    sqrt = u.only_reader(add.outputs[0])
    if sqrt is None or sqrt.kind != "sqrt":
        return None
    s = sqrt.outputs[0]
    if norm.kind == "div":
        if _ab(norm) != (d, s) or not u.private(s, norm):
            return None
    elif norm.kind == "mul":  # d · (1 / s)
        r = u.only_reader(s)
        if (
            r is None
            or r.kind != "div"
            or _ab(r)[1] != s
            or not _near(u.scalar(_ab(r)[0]), 1.0)
            or _other(norm, d) != r.outputs[0]
            or not u.private(r.outputs[0], norm)
        ):
            return None
    else:
        return None
    last, gamma, beta = norm, None, None
    nxt = u.only_reader(last.outputs[0])
    if nxt is not None and nxt.kind == "mul":
        g = _other(nxt, last.outputs[0])
        if _per_axes(lg, g, x, axes) is not None and _same_shape(lg, x, nxt.outputs[0]):
            last, gamma = nxt, g
            nxt = u.only_reader(last.outputs[0])
    if nxt is not None and nxt.kind == "add":
        bb = _other(nxt, last.outputs[0])
        if _per_axes(lg, bb, x, axes) is not None and _same_shape(lg, x, nxt.outputs[0]):
            last, beta = nxt, bb
    if not _same_shape(lg, x, last.outputs[0]):
        return None
    return x, axes, eps, norm, last, gamma, beta


# ---------------------------------------------------------------------------------------------- attention


def _fc_source(u: _Uses, name: str, reader: LNode) -> tuple[LNode, LNode | None] | None:
    """(matmul with constant weights, its constant-bias add or None) that `name` (read only by `reader`) is
    computed from through reshapes/transposes, every step read only by the next."""
    lg = u.lg
    if u.only_reader(name) is not reader:
        return None
    node = u.made_by(name, *MOVES)
    while node is not None:
        name = operand(node, "input", 0)
        if u.only_reader(name) is not node:
            return None
        node = u.made_by(name, *MOVES)
    bias = u.made_by(name, "add")
    if bias is not None:
        a, b = _ab(bias)
        y, c = (b, a) if lg.is_const(a) else (a, b)
        if not lg.is_const(c) or lg.is_const(y) or u.only_reader(y) is not bias:
            return None
        name = y
    mm = u.made_by(name, "matmul")
    if (
        mm is None
        or not lg.is_const(_ab(mm)[1])
        or lg.is_const(_ab(mm)[0])
        or lg.values[_ab(mm)[1]].dtype != "float32"
    ):
        return None
    return mm, bias


def _fold_scale(u: _Uses, scale: LNode) -> bool:
    """mul/div(QKᵀ, scalar) with Q from a constant-weight matmul: scale those weights instead."""
    lg = u.lg
    a, b = _ab(scale)
    if scale.kind == "div":
        s = u.scalar(b)
        y, s = a, (None if s is None or s == 0.0 else 1.0 / s)
    else:
        y, s = (a, u.scalar(b)) if u.scalar(b) is not None else (b, u.scalar(a))
    qk = u.made_by(y, "matmul")
    if (
        s is None
        or not math.isfinite(s)
        or qk is None
        or u.only_reader(y) is not scale
        or not _same_shape(lg, y, scale.outputs[0])
    ):
        return False
    qa, qb = _ab(qk)
    if lg.is_const(qa) or lg.is_const(qb) or qa == qb:  # q·q: scaling q would scale the product twice
        return False
    for side in (qa, qb):
        src = _fc_source(u, side, qk)
        if src is None:
            continue
        mm, bias = src
        w = _ab(mm)[1]
        wv = lg.values[w]
        scaled = (wv.const.astype(np.float64) * s).astype(wv.const.dtype)
        mm.replace_input(w, lg.add_const(f"{w}.scaled", scaled, wv.dtype, half=wv.half))
        if bias is not None:
            c = next(i for i in _ab(bias) if lg.is_const(i))
            cv = lg.values[c]
            scaled = (cv.const.astype(np.float64) * s).astype(DTYPES[cv.dtype])
            bias.replace_input(c, lg.add_const(f"{c}.scaled", scaled, cv.dtype, half=cv.half))
        # fp16-born weights stay fp16 in the blob when the scaling kept them exact (`store_half` checks)
        lg.replace_uses(scale.outputs[0], y)
        return True
    return False


# ---------------------------------------------------------------------------------------------- the pass


def patterns(lg: LGraph) -> LGraph:
    """Rewrite every match (one kind after another, each on a fresh use map)."""
    _rewrite_gelu(lg)
    _rewrite_layer_norm(lg)
    _rewrite_attention_scale(lg)
    return lg


def _replace(lg: LGraph, last: LNode, new: LNode) -> None:
    """`new` takes `last`'s place (and output); the rest of the matched nodes die as dead code."""
    lg.nodes[next(k for k, n in enumerate(lg.nodes) if n is last)] = new


def _rewrite_gelu(lg: LGraph) -> None:
    u = _Uses(lg)
    for node in list(lg.nodes):
        if node.kind != "erf":
            continue
        got = _gelu_at(u, node)
        if got is not None:
            x, last = got
            _replace(lg, last, LNode("gelu", {"input": x}, list(last.outputs), {}, last.src))
    lg.remove_dead()


def _rewrite_layer_norm(lg: LGraph) -> None:
    u = _Uses(lg)
    for node in list(lg.nodes):
        if node.kind != "reduceMean":
            continue
        got = _layer_norm_at(u, node)
        if got is None:
            continue
        x, axes, eps, _norm, last, gamma, beta = got
        operands: dict[str, Any] = {"input": x, "scale": None, "bias": None}
        for role, name in (("scale", gamma), ("bias", beta)):
            if name is not None:
                data = _per_axes(lg, name, x, axes)
                assert data is not None
                operands[role] = lg.add_const(f"{name}.ln", data, lg.values[name].dtype)
        _replace(
            lg,
            last,
            LNode(
                "layerNormalization", operands, list(last.outputs), {"axes": axes, "epsilon": eps}, last.src
            ),
        )
    lg.remove_dead()


def _rewrite_attention_scale(lg: LGraph) -> None:
    u = _Uses(lg)
    for node in list(lg.nodes):
        if node.kind in ("mul", "div") and _fold_scale(u, node):
            lg.remove_dead()
            u = _Uses(lg)  # a fold moved readers: start from a fresh map
