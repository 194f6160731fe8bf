"""`python -m bench`: the dispatcher hands a suite its own options, --help included. No suite is run."""

from __future__ import annotations

import pytest
from bench.__main__ import main


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
