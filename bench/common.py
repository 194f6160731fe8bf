"""Shared benchmark helpers: medians, a stderr progress bar, optional onnxruntime / numpy thread control."""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

TESTING_BUILD = 'pip install -Ccmake.define.WEBXNN_TESTING=ON ".[bench]"'


def testing_kernels() -> Any:
    """webxnn._testing.kernels: the kernels one by one, their timed entries and the FMA and int8 peak probes.
    Not in the product module: built with the CMake option WEBXNN_TESTING (README, Benchmarks)."""
    try:
        from webxnn._testing import kernels  # noqa: PLC0415
    except ModuleNotFoundError as e:
        if e.name != "webxnn._testing":
            raise
        msg = f"bench needs webxnn._testing (the CMake option WEBXNN_TESTING): {TESTING_BUILD}"
        raise SystemExit(msg) from None
    return kernels


# On a shared VM other tenants can take a vCPU for minutes: timings taken then mean little. Each sample of the
# FMA peak is compared with the best 1-thread one of the run: a 1-thread peak below MIN_1T_PEAK_SHARE of it
# (a core shared) or a 2-thread one below MIN_2T_PEAK_RATIO x it (the second vCPU busy) makes the run say so.
# The FMA peak misses tenants that stream memory (they slow memory-bound models, 2-thread runs most): a
# 32 MB copy below MIN_COPY_SHARE of the run's best copy says so too.
MIN_1T_PEAK_SHARE = 0.9
MIN_2T_PEAK_RATIO = 1.8
MIN_COPY_SHARE = 0.8
# The pause before each runtime's turn. onnxruntime 1.32's intra-op workers keep spinning for 60-70 ms after
# its last call (their CPU time, sampled per thread in /proc): with the 50 ms pause used until session 19, a
# 2-thread webxnn block right after an onnxruntime one shared the second core with that spinner, and ran
# MobileNetV2 ~1.4x slower than a block after its own (medians 10.6 and 7.7 ms over eight fresh trials).
RUNTIME_PAUSE_S = 0.2


def positive_int(text: str) -> int:
    """An argparse type for counts (--repeat, --rounds): a whole number >= 1, else argparse's own error (exit
    2, the option named) instead of a statistics error on empty timings once the models are built."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return n


def fma_peaks(threads_list: Iterable[int], isa: str = "best") -> dict[int, float]:
    """The FMA peak (GFLOP/s) of table `isa`'s fp32 vectors (ymm; zmm on avx512vnni; "best": the table this
    CPU runs) on each thread count, measured now."""
    K = testing_kernels()
    return {t: K.peak_fma(threads=t, isa=isa) for t in threads_list}


def int8_peaks(threads_list: Iterable[int], isa: str = "best") -> dict[int, float]:
    """The int8 peak (GOP/s) of table `isa`'s multiply step (int8_step) per thread count, measured now."""
    K = testing_kernels()
    return {t: K.peak_int8(threads=t, isa=isa) for t in threads_list}


def int8_step(isa: str = "best") -> str:
    """The instructions int8_peaks chains for table `isa`: vpdpbusd on a VNNI table, else AVX2's three."""
    return testing_kernels().int8_peak_step(isa)


def copy_bandwidth() -> float:
    """GB/s (read + write) of copying a 32 MB array on one thread, best of 5, measured now."""
    import numpy as np  # noqa: PLC0415

    src = np.ones(8 << 20, np.float32)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best / 1e9


def contention_warning(samples: Iterable[dict[int, float]], copies: Iterable[float] = ()) -> str | None:
    """A warning when a sample taken during the run shows another tenant on the machine: a 1-thread FMA peak
    below MIN_1T_PEAK_SHARE of the run's best, a 2-thread one below MIN_2T_PEAK_RATIO x that best, or a copy
    bandwidth (copy_bandwidth) below MIN_COPY_SHARE of the run's best; else None."""
    samples, copies = list(samples), list(copies)
    problems = []
    if copies and min(copies) < MIN_COPY_SHARE * max(copies):
        problems.append(
            f"memory bandwidth fell to {min(copies) / max(copies):.0%} of its best (another "
            "tenant streaming memory): memory-bound figures, 2-thread ones most, are suspect"
        )
    best = max((p[1] for p in samples if p.get(1)), default=0.0)
    ones = [p[1] / best for p in samples if p.get(1)]
    twos = [p[2] / best for p in samples if p.get(2)] if best > 0 else []
    if ones and min(ones) < MIN_1T_PEAK_SHARE:
        problems.append(
            f"the 1-thread FMA peak fell to {min(ones):.0%} of its best (a core was shared): "
            "all figures of this run are suspect"
        )
    if twos and min(twos) < MIN_2T_PEAK_RATIO:
        problems.append(
            f"the 2-thread FMA peak fell to {min(twos):.2f}x the best 1-thread one (the second "
            "vCPU was busy elsewhere): 2-thread figures, and speed-ups, are not reliable"
        )
    return "warning: during this run " + "; ".join(problems) if problems else None


def result_path(suite: str, full: bool, ext: str) -> pathlib.Path:
    """Where a bench suite writes its results by default: bench/out/<suite>.<ext> for the full suite (the
    README's tables), bench/out/<suite>-partial.<ext> for anything less, so a quick look at one case does not
    replace the full run's results."""
    return pathlib.Path(f"bench/out/{suite}{'' if full else '-partial'}.{ext}")


def median_ms(times_s: Iterable[float]) -> float:
    """Median of per-call wall times given in seconds, as milliseconds."""
    return statistics.median(list(times_s)) * 1e3


def time_calls(fn: Callable[[], Any], repeat: int, warmup: int = 1, min_seconds: float = 0.0) -> list[float]:
    """Per-call wall times (seconds) of `fn`: `warmup` untimed calls, then at least `repeat` timed ones, more
    while their total is below `min_seconds` (so very short calls get enough samples for a stable median)."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    total = 0.0
    while len(times) < repeat or (total < min_seconds and len(times) < 100 * repeat):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
    return times


def best_of_rounds(calls: dict[str, Callable[[], Any]], repeat: int, rounds: int) -> dict[str, float]:
    """Median ms per call of each runtime in `calls` (key → call), the best of `rounds` alternating rounds.

    Rounds alternate the runtimes (in turn first) so a burst of load elsewhere hits both; each runtime
    reports the median of its best round. A pause between runtimes (RUNTIME_PAUSE_S) lets the other one's
    spinning workers (ORT's spin for a while after a run) go idle instead of sharing the cores. Warm up to a
    steady state (>= 0.5 s per runtime), not a fixed count of calls."""
    for fn in calls.values():
        time_calls(fn, 1, warmup=2, min_seconds=0.5)
    best: dict[str, float] = {}
    for r in range(rounds):
        order = list(calls.items())
        for key, fn in order if r % 2 == 0 else order[::-1]:
            time.sleep(RUNTIME_PAUSE_S)
            ms = median_ms(time_calls(fn, repeat, warmup=0))
            best[key] = min(best.get(key, ms), ms)
    return best


def progress(items: list[T], label: str, enabled: bool = True) -> Iterator[T]:
    """Yields `items`, drawing a one-line bar on stderr (only when stderr is a terminal or forced)."""
    n = len(items)
    start = time.perf_counter()
    for i, item in enumerate(items):
        if enabled:
            done = int(30 * i / max(n, 1))
            elapsed = time.perf_counter() - start
            sys.stderr.write(f"\r{label} [{'#' * done}{'.' * (30 - done)}] {i}/{n} {elapsed:5.1f}s ")
            sys.stderr.flush()
        yield item
    if enabled:
        sys.stderr.write(f"\r{label} [{'#' * 30}] {n}/{n} {time.perf_counter() - start:5.1f}s\n")
        sys.stderr.flush()


def onnxruntime_or_none() -> Any:
    """The onnxruntime module, or None when it is not installed (every ORT column is then skipped)."""
    try:
        import onnxruntime  # noqa: PLC0415

        return onnxruntime
    except ImportError:
        return None


def ort_session(
    model_bytes: bytes, threads: int, profile_prefix: str | None = None, optimize: bool = True
) -> Any:
    """An onnxruntime CPU session with `threads` intra-op threads and full graph optimisation
    (`optimize=False`: none, so a QDQ model runs node by node, fp32 between its Q/DQ nodes: what the graph
    means, without onnxruntime's int8 kernels); with `profile_prefix`, node profiling on (`end_profiling()`
    returns the JSON file's path)."""
    ort = onnxruntime_or_none()
    assert ort is not None
    so = ort.SessionOptions()
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def can_limit_numpy_threads() -> bool:
    """Whether numpy's BLAS thread count can be set (threadpoolctl). Without it numpy uses every core, so a
    per-thread-count numpy column would be wrong: the benches leave it out instead."""
    try:
        import threadpoolctl  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


class numpy_threads:  # noqa: N801 - used as a context manager like threadpoolctl's
    """Limits numpy's BLAS to `n` threads (needs threadpoolctl: check `can_limit_numpy_threads` first)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._ctl: Any = None

    def __enter__(self) -> numpy_threads:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        self._ctl = threadpool_limits(limits=self.n)
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctl.restore_original_limits()


def alternating_blocks(calls: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each call returns one block's figure; blocks alternate, order flipped each round (so neighbours in
    `calls` are neighbours in time in every round), a pause before each. The figures per key, by round."""
    per: dict[str, list[float]] = {k: [] for k in calls}
    keys = list(calls)
    for r in range(rounds):
        for k in keys if r % 2 == 0 else keys[::-1]:
            time.sleep(RUNTIME_PAUSE_S)
            per[k].append(calls[k]())
    return per


def paired_ratio(a: list[float], b: list[float]) -> float:
    """The median over rounds of a[r] / b[r]: two neighbouring blocks share the host's phase, which a ratio of
    two medians taken over the whole run does not."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def timed_call(fn: Callable[[], Any], before: Callable[[], Any] | None) -> float:
    """Seconds one call of fn takes, `before` (untimed) ahead of it."""
    if before is not None:
        before()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved_ratio(
    a: Callable[[], Any], b: Callable[[], Any], pairs: int, before: Callable[[], Any] | None = None
) -> float:
    """The median over `pairs` pairs of runs of time(a) / time(b): the two runs of a pair back to back, which
    goes first alternating, `before` (untimed) ahead of each run."""
    ratios = []
    for i in range(pairs):
        if i % 2 == 0:
            ta = timed_call(a, before)
            tb = timed_call(b, before)
        else:
            tb = timed_call(b, before)
            ta = timed_call(a, before)
        ratios.append(ta / tb)
    return statistics.median(ratios)


def block_ms(fn: Callable[[], Any], repeat: int, before: Callable[[], Any] | None = None) -> float:
    """The median ms of `repeat` calls of fn, after one untimed call (to warm and wake it)."""
    fn()
    return statistics.median(timed_call(fn, before) for _ in range(repeat)) * 1e3
