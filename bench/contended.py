"""Threads when the machine is not ours alone (issue 26): webxnn at 1 and 2 threads against onnxruntime with
another process spinning on one core, after idle pauses, and two Programs running at once.

`python -m bench contended [--models mobilenetv2 resnet50 minilm] [--repeat 10] [--rounds 3]
[--cases loaded idle concurrent]` (also `python -m bench models --contended`)

* loaded: a busy-loop process pinned to the last core for the whole case; webxnn and onnxruntime at 1 and 2
  threads, alternated in blocks of `repeat` calls (order flipped every round, a short pause between blocks).
  Reported: the median of the blocks' medians per runtime and thread count; webxnn's 2-thread/1-thread ratio
  from `repeat` x `rounds` pairs of runs, a 2-thread and a 1-thread run back to back (which goes first
  alternates): the median of the pairs' ratios. Two neighbouring runs share the host's state, so a slow phase
  of a shared host lands on both sides of a ratio, where two columns' medians can come from different phases
  (on this VM a 1-thread block of the same model has moved 3x from one round to the next). Also the share of
  the 2-thread Program's runs that its run-mode choice made on the caller alone (`Program.run_modes`). The
  JSON also has every block's figure, by round ("blocks"). Each runtime first runs WARM_RUNS times under the
  load: a Program's first runs try both run modes (runtime/run_mode.h: one uncounted, six alternating), so
  its 2-thread blocks then show the runs after that choice, as a program that keeps running sees them.
* idle: the same busy core, the same warm-up; a 20 ms sleep before each timed call (the request that finds the
  pool asleep), and for webxnn also right after an untimed onnxruntime call of the same model (another
  runtime's threads still spinning). A 384^3 MatMul and MobileNetV2; the 2-thread/1-thread ratios from pairs
  of runs as above, each run after its own pause (or onnxruntime call).
* concurrent: no busy core; two Programs on the shared pool (`webxnn.set_threads(2)`, `pool="shared"`), run
  from two Python threads at once, against the same runs one after another on one thread; and two Python
  threads on one Program. Reported: runs per second of each and their ratio paired by round (>= 0.95 is the
  target).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import pathlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from bench.common import (
    RUNTIME_PAUSE_S,
    alternating_blocks,
    block_ms,
    interleaved_ratio,
    onnxruntime_or_none,
    ort_session,
    paired_ratio,
    positive_int,
    result_path,
)
from bench.models import MODELS, Builder, webxnn_compile

IDLE_S = 0.02
WARM_RUNS = 12  # past the run-mode choice's first seven runs (see the docstring)


def _spin_forever(core: int) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    while True:
        pass


@contextlib.contextmanager
def busy_core() -> Iterator[int]:
    """A process spinning on the last core while the block runs; yields that core's number."""
    core = (os.cpu_count() or 1) - 1
    proc = multiprocessing.get_context("spawn").Process(target=_spin_forever, args=(core,), daemon=True)
    proc.start()
    time.sleep(0.2)  # let it start spinning
    try:
        yield core
    finally:
        proc.terminate()
        proc.join()


def gemm384() -> tuple[bytes, dict[str, np.ndarray]]:
    """One 384x384 by 384x384 MatMul (a constant right-hand side), the issue's idle-pause probe."""
    b = Builder(4)
    w = b.const(b.weight((384, 384), 384))
    y = b.node("MatMul", ["input", w])
    feeds = {"input": np.random.default_rng(10).standard_normal((384, 384), np.float32)}
    return b.model([("input", [384, 384])], [y]), feeds


CASE_MODELS: dict[str, Callable[[], tuple[bytes, dict[str, np.ndarray]]]] = {"gemm384": gemm384, **MODELS}


def _runners(name: str, with_ort: bool) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """Calls for webxnn and onnxruntime at 1 and 2 threads, keyed "webxnn 1", "ort 2"..., and the webxnn
    Programs behind them, keyed the same."""
    import webxnn  # noqa: PLC0415

    model, feeds = CASE_MODELS[name]()
    blob = webxnn_compile(model)
    calls: dict[str, Callable[[], Any]] = {}
    programs: dict[str, Any] = {}
    for t in (1, 2):
        prog = programs[f"webxnn {t}"] = webxnn.load(blob, threads=t)
        calls[f"webxnn {t}"] = lambda p=prog: p.run(feeds)
    for t in (1, 2) if with_ort else ():
        sess = ort_session(model, t)
        calls[f"ort {t}"] = lambda s=sess: s.run(None, feeds)
    return calls, programs


def _alone_share(prog: Any) -> float:
    """The share of a Program's runs so far that its run-mode choice made on the caller alone (0..1)."""
    m = prog.run_modes
    runs = m["workers_runs"] + m["alone_runs"]
    return m["alone_runs"] / runs if runs else 0.0


def _medians(per: dict[str, list[float]]) -> dict[str, float]:
    return {k: statistics.median(v) for k, v in per.items()}


def case_loaded(names: list[str], repeat: int, rounds: int) -> list[dict[str, Any]]:
    ort = onnxruntime_or_none() is not None
    out = []
    for name in names:
        calls, programs = _runners(name, ort)
        with busy_core():
            for fn in calls.values():  # warm up under the load
                for _ in range(WARM_RUNS):
                    fn()
            per = alternating_blocks({k: (lambda f=f: block_ms(f, repeat)) for k, f in calls.items()}, rounds)
            time.sleep(RUNTIME_PAUSE_S)  # the last block may have been onnxruntime's
            ratio = interleaved_ratio(calls["webxnn 2"], calls["webxnn 1"], repeat * rounds)
        out.append(
            {
                "model": name,
                **_medians(per),
                "webxnn 2/1": ratio,
                "webxnn 2 alone": _alone_share(programs["webxnn 2"]),
                "blocks": per,
            }
        )
    return out


def case_idle(names: list[str], repeat: int, rounds: int) -> list[dict[str, Any]]:
    ort = onnxruntime_or_none() is not None
    out = []
    for name in names:
        calls, _ = _runners(name, ort)
        befores: dict[str, Callable[[], Any]] = {"idle": lambda: time.sleep(IDLE_S)}
        if ort:
            befores["after ort"] = calls["ort 2"]
        blocks: dict[str, Callable[[], float]] = {
            f"{k} idle": (lambda f=f, b=befores["idle"]: block_ms(f, repeat, b)) for k, f in calls.items()
        }
        if ort:
            for t in (1, 2):
                f = calls[f"webxnn {t}"]
                blocks[f"webxnn {t} after ort"] = lambda f=f, b=befores["after ort"]: block_ms(f, repeat, b)
        with busy_core():
            for fn in calls.values():  # warm up under the load, each run after its pause
                for _ in range(WARM_RUNS):
                    befores["idle"]()
                    fn()
            per = alternating_blocks(blocks, rounds)
            entry: dict[str, Any] = {"model": name, **_medians(per), "blocks": per}
            for when, before in befores.items():
                time.sleep(RUNTIME_PAUSE_S)
                entry[f"webxnn 2/1 {when}"] = interleaved_ratio(
                    calls["webxnn 2"], calls["webxnn 1"], repeat * rounds, before
                )
        out.append(entry)
    return out


def _throughput(programs: list[Any], feeds: dict[str, np.ndarray], runs: int, concurrent: bool) -> float:
    """Runs per second: `runs` runs of each program, from one thread per program at once or one after
    another on this thread."""

    def work(p: Any) -> None:
        for _ in range(runs):
            p.run(feeds)

    t0 = time.perf_counter()
    if concurrent:
        ts = [threading.Thread(target=work, args=(p,)) for p in programs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        for _ in range(runs):
            for p in programs:
                p.run(feeds)
    return len(programs) * runs / (time.perf_counter() - t0)


def case_concurrent(names: list[str], repeat: int, rounds: int) -> list[dict[str, Any]]:
    import webxnn  # noqa: PLC0415

    webxnn.set_threads(2)
    out = []
    for name in names:
        model, feeds = CASE_MODELS[name]()
        blob = webxnn_compile(model)
        shared = [webxnn.load(blob, pool="shared") for _ in range(2)]
        own = webxnn.load(blob, threads=2)
        runs = max(repeat, 2)
        setups = {
            "two shared Programs": shared,
            "two threads, one Program": [own, own],
        }
        entry: dict[str, Any] = {"model": name}
        for label, progs in setups.items():
            _throughput(progs, feeds, 2, False)  # warm
            fns = {
                "seq": lambda p=progs, x=feeds, n=runs: _throughput(p, x, n, False),
                "conc": lambda p=progs, x=feeds, n=runs: _throughput(p, x, n, True),
            }
            per = alternating_blocks(fns, rounds)
            rates = _medians(per)
            entry[label] = {
                "seq_per_s": rates["seq"],
                "conc_per_s": rates["conc"],
                "ratio": paired_ratio(per["conc"], per["seq"]),
                "blocks": per,
            }
        out.append(entry)
    return out


def _cells(entry: dict[str, Any], keys: list[str]) -> str:
    """A row's cells: ms to 2 places, ratios ("/" in the key) to 3, "-" where a JSON saved by an older bench
    has no such figure."""
    return " | ".join(
        "-" if k not in entry else f"{entry[k]:.3f}" if "/" in k else f"{entry[k]:.2f}" for k in keys
    )


def markdown(result: dict[str, Any]) -> str:
    lines: list[str] = []
    if result.get("loaded"):
        lines += [
            "One core busy (a spinning process), median ms; webxnn 2/1: the median ratio of a 2-thread and a "
            "1-thread run back to back (< 1: 2 threads faster):",
            "",
            "| model | webxnn 1 | webxnn 2 | webxnn 2/1 | ORT 1 | ORT 2 | webxnn 2: runs on the caller alone "
            "|",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for e in result["loaded"]:
            cells = _cells(e, ["webxnn 1", "webxnn 2", "webxnn 2/1", "ort 1", "ort 2"])
            alone = f"{e['webxnn 2 alone']:.0%}" if "webxnn 2 alone" in e else "-"
            lines.append(f"| {e['model']} | {cells} | {alone} |")
        lines.append("")
    if result.get("idle"):
        keys = [
            "webxnn 1 idle",
            "webxnn 2 idle",
            "webxnn 2/1 idle",
            "ort 1 idle",
            "ort 2 idle",
            "webxnn 1 after ort",
            "webxnn 2 after ort",
            "webxnn 2/1 after ort",
        ]
        lines += [
            f"One core busy, {IDLE_S * 1e3:.0f} ms idle before each run (or right after an ORT 2-thread "
            "call), median ms; webxnn 2/1 from pairs of runs back to back, each after its pause (or call):",
            "",
            "| model | webxnn 1 | webxnn 2 | webxnn 2/1 | ORT 1 | ORT 2 | webxnn 1 after ORT "
            "| webxnn 2 after ORT | webxnn 2/1 after ORT |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for e in result["idle"]:
            lines.append(f"| {e['model']} | {_cells(e, keys)} |")
        lines.append("")
    if result.get("concurrent"):
        lines += [
            "No busy core; two runs at once (shared pool of 2 threads / one Program of 2) vs one after "
            "another, runs per second (ratio paired by round):",
            "",
            "| model | setup | one after another | at once | ratio |",
            "|---|---|---:|---:|---:|",
        ]
        for e in result["concurrent"]:
            for label, v in e.items():
                if label == "model":
                    continue
                rate = f"{v['seq_per_s']:.1f} | {v['conc_per_s']:.1f} | {v['ratio']:.2f}"
                lines.append(f"| {e['model']} | {label} | {rate} |")
    return "\n".join(lines)


CASES = {"loaded": case_loaded, "idle": case_idle, "concurrent": case_concurrent}
DEFAULT_MODELS = {"loaded": list(MODELS), "idle": ["gemm384", "mobilenetv2"], "concurrent": ["mobilenetv2"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench contended",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument(
        "--models", nargs="+", default=None, choices=list(CASE_MODELS), help="instead of each case's own list"
    )
    parser.add_argument("--repeat", type=positive_int, default=10, help="calls per block")
    parser.add_argument("--rounds", type=positive_int, default=4, help="alternating blocks per runtime")
    parser.add_argument("--json", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    for case in args.cases:
        result[case] = CASES[case](args.models or DEFAULT_MODELS[case], args.repeat, args.rounds)
    print(markdown(result))
    full = args.models is None and sorted(args.cases) == sorted(CASES)
    path = args.json or result_path("contended", full, "json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"\nJSON: {path}")
    return 0
