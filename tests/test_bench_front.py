"""`python -m bench`: the dispatcher hands a suite its own options, --help included, and tables are drawn from
results as the suites return them. No suite is run."""

from __future__ import annotations

import pytest
from bench.__main__ import main
from bench.contended import markdown


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


def test_an_unknown_suite_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["nosuch"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_the_loaded_table_shows_the_share_of_runs_made_alone() -> None:
    row = {
        "model": "m",
        "webxnn 1": 10.0,
        "webxnn 2": 9.5,
        "ort 1": 11.0,
        "ort 2": 15.0,
        "webxnn 2 alone": 0.82,
    }
    table = markdown({"loaded": [row]})
    assert "runs on the caller alone" in table and "| m | 10.00 | 9.50 | 11.00 | 15.00 | 82% |" in table
    older = {k: v for k, v in row.items() if k != "webxnn 2 alone"}  # a JSON saved before the column
    assert "| m | 10.00 | 9.50 | 11.00 | 15.00 | - |" in markdown({"loaded": [older]})
