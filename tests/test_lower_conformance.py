"""Every WPT case in ../shared/conformance/wpt and wpt-extra, compiled by the lowering and executed by the
numpy reference interpreter (`webxnn.xnn.reference`) instead of the C++ runtime, judged with WPT's rules
(`webxnn.conformance.compare`). This pins the lowering (and the WX tables' semantics the runtime follows)
independently of the runtime: float32 and integer cases must all pass, float16 cases ≥ 98%."""

from __future__ import annotations

import pathlib

import pytest

from webxnn.conformance.runner import case_files, load_cases, run_case
from webxnn.xnn import reference

CONFORMANCE = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance"
DIRS = [CONFORMANCE / "wpt", CONFORMANCE / "wpt-extra"]
FILES = case_files([d for d in DIRS if d.is_dir()]) if CONFORMANCE.is_dir() else []


def _is_fp16(case: dict) -> bool:
    descs = [
        *case.get("inputs", {}).values(),
        *(case.get("constants") or {}).values(),
        *case.get("expectedOutputs", {}).values(),
    ]
    return any(d.get("dataType") == "float16" for d in descs)


@pytest.mark.skipif(not FILES, reason=f"conformance data not found at {CONFORMANCE}")
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_wpt_file_through_reference(path: pathlib.Path) -> None:
    stem, cases = load_cases(path)
    bad32, bad16, n16 = [], [], 0
    for case in cases:
        r = run_case(case, stem, load_fn=reference.load)
        half = _is_fp16(case)
        n16 += half
        if r.status != "pass":
            (bad16 if half else bad32).append(f"{r.name}: [{r.status} at {r.stage}] {r.detail}")
    assert not bad32, "\n".join(bad32)
    assert len(bad16) <= 0.02 * n16, "\n".join(bad16)
