"""ONNX Gather / GatherElements / GatherND with run-time ids: an id outside [-n, n-1] is an InputError, as
onnxruntime refuses it, where WebNN (and a WebNN graph written from the model) clamps it.

The ONNX importer names those gathers in `Graph.onnx_indices`; lowering gives them the checked + wrap flags
(xnn/ir.py); the runtime and the numpy reference check ids that are a graph input, or a reshape of one.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import webxnn
from webxnn.cli import main as cli_main
from webxnn.errors import InputError, WebxnnError
from webxnn.onnx import import_onnx
from webxnn.xnn import reference
from webxnn.xnn.ir import FLAG_CHECKED_INDICES, FLAG_INDICES_WRAP
from webxnn.xnn.reader import read

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

ort = pytest.importorskip("onnxruntime")

I64, I32 = TensorProto.INT64, TensorProto.INT32
TABLE = np.arange(8, dtype=np.float32).reshape(4, 2)  # 4 rows: valid ids -4..3


def _model(nodes: list, inputs: list, inits: list) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = min(m.ir_version, 10)  # what current onnxruntime accepts
    return m


def _const(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.FLOAT, list(arr.shape), arr.reshape(-1).tolist())


def _ids(name: str, dtype: int, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def gather_model(
    dtype: int = I64, shape: tuple[int, ...] = (3,), axis: int = 0, data=TABLE
) -> onnx.ModelProto:
    node = helper.make_node("Gather", ["W", "ids"], ["y"], axis=axis)
    return _model([node], [_ids("ids", dtype, list(shape))], [_const("W", data)])


def _ort(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def _ours(m: onnx.ModelProto):  # -> (Program, XnnGraph)
    blob = webxnn.compile(webxnn.from_onnx(m))
    return webxnn.load(blob), read(blob)


def _refused_as_ort(m: onnx.ModelProto, feeds: dict[str, np.ndarray], pattern: str) -> None:
    """onnxruntime refuses the ids; webxnn's Program and the numpy reference raise the same InputError."""
    with pytest.raises(Exception, match="(?i)out of|bounds|invalid"):
        _ort(m, feeds)
    p, xg = _ours(m)
    with pytest.raises(InputError, match=pattern) as e:
        p.run(feeds)
    assert isinstance(e.value, WebxnnError)
    with pytest.raises(InputError) as r:
        reference.run(xg, feeds)
    assert str(r.value) == str(e.value)


def _agrees_with_ort(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    want = _ort(m, feeds)
    p, xg = _ours(m)
    np.testing.assert_array_equal(p.run(feeds)["y"], want)
    np.testing.assert_array_equal(reference.run(xg, feeds)["y"], want)


# ---------------------------------------------------------------- Gather


@pytest.mark.parametrize(
    ("dtype", "np_dtype", "bad"),
    [
        (I64, np.int64, 4),
        (I64, np.int64, -5),
        (I64, np.int64, 1 << 40),
        (I64, np.int64, -(1 << 63)),
        (I64, np.int64, (1 << 63) - 1),
        (I32, np.int32, 4),
        (I32, np.int32, -5),
        (I32, np.int32, (1 << 31) - 1),
        (I32, np.int32, -(1 << 31)),
    ],
)
def test_gather_ids_out_of_range_are_an_input_error(dtype: int, np_dtype: type, bad: int) -> None:
    ids = np.array([0, bad, 3], np_dtype)
    _refused_as_ort(
        gather_model(dtype),
        {"ids": ids},
        rf"^input 'ids': element 1 is {bad}, outside -4\.\.3 \(dim 0 of the data it indexes has 4\)$",
    )


@pytest.mark.parametrize(("dtype", "np_dtype"), [(I64, np.int64), (I32, np.int32)])
def test_gather_ids_in_range_negatives_included_match_onnxruntime(dtype: int, np_dtype: type) -> None:
    _agrees_with_ort(gather_model(dtype), {"ids": np.array([-4, -1, 3], np_dtype)})
    _agrees_with_ort(gather_model(dtype), {"ids": np.array([0, 2, -3], np_dtype)})


def test_gather_on_axis_1_checks_that_axis() -> None:
    data = np.arange(30, dtype=np.float32).reshape(2, 5, 3)
    m = gather_model(I64, (2, 2), axis=1, data=data)
    _agrees_with_ort(m, {"ids": np.array([[-5, 4], [0, -1]], np.int64)})
    _refused_as_ort(
        m,
        {"ids": np.array([[0, 1], [5, 2]], np.int64)},
        r"element 2 is 5, outside -5\.\.4 \(dim 1 of the data",
    )


def test_the_first_bad_element_is_named_and_nothing_runs() -> None:
    p, _ = _ours(gather_model(I64, (2, 3)))
    with pytest.raises(InputError, match=r"element 4 is -7,"):
        p.run({"ids": np.array([[0, 1, 2], [3, -7, 9]], np.int64)})
    np.testing.assert_array_equal(
        p.run({"ids": np.array([[3, 2, 1], [0, -1, -4]], np.int64)})["y"][1, 2], [0, 1]
    )


def test_flags_in_the_blob() -> None:
    _, xg = _ours(gather_model())
    (node,) = xg.nodes
    assert node.kind == "WXGather" and node.fields["flags"] == FLAG_CHECKED_INDICES | FLAG_INDICES_WRAP


# ---------------------------------------------------------------- GatherElements, GatherND


def test_gather_elements_ids_are_checked_on_their_axis() -> None:
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    node = helper.make_node("GatherElements", ["W", "ids"], ["y"], axis=1)
    m = _model([node], [_ids("ids", I64, [3, 2])], [_const("W", data)])
    _agrees_with_ort(m, {"ids": np.array([[0, -4], [3, -1], [1, 2]], np.int64)})
    _refused_as_ort(
        m,
        {"ids": np.array([[0, 1], [2, 4], [0, 0]], np.int64)},
        r"element 3 is 4, outside -4\.\.3 \(dim 1 of",
    )


def test_gather_nd_ids_are_checked_per_position_of_the_last_dim() -> None:
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)  # positions 0 and 1 index dims of 2 and 3
    node = helper.make_node("GatherND", ["W", "ids"], ["y"])
    m = _model([node], [_ids("ids", I64, [3, 2])], [_const("W", data)])
    _agrees_with_ort(m, {"ids": np.array([[0, -3], [-2, 2], [1, 0]], np.int64)})
    # 2 is fine in position 1 (dim of 3) and out of range in position 0 (dim of 2)
    _refused_as_ort(
        m,
        {"ids": np.array([[0, 2], [2, 0], [1, 1]], np.int64)},
        r"element 2 is 2, outside -2\.\.1 \(dim 0 of",
    )
    _refused_as_ort(
        m,
        {"ids": np.array([[0, 2], [1, -4], [1, 1]], np.int64)},
        r"element 3 is -4, outside -3\.\.2 \(dim 1 of",
    )


def test_constant_ids_out_of_range_are_refused_at_import() -> None:
    data = _const("W", np.zeros((3, 4), np.float32))
    bad = helper.make_tensor("ids", I64, [1, 2], [0, 4])
    m = _model([helper.make_node("GatherElements", ["W", "ids"], ["y"], axis=1)], [], [data, bad])
    with pytest.raises(webxnn.ValidationError, match="GatherElements: an index is out of range"):
        webxnn.from_onnx(m)
    bad = helper.make_tensor("ids", I64, [1, 2], [3, 0])
    m = _model([helper.make_node("GatherND", ["W", "ids"], ["y"])], [], [data, bad])
    with pytest.raises(webxnn.ValidationError, match="GatherND: an index is out of range"):
        webxnn.from_onnx(m)


# ---------------------------------------------------------------- ids on their way to the gather


def test_ids_through_a_reshape_are_checked() -> None:
    shape = helper.make_tensor("s", I64, [2], [3, 1])
    nodes = [helper.make_node("Reshape", ["ids", "s"], ["r"]), helper.make_node("Gather", ["W", "r"], ["y"])]
    m = _model(nodes, [_ids("ids", I64, [3])], [_const("W", TABLE), shape])
    _agrees_with_ort(m, {"ids": np.array([-4, 1, 3], np.int64)})
    _refused_as_ort(
        m, {"ids": np.array([0, 1, 4], np.int64)}, r"input 'ids': element 2 is 4, outside -4\.\.3"
    )


def test_ids_computed_in_the_graph_are_not_checked_they_clamp() -> None:
    """The documented limit (README): ids that are not a graph input (or a reshape of one) follow WebNN's
    clamp. A Cast is such a computation: onnxruntime checks the cast value, which may differ from the
    input."""
    cast = helper.make_node("Cast", ["ids"], ["r"], to=I32)
    m = _model(
        [cast, helper.make_node("Gather", ["W", "r"], ["y"])], [_ids("ids", I64, [3])], [_const("W", TABLE)]
    )
    p, xg = _ours(m)
    want = TABLE[[3, 0, 0]]  # 4 clamps to 3, -9 to 0
    feeds = {"ids": np.array([4, 0, -9], np.int64)}
    np.testing.assert_array_equal(p.run(feeds)["y"], want)
    np.testing.assert_array_equal(reference.run(xg, feeds)["y"], want)


# ---------------------------------------------------------------- WebNN keeps clamping


def test_the_webnn_graph_written_from_the_model_has_no_flag_and_clamps(tmp_path: pathlib.Path) -> None:
    m = gather_model()
    g = webxnn.from_onnx(m)
    assert g.onnx_indices == {"y"}
    text = g.to_text()
    assert "onnx" not in text.lower() and "check" not in text and g.to_json().count("onnx") == 0
    onnx.save(m, tmp_path / "g.onnx")
    (webnn, *_) = import_onnx(tmp_path / "g.onnx", tmp_path / "g.webnn")
    back = webxnn.load_graph(webnn)
    assert back.onnx_indices == set()
    blob = webxnn.compile(back)
    assert read(blob).nodes[0].fields["flags"] == 0
    got = webxnn.load(blob).run({"ids": np.array([4, 0, -9], np.int64)})["y"]
    np.testing.assert_array_equal(got, TABLE[[3, 0, 0]])


# ---------------------------------------------------------------- the CLI


def test_cli_run_reports_the_bad_id_in_one_line(tmp_path: pathlib.Path, capsys) -> None:
    onnx.save(gather_model(), tmp_path / "g.onnx")
    np.save(tmp_path / "ids.npy", np.array([1, 9, 2], np.int64))
    assert cli_main(["run", str(tmp_path / "g.onnx"), "--input", f"ids={tmp_path / 'ids.npy'}"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "webxnn: error: input 'ids': element 1 is 9, outside -4..3 (dim 0 of the data it indexes has 4)"
    )
