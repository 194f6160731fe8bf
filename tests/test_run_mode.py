"""The run-mode policy (runtime/run_mode.h) fed made-up run times: which runs go on the calling thread alone.

No timing here: the times are given, so every branch of the choice is deterministic."""

from __future__ import annotations

from collections.abc import Callable

import pytest

testing = pytest.importorskip("webxnn._testing", reason="needs a WEBXNN_TESTING=ON build (webxnn._testing)")
RunMode = testing.RunMode


def simulate(times: Callable[[int, bool], int], runs: int) -> list[bool]:
    """The mode of each run (True: alone) when run k in that mode takes times(k, solo) ns."""
    rm, modes = RunMode(), []
    for k in range(runs):
        solo = rm.pick_solo()
        rm.record(solo, times(k, solo))
        modes.append(solo)
    return modes


def test_first_run_uses_the_workers_then_the_modes_alternate() -> None:
    modes = simulate(lambda k, solo: 100, 1 + RunMode.explore)
    assert modes == [False] + [k % 2 == 0 for k in range(1, 1 + RunMode.explore)]


@pytest.mark.parametrize("solo_faster", [False, True])
def test_the_faster_mode_runs_and_the_other_is_probed_every_kth_run(solo_faster: bool) -> None:
    n = 1 + RunMode.explore + 4 * RunMode.probe_every
    modes = simulate(lambda k, solo: 50 if solo == solo_faster else 100, n)
    steady = modes[1 + RunMode.explore :]
    others = [k for k, m in enumerate(steady, 1 + RunMode.explore) if m != solo_faster]
    assert others and all(k % RunMode.probe_every == 0 for k in others)  # the probes only, no confirmation


def test_a_fast_probe_takes_over_within_keep_runs() -> None:
    """The workers take 60 throughout; the caller alone takes 100 until run 40, then 40. Only probes see the
    change. The first probe after it is confirmed by the next runs, so the choice flips within keep runs of it
    (it took 3 probes, 48 runs, while the slow mode's median was refreshed one probe at a time)."""
    change, n = 40, 120
    modes = simulate(lambda k, solo: (100 if k < change else 40) if solo else 60, n)
    probe = next(k for k in range(change, n) if modes[k])
    assert probe % RunMode.probe_every == 0 and probe < change + RunMode.probe_every
    assert all(modes[probe : probe + RunMode.keep]), "the probe and its confirmations"
    tail = range(probe + RunMode.keep, n)
    assert [k for k in tail if not modes[k]] == [k for k in tail if k % RunMode.probe_every == 0]


def test_a_lucky_probe_is_dropped_at_the_first_slow_confirmation() -> None:
    """One fast probe (another process paused just then) buys one confirmation run, not a switch."""
    lucky = set()

    def times(k: int, solo: bool) -> int:
        if not solo:
            return 60
        if k >= 1 + RunMode.explore and not lucky:
            lucky.add(k)
            return 30
        return 100

    modes = simulate(times, 1 + RunMode.explore + 3 * RunMode.probe_every)
    (k,) = lucky
    assert modes[k] and modes[k + 1] and not modes[k + 2]  # probe, one confirmation, back to the workers
