"""webxnn.ray.Predictor: numpy batches in chunks the model accepts (a dynamic batch dim up to its bound, a
fixed one padded), rows back one for one and in order; then on a local Ray instance (2 CPUs, loopback, no
dashboard) the same arrays as a single-process run over 1,000 inputs, in input order."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import numpy as np
import pytest

import webxnn
from webxnn.demo import EXAMPLE
from webxnn.errors import InputError
from webxnn.ray import Predictor

N_RAY = 1000


def _mlp_onnx(path: pathlib.Path, batch: int | str) -> np.ndarray:
    """x[batch, 3] @ w -> relu -> y[batch, 4]; returns w."""
    onnx = pytest.importorskip("onnx", reason="the onnx package (webxnn[onnx]) is not installed")
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])],
        [numpy_helper.from_array(w, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return w


def _rows(n: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, *shape)).astype(np.float32)


def test_fixed_batch_is_padded_and_cut(tmp_path: pathlib.Path) -> None:
    w = _mlp_onnx(tmp_path / "m.onnx", 4)
    p = Predictor(tmp_path / "m.onnx")
    assert (p.chunk, p.pad) == (4, True)
    x = _rows(10, 3)
    out = p({"x": x, "id": np.arange(10)})
    np.testing.assert_array_equal(out["id"], np.arange(10))  # passed through
    np.testing.assert_allclose(out["y"], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)
    assert p({"x": x[:0]})["y"].shape == (0, 4)


def test_symbolic_batch_becomes_dynamic_up_to_max_batch(tmp_path: pathlib.Path) -> None:
    w = _mlp_onnx(tmp_path / "m.onnx", "N")
    p = Predictor(str(tmp_path / "m.onnx"), max_batch=8)
    assert (p.chunk, p.pad) == (8, False)
    assert p.program.inputs[0].dynamic[0] == "N"
    x = _rows(19, 3)
    out = p({"data": x})  # the only column feeds the only input
    np.testing.assert_array_equal(Predictor(p.program, columns="data")({"data": x, "id": x})["y"], out["y"])
    np.testing.assert_allclose(out["y"], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)
    assert "data" not in out


def test_program_and_bytes_are_accepted_and_errors_name_the_column() -> None:
    blob = webxnn.compile(EXAMPLE)
    a = Predictor(webxnn.load(blob, threads=2), threads=1)
    assert a.program.threads == 1
    x = _rows(3, 3, 32, 32)
    np.testing.assert_array_equal(a({"x": x})["probs"], Predictor(blob)({"x": x})["probs"])
    with pytest.raises(InputError, match=r"no column for input\(s\) x \(column 'img'\).*\['a', 'b'\]"):
        Predictor(blob, columns={"x": "img"})({"a": x, "b": x})
    with pytest.raises(
        InputError, match=r"rows of shape \[3, 32, 32\] expected, got a batch of shape \[3, 3"
    ):
        a({"x": x[..., None]})
    with pytest.raises(InputError, match="input 'x': expected dtype float32, got float64"):
        a({"x": x.astype(np.float64)})
    with pytest.raises(ValueError, match="max_batch"):
        Predictor(blob, max_batch=0)


# ------------------------------------------------------------------------------------------- on Ray itself


@pytest.fixture(scope="module")
def ray_local() -> Iterator[object]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'webxnn[ray]')")
    data = pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'ray[data]')")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    data.DataContext.get_current().execution_options.preserve_order = True
    try:
        yield ray
    finally:
        ray.shutdown()


def _on_ray(ray: object, x: np.ndarray, **kwargs: object) -> dict[str, np.ndarray]:
    import ray.data

    ds = ray.data.from_items([{"id": i, "x": row} for i, row in enumerate(x)], override_num_blocks=8)
    out = ds.map_batches(
        Predictor,
        fn_constructor_kwargs=kwargs,
        batch_size=50,
        concurrency=2,
        num_cpus=1,
        batch_format="numpy",
    )
    rows = out.take_all()
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


@pytest.mark.slow  # starting Ray and its workers takes tens of seconds
def test_ray_matches_a_single_process_run(ray_local: object, tmp_path: pathlib.Path) -> None:
    x = _rows(N_RAY, 3, 32, 32)
    got = _on_ray(ray_local, x, model=webxnn.compile(EXAMPLE), threads=1)
    np.testing.assert_array_equal(got["id"], np.arange(N_RAY))
    np.testing.assert_array_equal(got["probs"], Predictor(EXAMPLE)({"x": x})["probs"])


@pytest.mark.slow
def test_ray_dynamic_batches_match_a_single_process_run(ray_local: object, tmp_path: pathlib.Path) -> None:
    _mlp_onnx(tmp_path / "m.onnx", "N")
    program = Predictor(tmp_path / "m.onnx", max_batch=16).program  # sent to the actors as its blob
    x = _rows(N_RAY, 3)
    got = _on_ray(ray_local, x, model=program, threads=1)
    np.testing.assert_array_equal(got["id"], np.arange(N_RAY))
    np.testing.assert_array_equal(got["y"], Predictor(program)({"x": x})["y"])
