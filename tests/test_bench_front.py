"""`python -m bench`: the dispatcher hands a suite its own options, --help included, and tables are drawn from
results as the suites return them. No suite is run."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import bench.common
import pytest
from bench.__main__ import main
from bench.common import alternating_blocks, interleaved_ratio, paired_ratio
from bench.contended import markdown
from bench.models import markdown as models_markdown
from bench.models import paired_speedup


def test_help_after_a_suite_shows_the_suites_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["models", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "python -m bench models" in out and "--threads" in out


def test_help_alone_lists_the_suites(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "contended" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-3", "ten"])
def test_counts_below_one_are_refused_before_any_work(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["contended", "--rounds", value])
    assert exit_info.value.code == 2
    assert "--rounds: must be a whole number >= 1" in capsys.readouterr().err


def test_an_unknown_suite_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["nosuch"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_the_loaded_table_shows_the_paired_ratio_and_the_share_of_runs_made_alone() -> None:
    row = {
        "model": "m",
        "webxnn 1": 10.0,
        "webxnn 2": 9.5,
        "webxnn 2/1": 0.9512,
        "ort 1": 11.0,
        "ort 2": 15.0,
        "webxnn 2 alone": 0.82,
    }
    table = markdown({"loaded": [row]})
    assert "runs on the caller alone" in table
    assert "| m | 10.00 | 9.50 | 0.951 | 11.00 | 15.00 | 82% |" in table
    older = {k: v for k, v in row.items() if k not in ("webxnn 2 alone", "webxnn 2/1")}  # an older JSON
    assert "| m | 10.00 | 9.50 | - | 11.00 | 15.00 | - |" in markdown({"loaded": [older]})


def test_a_ratio_is_paired_by_round_not_taken_between_medians() -> None:
    # Rounds 1 and 2 (a slow host, then a fast one): 2 threads win by 10 % in both. Round 3: the host slows
    # down between the two blocks. The columns' medians (27 vs 20) would say 2 threads lose by 35 %, and the
    # mean of the rounds' ratios (1.05) that they lose by 5 %.
    one = [40.0, 20.0, 20.0]
    two = [36.0, 18.0, 27.0]
    assert statistics.median(two) / statistics.median(one) == pytest.approx(1.35)
    assert paired_ratio(two, one) == pytest.approx(0.9)


def test_blocks_alternate_with_neighbours_kept_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench.common, "RUNTIME_PAUSE_S", 0.0)
    order: list[str] = []

    def call(key: str) -> Callable[[], float]:
        return lambda: order.append(key) or float(len(order))

    per = alternating_blocks({k: call(k) for k in ("w1", "w2", "o1", "o2")}, rounds=3)
    assert order == ["w1", "w2", "o1", "o2", "o2", "o1", "w2", "w1", "w1", "w2", "o1", "o2"]
    assert per["w1"] == [1.0, 8.0, 9.0] and per["w2"] == [2.0, 7.0, 10.0]  # by round, in each round's order


def test_interleaved_pairs_alternate_which_goes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]  # a fake clock that only the runs advance
    monkeypatch.setattr(bench.common.time, "perf_counter", lambda: now[0])
    order: list[str] = []

    def run(key: str, costs: list[float]) -> Callable[[], None]:
        def call() -> None:
            order.append(key)
            now[0] += costs.pop(0)

        return call

    befores: list[int] = []
    a, b = run("a", [2.0, 6.0, 3.0]), run("b", [1.0, 2.0, 1.0])  # ratios 2, 3, 3
    ratio = interleaved_ratio(a, b, pairs=3, before=lambda: befores.append(len(order)))
    assert order == ["a", "b", "b", "a", "a", "b"] and befores == [0, 1, 2, 3, 4, 5]
    assert ratio == 3.0


def test_the_models_speedup_is_also_paired_by_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 1-thread Program at 8 ms, a 2-thread one at 4 ms, except one block at 9 ms while the host was busy:
    # the median of the rounds' ratios stays 2.0.
    monkeypatch.setattr(bench.common, "RUNTIME_PAUSE_S", 0.0)
    blocks = {1: [8.0] * 6, 2: [4.0, 4.0, 9.0, 4.0, 4.0, 4.0]}
    monkeypatch.setattr("bench.models.block_ms", lambda fn, repeat: fn())

    class Fake:
        def __init__(self, t: int) -> None:
            self.t = t

        def run(self, feeds: object) -> float:
            return blocks[self.t].pop(0)

    assert paired_speedup(Fake(1), Fake(2), {}, repeat=3, rounds=3) == pytest.approx(2.0)
    entry = {
        "model": "m",
        "webxnn_speedup_2t": 1.9,
        "ort_speedup_2t": 1.7,
        "webxnn_speedup_2t_paired": 2.0,
        "runs": [{"threads": 1, "webxnn_ms": 8.0}, {"threads": 2, "webxnn_ms": 4.2}],
    }
    assert "| 1.90 / 1.70 (webxnn paired 2.00) |" in models_markdown({"models": [entry]})
