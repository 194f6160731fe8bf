"""webxnn's own fuzz harnesses: structure-aware mutators for every front door, one runner.

    python -m tests.fuzz onnx --count 40000     # malformed ONNX models → from_onnx → compile → run
    python -m tests.fuzz text --count 80000     # mutated .webnn text, JSON graphs and weights manifests
    python -m tests.fuzz blob --count 200000    # mutated .xnn blobs → load → run
    python -m tests.fuzz pte --count 50000      # mutated ExecuTorch programs → both .pte readers → run

Each case must end as a run or as a `webxnn.WebxnnError` subclass; anything else (another exception type, a
case slower than `--timeout` seconds, an allocation beyond the address-space limit, a hang or a crash in
native code) is a finding, printed with the seed and case number that reproduce it (`--seed S --first K
--count 1`). The cases run in a forked child watched by the parent (runner.py), so a hang or crash inside
the C++ runtime is reported and the campaign goes on. `tests/test_fuzz.py` runs a short
budget of each in CI (marked slow); the campaigns above are run by hand (`nice -n 19` on a shared machine).
"""

from __future__ import annotations

from typing import Any


def _harnesses() -> dict[str, Any]:
    from .harnesses import BlobHarness, OnnxHarness, PteHarness, TextHarness

    return {"onnx": OnnxHarness, "text": TextHarness, "blob": BlobHarness, "pte": PteHarness}


HARNESSES = _harnesses()
