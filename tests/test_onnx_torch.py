"""Real `torch.onnx.export` output through the importer: tiny MobileNetV2, ResNet-18/50 and a BERT encoder
(the architectures of tools/torch_models.py at small widths) must import, compile, run and match
onnxruntime to 1e-4 of the output's range.

Static exports carry Constant, Conv (BN folded), Clip(min, max inputs), Gemm(transB), Flatten, Erf GELU,
LayerNormalization, Equal/Where/Expand masks, Gather on int64 ids, 4-D MatMul; dynamic exports (symbolic
batch/seq fixed by override_dims) add Shape → Gather → Unsqueeze → Concat → Reshape chains. Needs torch,
onnx and onnxruntime; CI has no torch, so there these skip (tools/torch_models.py check gives the full-size
numbers).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

TOOLS = Path(__file__).resolve().parents[1] / "tools" / "torch_models.py"


def _tools() -> Any:
    spec = importlib.util.spec_from_file_location("webxnn_torch_models", TOOLS)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


TM = _tools()
NAMES = list(TM.TINY_SPECS)
TOL = 1e-4


_EXPORTED: dict[tuple[str, bool], tuple[Path, dict[str, np.ndarray], Any]] = {}


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("torch_onnx")


def _export(d: Path, name: str, dynamic: bool) -> tuple[Path, dict[str, np.ndarray], Any]:
    """Each tiny model exported once per session (the export is most of a test's time)."""
    key = (name, dynamic)
    if key not in _EXPORTED:
        model, inputs = TM.build(name, tiny=True)
        path = d / f"{name}{'_dyn' if dynamic else ''}.onnx"
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
            TM.export(model, inputs, path, dynamic=dynamic)
        _EXPORTED[key] = (path, inputs, model)
    return _EXPORTED[key]


def _dims(inputs: dict[str, np.ndarray], batch: int) -> dict[str, int]:
    dims = {"batch": batch}
    for v in inputs.values():
        if v.ndim == 2:
            dims["seq"] = v.shape[1]
    return dims


def _batch2(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Two different samples: the seeded one and a shuffled/flipped twin."""
    out = {}
    for k, v in inputs.items():
        if k == "attention_mask":
            twin = np.ones_like(v)
        elif v.ndim == 2:
            twin = np.roll(v, 5, axis=1)
        else:
            twin = np.ascontiguousarray(v[..., ::-1])
        out[k] = np.concatenate([v, twin])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_static_export_matches_onnxruntime(export_dir: Path, name: str) -> None:
    path, inputs, model = _export(export_dir, name, dynamic=False)
    row = TM.check_model(path, inputs, reps=0)
    assert row["rel_err"] <= TOL, row
    # and the exported graph is what torch computes (a guard against testing a broken export)
    with torch.no_grad():
        want = model(*(torch.from_numpy(v) for v in inputs.values())).numpy()
    import webxnn

    got = webxnn.load(webxnn.compile(webxnn.from_onnx(path)), threads=1).run(inputs)["output"]
    assert np.max(np.abs(got - want)) <= TOL * float(np.ptp(want))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("batch", [1, 2])
def test_dynamic_export_with_override_dims(export_dir: Path, name: str, batch: int) -> None:
    path, inputs, _ = _export(export_dir, name, dynamic=True)
    if batch == 2:
        inputs = _batch2(inputs)
    row = TM.check_model(path, inputs, reps=0, override_dims=_dims(inputs, batch))
    assert row["rel_err"] <= TOL, row


def test_dynamic_export_needs_override_dims(export_dir: Path) -> None:
    from webxnn.errors import UnsupportedError

    path, _, _ = _export(export_dir, "minilm_l6", dynamic=True)
    with pytest.raises(UnsupportedError, match="batch|seq"):
        TM.check_model(path, {}, reps=0)


def test_dynamic_export_has_shape_chains_that_fold(export_dir: Path) -> None:
    import onnx

    import webxnn

    path, inputs, _ = _export(export_dir, "minilm_l6", dynamic=True)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"Shape", "Gather", "Unsqueeze", "Concat", "Reshape"} <= ops
    g = webxnn.from_onnx(path, override_dims=_dims(inputs, 1))
    static = webxnn.from_onnx(_export(export_dir, "minilm_l6", dynamic=False)[0])
    # once the dims are fixed, every shape chain folds: the same WebNN ops as the static export
    assert sorted(n.op for n in g.nodes) == sorted(n.op for n in static.nodes)


def test_mem_child_reports_phases(export_dir: Path, tmp_path: Path) -> None:
    path, _, _ = _export(export_dir, "resnet18", dynamic=False)
    res = TM.mem_child(path, tmp_path / "r.xnn")
    assert res["blob_mb"] > res["weights_mb"] * 0.9
    assert (tmp_path / "r.xnn").stat().st_size == round(res["blob_mb"] * 2**20)
