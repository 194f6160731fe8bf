"""Malformed ONNX models, built with onnx.helper: each is a WebxnnError subclass naming the node or tensor
and what is wrong (issue 25: undefined and cyclic inputs, raw_data not matching dims, attributes of the wrong
type, missing inputs, bad external data fields and locations outside the model's folder, non-UTF-8 strings),
never a KeyError / IndexError / TypeError from inside the importer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import webxnn  # noqa: E402
from webxnn.errors import UnsupportedError, ValidationError, WeightsError  # noqa: E402
from webxnn.onnx import convert, from_onnx  # noqa: E402

VI = helper.make_tensor_value_info


def _model(nodes: list[Any], inits: list[Any] | None = None, shape: list[int] | None = None) -> Any:
    g = helper.make_graph(
        nodes, "m", [VI("x", TP.FLOAT, shape or [2, 4])], [VI("y", TP.FLOAT, None)], inits or []
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _w(name: str = "w", shape: tuple[int, ...] = (4, 3)) -> Any:
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def test_undefined_and_cyclic_inputs_name_the_node_and_value() -> None:
    m = _model([helper.make_node("Relu", ["ghost"], ["y"], name="r")])
    with pytest.raises(ValidationError, match=r"Relu node 'r': input 0 'ghost' is not defined before"):
        from_onnx(m)
    cyc = _model(
        [
            helper.make_node("Add", ["x", "b"], ["a"], name="first"),
            helper.make_node("Relu", ["a"], ["b"], name="second"),
            helper.make_node("Identity", ["b"], ["y"]),
        ]
    )
    with pytest.raises(ValidationError, match=r"Add node 'first': input 1 'b' is not defined.*cycle"):
        from_onnx(cyc)


def test_raw_data_not_matching_dims() -> None:
    t = _w()
    t.raw_data = t.raw_data[:-4]
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [t])
    with pytest.raises(
        WeightsError, match=r"initializer 'w': raw_data holds 44 bytes, but float32\[4, 3\] needs 48"
    ):
        from_onnx(m)
    t = _w()
    t.dims[0] = -4
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [t])
    with pytest.raises(WeightsError, match=r"initializer 'w': negative dim"):
        from_onnx(m)


def test_raw_data_not_matching_dims_mapped_from_a_file(tmp_path: Path) -> None:
    t = numpy_helper.from_array(np.ones((16, 8), np.float32), "w")  # large enough to be mapped
    t.raw_data = t.raw_data + b"\0" * 4
    path = tmp_path / "m.onnx"
    onnx.save(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [t], shape=[2, 16]), path)
    with pytest.raises(WeightsError, match=r"initializer 'w': raw_data holds 516 bytes"):
        from_onnx(path)


@pytest.mark.parametrize(
    ("node", "pattern"),
    [
        (
            helper.make_node("Gemm", ["x", "w"], ["y"], name="g", transB=[1]),
            r"Gemm node 'g': attribute 'transB' is INTS, but Gemm takes INT",
        ),
        (
            helper.make_node("Gemm", ["x"], ["y"], name="g"),
            r"Gemm node 'g': has 1 input\(s\), but Gemm takes 2..3",
        ),
        (
            helper.make_node("Conv", ["x"], ["y"], name="c"),
            r"Conv node 'c': has 1 input\(s\), but Conv takes 2..3",
        ),
        (
            helper.make_node("Gemm", ["", "w"], ["y"], name="g"),
            r"Gemm node 'g': required input 0 \(A\) is missing",
        ),
        (
            helper.make_node("Softmax", ["x"], ["y"], name="s", axis=1.5),
            r"Softmax node 's': attribute 'axis' is FLOAT, but Softmax takes INT",
        ),
        (
            helper.make_node("Cast", ["x"], ["y"], name="c"),
            r"Cast node 'c': required attribute 'to' is missing",
        ),
        (
            helper.make_node("Softmax", ["x"], ["y"], name="s", axis="1"),
            r"attribute 'axis' is STRING, but Softmax takes INT",
        ),
        (  # an attribute the model's opset no longer declares, of the type older opsets gave it
            helper.make_node("Split", ["x"], ["y", "z"], name="s", split=2.0),
            r"Split node 's': attribute 'split' is FLOAT, but Split takes INTS",
        ),
    ],
)
def test_attribute_types_and_input_counts(node: Any, pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        from_onnx(_model([node], [_w()]))


def test_attribute_values_of_the_right_type_but_wrong_length() -> None:
    conv = helper.make_node("Conv", ["x", "k"], ["y"], name="c", pads=[1, 1])
    k = numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "k")
    with pytest.raises(ValidationError, match=r"Conv node 'c': pads has 2 entries.*needs 4"):
        from_onnx(_model([conv], [k], shape=[1, 3, 8, 8]))
    pad = helper.make_node("Pad", ["x", "p"], ["y"], name="p")
    p = numpy_helper.from_array(np.int64([1, 1, 1]), "p")
    with pytest.raises(ValidationError, match=r"Pad node 'p': 3 pads for 2 axes"):
        from_onnx(_model([pad], [p]))
    # num_outputs of 2^62 once made a 2^62-entry list (a hang)
    split = helper.make_node("Split", ["x"], ["y", "z"], name="s", axis=1, num_outputs=1 << 62)
    with pytest.raises(ValidationError, match=r"Split node 's': num_outputs"):
        from_onnx(_model([split]))
    resh = helper.make_node("Reshape", ["x", "s"], ["y"], name="r")
    s = numpy_helper.from_array(np.float32([np.nan, 2]), "s")
    with pytest.raises(ValidationError, match=r"Reshape node 'r': input 1 \(shape\) must hold integers"):
        from_onnx(_model([resh], [s]))


def test_non_utf8_strings_are_named() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")])
    data = m.SerializeToString().replace(b"relu", b"r\xfflu")
    bad = onnx.ModelProto()
    bad.ParseFromString(data)
    with pytest.raises(
        ValidationError, match=r"model\.graph\.node\[0\]\.name is not valid UTF-8 \('r\\\\xfflu'\)"
    ):
        from_onnx(bad)


def _external_model(tmp_path: Path, **fields: str) -> Path:
    (tmp_path / "w.bin").write_bytes(np.ones((4, 3), np.float32).tobytes())
    t = TP(name="w", data_type=TP.FLOAT, dims=[4, 3], data_location=TP.EXTERNAL)
    for k, v in {"location": "w.bin", **fields}.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    path = tmp_path / "m.onnx"
    path.write_bytes(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [t]).SerializeToString())
    return path


def test_external_data_fields_are_checked(tmp_path: Path) -> None:
    g = from_onnx(_external_model(tmp_path))
    np.testing.assert_array_equal(next(iter(g.weights.values())), np.ones((4, 3), np.float32))
    for off in ("-8", "abc", "1.5", ""):
        if off:
            with pytest.raises(
                WeightsError, match=rf"initializer 'w': external data offset '{off}' is not a"
            ):
                from_onnx(_external_model(tmp_path, offset=off))
    with pytest.raises(
        WeightsError, match=r"offset 4 length 48 does not hold float32\[4, 3\].*the file has 48"
    ):
        from_onnx(_external_model(tmp_path, offset="4"))
    with pytest.raises(WeightsError, match=r"offset 0 length 36"):
        from_onnx(_external_model(tmp_path, length="36"))
    with pytest.raises(WeightsError, match=r"offset \d+ length 48 does not hold"):
        from_onnx(_external_model(tmp_path, offset=str(1 << 70)))


@pytest.mark.parametrize(
    "location", ["/etc/passwd", "../../../../etc/passwd", "sub/../../w.bin", "\\\\server\\w"]
)
def test_external_data_outside_the_model_folder_is_refused(tmp_path: Path, location: str) -> None:
    with pytest.raises(
        WeightsError, match=r"initializer 'w': external data location .* outside the model's folder"
    ):
        from_onnx(_external_model(tmp_path, location=location))


def test_external_data_symlink_leading_out_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(bytes(48))
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(outside, folder / "link.bin")
    with pytest.raises(WeightsError, match=r"'link.bin' leads outside the model's folder .*symlink"):
        from_onnx(_external_model(folder, location="link.bin"))
    os.symlink("w.bin", folder / "inside.bin")  # a symlink that stays inside is fine
    assert from_onnx(_external_model(folder, location="inside.bin")).weights


def test_external_data_location_that_is_not_utf8(tmp_path: Path) -> None:
    path = _external_model(tmp_path, location="wxbin")
    path.write_bytes(path.read_bytes().replace(b"wxbin", b"w\xffbin"))
    with pytest.raises(ValidationError, match=r"external_data\[0\]\.value is not valid UTF-8"):
        from_onnx(path)


def test_the_safety_net_names_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stray exception from a translator (a bug the checks above missed) still comes out as a
    ValidationError naming the node, with the original exception chained."""
    from webxnn.onnx.registry import TRANSLATORS, load_translators

    load_translators()

    def broken(ctx: Any, node: Any) -> None:
        raise KeyError("oops")

    monkeypatch.setitem(TRANSLATORS, "Relu", broken)
    with pytest.raises(ValidationError, match=r"Relu node 'r': cannot convert it \(KeyError: 'oops'\)") as e:
        from_onnx(_model([helper.make_node("Relu", ["x"], ["y"], name="r")]))
    assert isinstance(e.value.__cause__, KeyError)
    monkeypatch.setattr(convert, "SAFETY_NET", False)
    with pytest.raises(KeyError):
        from_onnx(_model([helper.make_node("Relu", ["x"], ["y"], name="r")]))


def test_a_one_d_matmul_operand_of_symbolic_length() -> None:
    """Found by the ONNX fuzzer (seed 2511, case 1773): a TypeError from int(DynDim)."""
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "m",
        [VI("x", TP.FLOAT, ["n"])],
        [VI("y", TP.FLOAT, None)],
        [_w("w", (4, 3))],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedError, match=r"(?s)MatMul ×1: 'mm'.*needs the symbolic dim 'n' fixed"):
        from_onnx(m, dyn_max=8)
    assert from_onnx(m, override_dims={"n": 4}).nodes


def test_trilu_k_that_is_not_one_integer() -> None:
    """Found by the ONNX fuzzer (seed 2521, case 2966): int() of a TensorProto / an array."""
    for k in (np.int64([1, 2]), np.float32([0.5])):
        node = helper.make_node("Trilu", ["x", "k"], ["y"], name="t")
        with pytest.raises(ValidationError, match=r"Trilu node 't': input 1 \(k\) must"):
            from_onnx(_model([node], [numpy_helper.from_array(k, "k")]))
    node = helper.make_node("Trilu", ["x", "k"], ["y"], name="t")
    assert from_onnx(_model([node], [numpy_helper.from_array(np.int64(1), "k")])).nodes


def test_attributes_the_op_does_not_have_are_refused() -> None:
    """Found by the ONNX fuzzer (seed 2531, cases 3525 and 11212): `group=[..]` on a MaxPool and `axes=1.5`
    on an op without `axes` reached translators that read those names (TypeError). onnx.checker refuses
    such attributes too."""
    node = helper.make_node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[2, 2], group=[1, 2])
    with pytest.raises(ValidationError, match=r"MaxPool node 'p': MaxPool has no attribute 'group'"):
        from_onnx(_model([node], shape=[1, 1, 4, 4]))
    node = helper.make_node("Pad", ["x", "p"], ["y"], name="pad", axes=1.5)
    with pytest.raises(ValidationError, match=r"Pad node 'pad': Pad has no attribute 'axes'"):
        from_onnx(_model([node], [numpy_helper.from_array(np.int64([0, 0, 0, 0]), "p")]))


def test_recurrent_inputs_of_the_wrong_rank() -> None:
    """Found by the ONNX fuzzer (seed 2541, case 26629): an IndexError reading R's hidden size."""
    w = numpy_helper.from_array(np.ones((1, 12, 4), np.float32), "W")
    r = numpy_helper.from_array(np.ones((12,), np.float32), "R")
    node = helper.make_node("GRU", ["x", "W", "R"], ["y"], name="gru")
    with pytest.raises(ValidationError, match=r"GRU node 'gru': input 2 \(R\) has rank 1, not 3"):
        from_onnx(_model([node], [w, r], shape=[5, 1, 4]))


def test_a_zero_point_as_large_as_a_huge_scale_is_refused_before_it_is_made() -> None:
    """Found by the ONNX fuzzer (seed 2551, case 12704): np.zeros of y_scale's shape raised ValueError. (The
    scale was a graph input of that shape; such an input is now refused first, so here Expand makes it.)"""
    shape = numpy_helper.from_array(np.array([1 << 41], np.int64), "shape")
    g = helper.make_graph(
        [
            helper.make_node("Expand", ["v", "shape"], ["s"]),
            helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q"),
        ],
        "m",
        [VI("x", TP.FLOAT, [2, 4]), VI("v", TP.FLOAT, [1])],
        [VI("y", TP.UINT8, None)],
        [shape],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        ValidationError, match=r"QuantizeLinear node 'q': a zero point of shape \[1, 2199023255552\]"
    ):
        from_onnx(m)


def test_layer_norm_scale_broadcast_over_a_symbolic_dim(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the ONNX fuzzer (seed 2561, case 21716): a scale broadcast to a shape with a symbolic dim
    compared DynDim with int (TypeError)."""
    g = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", axis=1)],
        "m",
        [VI("x", TP.FLOAT, [1, "n", 8])],
        [VI("y", TP.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones(8, np.float32), "s"),
            numpy_helper.from_array(np.zeros(8, np.float32), "b"),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    monkeypatch.setattr(convert, "SAFETY_NET", False)  # the check itself must catch it, not the net
    with pytest.raises(UnsupportedError, match=r"needs the symbolic dims fixed"):
        from_onnx(m, dyn_max=4)


def test_dims_beyond_uint32_are_validation_errors_naming_the_place() -> None:
    """A graph input or a node output whose dim a blob cannot hold (uint32) is refused when the graph is
    validated, naming input or node, not by the blob writer."""
    m = _model([helper.make_node("Relu", ["x"], ["y"])], shape=[1 << 32, 2])
    with pytest.raises(ValidationError, match=r"input 'x': dimension 4294967296 .*\(uint32\)"):
        webxnn.compile(from_onnx(m))
    shape = numpy_helper.from_array(np.array([1, 1 << 32], np.int64), "s")
    m = _model([helper.make_node("Expand", ["x", "s"], ["y"], name="ex")], [shape], shape=[1, 1])
    with pytest.raises(
        ValidationError, match=r"Expand node 'ex'.*dimension 4294967296|ex.*dimension 4294967296"
    ):
        webxnn.compile(from_onnx(m))


@pytest.mark.parametrize("eps", [float("inf"), float("nan"), -1.0])
def test_layer_norm_epsilon_beyond_what_the_runtime_takes_is_a_validation_error(eps: float) -> None:
    """Found by the ONNX fuzzer: LayerNormalization epsilon=inf passed validation and the runtime refused the
    blob at load (FormatError 'node 1 (WXNormalize): epsilon inf ...'); now validation names the node."""
    s, b = _w("s", (4,)), _w("b", (4,))
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", epsilon=eps)
    m = _model([node], [s, b])
    with pytest.raises(ValidationError, match=r"'epsilon' = .* must be a finite non-negative number"):
        webxnn.compile(from_onnx(m))


def test_an_input_declared_with_a_zero_and_a_negative_dim() -> None:
    """Found by the ONNX fuzzer (seed 2591, case 33273): an input of dims [0, -5] was taken for an empty
    constant and np.zeros raised ValueError 'negative dimensions are not allowed'; now the zero dim is refused
    as for any input with a zero dim, naming it."""
    m = _model([helper.make_node("Relu", ["x"], ["y"])], shape=[0, -5])
    with pytest.raises(UnsupportedError, match=r"model input 'x' dim 0"):
        from_onnx(m)
    m = _model([helper.make_node("Relu", ["x"], ["y"])], shape=[-5, 0])
    with pytest.raises(UnsupportedError, match=r"model input 'x' dim 1"):
        from_onnx(m)


def test_max_pool_indices_of_a_huge_input_allocate_nothing_of_its_size() -> None:
    """Found by the ONNX fuzzer (seed 2593, case 8575): MaxPool's Indices output made an [N, C, 1] array of
    -inf while importing, so an input of batch 2^63-1 raised ValueError 'array is too big' from numpy. Such a
    dim is now refused with the input named; within uint32 dims the -inf slot is one element expanded in the
    graph, so importing allocates nothing of the input's size (compiling then refuses the tensor's bytes)."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2], name="mp")
    g = helper.make_graph(
        [node],
        "m",
        [VI("x", TP.FLOAT, [(1 << 63) - 1, 3, 8, 8])],
        [VI("y", TP.FLOAT, None), VI("i", TP.INT64, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        ValidationError, match=r"model input 'x': dimension 9223372036854775807 in dim 0 .*uint32"
    ):
        from_onnx(m)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1 << 20
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 1 << 20
    imported = from_onnx(m)  # was a 4 TiB np.full
    with pytest.raises(ValidationError, match=r"more than the runtime's limit"):
        webxnn.compile(imported)


def test_pool_padding_as_large_as_the_window_is_refused_when_compiled() -> None:
    """Found by the ONNX fuzzer (seed 2593, case 6582): AveragePool kernel 3 with pads [2, 2, 2, 3] compiled,
    and the runtime refused the blob at load (FormatError 'node 2 (XNNAvgPooling2d): padding must be smaller
    than the pooling window'); compiling now says it, naming the node."""
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[2, 2, 2, 3], name="ap")
    g = from_onnx(_model([node], shape=[1, 2, 4, 4]))
    with pytest.raises(
        UnsupportedError, match=r"node 'y' \(averagePool2d\): padding \[2, 2, 2, 3\] .*than the 3x3"
    ):
        webxnn.compile(g)


@pytest.mark.parametrize("shape", [[1, (1 << 63) - 1, 0], [0, 4294967295, 4294967295, 4294967295]])
def test_an_empty_input_whose_other_dims_are_huge(shape: list[int]) -> None:
    """Found by the ONNX fuzzer (seed 2595, case 24441): an input of dims [1, 2^63-1, 0] was taken for an
    empty constant and np.zeros raised ValueError 'array is too big'; now the input is refused naming the dim
    (beyond uint32, or the zero one)."""
    m = _model([helper.make_node("Relu", ["x"], ["y"])], shape=shape)
    with pytest.raises((ValidationError, UnsupportedError), match=r"model input 'x'.* dim [01]"):
        from_onnx(m)
