"""The loop every harness shares: make case k from seed (deterministic), check it, classify the outcome.

A case is fine when `check` returns (it ran) or raises a `WebxnnError`. Anything else is a finding, keyed by
exception type and the innermost webxnn frame, so 3,000 hits of one bug count as one finding with an
example. A case that takes longer than `timeout` seconds is interrupted by SIGALRM and reported as a hang.
"""

from __future__ import annotations

import resource
import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from webxnn.errors import WebxnnError


class Hang(Exception):
    """A case ran past its time budget."""


@dataclass
class Report:
    cases: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # "ran", "FormatError", ...
    findings: dict[str, tuple[int, str]] = field(default_factory=dict)  # key -> (first case, traceback)
    counts: Counter[str] = field(default_factory=Counter)  # key -> hits
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [
            f"{self.cases} cases in {self.seconds:.0f} s: "
            + ", ".join(f"{k} {v}" for k, v in self.outcomes.most_common())
        ]
        for key, (case, tb) in self.findings.items():
            lines.append(f"FINDING ×{self.counts[key]} {key} (first: case {case})\n{tb}")
        return "\n".join(lines)


def _key(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "webxnn" in f.filename] or frames
    last = ours[-1] if ours else None
    where = f"{last.filename.split('webxnn/')[-1]}:{last.lineno}" if last else "?"
    return f"{type(e).__name__} at {where}"


def _alarm(signum: int, frame: Any) -> None:
    raise Hang("case ran past its time budget")


def limit_memory(gib: float) -> None:
    """Cap this process's address space, so a runaway allocation is a MemoryError (a finding), not swap."""
    cap = int(gib * (1 << 30))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or cap < hard:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def run(
    make: Callable[[int], Any],
    check: Callable[[Any], None],
    count: int,
    first: int = 0,
    timeout: float = 20.0,
    progress: Callable[[Report], None] | None = None,
) -> Report:
    """Cases first .. first+count-1: `check(make(k))` each, classified."""
    rep = Report()
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for k in range(first, first + count):
            case = make(k)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                check(case)
                rep.outcomes["ran"] += 1
            except WebxnnError as e:
                rep.outcomes[type(e).__name__] += 1
            except Exception as e:  # noqa: BLE001 - what the harness is looking for
                key = _key(e)
                rep.outcomes["FINDING"] += 1
                rep.counts[key] += 1
                if key not in rep.findings:
                    rep.findings[key] = (k, "".join(traceback.format_exception(e))[-2500:])
                    if progress is not None:  # a long campaign says so at once, not only at its end
                        print(f"FINDING {key} at case {k}", flush=True)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            rep.cases += 1
            if progress is not None and rep.cases % 1000 == 0:
                rep.seconds = time.perf_counter() - t0
                progress(rep)
    finally:
        signal.signal(signal.SIGALRM, old)
    rep.seconds = time.perf_counter() - t0
    return rep
