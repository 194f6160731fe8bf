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


def probes(modes: list[bool], best: bool) -> list[int]:
    """The runs after the exploring ones made in the mode that is not `best`."""
    return [k for k, m in enumerate(modes) if k > RunMode.explore and m != best]


def gaps(runs: list[int]) -> list[int]:
    return [b - a for a, b in zip(runs, runs[1:])]


def doubling(n: int) -> list[int]:
    """The gaps between n + 1 probes that all lose clearly: probe_every doubled each time, up to probe_max."""
    return [min(RunMode.probe_every << (i + 1), RunMode.probe_max) for i in range(n)]


def test_probes_of_the_caller_alone_that_lose_clearly_come_ever_further_apart() -> None:
    """The caller alone takes 2x: each probe of it doubles the gap to the next, up to probe_max."""
    n = 1 + RunMode.explore + 6 * RunMode.probe_max
    others = probes(simulate(lambda k, solo: 100 if solo else 50, n), False)
    assert others[0] == RunMode.probe_every  # no confirmation runs: each probe is alone in its mode
    assert gaps(others) == doubling(len(others) - 1) and gaps(others)[-1] == RunMode.probe_max


MS = 1_000_000  # ns: the policies below that depend on time take run times of this scale


def stale_runs(alone_ns: int) -> int:
    """The most runs alone between probes of the workers: max_stale_ns of them, probe_every at least."""
    return max(RunMode.probe_every, min(RunMode.probe_max, RunMode.max_stale_ns // alone_ns))


def test_the_workers_probe_gap_spreads_the_loss_within_the_staleness_bound() -> None:
    """A probe of the workers costs its time minus the caller alone's: the gap to the next makes that loss
    probe_budget of the runs' time, at least probe_every runs, at most max_stale_ns of runs alone."""
    gap = RunMode.workers_probe_gap
    assert gap(4 * MS, 5 * MS) == gap(5 * MS, 5 * MS) == RunMode.probe_every  # no loss: a core came free?
    assert gap(5 * MS + 100_000, 5 * MS) == RunMode.probe_every  # 0.1 ms: 0.5 % of 4 runs
    loss = 5 * MS * RunMode.probe_budget * 30  # the loss that 30 runs of 5 ms make probe_budget of
    assert gap(5 * MS + int(loss), 5 * MS) in (30, 31)
    assert gap(7 * MS, 5 * MS) == stale_runs(5 * MS) == 50  # 2 ms lost: 80 runs wanted, 0.25 s of them kept
    assert gap(120 * MS, 60 * MS) == RunMode.probe_every  # ResNet-50-sized runs: 0.25 s is 4 runs
    assert gap(10**9, 1000) == RunMode.probe_max
    assert gap(2**63, 1) == RunMode.probe_max  # no overflow


def test_probes_of_the_workers_that_lose_come_by_their_cost() -> None:
    """The caller alone wins (a core taken): 5 ms alone, 7 ms with the workers. Each probe of the workers
    loses 2 ms: the next comes after stale_runs(5 ms) = 50 runs, not probe_every (0.8 % of the time, not
    2.5 %)."""
    n = 1 + RunMode.explore + 12 * 50
    others = probes(simulate(lambda k, solo: 5 * MS if solo else 7 * MS, n), True)
    assert others[0] == RunMode.probe_every and len(others) >= 11
    assert gaps(others) == [50] * (len(others) - 1)


def test_a_freed_core_is_taken_back_within_the_workers_probe_gap() -> None:
    """The workers take 7.5 ms (a core busy elsewhere) until run 600, then 2.5 ms; the caller alone 5 ms
    throughout. The first probe of the workers after the change takes them back: within 50 runs (0.25 s)."""
    change, n = 600, 800
    modes = simulate(lambda k, solo: 5 * MS if solo else (int(7.5 * MS) if k < change else int(2.5 * MS)), n)
    before = modes[change - 100 : change]  # alone before the change, but for probes of the workers
    assert before.count(False) <= 100 // stale_runs(5 * MS) + 1
    back = next(k for k in range(change, n) if not modes[k])
    assert back < change + stale_runs(5 * MS)
    alone_after = [k for k in range(back, n) if modes[k]]  # only probes of the caller alone now, backing off
    assert gaps(alone_after) == doubling(len(alone_after) - 1)


def test_probes_that_lose_narrowly_stay_probe_every_apart() -> None:
    """The caller alone is 10 % slower (under the clear-loss margin): the gap stays at probe_every."""
    assert 110 < 100 * RunMode.clear_loss  # the premise: a 10 % loss is not a clear one
    n = 1 + RunMode.explore + 8 * RunMode.probe_every
    others = probes(simulate(lambda k, solo: 110 if solo else 100, n), False)
    assert len(others) >= 7 and all(k % RunMode.probe_every == 0 for k in others)


def test_a_narrow_loss_sets_a_grown_gap_back() -> None:
    """The caller alone takes 2x until run 300, then 1.1x: the first probe after that brings the gap back."""
    change, n = 300, 700
    others = probes(simulate(lambda k, solo: (200 if k < change else 110) if solo else 100, n), False)
    before = [k for k in others if k < change]
    assert before[-1] - before[-2] == RunMode.probe_max
    first = next(k for k in others if k >= change)
    after = [k for k in others if k >= first]
    assert gaps(after) == [RunMode.probe_every] * (len(after) - 1)


def test_a_fast_probe_takes_over_within_keep_runs() -> None:
    """The workers take 6 ms throughout; the caller alone takes 7 ms (a narrow loss: probes stay probe_every
    apart) until run 40, then 4 ms. Only probes see the change. The first probe after it is confirmed by the
    next runs, so the choice flips within keep runs of it (it took 3 probes, 48 runs, while the slow mode's
    median was refreshed one probe at a time)."""
    change, n = 40, 300
    modes = simulate(lambda k, solo: (7 * MS if k < change else 4 * MS) if solo else 6 * MS, n)
    probe = next(k for k in range(change, n) if modes[k])
    assert probe % RunMode.probe_every == 0 and probe < change + RunMode.probe_every
    assert all(modes[probe : probe + RunMode.keep]), "the probe and its confirmations"
    tail = [k for k in range(probe + RunMode.keep, n) if not modes[k]]  # probes of the workers (1.5x slower)
    spaced = RunMode.workers_probe_gap(6 * MS, 4 * MS)
    assert tail[0] == probe + RunMode.probe_every and gaps(tail) == [spaced] * (len(tail) - 1)


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


def test_after_a_burst_of_load_the_workers_are_probed_within_the_staleness_bound() -> None:
    """The workers win (5 ms against 10) long enough for the probes of the caller alone to back off to
    probe_max (they fall on runs 496 and 624); a burst of load just after the second (runs 630-649: the
    workers take 15 ms) flips the choice to the caller alone; the workers are probed again, and taken back,
    within stale_runs(10 ms) = 25 runs (0.25 s) of the burst's end, not at the next backed-off probe of the
    caller alone (run 752)."""
    burst, end, n = 630, 650, 900
    modes = simulate(lambda k, solo: 10 * MS if solo else (15 * MS if burst <= k < end else 5 * MS), n)
    flip = next(k for k in range(burst, n) if modes[k] and modes[k + 1])  # alone as the choice, not a probe
    back = next(k for k in range(end, n) if not modes[k] and not modes[k + 1])
    assert back <= max(flip, end) + stale_runs(10 * MS) + RunMode.keep, (flip, back)
