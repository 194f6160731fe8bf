"""The code stays `ruff` clean (configured in pyproject.toml)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from conftest import REPO


def test_ruff_clean() -> None:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (pip install '.[test]')")
    cmd = [sys.executable, "-m", "ruff", "check", "--output-format", "concise", "python", "tests", "bench"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_core_import_does_not_pull_optional_packages() -> None:
    code = (
        'import sys, webxnn; webxnn.parse(\'webnn_graph "g" v1 { inputs { x: f32[1]; } '
        "nodes { y = relu(x); } outputs { y; } }'); print(sorted(m for m in ('onnx', 'onnxruntime', "
        "'hypothesis', 'matplotlib') if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
