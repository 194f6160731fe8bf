"""Property tests (print -> parse is the identity; text -> JSON -> text -> JSON is stable) and a seeded,
time-bounded fuzz test (random and mutated inputs only ever raise ParseError/ValidationError)."""

from __future__ import annotations

import json
import pathlib
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webxnn.dsl import parse, parse_json, to_json, to_text
from webxnn.dtypes import FLOAT_MAX, INT_RANGES, scalar_problem
from webxnn.errors import ParseError, ValidationError
from webxnn.graph import DTYPES, Const, ConstInit, DynDim, Graph, Node, Operand

CONF = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "webnn-graph"

IDENT = st.from_regex(r"\A[A-Za-z_/$][A-Za-z0-9_./]{0,6}\Z", fullmatch=True)
# Names 0.3 accepts as declarations but would misread as values, and unreserved keywords.
NAMES = IDENT | st.sampled_from(
    [
        "true",
        "trueval",
        "nullable",
        "false_x",
        "null",
        "inputs",
        "nodes",
        "consts",
        "outputs",
        "v1",
        "dyn",
        "f32",
        "webnn_graph",
        "$",
        "/",
    ]
)
I64_BOUNDS = (-(2**63), 2**63 - 1)
I64 = st.integers(*I64_BOUNDS)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | I64 | FLOATS | st.text(max_size=8) | NAMES,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5) | NAMES, c, max_size=3),
    max_leaves=8,
)
DTYPE_NAMES = sorted(DTYPES)


@st.composite
def scalar_for(draw: st.DrawFn, dtype: str) -> int | float:
    if dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
        if hi > I64_BOUNDS[1]:  # uint64: beyond i64 the DSL holds doubles (exact ones only)
            return draw(st.integers(lo, I64_BOUNDS[1]) | st.integers(63, 63).map(lambda e: float(2**e)))
        return draw(st.integers(lo, hi))
    m = FLOAT_MAX.get(dtype, 1e300)
    return draw(st.floats(-m, m, allow_nan=False) | st.integers(-1000, 1000))


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    names = draw(st.lists(NAMES, min_size=2, max_size=14, unique=True))
    n_in = draw(st.integers(0, min(3, len(names) - 1)))
    n_const = draw(st.integers(0, min(3, len(names) - 1 - n_in)))
    g = Graph(
        name=draw(st.text(max_size=10)), version=draw(st.sampled_from([1, 2])), quantized=draw(st.booleans())
    )
    pool = list(names)
    defined: list[str] = []
    for _ in range(n_in):
        name = pool.pop(0)
        dims = draw(
            st.lists(
                st.integers(0, 2**32 - 1) | st.builds(DynDim, st.text(max_size=4), st.integers(1, 2**32 - 1)),
                max_size=3,
            )
        )
        g.inputs[name] = Operand(name, draw(st.sampled_from(DTYPE_NAMES)), dims)
        defined.append(name)
    for _ in range(n_const):
        name = pool.pop(0)
        dtype = draw(st.sampled_from(DTYPE_NAMES))
        shape = draw(st.lists(st.integers(0, 3), max_size=3))
        kind = draw(st.sampled_from(["weights", "scalar", "bytes"]))
        if kind == "weights":
            init = ConstInit("weights", ref=draw(st.text(max_size=8)))
        elif kind == "scalar":
            init = ConstInit("scalar", value=draw(scalar_for(dtype)))
        else:
            n = DTYPES[dtype].itemsize
            for d in shape:
                n *= d
            init = ConstInit("bytes", data=draw(st.binary(min_size=n, max_size=n)))
        g.consts[name] = Const(name, dtype, shape, init)
        defined.append(name)
    while pool:
        k = draw(st.integers(1, min(3, len(pool))))
        outs, pool = pool[:k], pool[k:]
        inputs = draw(st.lists(st.sampled_from(defined), max_size=3)) if defined else []
        options = draw(st.dictionaries(NAMES, JSON_VALUES, max_size=3))
        multi = k > 1 or draw(st.booleans())
        g.nodes.append(Node(outs[0], draw(NAMES), inputs, options, outs, multi_assign=multi))
        defined.extend(outs)
    for name in draw(st.lists(st.sampled_from(defined), min_size=1, max_size=3, unique=True)):
        g.outputs[name] = name
    return g


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_print_parse_identity_and_json_stability(g: Graph) -> None:
    text = to_text(g)
    g2 = parse(text)
    assert g2 == g
    assert list(g2.inputs) == list(g.inputs) and list(g2.consts) == list(g.consts)
    assert to_text(g2) == text
    # text -> JSON -> text -> JSON is byte-stable
    j1 = to_json(g)
    assert parse_json(j1) == g
    j2 = to_json(parse(to_text(parse_json(j1))))
    assert j1 == j2


# -- fuzz -------------------------------------------------------------------------------------------------

EXTRA = [
    'webnn_graph "x" v2 @quantized { inputs { a: f32[dyn("n", 4), 2]; b: i64[]; } consts { c: u8[2] '
    '@bytes([1, 2]); d: f16[] @scalar(-1.5e-3); e: f32[2] @weights("k.v"); } nodes { [p, q] = split(a, '
    'splits=[1, 1], axis=1); r = concat([p, q], axis=1, m={"s": "\\"q\\\\", t: [true, false, null]}); } '
    "outputs { r, q; p } } # end",
]
VOCAB = [
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ";",
    ",",
    "=",
    ":",
    '"',
    "\\",
    "#",
    "\n",
    "\r\n",
    " ",
    "@bytes",
    "@scalar",
    "@weights",
    "@quantized",
    "dyn",
    "true",
    "false",
    "null",
    "nullx",
    "-",
    "1e999",
    "4294967296",
    "256",
    "-0.5",
    "1e",
    "0x1",
    "inputs",
    "nodes",
    "outputs",
    "consts",
    "f32",
    "u8",
    "x",
    "$",
    "/",
    ".",
    "é",
    "\x00",
    "webnn_graph",
    "v1",
    "v3",
    "[a, b] =",
    "y = x;",
    "relu(",
    "9223372036854775808",
    "[" * 80,
]
ALLOWED = (ParseError, ValidationError)


def _mutate(rng: random.Random, s: str) -> str:
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randint(0, len(s))
        j = min(len(s), i + rng.randint(0, 12))
        if op == 0:
            s = s[:i] + s[j:]
        elif op == 1:
            s = s[:i] + rng.choice(VOCAB) + s[i:]
        elif op == 2:
            s = s[:i] + s[i:j] * rng.randint(2, 3) + s[j:]
        elif op == 3:
            s = s[:i]
        elif op == 4:
            s = s[:i] + chr(rng.randint(0, 0x2FF)) + s[j:]
        else:
            k = rng.randint(0, len(s))
            s = s[:i] + s[k : k + 8] + s[i:]
    return s


def _corpus() -> list[str]:
    texts = list(EXTRA)
    if CONF.is_dir():
        texts += [f.read_text() for f in sorted(CONF.rglob("*.webnn"))]
    return texts


def test_fuzz_text_parser() -> None:
    rng = random.Random(1234)
    corpus = _corpus()
    deadline = time.monotonic() + 1.6
    n = ok = 0
    while time.monotonic() < deadline:
        if rng.random() < 0.1:
            s = "".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 30)))
        else:
            s = _mutate(rng, rng.choice(corpus))
        n += 1
        try:
            g = parse(s)
        except ALLOWED as e:
            assert e.line is not None if isinstance(e, ParseError) else True, (s, e)
            continue
        ok += 1
        assert parse(to_text(g)) == g, s  # whatever parses also prints and re-parses
        assert parse_json(to_json(g)) == g, s
    assert n > 200 and ok > 0, (n, ok)
    print(f"fuzz text: {n} inputs, {ok} parsed")


def test_fuzz_json_parser() -> None:
    rng = random.Random(99)
    docs = [to_json(parse(t)) for t in _corpus() if "float32[" not in t]
    deadline = time.monotonic() + 1.2
    n = 0
    values = [None, True, 0, -1, 1.5, 2**70, "", "x", [], {}, [1, "a"], {"kind": "scalar"}, {"name": "b"}]
    while time.monotonic() < deadline:
        base = rng.choice(docs)
        if rng.random() < 0.5:
            s = _mutate(rng, base)
        else:
            doc = json.loads(base)
            # replace a random value somewhere in the document
            cur = doc
            for _ in range(rng.randint(1, 5)):
                if isinstance(cur, dict) and cur:
                    k = rng.choice(list(cur))
                    if rng.random() < 0.4 or not isinstance(cur[k], (dict, list)) or not cur[k]:
                        cur[k] = rng.choice(values)
                        break
                    cur = cur[k]
                elif isinstance(cur, list) and cur:
                    k = rng.randrange(len(cur))
                    if rng.random() < 0.4 or not isinstance(cur[k], (dict, list)) or not cur[k]:
                        cur[k] = rng.choice(values)
                        break
                    cur = cur[k]
                else:
                    break
            s = json.dumps(doc)
        n += 1
        try:
            g = parse_json(s)
        except ALLOWED:
            continue
        assert parse_json(to_json(g)) == g
    assert n > 100


def test_uint64_beyond_i64() -> None:
    """Integers beyond i64 are doubles in the DSL (as in webnn-graph): exact ones parse as floats, others
    are refused rather than rounded; the graph checker refuses such an int."""
    g = parse('webnn_graph "t" v1 { consts { c: u64[] @scalar(9223372036854775808); } outputs { c } }')
    assert g.consts["c"].init.value == 2.0**63 and isinstance(g.consts["c"].init.value, float)
    assert parse(to_text(g)) == g and parse_json(to_json(g)) == g
    with pytest.raises(ParseError, match="no exact double"):
        parse_json(
            '{"format": "webnn-graph-json", "version": 1, "name": "t", "inputs": {}, "consts": {"c": '
            '{"dataType": "uint64", "shape": [], "init": {"kind": "scalar", "value": '
            '9223372036854775809}}}, "nodes": [], "outputs": {"c": "c"}}'
        )
    assert "outside the 64-bit signed integer range" in (scalar_problem("uint64", 2**63) or "")
