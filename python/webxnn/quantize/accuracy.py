"""Where the accuracy went: the SNR of every quantized tensor against fp32 on the calibration data, and the
output SNR, measured by running both graphs in webxnn's runtime."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import Graph
from .data import Sample
from .emit import dequantized_name
from .plan import Plan
from .tap import Tapped


def snr_db(signal: float, noise: float) -> float:
    """10 log10(signal / noise) from summed squares (inf for no noise, -inf for no signal)."""
    if noise <= 0:
        return float("inf")
    if signal <= 0:
        return float("-inf")
    return float(10 * np.log10(signal / noise))


class _Power:
    def __init__(self) -> None:
        self.signal: dict[str, float] = {}
        self.noise: dict[str, float] = {}

    def add(self, key: str, ref: np.ndarray, got: np.ndarray) -> None:
        r = ref.astype(np.float64)
        self.signal[key] = self.signal.get(key, 0.0) + float(np.sum(r * r))
        self.noise[key] = self.noise.get(key, 0.0) + float(np.sum((r - got) ** 2))

    def snr(self, key: str) -> float:
        return snr_db(self.signal[key], self.noise[key])


@dataclass
class LayerSnr:
    node: str
    op: str
    mode: str
    tensor: str
    snr_db: float


def measure(
    fp32: Graph,
    qdq: Graph,
    plan: Plan,
    samples: list[Sample],
    threads: int | None = None,
) -> tuple[list[LayerSnr], dict[str, float]]:
    """(per-layer SNR worst first; {graph output: SNR})."""
    outs = list(fp32.outputs)
    ref_vals = [ly.output for ly in plan.layers]
    outs_v = set(fp32.outputs.values())
    q_vals = [dequantized_name(ly.output, outs_v) if ly.mode == "static" else ly.output for ly in plan.layers]
    ref = Tapped(fp32, ref_vals, threads=threads)
    got = Tapped(qdq, q_vals, threads=threads)
    power = _Power()
    for s in samples:
        (a, ra), (b, rb) = ref.run_with_outputs(s), got.run_with_outputs(s)
        for o in outs:
            power.add("out:" + o, ra[o], rb[o])
        for ly, qv in zip(plan.layers, q_vals):
            power.add(ly.node, a[ly.output], b[qv])
    table = [LayerSnr(ly.node, ly.op, ly.mode, ly.output, power.snr(ly.node)) for ly in plan.layers]
    table.sort(key=lambda r: (r.snr_db, r.node))
    return table, {o: power.snr("out:" + o) for o in outs}


def output_snr(
    fp32_outputs: list[dict[str, np.ndarray]], qdq: Graph, samples: list[Sample], threads: int | None
) -> float:
    """The lowest output SNR of `qdq` against precomputed fp32 outputs."""
    got = Tapped(qdq, [], threads=threads)
    power = _Power()
    for ref, s in zip(fp32_outputs, samples):
        out = got.program.run(s)
        for o, r in ref.items():
            power.add(o, r, out[o])
    return min(power.snr(o) for o in fp32_outputs[0])
