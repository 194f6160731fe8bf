"""A short budget of each fuzz harness (tests/fuzz/): malformed ONNX models, mutated `.webnn` / JSON /
manifests, mutated blobs, mutated `.pte` programs. Every case must run or raise a WebxnnError subclass; any
other exception, a hang or a crash fails the test with the seed and case that reproduce it (`python -m
tests.fuzz HARNESS --seed S --first K --count 1`). Longer campaigns: `nice -n 19 python -m tests.fuzz onnx
--count 40000` (see tests/fuzz/). The runner's watchdog (a native hang or crash is a finding, and the
campaign goes on) is tested here too, fast."""

from __future__ import annotations

import os
import signal
import time

import pytest

from fuzz import HARNESSES, runner

# (harness, cases, seed): about 20-30 s each on the development machine; a new seed every run would make CI
# flaky, so the seeds are fixed here and campaigns by hand use others.
BUDGETS = [("onnx", 1200, 101), ("text", 2500, 102), ("blob", 20000, 103), ("pte", 4000, 104)]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "count", "seed"), BUDGETS, ids=[b[0] for b in BUDGETS])
def test_fuzz_budget(name: str, count: int, seed: int) -> None:
    if name == "onnx":
        pytest.importorskip("onnx")
    harness = HARNESSES[name](seed)
    try:
        rep = runner.run(harness.make, harness.check, count, timeout=30.0, isolate=True)
    finally:
        harness.close()
    print(rep.summary())
    assert not rep.findings, f"seed {seed}:\n{rep.summary()}"
    assert rep.outcomes["ran"] > 0  # the mutations leave some inputs valid: the run path is exercised too


def _native_trouble(k: int) -> None:
    """Case 1 hangs where SIGALRM cannot reach it (as inside C++ code), case 3 crashes, the rest run."""
    if k == 1:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
        time.sleep(60)
    if k == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # (SIGSEGV would make pytest's faulthandler dump the stack)


def test_watchdog_reports_native_hangs_and_crashes_and_goes_on() -> None:
    rep = runner.run(lambda k: k, _native_trouble, 6, timeout=0.3, isolate=True, grace=0.5)
    assert rep.cases == 6 and rep.outcomes["ran"] == 4 and rep.outcomes["FINDING"] == 2
    assert rep.findings["Hang in native code"][0] == 1
    assert rep.findings[f"Crash (signal {int(signal.SIGKILL)})"][0] == 3


def test_isolated_and_in_process_runs_agree() -> None:
    def check(k: int) -> None:
        if k % 3 == 0:
            raise KeyError(k)
        if k % 3 == 1:
            from webxnn.errors import ValidationError

            raise ValidationError("bad")

    reps = [runner.run(lambda k: k, check, 9, isolate=iso) for iso in (False, True)]
    assert [dict(r.outcomes) for r in reps] == [{"FINDING": 3, "ValidationError": 3, "ran": 3}] * 2
    assert [list(r.findings) for r in reps] == [[next(iter(reps[0].findings))]] * 2
