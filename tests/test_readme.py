"""The README's examples run as written: every ```python block, in a fresh scope, and the `webxnn` command
lines of its ```bash blocks that are safe to run here (no pip, no server, no benchmark), each in a temporary
folder holding the files the examples name (the bundled example under python/webxnn/examples/, the blobs
a.xnn, b.xnn, c.xnn, model.onnx with x.npy as the ONNX section describes them, and the quantize section's
calib/ and calib.npz)."""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

import webxnn
from conftest import REPO
from webxnn.demo import EXAMPLE

TEXT = (REPO / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
# what a test may not run: installs, servers, benchmarks, the test suite itself, long fuzz campaigns
UNSAFE_SUBCOMMANDS = {"view"}


def _cli_lines() -> list[str]:
    """The `webxnn ...` commands of the ```bash blocks, in order (`a && b` split, comments dropped)."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", TEXT, re.S):
        for line in block.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["webxnn"] and words[1] not in UNSAFE_SUBCOMMANDS:
                    lines.append(shlex.join(words))
    return lines


CLI_LINES = _cli_lines()


def _onnx_model(path: pathlib.Path) -> None:
    """The README's model.onnx: input "0" [batch_size, 3, 32, 32] -> output "logits:0" [batch_size, 10]."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, 10)).astype(np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMean", ["0"], ["pooled"], axes=[2, 3], keepdims=0),
            helper.make_node("MatMul", ["pooled", "w"], ["logits:0"]),
        ],
        "readme",
        [helper.make_tensor_value_info("0", TensorProto.FLOAT, ["batch_size", 3, 32, 32])],
        [helper.make_tensor_value_info("logits:0", TensorProto.FLOAT, ["batch_size", 10])],
        initializer=[w],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.fixture
def workdir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    (tmp_path / "python").symlink_to(REPO / "python")  # "python/webxnn/examples/tiny_cnn.webnn"
    monkeypatch.setenv("WEBXNN_CACHE_DIR", str(tmp_path / "cache"))  # cache=True / --cache: not the user's
    blob = webxnn.compile(EXAMPLE)
    for name in ("a.xnn", "b.xnn", "c.xnn"):
        (tmp_path / name).write_bytes(blob)
    _onnx_model(tmp_path / "model.onnx")
    np.save(tmp_path / "x.npy", np.ones((8, 3, 32, 32), np.float32))
    rng = np.random.default_rng(0)  # the quantize section's calibration data: a folder and one .npz
    (tmp_path / "calib").mkdir()
    for i in range(4):
        sample = rng.standard_normal((1, 3, 32, 32), dtype=np.float32)
        np.savez(tmp_path / "calib" / f"{i}.npz", **{"0": sample})
    np.savez(tmp_path / "calib.npz", **{"0": rng.standard_normal((8, 3, 32, 32), dtype=np.float32)})
    cwd = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(cwd)


def test_readme_has_examples() -> None:
    assert len(PYTHON_BLOCKS) >= 3
    assert any(line.startswith("webxnn compile model.onnx") for line in CLI_LINES), CLI_LINES


def _needs(block: str, workdir: pathlib.Path, request: pytest.FixtureRequest) -> str | None:
    """Why `block` cannot run here (None: it can)."""
    if "executorch" not in block:
        return None
    # the ExecuTorch round trip: its optional packages and a MobileNetV2
    for module in ("executorch", "torch"):
        try:
            __import__(module)
        except ImportError:
            return f"the ExecuTorch example needs {module}"
    # built only when the block runs: the session fixture writes bench.models.mobilenet_v2()
    (workdir / "mobilenetv2.onnx").symlink_to(request.getfixturevalue("mobilenetv2_onnx"))
    return None


def test_readme_python_examples_run(workdir: pathlib.Path, request: pytest.FixtureRequest) -> None:
    """In order, in one scope, as a reader runs them: later blocks use the imports of the first."""
    scope: dict = {"__name__": "__readme__"}
    skipped = []
    for block in PYTHON_BLOCKS:
        why = _needs(block, workdir, request)
        if why:
            skipped.append(why)
            continue
        line = TEXT[: TEXT.index(block)].count("\n") + 1
        # padded so that a traceback gives the README's own line numbers
        exec(compile("\n" * (line - 1) + block, "README.md", "exec"), scope)  # noqa: S102 - our own README
        if "tiny_cnn" in block:
            assert scope["out"]["probs"].shape == (1, 10)
        if "logits:0" in block:
            assert scope["out"]["logits:0"].shape == (8, 10)
            np.testing.assert_allclose(scope["logits"], scope["out"]["logits:0"], rtol=1e-6)
    if skipped:
        pytest.skip(
            f"ran {len(PYTHON_BLOCKS) - len(skipped)} of {len(PYTHON_BLOCKS)} blocks; " + "; ".join(skipped)
        )


def test_readme_commands_run(workdir: pathlib.Path) -> None:
    """In order, in one folder: the commands of a block build on each other (compile, then run)."""
    env = dict(os.environ)
    package_root = str(pathlib.Path(webxnn.__file__).parents[1])  # the package as the tests import it
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    for line in CLI_LINES:
        args = [sys.executable, "-m", "webxnn", *shlex.split(line)[1:]]
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (line, r.stdout, r.stderr)
