"""ONNX's own node conformance suite (`onnx.backend.test.case.node`, ~1,900 cases) through webxnn, as a user
runs a model: import → compile → load → run (see onnx_backend_cases.py for how cases are run and compared).

- No case may give a wrong answer or crash (an exception that is not a `webxnn.WebxnnError`).
- Refusals must match `onnx_backend_expected.txt`: a case listed as passing that is now refused fails the
  test, and so does a gap (a refusal whose reason is not a refusals.py category) where the list has a pass or
  a refusal by design. A listed refusal that now passes, or a case the list
  does not know (another onnx version), is only reported (a warning): regenerate the list with
  `python tests/onnx_backend_cases.py --freeze`.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("onnx", reason="the ONNX backend suite needs the 'onnx' package (webxnn[onnx])")

import onnx_backend_cases as suite  # noqa: E402


@pytest.fixture(scope="module")
def outcomes() -> list[suite.Outcome]:
    return [suite.run_case(c) for c in suite.cases()]


def test_suite_is_there(outcomes: list[suite.Outcome]) -> None:
    assert len(outcomes) > 1000, f"only {len(outcomes)} ONNX node cases collected"


def test_no_wrong_answers(outcomes: list[suite.Outcome]) -> None:
    wrong = [f"{o.name}: {o.detail}" for o in outcomes if o.status == suite.WRONG]
    assert not wrong, f"{len(wrong)} silent wrong answer(s):\n" + "\n".join(wrong)


def test_no_crashes(outcomes: list[suite.Outcome]) -> None:
    crashed = [f"{o.name}: {o.detail}" for o in outcomes if o.status == suite.CRASHED]
    assert not crashed, f"{len(crashed)} case(s) raised something other than a WebxnnError:\n" + "\n".join(
        crashed
    )


def test_refusals_are_the_expected_ones(outcomes: list[suite.Outcome]) -> None:
    expected = suite.read_expected()
    regressed = [
        f"{o.name}: {o.detail[:400]}"
        for o in outcomes
        if o.status == suite.REFUSED and expected.get(o.name) == suite.PASS
    ]
    gained = [
        o.name
        for o in outcomes
        if o.status == suite.PASS and expected.get(o.name) in (suite.REFUSED, suite.GAP)
    ]
    unknown = [o.name for o in outcomes if o.name not in expected]
    if gained:
        warnings.warn(
            f"{len(gained)} case(s) listed as refused now pass ({', '.join(gained[:10])}); "
            "refreeze: python tests/onnx_backend_cases.py --freeze",
            stacklevel=1,
        )
    if unknown:
        warnings.warn(
            f"{len(unknown)} case(s) not in onnx_backend_expected.txt (another onnx version?): "
            f"{', '.join(unknown[:10])}",
            stacklevel=1,
        )
    assert not regressed, f"{len(regressed)} case(s) that passed are now refused:\n" + "\n".join(regressed)


def test_gaps_do_not_grow(outcomes: list[suite.Outcome]) -> None:
    expected = suite.read_expected()
    gaps = [o for o in outcomes if suite.status_of(o) == suite.GAP]
    new = [f"{o.name}: {o.detail[:400]}" for o in gaps if expected.get(o.name) != suite.GAP]
    assert not new, f"{len(new)} new gap(s) (a refusal not by design):\n" + "\n".join(new)
