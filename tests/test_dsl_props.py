"""Property tests (print -> parse is the identity; text -> JSON -> text -> JSON is stable) and a seeded fuzz
test of the parsers (tests/fuzz/texts.py's mutated inputs only ever raise ParseError/ValidationError)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webxnn.dsl import parse, parse_json, to_json, to_text
from webxnn.dtypes import FLOAT_MAX, INT_RANGES, scalar_problem
from webxnn.errors import ParseError, ValidationError
from webxnn.graph import DTYPES, Const, ConstInit, DynDim, Graph, Node, Operand

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


# -- fuzz: the mutators and the round-trip property live in tests/fuzz/texts.py (one copy); here a fixed
# number of its text and JSON cases go through the parsers only, fast (test_fuzz.py runs the whole harness).


def test_fuzz_text_and_json_parsers() -> None:
    from fuzz import texts

    corpus = texts.Corpus()
    n = parsed = 0
    for k in range(600):
        case = texts.make(corpus, 1234, k)
        if case.kind == "manifest":
            continue
        n += 1
        try:
            text = case.data.decode("utf-8")
            g = parse(text) if case.kind == "text" else parse_json(text)
        except UnicodeDecodeError:
            continue  # the file reader's job (tests/fuzz checks it through load_graph)
        except ALLOWED as e:
            located = e.line is not None if isinstance(e, ParseError) else True
            assert located or case.kind == "json", (case, e)  # text errors say where
            continue
        parsed += 1
        texts.round_trip(g, case.kind == "text")
    assert n > 300 and parsed > 50, (n, parsed)


ALLOWED = (ParseError, ValidationError)


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
