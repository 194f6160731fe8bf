"""Calibration: the fp32 graph run in webxnn's own runtime over the samples, observers on every tensor that
becomes quantized, and the per-input-channel means that bias correction needs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import Graph
from .data import Sample
from .layers import find_layers
from .observers import TensorStats
from .plan import Plan
from .progress import Progress
from .tap import Tapped


@dataclass
class Calibration:
    stats: dict[str, TensorStats]  # per quantized tensor
    means: dict[str, np.ndarray]  # operand name -> mean per input channel (conv2d / gemm / matmul inputs)
    seconds: float = 0.0


def _mean_targets(graph: Graph, plan: Plan) -> dict[str, int]:
    """operand name -> its channel axis, for the inputs of the conv2d / gemm / matmul layers of `plan` with
    constant weights (bias correction's layers, found the same way)."""
    weighted = {ly.node for ly in plan.layers if ly.weight is not None}
    return {ly.input: ly.input_axis for ly in find_layers(graph)[0] if ly.node.id in weighted}


def calibrate(
    graph: Graph,
    samples: list[Sample],
    plan: Plan,
    histograms: bool,
    means: bool = False,
    threads: int | None = None,
    quiet: bool = False,
) -> Calibration:
    """Statistics of every tensor of `plan` over `samples` (a second pass for `histograms`), and, with
    `means`, the channel means of the weighted layers' inputs."""
    import time

    t0 = time.perf_counter()
    targets = _mean_targets(graph, plan) if means else {}
    tap = Tapped(graph, [*plan.tensors, *targets], threads=threads)
    stats = {v: TensorStats() for v in plan.tensors}
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}
    bar = Progress(len(samples) * (2 if histograms else 1), "calibrating", quiet)
    try:
        for s in samples:
            got = tap.run(s)
            for v, st in stats.items():
                st.observe_range(got[v])
            for v, axis in targets.items():
                a = got[v]
                ax = axis % a.ndim
                red = tuple(i for i in range(a.ndim) if i != ax)
                sums[v] = sums.get(v, 0) + a.sum(axis=red, dtype=np.float64)
                counts[v] = counts.get(v, 0) + a.size // a.shape[ax]
            bar.step()
        if histograms:
            for s in samples:
                got = tap.run(s)
                for v, st in stats.items():
                    st.observe_histogram(got[v])
                bar.step()
    finally:
        bar.close()
    channel_means = {v: (sums[v] / counts[v]).astype(np.float32) for v in sums}
    return Calibration(stats, channel_means, time.perf_counter() - t0)
