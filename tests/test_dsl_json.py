"""GraphJson reading/writing and the text printer."""

from __future__ import annotations

import json
import re

import pytest

from webxnn.dsl import parse, parse_json, to_json, to_text
from webxnn.errors import ParseError, UnsupportedError
from webxnn.graph import Const, ConstInit, Graph, Node, Operand

README_JSON = """{
  "format": "webnn-graph-json",
  "version": 1,
  "inputs": {
    "x": { "dataType": "float32", "shape": [1, 2048] }
  },
  "consts": {
    "W": {"dataType": "float32", "shape": [2048, 1000], "init": { "kind": "weights", "ref": "W" }},
    "b": {"dataType": "float32", "shape": [1000], "init": { "kind": "weights", "ref": "b" }}
  },
  "nodes": [
    { "id": "logits0", "op": "matmul", "inputs": ["x", "W"], "options": {} },
    { "id": "logits",  "op": "add",    "inputs": ["logits0", "b"], "options": {} },
    { "id": "probs",   "op": "softmax", "inputs": ["logits"], "options": { "axis": 1 } }
  ],
  "outputs": { "probs": "probs" }
}"""

RESNET_TEXT = """webnn_graph "resnet_head" v1 {
  inputs { x: f32[1, 2048]; }
  consts { W: f32[2048, 1000] @weights("W"); b: f32[1000] @weights("b"); }
  nodes {
    logits0 = matmul(x, W);
    logits  = add(logits0, b);
    probs   = softmax(logits, axis=1);
  }
  outputs { probs; }
}"""


def test_readme_json_equals_readme_text() -> None:
    g = parse_json(README_JSON)
    t = parse(RESNET_TEXT)
    t.name = ""  # the README JSON has no name
    assert g == t
    assert g.nodes[2].options == {"axis": 1} and g.nodes[0].outputs == ["logits0"]


def test_canonical_json_is_byte_stable() -> None:
    j1 = to_json(parse(RESNET_TEXT))
    j2 = to_json(parse(to_text(parse_json(j1))))
    assert j1 == j2
    doc = json.loads(j1)
    assert list(doc) == ["format", "version", "name", "quantized", "inputs", "consts", "nodes", "outputs"]
    assert doc["nodes"][0] == {
        "id": "logits0",
        "op": "matmul",
        "inputs": ["x", "W"],
        "options": {},
        "outputs": None,
    }
    assert j1.isascii() and j1.endswith("}\n")


def test_maps_sorted_and_node_order_kept() -> None:
    g = parse(
        'webnn_graph "t" v1 { inputs { z: f32[1]; a: f32[1]; } '
        "nodes { q = f(z, o={b: 1, a: [{d: 1, c: 2}]}, "
        "k=1, c=2); p = g(q); } outputs { q p } }"
    )
    j = to_json(g)
    doc = json.loads(j)
    assert list(doc["inputs"]) == ["a", "z"] and list(doc["outputs"]) == ["p", "q"]
    assert [n["id"] for n in doc["nodes"]] == ["q", "p"]
    assert list(doc["nodes"][0]["options"]) == ["c", "k", "o"]
    assert list(doc["nodes"][0]["options"]["o"]) == ["a", "b"]
    assert list(doc["nodes"][0]["options"]["o"]["a"][0]) == ["c", "d"]
    # text keeps declaration order
    assert list(g.inputs) == ["z", "a"]


def test_multi_output_and_bracketed_single() -> None:
    g = parse(
        'webnn_graph "t" v1 { inputs { x: f32[4]; } nodes { [a, b] = split(x); [c] = relu(a); } '
        "outputs { b c } }"
    )
    doc = json.loads(to_json(g))
    assert doc["nodes"][0]["outputs"] == ["a", "b"] and doc["nodes"][1]["outputs"] == ["c"]
    assert parse_json(to_json(g)) == g


def test_converter_style_split_id_and_output_renaming() -> None:
    doc = json.loads(README_JSON)
    doc["nodes"].append(
        {"id": "s_split", "op": "split", "inputs": ["probs"], "options": {"axis": 1}, "outputs": ["s0", "s1"]}
    )
    doc["outputs"] = {"out": "s1", "probs": "probs"}
    g = parse_json(json.dumps(doc))
    assert g.nodes[3].id == "s_split" and g.nodes[3].outputs == ["s0", "s1"]
    assert g.outputs == {"out": "s1", "probs": "probs"}
    j = to_json(g)
    assert parse_json(j) == g and to_json(parse_json(j)) == j  # JSON keeps the renaming
    with pytest.raises(UnsupportedError, match=r"cannot rename outputs.*JSON"):
        to_text(g)
    del g.outputs["out"]
    t = to_text(g)  # the multi-output node's id becomes its first output (ids are not referenced)
    assert "[s0, s1] = split(probs, axis=1);" in t
    assert parse(t).nodes[3].id == "s0"


def test_dyn_dims_and_inits_json() -> None:
    g = parse(
        'webnn_graph "t" v2 { inputs { x: f32[dyn("b", 8), 3]; } consts { s: f32[] @scalar(0.5); '
        "m: u8[2] @bytes([0, 255]); } nodes { y = add(x, s); } outputs { y } }"
    )
    doc = json.loads(to_json(g))
    assert doc["inputs"]["x"]["shape"] == [{"name": "b", "maxSize": 8}, 3]
    assert doc["consts"]["s"]["init"] == {"kind": "scalar", "value": 0.5}
    assert doc["consts"]["m"]["init"] == {"kind": "inlineBytes", "bytes": [0, 255]}
    assert parse_json(to_json(g)) == g


def _doc() -> dict:
    return json.loads(README_JSON)


def _json_err(doc: object) -> ParseError:
    with pytest.raises(ParseError) as ei:
        parse_json(doc if isinstance(doc, str) else json.dumps(doc), file="g.json")
    assert str(ei.value).startswith("g.json")
    return ei.value


@pytest.mark.parametrize(
    "edit,pattern",
    [
        (lambda d: d.update(format="x"), r"^format: expected 'webnn-graph-json'"),
        (lambda d: d.update(version=3), r"^version: unsupported version 3"),
        (lambda d: d.update(version=True), r"^version: unsupported"),
        (lambda d: d.pop("nodes"), r"missing required field 'nodes'"),
        (lambda d: d.update(quantized="yes"), r"^quantized: expected true or false"),
        (lambda d: d["inputs"]["x"].update(dataType="float64"), r"^inputs\.x\.dataType: unknown dataType"),
        (
            lambda d: d["inputs"]["x"].update(shape=[1, -2]),
            r"^inputs\.x\.shape\[1\]: expected a non-negative",
        ),
        (
            lambda d: d["inputs"]["x"].update(shape=[1, 2.0]),
            r"^inputs\.x\.shape\[1\]: expected a non-negative",
        ),
        (
            lambda d: d["inputs"]["x"].update(shape=[2**32]),
            r"^inputs\.x\.shape\[0\]: 4294967296 is too large",
        ),
        (
            lambda d: d["inputs"]["x"].update(shape=[{"name": "b"}]),
            r"^inputs\.x\.shape\[0\]: missing required field 'maxSize'",
        ),
        (
            lambda d: d["consts"]["W"].update(shape=[{"name": "b", "maxSize": 2}]),
            r"^consts\.W\.shape\[0\]: constant shapes must be static",
        ),
        (
            lambda d: d["consts"]["W"]["init"].update(kind="zeros"),
            r"^consts\.W\.init\.kind: unknown init kind",
        ),
        (
            lambda d: d["consts"]["W"].update(init={"kind": "inlineBytes", "bytes": [1, 300]}),
            r"^consts\.W\.init\.bytes\[1\]: 300 is too large",
        ),
        (
            lambda d: d["consts"]["b"].update(init={"kind": "inlineBytes", "bytes": [1]}),
            r"^consts\.b: const 'b': @bytes has 1 bytes",
        ),
        (
            lambda d: d["consts"]["b"].update(init={"kind": "scalar", "value": "1"}),
            r"^consts\.b\.init\.value: expected a number",
        ),
        (lambda d: d["consts"]["b"].update(init={"kind": "scalar", "value": 1e39}), r"overflows float32"),
        (
            lambda d: d["consts"].update({"x": d["consts"]["b"]}),
            r"^consts\.x: 'x' is declared both as an input",
        ),
        (
            lambda d: d["nodes"][1].update(inputs=["logits0", 3]),
            r"^nodes\[1\]\.inputs\[1\]: expected a string",
        ),
        (
            lambda d: d["nodes"][1].update(inputs=["probs", "b"]),
            r"^nodes\[1\]\.inputs\[0\]: node 'logits' \(add\) uses 'probs'",
        ),
        (lambda d: d["nodes"][1].update(op=""), r"^nodes\[1\]\.op: empty op"),
        (lambda d: d["nodes"][1].update(options=[]), r"^nodes\[1\]\.options: expected an object"),
        (
            lambda d: d["nodes"][1].update(outputs=[]),
            r"^nodes\[1\]\.outputs: expected null or a non-empty list",
        ),
        (lambda d: d["nodes"][1].update(id="logits0"), r"^nodes\[1\]\.id: 'logits0' is defined twice"),
        (
            lambda d: d["nodes"][2].update(id="logits", outputs=["p"]),
            r"^nodes\[2\]: duplicate node id 'logits'",
        ),
        (
            lambda d: d["nodes"][2].update(outputs=["p", "x"]),
            r"^nodes\[2\]\.outputs\[1\]: 'x' is defined twice",
        ),
        (lambda d: d.update(outputs={}), r"^outputs: graph has no outputs"),
        (lambda d: d.update(outputs={"o": "nope"}), r"^outputs\.o: output 'o' refers to 'nope'"),
        (lambda d: d.update(outputs={"a b": 1}), r'^outputs\["a b"\]: expected a string'),
    ],
)
def test_json_structure_errors(edit, pattern: str) -> None:  # noqa: ANN001
    d = _doc()
    edit(d)
    e = _json_err(d)
    assert re.search(pattern, e.message), e.message


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("{", r"invalid JSON"),
        ("[]", r"expected an object"),
        ('{"format": "webnn-graph-json", "format": "x"}', r"duplicate key 'format'"),
        ('{"a": NaN}', r"NaN is not valid JSON"),
        ('{"a": 1e999}', r"1e999 is out of range"),
        pytest.param(
            '{"a": ' + "[" * 100000 + "]" * 100000 + "}", r"nested too deeply|invalid JSON", id="deep"
        ),
    ],
)
def test_json_syntax_errors(text: str, pattern: str) -> None:
    e = _json_err(text)
    assert re.search(pattern, e.message), e.message


def test_json_deep_options_rejected() -> None:
    d = _doc()
    deep: list = []
    cur = deep
    for _ in range(500):
        cur.append([])
        cur = cur[0]
    d["nodes"][0]["options"]["x"] = deep
    e = _json_err(d)
    assert e.message.startswith("nodes[0].options: values are nested more than")


def test_json_syntax_error_has_line_col() -> None:
    e = _json_err('{\n  "format": "webnn-graph-json",\n  "version": 1,,\n}')
    assert (e.line, e.col) == (3, 16)


def test_json_big_ints_become_floats_like_text() -> None:
    d = _doc()
    d["nodes"][2]["options"]["big"] = 2**64
    g = parse_json(json.dumps(d))
    assert type(g.nodes[2].options["big"]) is float
    t = parse(
        'webnn_graph "t" v1 { inputs { x: f32[1]; } nodes { y = f(x, big=18446744073709551616); } '
        "outputs { y } }"
    )
    assert t.nodes[0].options["big"] == g.nodes[2].options["big"]


def test_unknown_json_fields_ignored_and_bytes_input() -> None:
    d = _doc()
    d["extra"] = {"anything": 1}
    d["nodes"][0]["comment"] = "x"
    assert parse_json(json.dumps(d).encode()) == parse_json(README_JSON)


# -- printer ----------------------------------------------------------------------------------------------


def _g(**kw: object) -> Graph:
    g = Graph(
        name="t",
        inputs={"x": Operand("x", "float32", [2])},
        nodes=[Node("y", "relu", ["x"])],
        outputs={"y": "y"},
    )
    for k, v in kw.items():
        setattr(g, k, v)
    return g


def test_printer_quotes_what_0_3_would_misread() -> None:
    g = _g(inputs={"trueval": Operand("trueval", "float32", [2])}, nodes=[Node("y", "relu", ["trueval"])])
    t = to_text(g)
    assert 'y = relu("trueval");' in t
    assert parse(t) == g


def test_printer_operand_refs_bare_and_strings_quoted() -> None:
    g = _g(
        nodes=[
            Node(
                "y",
                "f",
                ["x"],
                {
                    "bias": "x",
                    "layout": "nhwc",
                    "s": 'a"b\\c',
                    "n": None,
                    "f": 1e-05,
                    "i": -3,
                    "l": [True, 1.0],
                    "o": {"a b": 1, "k": "x"},
                },
            )
        ]
    )
    t = to_text(g)
    assert (
        'y = f(x, bias=x, layout="nhwc", s="a\\"b\\\\c", n=null, f=1e-05, i=-3, l=[true, 1.0], '
        'o={"a b": 1, k: x});' in t
    )
    assert parse(t) == g


@pytest.mark.parametrize(
    "g,pattern",
    [
        (
            _g(
                inputs={"onnx::x": Operand("onnx::x", "float32", [2])}, nodes=[Node("y", "relu", ["onnx::x"])]
            ),
            r"input name 'onnx::x' is not a .webnn identifier.*JSON",
        ),
        (_g(nodes=[Node("y", "relu", ["x"], {"a-b": 1})]), r"option key 'a-b'"),
        (_g(nodes=[Node("y", "my-op", ["x"])]), r"op 'my-op'"),
        (_g(nodes=[Node("y", "f", ["x"], {"a": float("nan")})]), r"finite"),
        (_g(nodes=[Node("y", "f", ["x"], {"a": object()})]), r"cannot be written"),
        (_g(outputs={"out": "y"}), r"cannot rename outputs"),
    ],
)
def test_printer_refuses_what_text_cannot_express(g: Graph, pattern: str) -> None:
    with pytest.raises(UnsupportedError, match=pattern):
        to_text(g)


def test_printer_consts() -> None:
    g = _g(
        consts={
            "w": Const("w", "float32", [2], ConstInit("weights", ref="a.b")),
            "s": Const("s", "int64", [], ConstInit("scalar", value=-(2**63))),
            "h": Const("h", "float16", [1], ConstInit("bytes", data=b"\x00\x3c")),
        },
        quantized=True,
        version=2,
    )
    t = to_text(g)
    assert 'w: f32[2] @weights("a.b");' in t and "s: i64[] @scalar(-9223372036854775808);" in t
    assert "h: f16[1] @bytes([0, 60]);" in t and t.startswith('webnn_graph "t" v2 @quantized {')
    assert parse(t) == g
