"""`.webnn` text parsing: the webnn-graph conformance files, 0.3's quirks, and webxnn's loud errors."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from webxnn.dsl import parse, parse_json, to_json, to_text
from webxnn.dsl.json_codec import graph_to_dict
from webxnn.errors import ParseError
from webxnn.graph import ConstInit, DynDim

CONF = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "webnn-graph"


def _conf(sub: str) -> pathlib.Path:
    d = CONF / sub
    if not d.is_dir():
        pytest.skip(f"conformance data not found at {d}")
    return d


def _resolve(doc: object, path: str) -> object:
    """`consts.b.init`, `nodes[0]`, `inputs.x.shape` in a GraphJson document."""
    cur = doc
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        cur = cur[int(part[1:-1])] if part.startswith("[") else cur[part]  # type: ignore[index]
    return cur


def _matches(actual: object, expected: object) -> bool:
    """Objects in expected.json list only the fields a test asserts: compare those."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return all(k in actual and _matches(actual[k], v) for k, v in expected.items())
    return actual == expected


def _expected_cases() -> list[tuple[str, dict]]:
    f = CONF / "crate-tests" / "expected.json"
    if not f.is_file():
        return []
    return sorted(json.loads(f.read_text()).items())


@pytest.mark.parametrize("name,spec", _expected_cases() or [pytest.param("", {}, marks=pytest.mark.skip)])
def test_crate_conformance(name: str, spec: dict) -> None:
    text = (_conf("crate-tests") / name).read_text()
    if spec["parse"] == "error":
        with pytest.raises(ParseError) as ei:
            parse(text, file=name)
        assert ei.value.line is not None and ei.value.col is not None
        assert f"{name}:{ei.value.line}:{ei.value.col}:" in str(ei.value)
        return
    g = parse(text, file=name)
    doc = graph_to_dict(g)
    for key, want in spec["asserts"].items():
        if key == "roundtrip":
            g2 = parse(to_text(g))
            assert g2.name == g.name
            for part in ("inputs", "consts", "nodes", "outputs"):
                assert len(getattr(g2, part)) == len(getattr(g, part))
            continue
        got = _resolve(doc, key)
        if key in ("inputs", "consts", "nodes", "outputs") and isinstance(want, int):
            assert len(got) == want, key  # type: ignore[arg-type]
        elif isinstance(want, list) and isinstance(got, dict):
            assert list(got) == want, key
        else:
            assert _matches(got, want), (key, got, want)


def test_every_conformance_text_file_parses_and_round_trips() -> None:
    files = sorted(_conf("").rglob("*.webnn"))
    assert files
    for f in files:
        if f.name == "invalid_dtype.webnn":
            continue
        g = parse(f.read_text(), file=str(f))
        j = to_json(g)
        assert to_json(parse(to_text(parse_json(j)))) == j, f
        assert parse(to_text(g)) == g, f


def test_format_reference_ast() -> None:
    g = parse((_conf("examples-0.4.0") / "format_reference.webnn").read_text())
    assert g.version == 2 and g.quantized
    assert g.inputs["input"].shape == [DynDim("batch", 8), 4]
    assert g.consts["bias"].shape == [] and g.consts["bias"].init == ConstInit("scalar", value=0.5)
    assert g.consts["inline_mask"].init == ConstInit("bytes", data=bytes([1, 1, 0, 0]))
    assert g.consts["external_weight"].init == ConstInit("weights", ref="encoder.weight")
    n = g.nodes[0]
    assert n.options == {"metadata": {"kind": "reference", "axes": [1], "enabled": True}}
    split = g.nodes[1]
    assert (split.id, split.outputs, split.multi_assign) == ("left", ["left", "right"], True)


# -- accepted forms (0.3 grammar) -------------------------------------------------------------------------


def _one_node(body: str, decls: str = "inputs { x: f32[2]; y: f32[2]; }") -> object:
    g = parse(f'webnn_graph "t" v1 {{ {decls} nodes {{ {body} }} outputs {{ r; }} }}')
    return g.nodes[0]


def test_header_spacing_and_blocks_anywhere() -> None:
    g = parse('webnn_graph"t"v1{outputs{x}inputs{x:f32[1];}')  # no final brace, outputs first
    assert g.outputs == {"x": "x"} and g.version == 1
    g = parse('webnn_graph "t" v 2 { } } inputs { x: f32 [1]; } } outputs { x } }')
    assert g.version == 2 and list(g.inputs) == ["x"]
    g = parse(
        'webnn_graph "" v1 {\r\n inputs { a: f32[]; }\r\n nodes { b = relu(a); } nodes { c = relu(b); }'
        "\r\n outputs { b, c }}  # trailing comment without newline"
    )
    assert [n.id for n in g.nodes] == ["b", "c"] and g.inputs["a"].shape == [] and g.name == ""


def test_consts_after_nodes_and_keywords_as_names() -> None:
    g = parse(
        'webnn_graph "t" v1 { nodes { inputs = add(nodes, consts); } '
        "inputs { nodes: f32[1]; } consts { consts: f32[1] @scalar(1); } outputs { inputs } }"
    )
    assert g.nodes[0].inputs == ["nodes", "consts"]


def test_annotations_last_wins_and_default_weights() -> None:
    g = parse(
        'webnn_graph "t" v1 { consts { a: f32[2] @scalar(1) @weights("k"); b: u8[2] @weights("q") '
        "@bytes([1, 255]); c: f32[1]; d: i64[] @scalar(-3); } outputs { a b c d } }"
    )
    assert g.consts["a"].init == ConstInit("weights", ref="k")
    assert g.consts["b"].init == ConstInit("bytes", data=b"\x01\xff")
    assert g.consts["c"].init == ConstInit("weights", ref="c")
    assert g.consts["d"].init == ConstInit("scalar", value=-3)


def test_arguments() -> None:
    n = _one_node('r = concat([x, y], x, axis=0, label="l", m={"q": [1, 2.5e-3, null, false], k: x});')
    assert n.inputs == ["x", "y", "x"]
    assert n.options == {"axis": 0, "label": "l", "m": {"q": [1, 0.0025, None, False], "k": "x"}}
    n = _one_node('r = f(x, bias=y, "y", true=1);')  # positional after named, string positional, key 'true'
    assert n.inputs == ["x", "y"] and n.options == {"bias": "y", "true": 1}
    assert _one_node("r = f();").inputs == []
    n = _one_node("[r] = f(x);")
    assert n.multi_assign and n.outputs == ["r"]


def test_identifier_characters() -> None:
    g = parse(
        'webnn_graph "t" v1 { inputs { $a.b/c_1: f32[1]; /x: f32[1]; } '
        "nodes { _r.s = add($a.b/c_1, /x); } outputs { _r.s } }"
    )
    assert g.nodes[0].inputs == ["$a.b/c_1", "/x"]
    # names starting with true/false/null are fine as declarations and targets ...
    g = parse(
        'webnn_graph "t" v1 { inputs { trueval: f32[1]; } nodes { nullable = relu("trueval"); } '
        "outputs { nullable } }"
    )
    assert g.nodes[0].inputs == ["trueval"]


def test_numbers_and_strings() -> None:
    n = _one_node(
        r"r = f(x, a=-0, b=1E+2, c=9223372036854775807, d=9223372036854775808, e=-1.5e-5, "
        r's="a\nb\"c\\d\x", u="é#");'
    )
    o = n.options
    assert o["a"] == 0 and type(o["a"]) is int
    assert o["b"] == 100.0 and type(o["b"]) is float
    assert o["c"] == 2**63 - 1 and type(o["c"]) is int
    assert type(o["d"]) is float
    assert o["e"] == -1.5e-5
    assert o["s"] == 'a\\nb"c\\d\\x' and o["u"] == "é#"
    n = _one_node('r = f(x, s="multi\nline");')
    assert n.options["s"] == "multi\nline"


def test_dims_and_dyn() -> None:
    g = parse('webnn_graph "t" v1 { inputs { x: f32[dyn("b", 4294967295), 4294967295, 0]; } outputs { x } }')
    assert g.inputs["x"].shape == [DynDim("b", 2**32 - 1), 2**32 - 1, 0]


# -- rejected forms ---------------------------------------------------------------------------------------

GRAPH = (
    'webnn_graph "t" v1 {{\n  inputs {{ x: f32[2]; }}\n  nodes {{\n    {body}\n  }}\n'
    "  outputs {{ {out} }}\n}}\n"
)


def _err(text: str) -> ParseError:
    with pytest.raises(ParseError) as ei:
        parse(text, file="g.webnn")
    e = ei.value
    assert e.line is not None and e.col is not None and e.file == "g.webnn"
    assert str(e).startswith(f"g.webnn:{e.line}:{e.col}: ")
    return e


def _node_err(body: str, out: str = "r;") -> ParseError:
    return _err(GRAPH.format(body=body, out=out))


@pytest.mark.parametrize(
    "body,col,pattern",
    [
        ("r = softmax(x, 1);", 20, r"positional literal 1 .*named option, e\.g\. axis=1"),
        ("r = f(x, true);", 14, r"positional literal true"),
        ("r = f(x, null);", 14, r"positional literal null"),
        ("r = concat([x, 2]);", 20, r"positional literal 2 inside a positional list"),
        ("r = f(x, [[x]]);", 15, r"positional literal \[x\]"),
        ("r = f(x, {a: 1});", 14, r"positional literal \{a: 1\}"),
        ("r = relu(trueval);", 14, r"'trueval'.*leading 'true'"),
        ("r = f(x, a=nullable);", 16, r"'nullable'.*leading 'null'"),
        ("r = f(x, a=[falsey]);", 17, r"leading 'false'"),
        ("r = x;", 9, r"alias.*identity\(x\)"),
        ("r = 3;", 9, r"literal cannot define a value"),
        ("r = true;", 9, r"literal cannot define a value"),
        ("r = f(x, a=1e999);", 16, r"1e999 is out of range"),
        ("r = f(x, a=1, a=2);", 19, r"option 'a' is given twice"),
        ("r = f(x, a={k: 1, k: 2});", 23, r"key 'k' appears twice"),
        ("r = f(x,);", 13, r"unexpected '\)'"),
        ("r = f(x, a=[1,]);", 19, r"unexpected '\]'"),
        ("r = f(x, a={k: 1,});", 22, r"unexpected '}'"),
        ("r = f(x) s = g(x);", 14, r"unexpected 's'; expected ';'"),
        ("r = f(x); r = g(x);", 15, r"'r' is defined twice"),
        ("r = f(x, x=+1);", 16, r"unexpected character '\+'"),
        ("r = f(x, a=.5);", 16, r"unexpected character '\.'"),
        ("r = f(x, a=1.);", 17, r"unexpected character '\.'"),
        ("r = f(x, a='s');", 16, r"double quotes"),
        ("r = f(x, a=- 1);", 16, r"'-' must be followed"),
        ("r = f(x, a=0x10);", 17, r"unexpected 'x10'"),
        ("r = f(x, a=inf);", 16, None),  # 'inf' is an identifier, accepted as a string ref...
        ("r = f(y);", 11, r"uses 'y', which is not an input"),
        ("r = f(r);", 11, r"uses 'r'"),
        ('r = f(x, a="unterminated);', 16, r"unterminated string"),
        ('r = f(x, a="esc\\");', 16, r"unterminated string"),
        ("// c\n r = f(x);", 8, r"unexpected 'c'"),
        ("r = f(x); x = g(x);", 15, r"'x' is defined twice \(it is already an input\)"),
        ("r = f(x, a=\u00e9);", 16, r"ASCII only"),
    ],
)
def test_node_errors(body: str, col: int, pattern: str | None) -> None:
    if pattern is None:
        g = parse(GRAPH.format(body=body, out="r;"))
        assert g.nodes[0].options == {"a": "inf"}
        return
    e = _node_err(body)
    assert re.search(pattern, e.message), e.message
    assert (e.line, e.col) == (4, col), str(e)


@pytest.mark.parametrize(
    "text,pos,pattern",
    [
        ('webnn_graph "t" v3 { }', (1, 17), r"unsupported graph version v3"),
        ("webnn_graph t v1 { }", (1, 13), r"graph name"),
        ('webnn_graph "t" v1.0 { }', (1, 17), r"version"),
        ('webnn "t" v1 { }', (1, 1), r"'webnn_graph'"),
        ('webnn_graph "t" v1 @quant { }', (1, 20), r"@quantized"),
        ('webnn_graph "t" v1 { inputs { x: f32[1] } outputs { x } }', (1, 41), r"expected ';'"),
        ('webnn_graph "t" v1 { inputs { x: float32[1]; } outputs { x } }', (1, 34), r"data type"),
        ('webnn_graph "t" v1 { inputs { x: f32[1,]; } outputs { x } }', (1, 40), r"dimension"),
        ('webnn_graph "t" v1 { inputs { x: f32[-1]; } outputs { x } }', (1, 38), r"non-negative integer"),
        ('webnn_graph "t" v1 { inputs { x: f32[1.0]; } outputs { x } }', (1, 38), r"non-negative integer"),
        ('webnn_graph "t" v1 { inputs { x: f32[4294967296]; } outputs { x } }', (1, 38), r"too large"),
        ('webnn_graph "t" v1 { inputs { x: f32[dyn("b", 0)]; } outputs { x } }', (1, 47), r"at least 1"),
        (
            'webnn_graph "t" v1 { consts { c: f32[dyn("b", 2)] @scalar(1); } outputs { c } }',
            (1, 38),
            r"constant shapes must be static",
        ),
        (
            'webnn_graph "t" v1 { consts { c: u8[2] @bytes([1, 256]); } outputs { c } }',
            (1, 51),
            r"byte value 256",
        ),
        (
            'webnn_graph "t" v1 { consts { c: f32[2] @bytes([1, 2]); } outputs { c } }',
            (1, 31),
            r"@bytes has 2 bytes but f32\[2\] needs 8",
        ),
        (
            'webnn_graph "t" v1 { consts { c: f32[1] @scalar(1e999); } outputs { c } }',
            (1, 49),
            r"out of range",
        ),
        (
            'webnn_graph "t" v1 { consts { c: u64[1] @scalar(9223372036854775809); } outputs { c } }',
            (1, 49),
            r"no exact double \(the nearest is 9223372036854775808\)",
        ),
        (
            'webnn_graph "t" v1 { consts { c: u8[1] @scalar(256); } outputs { c } }',
            (1, 31),
            r"out of range for uint8",
        ),
        (
            'webnn_graph "t" v1 { consts { c: i32[1] @scalar(1.5); } outputs { c } }',
            (1, 31),
            r"not an integer",
        ),
        (
            'webnn_graph "t" v1 { consts { c: f16[1] @scalar(1e5); } outputs { c } }',
            (1, 31),
            r"overflows float16",
        ),
        ('webnn_graph "t" v1 { consts { c: f32[1] @scalar(x); } outputs { c } }', (1, 49), r"a number"),
        ('webnn_graph "t" v1 { consts { c: f32[1] @weights(k); } outputs { c } }', (1, 50), r"weights key"),
        ('webnn_graph "t" v1 { consts { c: f32[1] @foo("k"); } outputs { c } }', (1, 41), r"@weights"),
        (
            'webnn_graph "t" v1 { inputs { x: f32[1]; x: f32[2]; } outputs { x } }',
            (1, 42),
            r"already declared",
        ),
        (
            'webnn_graph "t" v1 { inputs { x: f32[1]; } consts { x: f32[1]; } outputs { x } }',
            (1, 53),
            r"already declared as an input",
        ),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { x, } }', (1, 57), r"output name"),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { x;; } }', (1, 56), r"output name"),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { x; x } }', (1, 57), r"listed twice"),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { y } }', (1, 54), r"'y', which is not defined"),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; } }', (1, 45), r"no outputs"),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; }; outputs { x } }', (1, 43), r"a block"),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { out = x } }', (1, 58), r"unexpected '='"),
        ('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { out: x } }', (1, 57), r"unexpected ':'"),
        (
            'webnn_graph "t" v1 {\n  inputs {\n    x: f32[1];\n  }\n  \u00a0outputs { x }\n}',
            (5, 3),
            r"unexpected",
        ),
    ],
)
def test_structure_errors(text: str, pos: tuple[int, int], pattern: str) -> None:
    e = _err(text)
    assert re.search(pattern, e.message), e.message
    assert (e.line, e.col) == pos, str(e)


def test_error_names_offending_token_and_expectation() -> None:
    e = _node_err("r = f(x) ;;")
    assert "unexpected ';'" in e.message and "expected" in e.message
    parse('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { x }')  # no closing brace: fine for 0.3
    _err('webnn_graph "t" v1 { inputs { x: f32[1];')  # EOF inside a block


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    e = _node_err("r = f(x, a=" + "[" * 5000 + "]" * 5000 + ");")
    assert "nested" in e.message
    e = _node_err("r = f(x, a=" + "{k:" * 5000 + "1" + "}" * 5000 + ");")
    assert "nested" in e.message


def test_not_text() -> None:
    with pytest.raises(ParseError):
        parse(b"webnn_graph")  # type: ignore[arg-type]


def _big_graph(n: int) -> str:
    lines = [
        'webnn_graph "big" v1 {',
        "  inputs { x: f32[1, 128]; }",
        '  consts { W: f32[128, 128] @weights("W"); b: f32[128] @scalar(0.5); }',
        "  nodes {",
    ]
    prev = "x"
    for i in range(n):
        if i % 3 == 0:
            lines.append(f"    n{i} = matmul({prev}, W);  # comment {i}")
        elif i % 3 == 1:
            lines.append(
                f'    n{i} = add({prev}, b, label="layer{i}", metadata={{k: [1, 2.5, -3e-5], f: true}});'
            )
        else:
            lines.append(f"    n{i} = softmax({prev}, axis=1);")
        prev = f"n{i}"
    lines += ["  }", f"  outputs {{ {prev}; }}", "}"]
    return "\n".join(lines)


def test_parse_20k_nodes() -> None:
    """A 1 MB, 20k-node file parses completely (its speed is measured by `python -m bench parse`)."""
    text = _big_graph(20000)
    assert len(text) > 1_000_000
    g = parse(text)
    assert len(g.nodes) == 20000
    assert g.nodes[-1].options["label"] == "layer19999"
