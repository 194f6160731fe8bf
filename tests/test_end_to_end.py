"""Compile → serialize → load in the C++ runtime → run, compared with numpy written straightforwardly in
`test_lower_ops.py` (the same CASES), tolerance rtol/atol 1e-5. Skips cleanly while the writer or the runtime
is not built, and per case while the runtime reports a node as unsupported."""

from __future__ import annotations

import numpy as np
import pytest

from test_lower_ops import CASES, Case
from webxnn.compiler import compile
from webxnn.dsl import parse
from webxnn.errors import UnsupportedError

writer = pytest.importorskip("webxnn.xnn.writer", reason="xnn writer not landed yet")
runtime = pytest.importorskip("webxnn.runtime", reason="runtime (webxnn._runtime) not built yet")


def _run(case: Case, threads: int = 1) -> dict[str, np.ndarray]:
    blob = compile(parse(case.text), weights=case.weights)
    try:
        prog = runtime.load(blob, threads=threads)
    except UnsupportedError as e:
        pytest.skip(f"runtime does not support this graph yet: {e}")
    return prog.run(case.inputs)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_end_to_end_matches_numpy(case: Case) -> None:
    got = _run(case)
    want = case.expected(case.inputs, case.weights)
    assert list(got) == list(want)
    for name, w in want.items():
        assert got[name].shape == w.shape, name
        assert got[name].dtype == np.float32, name
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5, err_msg=f"{case.name}:{name}")


def test_program_keeps_declared_input_and_output_names() -> None:
    case = next(c for c in CASES if c.name == "elementwise")
    blob = compile(parse(case.text), weights=case.weights)
    try:
        prog = runtime.load(blob, threads=1)
    except UnsupportedError as e:
        pytest.skip(f"runtime does not support this graph yet: {e}")
    assert [i.name for i in prog.inputs] == ["x", "y"]
    assert [o.name for o in prog.outputs] == ["sg", "th"]


def test_resnet_head_example_with_seeded_weights(conformance_dir) -> None:
    """The seed's resnet_head.webnn itself (2048 → 1000), with small seeded weights."""
    path = conformance_dir / "webnn-graph" / "examples" / "resnet_head.webnn"
    if not path.exists():
        pytest.skip(f"{path} not found")
    rng = np.random.default_rng(42)
    W = (rng.standard_normal((2048, 1000)) * 0.02).astype(np.float32)
    b = (rng.standard_normal(1000) * 0.1).astype(np.float32)
    x = rng.standard_normal((1, 2048)).astype(np.float32)
    blob = compile(parse(path.read_text()), weights={"W": W, "b": b})
    try:
        prog = runtime.load(blob, threads=2)
    except UnsupportedError as e:
        pytest.skip(f"runtime does not support this graph yet: {e}")
    got = prog.run({"x": x})["probs"]
    logits = x.astype(np.float64) @ W + b
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
