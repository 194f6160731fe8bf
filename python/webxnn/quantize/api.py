"""`webxnn.quantize`: an fp32 graph and calibration data in, a QDQ graph (compiled to int8 by the lowering)
and the accuracy report out. The steps, each in its own module: data (read and check the samples), plan
(which nodes become int8), optional cross-layer equalization, calibrate (observers in webxnn's runtime),
optional bias correction, emit (the QDQ graph), accuracy (per-layer and output SNR, --target-snr)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError
from ..graph import Graph
from .accuracy import LayerSnr, measure, output_snr
from .bias import correct_biases
from .calibrate import calibrate
from .data import CalibrationData, CalibrationError, random_samples, read_samples
from .emit import ActParams, emit_qdq
from .equalize import equalize_graph
from .observers import HISTOGRAM_METHODS, METHODS, choose_range
from .plan import MODES, Plan, fake_quant, make_plan

DEFAULT_METHOD = "mse"


@dataclass
class Quantized:
    """The result of `quantize`: `graph` is the QDQ graph (a WebNN graph any implementation runs as is);
    `xnn()` / `pte()` compile it to int8; `report` says what was done and where the accuracy went."""

    graph: Graph
    report: dict[str, Any] = field(default_factory=dict)

    def xnn(self) -> bytes:
        from ..compiler import compile as compile_graph

        return compile_graph(self.graph)

    def pte(self) -> bytes:
        from ..pte.writer import to_pte

        return to_pte(self.graph)


def _load(
    model: Graph | str | os.PathLike[str],
    override_dims: Mapping[str, int] | None,
    dyn_max: int | Mapping[str, int] | None,
) -> Graph:
    if isinstance(model, Graph):
        return model
    from ..compiler import read_model

    return read_model(os.fspath(model), None, None, override_dims or {}, dyn_max)


def quantize(
    model: Graph | str | os.PathLike[str],
    calibration: CalibrationData | None = None,
    *,
    random: int | None = None,
    method: str = DEFAULT_METHOD,
    mode: str = "auto",
    percentile: float = 99.999,
    keep_fp32: Sequence[str] = (),
    target_snr: float | None = None,
    equalize: bool = False,
    bias_correction: bool = True,
    layer_report: bool = True,
    threads: int | None = None,
    quiet: bool = True,
    override_dims: dict[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
) -> Quantized:
    """Post-training int8 quantization of `model` (a Graph, or a `.webnn` / `.json` / `.onnx` path).

    `calibration`: a folder of `.npy` / `.npz`, one `.npz` with a batch axis, or an iterable of input dicts
    (or `random=N` seeded noise samples, for smoke tests). `method`: the activation range observer (minmax,
    ema, percentile, mse, entropy). `mode`: static, dynamic or auto (per op). `keep_fp32`: node ids (or
    their output names) left fp32; `target_snr` (dB): also keep the fewest worst layers fp32 until every
    output's SNR against fp32 reaches it. `override_dims` / `dyn_max`: an ONNX model's symbolic dims, as in
    `webxnn.from_onnx`. Data is keyed by the model's input names (an ONNX model's own names). All checks on
    the arguments and the data happen before any work."""
    if method not in METHODS:
        raise OptionError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if mode not in MODES:
        raise OptionError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not 50.0 < percentile <= 100.0:
        raise OptionError(f"percentile must be in (50, 100], got {percentile!r}")
    if target_snr is not None and not (isinstance(target_snr, (int, float)) and target_snr == target_snr):
        raise OptionError(f"target_snr must be a number of dB, got {target_snr!r}")
    graph = _load(model, override_dims, dyn_max)
    if (calibration is None) == (random is None):
        raise CalibrationError("give calibration data or random=N (smoke tests only), not both or neither")
    if random is not None:
        if not isinstance(random, int) or random < 1:
            raise OptionError(f"random must be a positive number of samples, got {random!r}")
        samples = random_samples(graph, random)
    else:
        samples = read_samples(graph, calibration)  # type: ignore[arg-type]
    keep = frozenset(keep_fp32)
    full = make_plan(graph, mode)
    unknown = sorted(keep - {ly.node for ly in full.layers} - {ly.output for ly in full.layers})
    if unknown:
        raise OptionError(
            f"keep_fp32: {', '.join(unknown)} is not a quantizable layer (see the report's names)"
        )
    plan = make_plan(graph, mode, keep) if keep else full
    t0 = time.perf_counter()
    report: dict[str, Any] = {"method": method, "mode": mode, "samples": len(samples)}
    if equalize:
        graph, report["equalization"] = equalize_graph(graph)
        plan = make_plan(graph, mode, keep)
    fp32 = graph  # the reference the accuracy is measured against (equalization keeps its function)
    cal = calibrate(
        fp32, samples, plan, method in HISTOGRAM_METHODS, means=bias_correction, threads=threads, quiet=quiet
    )
    report["calibration_seconds"] = round(cal.seconds, 3)
    means = cal.means if bias_correction else None
    if means is not None:
        graph = correct_biases(fp32, means, fake_quant, only={ly.node for ly in plan.layers})
        plan = make_plan(graph, mode, keep)  # the corrected graph's bias constants (same tensors)
    params = {
        v: ActParams.from_range(*choose_range(cal.stats[v], method, percentile))
        for v in plan.tensors
        if v in cal.stats
    }
    qdq = emit_qdq(graph, plan, params)
    if target_snr is not None:
        qdq, plan, kept = _meet_target(
            fp32, means, qdq, plan, params, samples, mode, keep, target_snr, threads
        )
        report["target_snr_db"] = target_snr
        report["kept_fp32_for_target"] = kept
    if layer_report:
        table, outs = measure(fp32, qdq, plan, samples, threads=threads)
        report["layers"] = [vars(r) for r in table]
        report["output_snr_db"] = outs
    report["quantized_layers"] = {
        "static": sum(ly.mode == "static" for ly in plan.layers),
        "dynamic": sum(ly.mode == "dynamic" for ly in plan.layers),
    }
    report["kept_fp32"] = sorted(keep)
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return Quantized(qdq, report)


def _meet_target(
    fp32: Graph,
    means: Mapping[str, Any] | None,
    qdq: Graph,
    plan: Plan,
    params: dict[str, ActParams],
    samples: list,
    mode: str,
    keep: frozenset[str],
    target: float,
    threads: int | None,
) -> tuple[Graph, Plan, list[str]]:
    """Keep the k worst layers (by their own SNR) fp32, k the smallest for which every output reaches
    `target` dB (found by bisection over k: the output SNR grows as layers go back to fp32). SNRs are
    against `fp32`; with `means` (bias correction) only the layers still quantized get corrected biases."""
    from .tap import Tapped

    table, outs = measure(fp32, qdq, plan, samples, threads=threads)
    if min(outs.values()) >= target:
        return qdq, plan, []
    worst = [r.node for r in table]
    # keep by output name: bias correction may rename a matmul node, never the value a layer writes
    worst_out = [r.tensor for r in table]
    ref = Tapped(fp32, [], threads=threads)
    fp32_outs = [ref.run_with_outputs(s)[1] for s in samples]

    def attempt(k: int) -> tuple[Graph, Plan, float]:
        kept = keep | frozenset(worst_out[:k])
        g = fp32
        if means is not None:
            quantized = {ly.node for ly in make_plan(fp32, mode, kept).layers}
            g = correct_biases(fp32, means, fake_quant, only=quantized)
        p = make_plan(g, mode, kept)
        g = emit_qdq(g, p, params)
        return g, p, output_snr(fp32_outs, g, samples, threads)

    lo, hi = 0, len(worst)  # lo fails; hi (everything fp32) meets any target
    best: tuple[Graph, Plan] | None = None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        g, p, snr = attempt(mid)
        if snr >= target:
            hi, best = mid, (g, p)
        else:
            lo = mid
    if best is None:  # no midpoint met it: every layer fp32
        best = attempt(hi)[:2]
    return best[0], best[1], worst[:hi]


def layer_table(rows: list[dict[str, Any]] | list[LayerSnr], limit: int | None = None) -> str:
    """The per-layer report as a text table, worst first."""
    rs = [r if isinstance(r, dict) else vars(r) for r in rows]
    if limit is not None:
        rs = rs[:limit]
    w = max([len(r["node"]) for r in rs] + [5])
    lines = [f"{'layer':<{w}}  {'op':<14} {'mode':<8} {'SNR dB':>8}"]
    lines += [f"{r['node']:<{w}}  {r['op']:<14} {r['mode']:<8} {r['snr_db']:8.2f}" for r in rs]
    return "\n".join(lines)
