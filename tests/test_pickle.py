"""A Program pickles as its blob's bytes and load options and re-loads (verified, planned) on the other side,
whatever it was loaded from: bytes, a bytearray, a .xnn path (read when pickled), a .webnn graph or an .onnx
model (compiled in memory)."""

from __future__ import annotations

import pathlib
import pickle

import numpy as np
import pytest

import webxnn
from webxnn.demo import EXAMPLE
from webxnn.runtime import Program


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)


def _same(a: Program, b: Program) -> None:
    assert (a.inputs, a.outputs) == (b.inputs, b.outputs)
    x = _x()
    np.testing.assert_array_equal(a.run([x])["probs"], b.run([x])["probs"])


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "xnn path", "webnn path"])
def test_program_pickles_by_blob(kind: str, tmp_path: pathlib.Path) -> None:
    blob = webxnn.compile(EXAMPLE)
    path = tmp_path / "m.xnn"
    path.write_bytes(blob)
    src = {
        "bytes": blob,
        "bytearray": bytearray(blob),
        "memoryview": memoryview(blob),
        "xnn path": path,
        "webnn path": EXAMPLE,
    }[kind]
    p = webxnn.load(src, threads=1)
    if isinstance(src, bytearray):
        src[:] = b"\0" * len(src)  # the Program (and its pickle) keep their own bytes
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, Program) and q is not p
    assert q.blob() == blob and q.threads == 1
    _same(p, q)


def test_threads_none_is_resolved_where_unpickled() -> None:
    """threads=None (one per core) travels as 'one per core', not as this machine's core count."""
    p = webxnn.load(webxnn.compile(EXAMPLE))
    state = p.__reduce__()[1]
    assert state[1] == 0
    assert pickle.loads(pickle.dumps(p)).threads == p.threads


def test_pool_and_spin_us_travel_with_the_pickle() -> None:
    """The load options pool and spin_us survive pickling (regression: a pool="shared" Program came back
    on its own pool, and spin_us as the default)."""
    blob = webxnn.compile(EXAMPLE)
    shared = pickle.loads(pickle.dumps(webxnn.load(blob, pool="shared")))
    assert shared.pool == "shared"
    spun = pickle.loads(pickle.dumps(webxnn.load(blob, threads=1, spin_us=123)))
    assert (spun.pool, spun.spin_us, spun.threads) == ("own", 123, 1)
    _same(shared, spun)


def test_onnx_model_handle_pickles(tmp_path: pathlib.Path) -> None:
    onnx = pytest.importorskip("onnx", reason="the onnx package (webxnn[onnx]) is not installed")
    from onnx import TensorProto, helper

    w = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [onnx.numpy_helper.from_array(w, "w")],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    p = webxnn.load(path, threads=2)
    path.unlink()  # the pickle carries the compiled blob, not the model file
    q = pickle.loads(pickle.dumps(p))
    assert q.threads == 2
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(q.run([x])["y"], p.run([x])["y"])


def test_program_without_its_blob_says_why_it_cannot_pickle() -> None:
    from webxnn import _runtime

    p = Program(_runtime.Program.from_buffer(webxnn.compile(EXAMPLE), 1))
    with pytest.raises(TypeError, match="without its blob"):
        pickle.dumps(p)
