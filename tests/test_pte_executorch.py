"""Round trips through ExecuTorch's own runtime (the optional `executorch` test extra: executorch 1.5.1 and
the CPU torch wheel). webxnn's .pte files must load and run in ExecuTorch and match onnxruntime on the ONNX
source within 1e-4 of the output range; webxnn must run ExecuTorch's own exports. Skipped, saying why, when
executorch is not installed."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import webxnn

onnx = pytest.importorskip("onnx", reason="onnx not installed")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed")
torch = pytest.importorskip("torch", reason="torch not installed (pip install 'webxnn[executorch]')")
et_runtime = pytest.importorskip(
    "executorch.runtime", reason="executorch not installed (pip install 'webxnn[executorch]')"
)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MOBILENETV2 = pathlib.Path("/work/ab/mobilenetv2.onnx")


def run_executorch(pte: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    program = et_runtime.Runtime.get().load_program(pte)  # keep the program alive while its method runs
    method = program.load_method("forward")
    return [o.numpy() for o in method.execute([torch.from_numpy(x) for x in inputs])]


def check_against_onnxruntime(
    path: pathlib.Path, inputs: dict[str, np.ndarray], inline: bool = False
) -> None:
    pte = webxnn.to_pte(path, inline=inline)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, inputs)
    got = run_executorch(pte, list(inputs.values()))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-4 * float(np.ptp(w)))


def _save(tmp_path: pathlib.Path, nodes, inputs, outputs, inits) -> pathlib.Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def _f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("inline", [False, True])
def test_conv_relu(tmp_path, inline):
    path = _save(
        tmp_path,
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [("w", _f32(4, 3, 3, 3, seed=1)), ("b", _f32(4, seed=2))],
    )
    check_against_onnxruntime(path, {"x": _f32(1, 3, 8, 8)}, inline)


def test_linear_two_inputs_two_outputs(tmp_path):
    path = _save(
        tmp_path,
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
            helper.make_node("Relu", ["g"], ["r"]),
            helper.make_node("Add", ["r", "z"], ["s"]),
        ],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 8]),
        ],
        [
            helper.make_tensor_value_info("s", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
        ],
        [("w", _f32(8, 16, seed=1)), ("b", _f32(8, seed=2))],
    )
    check_against_onnxruntime(path, {"x": _f32(2, 16), "z": _f32(2, 8, seed=3)})


def test_mobilenet_block(tmp_path):
    c, h = 8, 32
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["e"]),
        helper.make_node("Clip", ["e", "lo", "hi"], ["e6"]),
        helper.make_node("Conv", ["e6", "w2", "b2"], ["d"], group=h, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
        helper.make_node("Conv", ["d6", "w3", "b3"], ["p"]),
        helper.make_node("Add", ["x", "p"], ["y"]),
    ]
    inits = [
        ("w1", _f32(h, c, 1, 1, seed=1)),
        ("b1", _f32(h, seed=2)),
        ("w2", _f32(h, 1, 3, 3, seed=3)),
        ("b2", _f32(h, seed=4)),
        ("w3", _f32(c, h, 1, 1, seed=5)),
        ("b3", _f32(c, seed=6)),
        ("lo", np.array(0, np.float32)),
        ("hi", np.array(6, np.float32)),
    ]
    path = _save(
        tmp_path,
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    check_against_onnxruntime(path, {"x": _f32(1, c, 14, 14)})


@pytest.mark.slow
@pytest.mark.skipif(not MOBILENETV2.exists(), reason=f"{MOBILENETV2} not present")
def test_mobilenetv2():
    check_against_onnxruntime(MOBILENETV2, {"input": _f32(1, 3, 224, 224)})


@pytest.mark.slow
def test_webxnn_runs_executorchs_own_export():
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 6 * 6, 5),
    ).eval()
    x = torch.randn(1, 3, 6, 6)
    lowered = to_edge_transform_and_lower(
        torch.export.export(model, (x,)), partitioner=[XnnpackPartitioner()]
    )
    pte = lowered.to_executorch().buffer
    (want,) = run_executorch(pte, [x.numpy()])
    (got,) = webxnn.load(pte).run([x.numpy()]).values()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * float(np.ptp(want)))


def test_upper_bounded_dynamic_dims():
    text = """webnn_graph "d" v2 {
      inputs { x: f32[dyn("n", 8), 3]; }
      consts { w: f32[3, 4] @scalar(0.5); }
      nodes { y = matmul(x, w); z = relu(y); }
      outputs { z; }
    }"""
    pte = webxnn.to_pte(webxnn.parse(text))
    for n in (8, 3, 1):
        x = _f32(n, 3, seed=n)
        (got,) = run_executorch(pte, [x])
        np.testing.assert_allclose(got, np.maximum(x @ np.full((3, 4), 0.5, np.float32), 0), rtol=1e-6)
