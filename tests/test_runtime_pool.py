"""The thread pool: every task runs exactly once for any thread count, task count, polling budget and number
of concurrent callers; Programs on their own or on the shared pool give the bytes of a single-threaded run."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest

import webxnn
from conftest import load_testing_module
from test_runtime_util import chain_blob
from webxnn import runtime

RNG = np.random.default_rng(26)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def in_threads(n: int, fn: Callable[[int], None]) -> None:
    """Runs fn(0..n-1) on n Python threads at once; re-raises the first failure."""
    errors: list[BaseException] = []

    def body(k: int) -> None:
        try:
            fn(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


@pytest.fixture(scope="module")
def _testing() -> ModuleType:
    """webxnn._testing (its ThreadPool): only the pool-level tests need it and skip without it."""
    return load_testing_module()


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("spin_us", [0, 100])
@pytest.mark.parametrize("session", [False, True])
def test_every_task_runs_once(_testing: ModuleType, threads: int, spin_us: int, session: bool) -> None:
    pool = _testing.ThreadPool(threads, spin_us)
    assert pool.threads == threads and pool.spin_us == spin_us
    for tasks in [1, 2, 3, 5, 7, 13, 31, 64, 101]:  # fewer than, equal to and odd multiples of the threads
        assert pool.run_counts(tasks, regions=20, session=session) == [20] * tasks


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("spin_us", [0, 50])
@pytest.mark.parametrize("before_us", [0, 300])
def test_sleeping_workers_wake_for_every_session(
    _testing: ModuleType, threads: int, spin_us: int, before_us: int
) -> None:
    # After an idle pause the workers sleep. The session's opening wakes them (when they poll, spin_us > 0)
    # and a region wakes any it did not reach: one that went back to sleep in between (before_us > spin_us),
    # or all of them (spin_us = 0). Each region needs every participant at once, so a worker left asleep
    # shows as a miss instead of as lost speed.
    pool = _testing.ThreadPool(threads, spin_us)
    assert pool.absent_workers(regions=30, idle_us=2000, before_us=before_us) == 0


def test_workers_linger_after_a_run_then_sleep(_testing: ModuleType) -> None:
    # A run that follows the previous one at once finds the workers still polling (the linger: 1/32 of the
    # last run's time, here 100 us of 3.2 ms, at most spin_us) and wakes nobody; after a pause longer than
    # the linger they sleep, and every run wakes them. (A host that takes the caller's core for longer than
    # spin_us in between can make a worker sleep anyway: hence the best of three loops, and at most a
    # quarter of the sessions.)
    pool = _testing.ThreadPool(2, 1000)
    back_to_back = min(pool.wakeups_in_loop(sessions=20, work_us=3200, gap_us=0) for _ in range(3))
    paused = pool.wakeups_in_loop(sessions=20, work_us=3200, gap_us=5000)
    assert back_to_back <= 5 and paused >= 15, (back_to_back, paused)


@pytest.mark.parametrize("threads", [2, 3])
def test_workers_join_a_new_pools_first_region(_testing: ModuleType, threads: int) -> None:
    # The first region comes right after the pool is made, usually before its worker threads have started:
    # they must still join it (a worker that took the region in flight for one it had seen slept through it).
    for _ in range(20):
        pool = _testing.ThreadPool(threads, 100)
        assert pool.absent_workers(regions=1, idle_us=0, before_us=0) == 0


@pytest.mark.parametrize("threads", [2, 4])
def test_every_task_runs_once_across_the_generation_wrap_around(_testing: ModuleType, threads: int) -> None:
    # A region's tasks are claimed against a 40-bit generation tag. Regions of 2 tasks leave shares of a
    # 4-thread pool empty, so their slots keep old tags; every 2^36 regions all slots are refreshed
    # (skip_regions stands in for the regions), and the tags then wrap around from 2^40 - 1 to 0 without
    # losing or repeating a task. Without the refresh, the empty shares' tag 0 would read as the region's.
    pool = _testing.ThreadPool(threads, 100)
    assert pool.run_counts(2, regions=10, session=True) == [10] * 2
    pool.skip_regions(2**40 - 12)
    for tasks in [2, 3, 7, 31]:
        assert pool.run_counts(tasks, regions=10, session=True) == [10] * tasks
    pool.skip_regions(2**36)
    assert pool.run_counts(5, regions=10) == [10] * 5


@pytest.mark.parametrize("spin_us", [0, 100])
def test_many_callers_on_one_pool(_testing: ModuleType, spin_us: int) -> None:
    pool = _testing.ThreadPool(3, spin_us)

    def caller(k: int) -> None:
        tasks = 5 + 2 * k
        assert pool.run_counts(tasks, regions=50, session=k % 2 == 0) == [50] * tasks

    in_threads(6, caller)


@pytest.mark.parametrize("threads", [2, 3])
def test_a_late_thread_loses_its_tasks_not_the_result(_testing: ModuleType, threads: int) -> None:
    # Task 1 sleeps 2 ms: whoever holds it makes the others wait, and the pool then runs regions on the caller
    # alone for a while (the back-off) before trying its workers again. Every task still runs once.
    pool = _testing.ThreadPool(threads, 50)
    assert pool.run_counts(9, regions=25, session=True, slow_task=1, slow_us=2000) == [25] * 9
    assert pool.run_counts(9, regions=25) == [25] * 9


@pytest.mark.parametrize("threads", [2, 3])
def test_callers_at_once_each_run_inline(_testing: ModuleType, threads: int) -> None:
    # One caller: the workers are its own. As many callers as threads: one holds the workers, the others are
    # guests, and all of them run inline (one per core, no worker competing for the cores).
    pool = _testing.ThreadPool(threads, 100)
    [alone] = pool.company(1)
    assert alone[0] == threads and alone[2] == 1
    for callers in range(2, threads + 1):
        assert pool.company(callers) == [[1, 1, 0]] * callers
    assert pool.company(1)[0][0] == threads  # the workers serve a lone caller again
    with pytest.raises(ValueError, match="callers must be"):
        pool.company(threads + 1)


def test_nested_region_runs_inline(_testing: ModuleType) -> None:
    pool = _testing.ThreadPool(2, 0)
    assert pool.run_counts(9, regions=5, session=True, nested=3) == [5] * 9


@pytest.mark.parametrize("threads", [1, 3])
def test_kernels_size_their_tasks_for_the_threads_that_run_them(_testing: ModuleType, threads: int) -> None:
    # A solo run (and a task's nested region) goes inline: the kernels must see one thread there, not the
    # pool's size, or a solo run of a 3-thread Program splits its work as if 3 threads shared it.
    pool = _testing.ThreadPool(threads, 0)
    assert pool.size == threads
    assert pool.threads_seen() == [threads, 1, 1]


def test_task_error_reaches_the_caller(_testing: ModuleType) -> None:
    pool = _testing.ThreadPool(2, 0)
    with pytest.raises(RuntimeError, match="task failed"):
        pool.run_failing(17, 11)
    assert pool.run_counts(17) == [1] * 17  # the pool still works


def test_programs_match_single_thread_from_many_python_threads() -> None:
    blob = chain_blob()
    xs = [rand(1, 23, 19, 24) for _ in range(4)]
    want = [runtime.load(blob, threads=1).run({"x": x})["y"].tobytes() for x in xs]
    webxnn.set_threads(2, spin_us=0)
    programs = [
        runtime.load(blob, threads=2),
        runtime.load(blob, threads=3, spin_us=0),
        runtime.load(blob, pool="shared"),
        runtime.load(blob, pool="shared"),
    ]
    assert [p.pool for p in programs] == ["own", "own", "shared", "shared"]
    assert programs[2].threads == 2 and programs[2].spin_us == 0

    def caller(k: int) -> None:
        p = programs[k % len(programs)]
        for r in range(15):
            j = (k + r) % len(xs)
            assert p.run({"x": xs[j]})["y"].tobytes() == want[j]

    in_threads(8, caller)


def test_runs_alone_or_with_workers_give_the_same_bytes() -> None:
    """A Program picks, run by run, the workers or the caller alone (runtime/run_mode.h: a first run, six
    alternating, then the faster mode and a probe of the other every 16th run); 40 runs cover every branch."""
    blob = chain_blob(17)
    x = rand(1, 23, 19, 17)
    want = runtime.load(blob, threads=1).run({"x": x})["y"].tobytes()
    prog = runtime.load(blob, threads=3)
    for _ in range(40):
        assert prog.run({"x": x})["y"].tobytes() == want


def test_set_threads_leaves_loaded_programs_their_pool() -> None:
    blob = chain_blob(8)
    x = rand(1, 23, 19, 8)
    webxnn.set_threads(3)
    p = runtime.load(blob, pool="shared")
    webxnn.set_threads(1)
    q = runtime.load(blob, pool="shared")
    assert (p.threads, q.threads) == (3, 1)
    assert p.run({"x": x})["y"].tobytes() == q.run({"x": x})["y"].tobytes()


def test_profile_reports_barrier_waits() -> None:
    """Every step has a finite, non-negative wait_ms (no timing figures asserted); a single-threaded
    Program never waits for other threads."""
    x = rand(1, 23, 19, 24)
    p = runtime.load(chain_blob(), threads=2)
    rows = p.profile({"x": x}, repeat=3)
    assert [r["node"] for r in rows] == [r["node"] for r in p.plan()]
    assert all(isinstance(r["wait_ms"], float) and math.isfinite(r["wait_ms"]) for r in rows), rows
    assert all(r["wait_ms"] >= 0.0 for r in rows)
    assert all(r["wait_ms"] <= r["ms"] or r["aliased"] for r in rows if r["wait_ms"])
    alone = runtime.load(chain_blob(), threads=1).profile({"x": x}, repeat=3)
    assert [r["wait_ms"] for r in alone] == [0.0] * len(alone)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"spin_us": -1}, "spin_us must be in"),
        ({"spin_us": 2_000_000}, "spin_us must be in"),
        ({"pool": "global"}, "pool must be 'own' or 'shared'"),
        ({"pool": "shared", "threads": 2}, "set_threads"),
    ],
)
def test_bad_pool_options(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        runtime.load(chain_blob(8), **kwargs)
    with pytest.raises(ValueError, match="threads must be >= 0"):
        webxnn.set_threads(-1)


def test_bad_load_options_are_webxnn_errors() -> None:
    """Bad option values are OptionErrors: WebxnnErrors (one error family) that are also ValueErrors."""
    blob = webxnn.compile(
        webxnn.parse('webnn_graph "t" v1 { inputs { x: f32[4]; } nodes { y = relu(x); } outputs { y; } }')
    )
    for kw in ({"threads": -1}, {"spin_us": -5}, {"pool": "nope"}, {"pool": "shared", "threads": 2}):
        with pytest.raises(webxnn.OptionError) as e:
            webxnn.load(blob, **kw)
        assert isinstance(e.value, webxnn.WebxnnError) and isinstance(e.value, ValueError)
    with pytest.raises(webxnn.OptionError, match="threads must be >= 0"):
        webxnn.set_threads(-1)


@pytest.mark.skipif(os.environ.get("WEBXNN_ADAPTIVE") == "0", reason="WEBXNN_ADAPTIVE=0 turns the choice off")
def test_run_modes_count_the_runs_in_each_mode() -> None:
    """After the first run (workers) six runs alternate, so ten runs give at least three alone and four with
    the workers, and both modes have a median time; profile runs and a 1-thread Program count nothing."""
    x = rand(1, 23, 19, 24)
    prog = webxnn.load(chain_blob(), threads=2)
    assert prog.run_modes == {"workers_runs": 0, "alone_runs": 0, "workers_ms": 0.0, "alone_ms": 0.0}
    for _ in range(10):
        prog.run({"x": x})
    prog.profile({"x": x})
    modes = prog.run_modes
    assert modes["workers_runs"] + modes["alone_runs"] == 10
    assert modes["alone_runs"] >= 3 and modes["workers_runs"] >= 4
    assert modes["workers_ms"] > 0 and modes["alone_ms"] > 0
    one = webxnn.load(chain_blob(), threads=1)
    one.run({"x": x})
    assert one.run_modes["workers_runs"] == one.run_modes["alone_runs"] == 0
