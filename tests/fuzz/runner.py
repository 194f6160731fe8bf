"""The loop every harness shares: make case k from seed (deterministic), check it, classify the outcome.

A case is fine when `check` returns (it ran) or raises a `WebxnnError`. Anything else is a finding, keyed by
exception type and the innermost webxnn frame, so 3,000 hits of one bug count as one finding with an
example. A case that takes longer than `timeout` seconds is interrupted by SIGALRM and reported as a hang.

SIGALRM only interrupts Python code: a hang or a crash inside the C++ runtime would stall or end the campaign.
With `isolate=True` the cases run in a forked child that reports each outcome over a pipe; the parent is a
watchdog: a child silent for `timeout` + a grace period is killed and the case is a "Hang in native code"
finding, a child that dies is a "Crash (signal N)" finding, and a new child goes on with the next case (cases
are deterministic in their number, so nothing else is lost).
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import struct
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


# Beyond the per-case SIGALRM budget: time for the child to report a Python-level hang itself.
GRACE_S = 10.0
# One case's outcome: ("ran" or an error class name, None) or ("FINDING", (key, traceback)).
Outcome = tuple[str, tuple[str, str] | None]


def _one(make: Callable[[int], Any], check: Callable[[Any], None], k: int, timeout: float) -> Outcome:
    case = make(k)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        check(case)
        return "ran", None
    except WebxnnError as e:
        return type(e).__name__, None
    except Exception as e:  # noqa: BLE001 - what the harness is looking for
        return "FINDING", (_key(e), "".join(traceback.format_exception(e))[-2500:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _record(rep: Report, k: int, out: Outcome, progress: Callable[[Report], None] | None, t0: float) -> None:
    name, finding = out
    rep.outcomes[name] += 1
    if finding is not None:
        key, tb = finding
        rep.counts[key] += 1
        if key not in rep.findings:
            rep.findings[key] = (k, tb)
            if progress is not None:  # a long campaign says so at once, not only at its end
                print(f"FINDING {key} at case {k}", flush=True)
    rep.cases += 1
    if progress is not None and rep.cases % 1000 == 0:
        rep.seconds = time.perf_counter() - t0
        progress(rep)


def run(
    make: Callable[[int], Any],
    check: Callable[[Any], None],
    count: int,
    first: int = 0,
    timeout: float = 20.0,
    progress: Callable[[Report], None] | None = None,
    isolate: bool = False,
    grace: float = GRACE_S,
) -> Report:
    """Cases first .. first+count-1: `check(make(k))` each, classified (in a watched child with `isolate`)."""
    rep = Report()
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        if isolate:
            _run_isolated(make, check, range(first, first + count), timeout, rep, progress, t0, grace)
        else:
            for k in range(first, first + count):
                _record(rep, k, _one(make, check, k, timeout), progress, t0)
    finally:
        signal.signal(signal.SIGALRM, old)
    rep.seconds = time.perf_counter() - t0
    return rep


def _child(
    make: Callable[[int], Any], check: Callable[[Any], None], ks: range, timeout: float, w: int
) -> None:
    """The forked child: runs cases ks, writing each outcome as a length-prefixed pickle; never returns."""
    code = 0
    try:
        for k in ks:
            msg = pickle.dumps((k, _one(make, check, k, timeout)))
            os.write(w, struct.pack("<I", len(msg)) + msg)
    except BaseException:  # noqa: BLE001 - the parent sees the missing report as this case's crash
        code = 70
    os._exit(code)


def _read_exact(r: int, n: int, deadline: float) -> bytes | None:
    """n bytes from fd r; b"" at EOF (the child died), None when `deadline` (monotonic) passes first."""
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            return None
        chunk = os.read(r, n - len(buf))
        if not chunk:
            return b""
        buf += chunk
    return buf


def _run_isolated(
    make: Callable[[int], Any],
    check: Callable[[Any], None],
    ks: range,
    timeout: float,
    rep: Report,
    progress: Callable[[Report], None] | None,
    t0: float,
    grace: float,
) -> None:
    nxt = ks.start
    while nxt < ks.stop:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _child(make, check, range(nxt, ks.stop), timeout, w)
        os.close(w)
        silent = False
        try:
            while nxt < ks.stop:
                head = _read_exact(r, 4, time.monotonic() + timeout + grace)
                body = _read_exact(r, struct.unpack("<I", head)[0], time.monotonic() + 60) if head else head
                if not body:
                    silent = body is None
                    break
                k, out = pickle.loads(body)
                _record(rep, k, out, progress, t0)
                nxt = k + 1
        finally:
            os.close(r)
        if nxt >= ks.stop:
            os.waitpid(pid, 0)
            break
        # The child went silent (a hang in native code) or died (a crash): case `nxt` is the finding.
        if silent:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            key, tb = "Hang in native code", f"case {nxt}: no outcome after {timeout + grace:.0f} s"
        else:
            _, status = os.waitpid(pid, 0)
            sig = os.WIFSIGNALED(status)
            how = f"signal {os.WTERMSIG(status)}" if sig else f"exit {os.WEXITSTATUS(status)}"
            key, tb = f"Crash ({how})", f"case {nxt}: the child process ended ({how}) without reporting it"
        _record(rep, nxt, ("FINDING", (key, tb)), progress, t0)
        nxt += 1
