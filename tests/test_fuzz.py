"""A short budget of each fuzz harness (tests/fuzz/): malformed ONNX models, mutated `.webnn` / JSON /
manifests, mutated blobs. Every case must run or raise a WebxnnError subclass; any other exception or a hang
fails the test with the seed and case that reproduce it (`python -m tests.fuzz HARNESS --seed S --first K
--count 1`). Longer campaigns: `nice -n 19 python -m tests.fuzz onnx --count 40000` (see tests/fuzz/)."""

from __future__ import annotations

import pytest

from fuzz import HARNESSES, runner

# (harness, cases, seed): about 20-30 s each on the development machine; a new seed every run would make CI
# flaky, so the seeds are fixed here and campaigns by hand use others.
BUDGETS = [("onnx", 1200, 101), ("text", 2500, 102), ("blob", 20000, 103)]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "count", "seed"), BUDGETS, ids=[b[0] for b in BUDGETS])
def test_fuzz_budget(name: str, count: int, seed: int) -> None:
    if name == "onnx":
        pytest.importorskip("onnx")
    harness = HARNESSES[name](seed)
    try:
        rep = runner.run(harness.make, harness.check, count, timeout=30.0)
    finally:
        harness.close()
    print(rep.summary())
    assert not rep.findings, f"seed {seed}:\n{rep.summary()}"
    assert rep.outcomes["ran"] > 0  # the mutations leave some inputs valid: the run path is exercised too
