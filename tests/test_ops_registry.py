"""Registry mechanics: operand roles, option checking, converter forms, errors, whole-graph validation."""

from __future__ import annotations

import pytest

from webxnn.errors import UnsupportedError, ValidationError
from webxnn.graph import Const, DynDim, Graph, Node, Operand
from webxnn.ops import REGISTRY, bind_all, get, infer, validate


def graph(
    nodes: list[Node],
    inputs: dict | None = None,
    consts: dict | None = None,
    outputs: list[str] | None = None,
) -> Graph:
    g = Graph()
    for name, (dt, shape) in (inputs or {}).items():
        g.inputs[name] = Operand(name, dt, list(shape))
    for name, (dt, shape) in (consts or {}).items():
        g.consts[name] = Const(name, dt, list(shape))
    g.nodes = nodes
    for o in outputs or [nodes[-1].outputs[0]]:
        g.outputs[o] = o
    return g


def bound1(op: str, inputs: list[str], options: dict | None = None, **decls):
    """Bind a one-node graph whose values are declared in `decls` as name=(dtype, shape)."""
    g = graph([Node("n", op, inputs, dict(options or {}))], inputs=decls)
    return bind_all(g)[0]


def shape_of(op: str, inputs: list[str], options: dict | None = None, **decls) -> tuple:
    return bound1(op, inputs, options, **decls).outputs[0][1].shape


F = "float32"

# ------------------------------------------------------------------------------------------ operand roles


@pytest.mark.parametrize(
    "op,pos,named,decls",
    [
        (
            "conv2d",
            ["x", "w", "b"],
            {"bias": "b"},
            {"x": (F, [1, 3, 5, 5]), "w": (F, [4, 3, 3, 3]), "b": (F, [4])},
        ),
        ("gemm", ["a", "bb", "c"], {"c": "c"}, {"a": (F, [2, 3]), "bb": (F, [3, 4]), "c": (F, [4])}),
        (
            "layerNormalization",
            ["x", "s", "b"],
            {"scale": "s", "bias": "b"},
            {"x": (F, [2, 3, 4]), "s": (F, [3, 4]), "b": (F, [3, 4])},
        ),
        (
            "batchNormalization",
            ["x", "m", "v", "s", "b"],
            {"scale": "s", "bias": "b"},
            {"x": (F, [2, 3, 4]), "m": (F, [3]), "v": (F, [3]), "s": (F, [3]), "b": (F, [3])},
        ),
    ],
)
def test_operand_options_positional_or_named(op: str, pos: list[str], named: dict, decls: dict) -> None:
    n_req = len(get(op).inputs)
    a = bound1(op, pos, **decls)
    b = bound1(op, pos[:n_req], named, **decls)
    assert (a.op, a.operands, a.options, a.outputs) == (b.op, b.operands, b.options, b.outputs)


def test_operand_given_twice_is_an_error() -> None:
    with pytest.raises(ValidationError, match=r"node 'n' \(conv2d\).*'bias' given both"):
        bound1("conv2d", ["x", "w", "b"], {"bias": "b"}, x=(F, [1, 3, 5, 5]), w=(F, [4, 3, 3, 3]), b=(F, [4]))


def test_optional_operand_absent_is_none() -> None:
    b = bound1("conv2d", ["x", "w"], x=(F, [1, 3, 5, 5]), w=(F, [4, 3, 3, 3]))
    assert b.operands == {"input": "x", "filter": "w", "bias": None}


def test_too_many_and_too_few_operands() -> None:
    with pytest.raises(ValidationError, match=r"node 'n' \(relu\).*at most 1"):
        bound1("relu", ["x", "x"], x=(F, [2]))
    with pytest.raises(ValidationError, match=r"node 'n' \(add\).*missing b"):
        bound1("add", ["x"], x=(F, [2]))


def test_operand_option_must_name_a_defined_value() -> None:
    with pytest.raises(ValidationError, match=r"'bias' refers to 'nope'"):
        bound1("conv2d", ["x", "w"], {"bias": "nope"}, x=(F, [1, 3, 5, 5]), w=(F, [4, 3, 3, 3]))


def test_variadic_concat() -> None:
    b = bound1("concat", ["x", "y", "x"], {"axis": -1}, x=(F, [2, 3]), y=(F, [2, 5]))
    assert b.operands == {"inputs": ["x", "y", "x"]}
    assert b.options["axis"] == 1 and b.outputs[0][1].shape == (2, 11)


# ------------------------------------------------------------------------------------------ options


def test_unknown_option_names_node_op_key_and_accepted() -> None:
    with pytest.raises(ValidationError) as e:
        bound1("softmax", ["x"], {"axis": 1, "dim": 2}, x=(F, [2, 3]))
    msg = str(e.value)
    assert "'n'" in msg and "softmax" in msg and "'dim'" in msg and "axis" in msg and "label" in msg


def test_unknown_op_suggests_close_names() -> None:
    with pytest.raises(ValidationError, match=r"unknown op 'conv2D'.*'conv2d'"):
        get("conv2D")
    with pytest.raises(ValidationError, match=r"unknown op 'MatMul'.*'matmul'"):
        get("MatMul")
    with pytest.raises(ValidationError, match="unknown op 'frobnicate'"):
        bound1("frobnicate", ["x"], x=(F, [2]))


def test_annotations_are_dropped() -> None:
    b = bound1("relu", ["x"], {"label": "r1", "metadata": {"k": 1}}, x=(F, [2]))
    assert b.options == {}


def test_defaults_filled() -> None:
    b = bound1("conv2d", ["x", "w"], x=(F, [1, 3, 5, 5]), w=(F, [4, 3, 3, 3]))
    assert b.options == {
        "padding": [0, 0, 0, 0],
        "strides": [1, 1],
        "dilations": [1, 1],
        "groups": 1,
        "inputLayout": "nchw",
        "filterLayout": "oihw",
        "autoPad": "explicit",
    }
    assert bound1("leakyRelu", ["x"], x=(F, [2])).options == {"alpha": 0.01}
    assert bound1("gemm", ["a", "b"], a=(F, [2, 3]), b=(F, [3, 4])).options == {
        "alpha": 1.0,
        "beta": 1.0,
        "aTranspose": False,
        "bTranspose": False,
    }


@pytest.mark.parametrize(
    "op,options,pattern",
    [
        ("conv2d", {"groups": "2"}, "'groups' must be an integer"),
        ("conv2d", {"groups": True}, "'groups' must be an integer"),
        ("conv2d", {"strides": [1, "a"]}, "'strides' must be a list of integers"),
        ("conv2d", {"autoPad": "same"}, "'autoPad' must be one of"),
        ("conv2d", {"inputLayout": "nchwc"}, "'inputLayout' must be one of"),
        ("conv2d", {"filterLayout": "iohw"}, "'filterLayout' must be one of"),
        ("conv2d", {"padding": [1, 1]}, "'padding' must have 4 entries"),
    ],
)
def test_option_value_checks(op: str, options: dict, pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        bound1(op, ["x", "w"], options, x=(F, [1, 3, 5, 5]), w=(F, [4, 3, 3, 3]))


def test_option_value_checks_other_ops() -> None:
    with pytest.raises(ValidationError, match="'keepDimensions' must be true or false"):
        bound1("reduceSum", ["x"], {"keepDimensions": 1}, x=(F, [2]))
    with pytest.raises(ValidationError, match="'roundingType' must be one of"):
        bound1("maxPool2d", ["x"], {"roundingType": "round"}, x=(F, [1, 1, 4, 4]))
    with pytest.raises(ValidationError, match="'mode' must be one of"):
        bound1("pad", ["x"], {"beginningPadding": [1], "endingPadding": [1], "mode": "wrap"}, x=(F, [2]))
    with pytest.raises(ValidationError, match="'mode' must be one of"):
        bound1("resample2d", ["x"], {"mode": "cubic"}, x=(F, [1, 1, 2, 2]))
    with pytest.raises(ValidationError, match="'filterLayout' must be one of"):
        bound1(
            "convTranspose2d", ["x", "w"], {"filterLayout": "oihw"}, x=(F, [1, 2, 3, 3]), w=(F, [2, 2, 3, 3])
        )
    with pytest.raises(ValidationError, match="missing required option 'newShape'"):
        bound1("reshape", ["x"], x=(F, [2]))


def test_enum_spelling_is_normalized() -> None:
    b = bound1(
        "conv2d",
        ["x", "w"],
        {"autoPad": "SAME_UPPER", "inputLayout": "NHWC", "filterLayout": "OHWI"},
        x=(F, [1, 5, 5, 3]),
        w=(F, [4, 3, 3, 3]),
    )
    assert (b.options["autoPad"], b.options["inputLayout"], b.options["filterLayout"]) == (
        "explicit",
        "nhwc",
        "ohwi",
    )
    assert b.outputs[0][1].shape == (1, 5, 5, 4) and b.options["padding"] == [1, 1, 1, 1]


# ------------------------------------------------------------------------------------------ converter forms


@pytest.mark.parametrize(
    "op,options,shape,key,want",
    [
        ("softmax", {"axis": -1}, [2, 3, 4], "axis", 2),
        ("softmax", {}, [2, 3, 4], "axis", 2),
        ("reduceMean", {"axes": [-1, 0]}, [2, 3, 4], "axes", [2, 0]),
        ("reduceSum", {}, [2, 3, 4], "axes", [0, 1, 2]),
        ("layerNormalization", {"axes": [-1]}, [2, 3, 4], "axes", [2]),
        ("layerNormalization", {}, [2, 3, 4], "axes", [1, 2]),
        ("transpose", {"permutation": [-1, 0, 1]}, [2, 3, 4], "permutation", [2, 0, 1]),
        ("transpose", {}, [2, 3, 4], "permutation", [2, 1, 0]),
        ("split", {"splits": 2, "axis": -1}, [2, 3, 4], "axis", 2),
        ("argMax", {"axis": -2}, [2, 3, 4], "axis", 1),
        ("cumulativeSum", {"axis": -1}, [2, 3, 4], "axis", 2),
        ("reverse", {"axes": [-1]}, [2, 3, 4], "axes", [2]),
        ("batchNormalization", None, [2, 3, 4], "axis", 1),
    ],
)
def test_negative_axes_normalized(op: str, options: dict | None, shape: list, key: str, want) -> None:
    decls = {"x": (F, shape)}
    inputs = ["x"]
    if op == "batchNormalization":
        decls.update(m=(F, [3]), v=(F, [3]))
        inputs = ["x", "m", "v"]
        options = {"axis": -2}
    node = Node("n", op, inputs, dict(options or {}))
    if op == "split":
        node.outputs = ["s0", "s1"]
    b = bind_all(graph([node], inputs=decls, outputs=[node.outputs[0]]))[0]
    assert b.options[key] == want


def test_gather_negative_axis() -> None:
    b = bound1("gather", ["x", "i"], {"axis": -1, "shape": [2, 3, 5]}, x=(F, [2, 3, 4]), i=("int64", [5]))
    assert b.options == {"axis": 2} and b.outputs[0][1].shape == (2, 3, 5)


def test_reshape_axes_means_squeeze() -> None:
    b = bound1("reshape", ["x"], {"axes": [1, -1]}, x=(F, [2, 1, 3, 1]))
    assert b.op == "reshape" and b.options == {"newShape": [2, 3]} and b.outputs[0][1].shape == (2, 3)
    with pytest.raises(ValidationError, match="cannot squeeze axis 0"):
        bound1("reshape", ["x"], {"axes": [0]}, x=(F, [2, 1]))
    with pytest.raises(ValidationError, match="not both"):
        bound1("reshape", ["x"], {"axes": [1], "newShape": [2]}, x=(F, [2, 1]))


def test_squeeze_unsqueeze_bind_to_reshape() -> None:
    b = bound1("squeeze", ["x"], x=(F, [1, 3, 1, 2]))
    assert b.op == "reshape" and b.options == {"newShape": [3, 2]}
    b = bound1("unsqueeze", ["x"], {"axes": [0, -1]}, x=(F, [3, 2]))
    assert b.op == "reshape" and b.outputs[0][1].shape == (1, 3, 2, 1)


def test_reshape_minus_one() -> None:
    assert shape_of("reshape", ["x"], {"newShape": [-1, 4]}, x=(F, [2, 3, 4])) == (6, 4)
    assert shape_of("reshape", ["x"], {"newShape": [2, None]}, x=(F, [2, 3, 4])) == (2, 12)
    b = bound1("reshape", ["x"], {"newShape": [3, -1]}, x=(F, [12]))
    assert b.options["newShape"] == [3, 4]
    with pytest.raises(ValidationError, match="more than one -1"):
        bound1("reshape", ["x"], {"newShape": [-1, -1]}, x=(F, [12]))
    with pytest.raises(ValidationError, match="do not divide"):
        bound1("reshape", ["x"], {"newShape": [5, -1]}, x=(F, [12]))
    with pytest.raises(ValidationError, match="has 10 elements"):
        bound1("reshape", ["x"], {"newShape": [5, 2]}, x=(F, [12]))


BIG = 9223372036854775807


@pytest.mark.parametrize(
    "onnx,want_starts,want_sizes,want_strides,out",
    [
        ({"starts": [1], "ends": [BIG], "axes": [1]}, [0, 1], [4, 5], [1, 1], (4, 5)),
        ({"starts": [-2], "ends": [BIG], "axes": [-1]}, [0, 4], [4, 2], [1, 1], (4, 2)),
        ({"starts": [0, 1], "ends": [3, -1]}, [0, 1], [3, 4], [1, 1], (3, 4)),
        ({"starts": [0], "ends": [6], "axes": [1], "steps": [2]}, [0, 0], [4, 6], [1, 2], (4, 3)),
        ({"starts": [1], "ends": [6], "axes": [1], "steps": [2]}, [0, 1], [4, 5], [1, 2], (4, 3)),
    ],
)
def test_onnx_slice_normalized(onnx: dict, want_starts, want_sizes, want_strides, out) -> None:
    b = bound1("slice", ["x"], onnx, x=(F, [4, 6]))
    assert b.options == {"starts": want_starts, "sizes": want_sizes, "strides": want_strides}
    assert b.outputs[0][1].shape == out


def test_slice_errors() -> None:
    with pytest.raises(ValidationError, match="mixes"):
        bound1("slice", ["x"], {"starts": [0], "sizes": [1], "ends": [1]}, x=(F, [4]))
    with pytest.raises(ValidationError, match="only positive steps"):
        bound1("slice", ["x"], {"starts": [3], "ends": [0], "steps": [-1]}, x=(F, [4]))
    with pytest.raises(ValidationError, match="do not fit"):
        bound1("slice", ["x"], {"starts": [2], "sizes": [3]}, x=(F, [4]))
    assert shape_of("slice", ["x"], {"starts": [1], "sizes": [3], "strides": [2]}, x=(F, [4])) == (2,)


@pytest.mark.parametrize(
    "key,value,want",
    [
        ("type", "int32", "int32"),
        ("to", "int64", "int64"),
        ("to", "Int64", "int64"),
        ("dataType", "FLOAT16", "float16"),
        ("to", "Float32", "float32"),
        ("type", "Uint8", "uint8"),
    ],
)
def test_cast_spellings(key: str, value: str, want: str) -> None:
    b = bound1("cast", ["x"], {key: value}, x=(F, [2]))
    assert b.options == {"type": want} and b.outputs[0][1].dtype == want


def test_cast_errors() -> None:
    with pytest.raises(ValidationError, match="unknown data type 'Complex64'"):
        bound1("cast", ["x"], {"to": "Complex64"}, x=(F, [2]))
    with pytest.raises(ValidationError, match="given twice"):
        bound1("cast", ["x"], {"to": "int32", "type": "int32"}, x=(F, [2]))
    with pytest.raises(ValidationError, match="missing the target data type"):
        bound1("cast", ["x"], x=(F, [2]))


def test_triangular_k_is_diagonal() -> None:
    a = bound1("triangular", ["x"], {"upper": False, "k": -1}, x=(F, [3, 3]))
    b = bound1("triangular", ["x"], {"upper": False, "diagonal": -1}, x=(F, [3, 3]))
    assert a.options == b.options == {"upper": False, "diagonal": -1}


def test_split_defaults_to_output_count() -> None:
    node = Node("s", "split", ["x"], {"axis": 1}, outputs=["a", "b", "c"])
    b = bind_all(graph([node], inputs={"x": (F, [2, 6])}, outputs=["a"]))[0]
    assert b.options["splits"] == [2, 2, 2] and [t.shape for _, t in b.outputs] == [(2, 2)] * 3
    node = Node("s", "split", ["x"], {"splits": 3}, outputs=["a", "b"])
    with pytest.raises(ValidationError, match="produces 3 output"):
        bind_all(graph([node], inputs={"x": (F, [6])}, outputs=["a"]))


# ------------------------------------------------------------------------------------------ dtype rules


def test_dtype_rules() -> None:
    with pytest.raises(ValidationError, match="sigmoid accepts float16, float32"):
        bound1("sigmoid", ["x"], x=("int32", [2]))
    with pytest.raises(ValidationError, match="'b' has data type int32 but 'a' has float32"):
        bound1("add", ["x", "y"], x=(F, [2]), y=("int32", [2]))
    assert bound1("greater", ["x", "y"], x=("int32", [2]), y=("int32", [1])).outputs[0][1].dtype == "uint8"
    with pytest.raises(ValidationError, match="'indices'"):
        bound1("gather", ["x", "i"], x=(F, [3]), i=(F, [2]))
    b = bound1("argMax", ["x"], {"axis": 0, "outputDataType": "int64"}, x=(F, [3, 2]))
    assert b.outputs[0][1].dtype == "int64" and b.outputs[0][1].shape == (2,)
    with pytest.raises(ValidationError, match="logicalAnd accepts uint8"):
        bound1("logicalAnd", ["x", "x"], x=(F, [2]))
    with pytest.raises(ValidationError, match="'condition'"):
        bound1("where", ["c", "x", "x"], c=(F, [2]), x=(F, [2]))
    b = bound1("quantizeLinear", ["x", "s", "z"], x=(F, [2, 4]), s=(F, [1]), z=("int8", [1]))
    assert b.outputs[0][1].dtype == "int8"
    b = bound1(
        "dequantizeLinear", ["x", "s", "z"], x=("uint8", [2, 4]), s=("float16", [2, 1]), z=("uint8", [2, 1])
    )
    assert b.outputs[0][1].dtype == "float16"


# ------------------------------------------------------------------------------------------ shapes


def test_matmul_shapes() -> None:
    assert shape_of("matmul", ["a", "b"], a=(F, [2, 3]), b=(F, [3, 4])) == (2, 4)
    assert shape_of("matmul", ["a", "b"], a=(F, [5, 1, 2, 3]), b=(F, [7, 3, 4])) == (5, 7, 2, 4)
    assert shape_of("matmul", ["a", "b"], a=(F, [3]), b=(F, [2, 3, 4])) == (2, 4)
    assert shape_of("matmul", ["a", "b"], a=(F, [2, 3]), b=(F, [3])) == (2,)
    assert shape_of("matmul", ["a", "b"], a=(F, [3]), b=(F, [3])) == ()
    with pytest.raises(ValidationError, match="inner dimensions differ"):
        bound1("matmul", ["a", "b"], a=(F, [2, 3]), b=(F, [4, 4]))


def test_gemm_transposes() -> None:
    assert shape_of(
        "gemm", ["a", "b"], {"aTranspose": True, "bTranspose": True}, a=(F, [3, 2]), b=(F, [4, 3])
    ) == (2, 4)
    with pytest.raises(ValidationError, match="'c'"):
        bound1("gemm", ["a", "b", "c"], a=(F, [2, 3]), b=(F, [3, 4]), c=(F, [3]))


def test_conv_and_pool_shapes() -> None:
    x = (F, [1, 2, 7, 9])
    with pytest.raises(ValidationError, match="channels"):
        bound1("conv2d", ["x", "w"], x=x, w=(F, [6, 1, 3, 3]))
    b = bound1(
        "conv2d",
        ["x", "w"],
        {"groups": 2, "padding": [1, 1, 0, 2], "strides": [2, 3], "dilations": [1, 2]},
        x=x,
        w=(F, [6, 1, 3, 3]),
    )
    assert b.outputs[0][1].shape == (1, 6, 4, 3)
    # depthwise NHWC with ihwo filter
    b = bound1(
        "conv2d",
        ["x", "w"],
        {"groups": 4, "inputLayout": "nhwc", "filterLayout": "ihwo"},
        x=(F, [1, 5, 5, 4]),
        w=(F, [1, 3, 3, 4]),
    )
    assert b.outputs[0][1].shape == (1, 3, 3, 4)
    # global pool, ceil rounding, outputSizes
    b = bound1("averagePool2d", ["x"], x=(F, [1, 3, 7, 7]))
    assert b.options["windowDimensions"] == [7, 7] and b.outputs[0][1].shape == (1, 3, 1, 1)
    assert shape_of(
        "maxPool2d",
        ["x"],
        {"windowDimensions": [3, 3], "strides": [2, 2], "roundingType": "ceil"},
        x=(F, [1, 1, 8, 8]),
    ) == (1, 1, 4, 4)
    b = bound1(
        "maxPool2d",
        ["x"],
        {"windowDimensions": [3, 3], "strides": [2, 2], "outputSizes": [4, 4]},
        x=(F, [1, 1, 8, 8]),
    )
    assert b.options["roundingType"] == "ceil"
    with pytest.raises(ValidationError, match="match neither"):
        bound1("maxPool2d", ["x"], {"windowDimensions": [3, 3], "outputSizes": [5, 5]}, x=(F, [1, 1, 8, 8]))


def test_conv_transpose_shapes() -> None:
    b = bound1(
        "convTranspose2d",
        ["x", "w"],
        {"strides": [2, 2], "padding": [1, 1, 1, 1], "outputPadding": [1, 1]},
        x=(F, [1, 2, 3, 3]),
        w=(F, [2, 5, 3, 3]),
    )
    assert b.outputs[0][1].shape == (1, 5, 6, 6) and b.options["outputSizes"] == [6, 6]
    b = bound1(
        "convTranspose2d",
        ["x", "w"],
        {"strides": [2, 2], "outputSizes": [8, 8]},
        x=(F, [1, 2, 3, 3]),
        w=(F, [2, 5, 3, 3]),
    )
    assert b.options["outputPadding"] == [1, 1] and b.outputs[0][1].shape == (1, 5, 8, 8)
    with pytest.raises(ValidationError, match="not reachable"):
        bound1(
            "convTranspose2d",
            ["x", "w"],
            {"strides": [2, 2], "outputSizes": [10, 8]},
            x=(F, [1, 2, 3, 3]),
            w=(F, [2, 5, 3, 3]),
        )
    b = bound1(
        "convTranspose2d",
        ["x", "w"],
        {"strides": [2, 2], "autoPad": "same-upper"},
        x=(F, [1, 2, 3, 3]),
        w=(F, [2, 5, 3, 3]),
    )
    assert b.outputs[0][1].shape == (1, 5, 6, 6)


def test_rnn_shapes() -> None:
    d = {"x": (F, [4, 2, 3]), "w": (F, [2, 15, 3]), "r": (F, [2, 15, 5])}
    node = Node(
        "g",
        "gru",
        ["x", "w", "r"],
        {"steps": 4, "hiddenSize": 5, "direction": "both", "returnSequence": True},
        outputs=["h", "seq"],
    )
    b = bind_all(graph([node], inputs=d, outputs=["h"]))[0]
    assert [t.shape for _, t in b.outputs] == [(2, 2, 5), (4, 2, 2, 5)]
    with pytest.raises(ValidationError, match="'weight' must have shape"):
        bound1("gru", ["x", "w", "r"], {"steps": 4, "hiddenSize": 5}, **d)


# ------------------------------------------------------------------------------------------ dynamic dims


def test_dynamic_dims() -> None:
    B = DynDim("batch", 8)
    assert shape_of("add", ["x", "y"], x=(F, [B, 3]), y=(F, [3])) == (B, 3)
    assert shape_of("relu", ["x"], x=(F, [B, 3])) == (B, 3)
    b = bound1("conv2d", ["x", "w"], x=(F, [B, 3, 5, 5]), w=(F, [4, 3, 3, 3]))
    assert b.outputs[0][1].shape == (B, 4, 3, 3)
    with pytest.raises(ValidationError, match="'h' is dynamic"):
        bound1("conv2d", ["x", "w"], x=(F, [1, 3, DynDim("h", 9), 5]), w=(F, [4, 3, 3, 3]))
    assert shape_of("reshape", ["x"], {"newShape": [-1, 12]}, x=(F, [B, 3, 4])) == (B, 12)
    with pytest.raises(ValidationError, match="'batch' is dynamic"):
        bound1("reshape", ["x"], {"newShape": [2, 12]}, x=(F, [B, 3, 4]))
    assert shape_of("matmul", ["x", "w"], x=(F, [B, 3]), w=(F, [3, 4])) == (B, 4)
    assert shape_of("reduceMean", ["x"], {"axes": [1], "keepDimensions": True}, x=(F, [B, 3])) == (B, 1)
    assert shape_of("transpose", ["x"], x=(F, [B, 3])) == (3, B)
    assert shape_of("slice", ["x"], {"starts": [0, 1], "sizes": [-1, 2]}, x=(F, [B, 3])) == (B, 2)
    with pytest.raises(ValidationError, match="not broadcastable"):
        bound1("add", ["x", "y"], x=(F, [B]), y=(F, [DynDim("other", 8)]))


# ------------------------------------------------------------------------------------------ whole graph


def test_validate_references_and_outputs() -> None:
    g = graph([Node("a", "relu", ["b"]), Node("b", "relu", ["x"])], inputs={"x": (F, [2])})
    with pytest.raises(ValidationError, match=r"node 'a' \(relu\).*'b', which is not defined before"):
        validate(g)
    g = graph([Node("a", "relu", ["x"])], inputs={"x": (F, [2])})
    g.outputs["out"] = "zz"
    with pytest.raises(ValidationError, match="output 'out' refers to 'zz'"):
        validate(g)
    g = graph([Node("x", "relu", ["x"])], inputs={"x": (F, [2])})
    with pytest.raises(ValidationError, match="'x' is already defined by input"):
        validate(g)
    g = graph([Node("a", "relu", ["x"])], inputs={"x": ("float64", [2])})
    with pytest.raises(ValidationError, match="unknown data type 'float64'"):
        validate(g)
    g = graph([Node("a", "relu", ["x"])], inputs={"x": (F, [2, 0])})
    with pytest.raises(ValidationError, match="must be a positive integer"):
        validate(g)


def test_infer_and_bind_all() -> None:
    g = graph(
        [
            Node("y", "conv2d", ["x", "w"], {"bias": "b", "autoPad": "same-lower"}),
            Node("z", "softmax", ["y"], {"axis": -1}),
        ],
        inputs={"x": (F, [1, 3, 6, 6])},
        consts={"w": (F, [2, 3, 2, 2]), "b": (F, [2])},
        outputs=["z"],
    )
    types = infer(g)
    assert set(types) == {"x", "w", "b", "y", "z"} and types["z"].shape == (1, 2, 6, 6)
    bound = bind_all(g)
    assert [b.op for b in bound] == ["conv2d", "softmax"]
    assert bound[0].options["padding"] == [1, 0, 1, 0] and bound[0].options["autoPad"] == "explicit"


def test_error_location_in_message() -> None:
    node = Node("y", "relu", ["x"], {"alpha": 1}, loc=(3, 5))
    g = graph([node], inputs={"x": (F, [2])})
    g.source = "m.webnn"
    with pytest.raises(ValidationError, match=r"m.webnn:3:5: node 'y' \(relu\): unknown option 'alpha'"):
        validate(g)


def test_unsupported_negative_step_is_a_webxnn_error() -> None:
    with pytest.raises((ValidationError, UnsupportedError)):
        bound1("slice", ["x"], {"starts": [0], "ends": [1], "steps": [0]}, x=(F, [4]))


def test_every_op_is_documented() -> None:
    for name, spec in REGISTRY.items():
        assert spec.doc and ("WebNN" in spec.doc or name == "unsqueeze"), name
        assert spec.infer is not None, name


def test_conv_transpose_auto_pad_with_output_sizes() -> None:
    b = bound1(
        "convTranspose2d",
        ["x", "w"],
        {"strides": [2, 2], "autoPad": "same-lower", "outputSizes": [6, 5]},
        x=(F, [1, 2, 3, 3]),
        w=(F, [2, 5, 3, 3]),
    )
    # full output 7: pad 1 (lower puts it first) for 6; pad 2 split 1/1 for 5
    assert b.options["padding"] == [1, 0, 1, 1] and b.options["outputPadding"] == [0, 0]
    assert b.outputs[0][1].shape == (1, 5, 6, 5)


def test_opspec_bind_method_and_aliases() -> None:
    from webxnn.ops.base import TensorType

    types = {"x": TensorType(F, (1, 3, 1))}
    b = get("squeeze").bind(Node("s", "squeeze", ["x"]), types)
    assert b.op == "reshape" and b.outputs[0][1].shape == (3,)
    with pytest.raises(ValidationError, match="not 'conv2d'"):
        get("conv2d").bind(Node("r", "relu", ["x"]), types)
