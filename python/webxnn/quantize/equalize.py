"""Cross-layer equalization (CLE, Nagel et al. 2019, "Data-free quantization through weight equalization").

Two weighted layers joined by a positive-homogeneous activation f (f(x / s) = f(x) / s for s > 0: identity,
relu, prelu, leakyRelu) compute the same function when output channel i of the first is divided by s_i and
input channel i of the second is multiplied by s_i. With r1_i the range of the first layer's output channel
i and r2_i that of the second's input channel i, s_i = sqrt(r1_i / r2_i) makes both sqrt(r1_i * r2_i): the
per-channel ranges of each weight tensor move towards each other, which is what per-tensor weight
quantization needs (depthwise convs whose channel ranges span decades lose most of their bits otherwise).
A layer in two pairs is pulled both ways, so the sweep repeats until the scales settle.

relu6 (clamp(0, M), MobileNetV2) is not homogeneous: clamp(z / s, 0, M) = clamp(z, 0, M s) / s. AIMET swaps
it for relu, which changes the function. Here the pair is equalized exactly instead: the clamp keeps its
lower bound 0 and a `min` with the per-channel bound M / s_i follows it (`relu6="split"`, the default), or
the pair is left alone (`relu6="skip"`). The module test measures what each gives on MobileNetV2.

The layer model and graph helpers it shares with bias correction are in layers.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from ..graph import Graph, Node
from ..ops.base import BoundNode
from .layers import (
    Layer,
    add_const,
    clone_graph,
    dims,
    drop_unused_consts,
    find_layers,
    fresh_name,
    is_f32_const,
    owned_consts,
    readers_of,
    single_reader,
)

# f(x / s) = f(x) / s for every s > 0, whatever their other operands (prelu's slope, leakyRelu's alpha)
HOMOGENEOUS = frozenset({"relu", "prelu", "leakyRelu"})
RELU6_MODES = ("split", "skip")
_MAX_SWEEPS = 200
_TOL = 1e-4  # a sweep whose scales all lie within 1 +- _TOL ends the iteration


def fold_batch_norms(g: Graph) -> list[str]:
    """Fold each batchNormalization that alone reads a conv2d's output into that conv's filter and bias
    (W * k, (b - mean) * k + beta with k = scale / sqrt(variance + epsilon), per output channel), in place;
    returns the folded nodes' ids. The conv then holds the ranges CLE must see, and the pair conv -> BN ->
    relu -> conv becomes one CLE can equalize."""
    layers, bound, counts = find_layers(g)
    convs = {layer.out: layer for layer in layers if layer.op == "conv2d"}
    owned = owned_consts(layers, counts)
    folded = []
    for b in bound:
        layer = convs.get(b.operands["input"]) if b.op == "batchNormalization" else None
        if (
            layer is None
            or counts.get(layer.out) != 1
            or b.options["axis"] != (3 if layer.channels_last else 1)
        ):
            continue
        roles = ("mean", "variance", "scale", "bias")
        if not all(b.operands[r] is None or is_f32_const(g, b.operands[r]) for r in roles):
            continue
        mean, var, gamma, beta = (
            None if b.operands[r] is None else np.asarray(g.const_array(b.operands[r]), np.float64)
            for r in roles
        )
        assert mean is not None and var is not None
        if np.any(var + b.options["epsilon"] <= 0):
            continue
        k = (1.0 if gamma is None else gamma) / np.sqrt(var + b.options["epsilon"])
        shift = 0.0 if beta is None else beta
        layer.set_weight(g, layer.canonical(g.const_array(layer.weight)) * k[:, None, None, None], owned)
        layer.set_bias(g, (layer.bias_array(g) - mean) * k + shift, owned)
        out = b.outputs[0][0]
        layer.node.id, layer.node.outputs = out, [out]  # the conv now defines what the BN did
        g.nodes.remove(b.node)
        folded.append(b.node.id)
    return folded


# ------------------------------------------------------------------------------------------------ pairs


@dataclass
class Pair:
    first: Layer
    second: Layer
    between: list[Node]  # the per-channel ops between them (activations, pools), in order
    clamps: list[tuple[Node, float]]  # those that are relu6-style clamps, with their upper bound
    scale: np.ndarray  # accumulated s_i


def _passes_scale(b: BoundNode, first: Layer) -> tuple[bool, float | None, str]:
    """Whether f(x / s) = f(x) / s per channel for node `b` after `first`: (yes, relu6-style upper bound
    or None, why not)."""
    if b.op in HOMOGENEOUS:
        return True, None, ""
    if b.op == "clamp" and b.options["minValue"] == 0.0:
        hi = float(b.options["maxValue"])
        return True, (None if math.isinf(hi) else hi), ""
    if b.op in ("maxPool2d", "averagePool2d") and first.op == "conv2d":
        # a max or a mean over one channel's window commutes with that channel's scale
        same_layout = (b.options["layout"] == "nhwc") == first.channels_last
        return same_layout, None, "" if same_layout else f"{b.op} in another layout"
    return False, None, f"{b.op} between them is not positive-homogeneous"


_NOT_WORTH_SAYING = frozenset({"add", "reshape", "concat", "transpose", "softmax"})


def find_pairs(graph: Graph, relu6: str) -> tuple[list[Pair], list[dict[str, str]]]:
    """Consecutive layer pairs that can be equalized, and the near misses with the reason."""
    layers, bound, counts = find_layers(graph)
    by_node = {id(layer.node): layer for layer in layers}
    readers = readers_of(bound)
    pairs: list[Pair] = []
    skipped: list[dict[str, str]] = []
    for first in layers:
        value, between, clamps, why = first.out, [], [], ""
        nxt = single_reader(value, readers, counts)
        while nxt is not None and id(nxt.node) not in by_node:
            ok, hi, why = _passes_scale(nxt, first)
            if not ok:
                break
            between.append(nxt.node)
            if hi is not None:
                clamps.append((nxt.node, hi))
            value = nxt.outputs[0][0]
            nxt = single_reader(value, readers, counts)
        second = None if nxt is None or why else by_node.get(id(nxt.node))
        if second is None or second.input != value:
            if why and nxt is not None and nxt.op not in _NOT_WORTH_SAYING:
                skipped.append({"first": first.node.id, "reason": why})
            continue
        where = {"first": first.node.id, "second": second.node.id}
        why = _pair_problem(graph, first, second)
        if not why and clamps and relu6 == "skip":
            why = f"clamp(0, {clamps[0][1]:g}) between them is not homogeneous (relu6='skip')"
        if why:
            skipped.append({**where, "reason": why})
            continue
        pairs.append(Pair(first, second, between, clamps, np.ones(first.out_channels(graph))))
    return pairs, skipped


def _pair_problem(graph: Graph, first: Layer, second: Layer) -> str:
    if (first.op == "conv2d") != (second.op == "conv2d"):
        return "a conv and a gemm/matmul (their channels are on different axes)"
    if first.op == "conv2d" and first.channels_last != second.channels_last:
        return "their inputLayouts differ"
    if second.extra.get("aTranspose"):
        return "the second gemm transposes its input (aTranspose)"
    c_in = dims(graph, second.weight)
    k = c_in[second.layout.index("i")] if second.op == "conv2d" else c_in[second.layout.index("k")]
    if k * second.groups != first.out_channels(graph):
        return "channel counts do not match"
    return ""


# --------------------------------------------------------------------------------------------- equalize


def _tap_max(w: np.ndarray) -> np.ndarray:
    """max |w| over the filter taps: [O, I/groups] from a canonical filter (a 2-D one is taken as is).
    Channel scales act on it exactly as on the filter, so the sweeps iterate on it alone."""
    return np.abs(w).max(axis=(2, 3)) if w.ndim == 4 else w


def out_ranges(w: np.ndarray) -> np.ndarray:
    """max |w| per output channel of a canonical filter (or of its _tap_max)."""
    return _tap_max(w).max(axis=1)


def in_ranges(w: np.ndarray, groups: int) -> np.ndarray:
    """max |w| per input channel (over all output channels that read it) of a canonical filter (or of its
    _tap_max)."""
    m = _tap_max(w)
    o, ig = m.shape
    return m.reshape(groups, o // groups, ig).max(axis=1).reshape(groups * ig)


def _scale_inputs(w: np.ndarray, groups: int, s: np.ndarray) -> np.ndarray:
    """`w` (canonical, or its _tap_max) with input channel i multiplied by s[i]."""
    o, ig = w.shape[:2]
    grouped = w.reshape(groups, o // groups, ig, *w.shape[2:])
    return (grouped * s.reshape(groups, 1, ig, *([1] * (w.ndim - 2)))).reshape(w.shape)


def _ratio(r1: np.ndarray, r2: np.ndarray) -> dict[str, float]:
    """How far apart the two layers' per-channel ranges are: 1.0 is equal (channels with a zero range have
    nothing to equalize and are left out)."""
    live = (r1 > 0) & (r2 > 0)
    if not live.any():
        return {"geomean": 1.0, "max": 1.0}
    q = np.abs(np.log(r1[live] / r2[live]))
    return {"geomean": float(np.exp(q.mean())), "max": float(np.exp(q.max()))}


def equalize_graph(graph: Graph, *, relu6: str = "split") -> tuple[Graph, dict]:
    """Cross-layer equalization of an fp32 graph (see the module docstring). Returns the equalized copy,
    computing the same function within float rounding, and a report: `pairs` (first, second, activation,
    channels, `ratio_before` / `ratio_after` — geometric mean and max over channels of max(r1/r2, r2/r1)),
    `skipped` (pairs that were not equalized and why), `folded_batch_norms` (see fold_batch_norms), `sweeps`
    and `converged`."""
    if relu6 not in RELU6_MODES:
        raise ValidationError(f"equalize_graph: relu6 must be one of {RELU6_MODES}, got {relu6!r}")
    g = clone_graph(graph)
    folded = fold_batch_norms(g)
    pairs, skipped = find_pairs(g, relu6)
    layers = {id(p.first.node): p.first for p in pairs} | {id(p.second.node): p.second for p in pairs}
    m = {k: _tap_max(layer.canonical(g.const_array(layer.weight))) for k, layer in layers.items()}
    b = {k: layer.bias_array(g) for k, layer in layers.items()}
    out_s = {k: np.ones(x.shape[0]) for k, x in m.items()}  # what each layer's channels get divided by
    in_s = {k: np.ones(x.shape[1] * layers[k].groups) for k, x in m.items()}  # ... and multiplied by
    before = [
        _ratio(out_ranges(m[id(p.first.node)]), in_ranges(m[id(p.second.node)], p.second.groups))
        for p in pairs
    ]
    sweeps, converged = 0, not pairs
    while pairs and sweeps < _MAX_SWEEPS and not converged:
        sweeps += 1
        worst = 0.0
        for p in pairs:
            k1, k2 = id(p.first.node), id(p.second.node)
            r1, r2 = out_ranges(m[k1]), in_ranges(m[k2], p.second.groups)
            s = np.ones_like(r1)
            live = (r1 > 0) & (r2 > 0)
            s[live] = np.sqrt(r1[live] / r2[live])
            m[k1] = m[k1] / s[:, None]
            b[k1] = b[k1] / s
            m[k2] = _scale_inputs(m[k2], p.second.groups, s)
            out_s[k1], in_s[k2] = out_s[k1] * s, in_s[k2] * s
            p.scale = p.scale * s
            worst = max(worst, float(np.abs(np.log(s)).max()))
        converged = worst < _TOL
    _, _, counts = find_layers(g)
    owned = owned_consts(list(layers.values()), counts)
    for k, layer in layers.items():
        w = layer.canonical(g.const_array(layer.weight)) / out_s[k][:, None, None, None]
        layer.set_weight(g, _scale_inputs(w, layer.groups, in_s[k]), owned)
        if layer.bias is not None or np.any(b[k]):
            layer.set_bias(g, b[k], owned)
    report_pairs = []
    for p, rb in zip(pairs, before):
        for act, hi in p.clamps:
            _split_clamp(g, act, hi, p.scale, p.first.channels_last)
        report_pairs.append(
            {
                "first": p.first.node.id,
                "second": p.second.node.id,
                "activation": "+".join(n.op for n in p.between) or "identity",
                "channels": int(p.scale.size),
                "ratio_before": rb,
                "ratio_after": _ratio(
                    out_ranges(m[id(p.first.node)]), in_ranges(m[id(p.second.node)], p.second.groups)
                ),
            }
        )
    drop_unused_consts(g)
    report = {"pairs": report_pairs, "skipped": skipped, "folded_batch_norms": folded}
    return g, {**report, "sweeps": sweeps, "converged": converged}


def _split_clamp(g: Graph, act: Node, hi: float, scale: np.ndarray, channels_last: bool) -> None:
    """clamp(z, 0, M) with z's channel i divided by s_i becomes min(clamp(z', 0, +inf), M / s_i): the
    same values, the bound now per channel."""
    act.options = {k: v for k, v in act.options.items() if k != "maxValue"}
    act.options["minValue"] = 0.0
    bound = hi / scale
    name = add_const(g, f"{act.id}_bound", bound if channels_last else bound[:, None, None])
    inner = fresh_name(g, f"{act.id}_relu")
    out = act.outputs[0]
    act.id, act.outputs = inner, [inner]
    g.nodes.insert(g.nodes.index(act) + 1, Node(id=out, op="min", inputs=[inner, name]))
