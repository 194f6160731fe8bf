"""Zero-copy ONNX loading (`webxnn.onnx.mapped`): initializers become views of the memory-mapped file.

Checked against onnx's own loader: same arrays, same protobuf once raw_data is set aside, and a clean
fallback (or the usual error) for files the wire scanner does not handle.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from webxnn.errors import ParseError, WebxnnError, WeightsError  # noqa: E402
from webxnn.onnx import from_onnx  # noqa: E402
from webxnn.onnx.mapped import _encode_varint, _varint, load_mapped  # noqa: E402

RNG = np.random.default_rng(5)


def _model(inits: dict[str, np.ndarray], doc: str = "") -> onnx.ModelProto:
    """y = x + sum of the float initializers (each [4, 8]); other initializers just ride along."""
    nodes, prev = [], "x"
    floats = [k for k, v in inits.items() if v.dtype == np.float32 and v.shape == (4, 8)]
    for k, name in enumerate(floats):
        out = "y" if k == len(floats) - 1 else f"t{k}"
        nodes.append(helper.make_node("Add", [prev, name], [out]))
        prev = out
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TP.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TP.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
        doc_string=doc,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _save(m: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(m.SerializeToString())
    return path


def _inits() -> dict[str, np.ndarray]:
    return {
        "w_big": RNG.standard_normal((4, 8)).astype(np.float32) * np.ones((1, 1), np.float32),
        "w_big2": RNG.standard_normal((4, 8)).astype(np.float32),
        "w_huge": RNG.standard_normal((64, 65)).astype(np.float32),  # 16640 bytes: mapped
        "i64": np.arange(100, dtype=np.int64),  # 800 bytes: mapped
        "small": np.array([1.5, 2.5], np.float32),  # inline
        "flags": np.array([True, False] * 200),  # bool: always inline
        "half": RNG.standard_normal(300).astype(np.float16),
    }


def test_mapped_arrays_equal_onnx_load(tmp_path: Path) -> None:
    inits = _inits()
    path = _save(_model(inits, doc="x" * 1000), tmp_path / "m.onnx")
    proto, arrays = load_mapped(path)
    assert set(arrays) == {"w_huge", "i64", "half"}  # the [4, 8] floats are 128 bytes: inline
    for name, arr in arrays.items():
        assert arr.dtype == inits[name].dtype and np.array_equal(arr, inits[name])
        assert not arr.flags.writeable
    ref = onnx.load(str(path))
    for t in ref.graph.initializer:
        if t.name in arrays:
            t.ClearField("raw_data")
    assert proto.SerializeToString(deterministic=True) == ref.SerializeToString(deterministic=True)


def test_mapped_views_share_the_file(tmp_path: Path) -> None:
    big = RNG.standard_normal((128, 64)).astype(np.float32)
    m = _model({"a": RNG.standard_normal((4, 8)).astype(np.float32), "big": big})
    _, arrays = load_mapped(_save(m, tmp_path / "m.onnx"))
    assert isinstance(_root(arrays["big"]), mmap.mmap)  # a view of the file map, not a private copy
    assert np.array_equal(arrays["big"], big)


def _root(a: np.ndarray) -> object:
    base: object = a
    while getattr(base, "base", None) is not None:
        base = base.base  # type: ignore[attr-defined]
    return base


def test_from_onnx_uses_mapped_weights(tmp_path: Path) -> None:
    wb = RNG.standard_normal((8, 64)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "wb"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TP.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TP.FLOAT, None)],
        [numpy_helper.from_array(wb, "wb")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    graph = from_onnx(_save(m, tmp_path / "mm.onnx"))
    (arr,) = graph.weights.values()
    assert np.array_equal(arr, wb) and isinstance(_root(arr), mmap.mmap)


def test_unaligned_offsets(tmp_path: Path) -> None:
    # a doc string of odd length before the graph shifts every raw_data to an odd file offset
    for pad in range(4):
        inits = {
            "w": RNG.standard_normal((4, 8)).astype(np.float32),
            "big": RNG.standard_normal((33, 17)).astype(np.float32),
        }
        m = _model(inits)
        m.doc_string = "d" * (pad + 1)
        _, arrays = load_mapped(_save(m, tmp_path / f"u{pad}.onnx"))
        assert np.array_equal(arrays["big"], inits["big"])
        assert np.array_equal(arrays["big"] @ np.ones(17, np.float32), inits["big"] @ np.ones(17, np.float32))


def test_external_data_untouched(tmp_path: Path) -> None:
    inits = _inits()
    m = _model(inits)
    onnx.save_model(
        m,
        str(tmp_path / "ext.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="ext.data",
        size_threshold=0,
    )
    proto, arrays = load_mapped(tmp_path / "ext.onnx")
    assert arrays == {}  # nothing inline to map; the converter memory-maps external data itself
    g = from_onnx(tmp_path / "ext.onnx")
    assert g.weights


@pytest.mark.parametrize("cut", [1, 7, 100, -3])
def test_truncated_file_falls_back_to_onnx_error(tmp_path: Path, cut: int) -> None:
    data = _model(_inits()).SerializeToString()
    path = tmp_path / "t.onnx"
    path.write_bytes(data[:cut])
    assert load_mapped(path) is None
    with pytest.raises((ParseError, WeightsError)):
        from_onnx(path)


def test_garbage_and_empty_files(tmp_path: Path) -> None:
    for name, data in {"empty.onnx": b"", "junk.onnx": b"\xff" * 64, "group.onnx": b"\x0b\x0c"}.items():
        p = tmp_path / name
        p.write_bytes(data)
        assert load_mapped(p) is None
        with pytest.raises(WebxnnError):  # onnx.load then judges the file
            from_onnx(p)


def test_repeated_graph_field_falls_back(tmp_path: Path) -> None:
    m = _model(_inits())
    g = m.graph.SerializeToString()
    data = m.SerializeToString() + _encode_varint((7 << 3) | 2) + _encode_varint(len(g)) + g
    path = tmp_path / "twice.onnx"
    path.write_bytes(data)
    assert load_mapped(path) is None


def test_raw_data_size_mismatch_names_the_initializer(tmp_path: Path) -> None:
    t = numpy_helper.from_array(RNG.standard_normal((64, 64)).astype(np.float32), "bad")
    t.dims[0] = 65  # raw_data no longer fits the shape
    m = _model({})
    m.graph.initializer.append(t)
    path = _save(m, tmp_path / "bad.onnx")
    with pytest.raises(WeightsError, match="'bad'"):
        load_mapped(path)


@pytest.mark.parametrize("v", [0, 1, 127, 128, 300, 2**31, 2**63 - 1])
def test_varint_roundtrip(v: int) -> None:
    enc = _encode_varint(v)
    assert _varint(memoryview(enc), 0, len(enc)) == (v, len(enc))


# ------------------------------------------------------------------------- big models: time and memory


def _mlp(path: Path, layers: int, k: int, n: int, gemm: bool = False) -> list[np.ndarray]:
    """x[1, k] → `layers` × (MatMul [k, n] or Gemm transB [n, k], as torch exports nn.Linear) + Relu;
    saved as one protobuf file (no external data). Returns the weights in ONNX layout."""
    rng = np.random.default_rng(11)
    nodes, inits, ws, prev, width = [], [], [], "x", k
    for i in range(layers):
        out = "y" if i == layers - 1 else f"h{i}"
        w = (rng.standard_normal((width, n) if not gemm else (n, width)) / np.sqrt(width)).astype(np.float32)
        ws.append(w)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        if gemm:
            nodes.append(helper.make_node("Gemm", [prev, f"w{i}"], [f"m{i}"], transB=1))
        else:
            nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [out]))
        prev, width = out, n
    g = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TP.FLOAT, None)],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())
    return ws


def _import_and_compile(path: Path, out: Path) -> tuple[Any, float, int, int, int]:
    """(graph, import seconds, weight bytes, traced peak bytes of import, of compile streamed to `out`)."""
    import time
    import tracemalloc

    from webxnn.compiler import compile_graph
    from webxnn.xnn.writer import serialize_to_file

    tracemalloc.start()
    try:
        t = time.perf_counter()
        g = from_onnx(path)
        import_s = time.perf_counter() - t
        import_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        serialize_to_file(compile_graph(g), out)
        compile_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    weights = sum(np.asarray(a).nbytes for a in g.weights.values())
    return g, import_s, weights, import_peak, compile_peak


def _relu_mlp(x: np.ndarray, ws: list[np.ndarray], gemm: bool) -> np.ndarray:
    for w in ws:
        x = np.maximum(x.astype(np.float64) @ (w.T if gemm else w), 0)
    return x


@pytest.mark.slow
def test_100mb_model_imports_fast_and_compiles_with_one_copy(tmp_path: Path) -> None:
    """Issue 6: a 100 MB model imports in well under 10 s, and import + compile never hold a second
    private copy of the weights (import: none at all, the weights stay in the mapped file; compile: the
    transposed [N, K] filters the format needs, one copy at most)."""
    import webxnn

    path = tmp_path / "mlp100.onnx"
    ws = _mlp(path, layers=5, k=2304, n=2304)
    assert path.stat().st_size > 100e6
    g, import_s, weights, import_peak, compile_peak = _import_and_compile(path, tmp_path / "mlp100.xnn")
    assert import_s < 10.0
    assert import_peak < 0.02 * weights, f"import held {import_peak / weights:.2f}x the weights privately"
    assert compile_peak < 1.25 * weights, f"compile held {compile_peak / weights:.2f}x the weights"
    x = np.random.default_rng(3).standard_normal((1, 2304)).astype(np.float32)
    got = webxnn.load(str(tmp_path / "mlp100.xnn"), threads=1).run({"x": x})["y"]
    want = _relu_mlp(x, ws, gemm=False)
    assert np.max(np.abs(got - want)) <= 1e-4 * float(np.ptp(want))


def test_gemm_transb_weights_compile_with_one_copy(tmp_path: Path) -> None:
    path = tmp_path / "gemm.onnx"
    _mlp(path, layers=2, k=1024, n=1024, gemm=True)
    _, _, weights, _, compile_peak = _import_and_compile(path, tmp_path / "gemm.xnn")
    assert compile_peak < 1.25 * weights, f"compile held {compile_peak / weights:.2f}x the weights"


def test_gemm_transb_mlp_matches_numpy(tmp_path: Path) -> None:
    import webxnn

    path = tmp_path / "gemm_small.onnx"
    ws = _mlp(path, layers=3, k=96, n=80, gemm=True)
    x = np.random.default_rng(4).standard_normal((1, 96)).astype(np.float32)
    got = webxnn.load(webxnn.compile(from_onnx(path)), threads=1).run({"x": x})["y"]
    want = _relu_mlp(x, ws, gemm=True)
    assert np.max(np.abs(got - want)) <= 1e-4 * float(np.ptp(want))
