"""Hostile or random node contents never crash `bind`: it succeeds or raises a WebxnnError."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webxnn.errors import ParseError, WebxnnError
from webxnn.graph import DynDim, Node
from webxnn.ops import REGISTRY, bind, infer
from webxnn.ops.base import TensorType

DTYPES = ["float32", "float16", "int32", "int64", "uint8", "int8"]
dims = st.one_of(st.integers(1, 6), st.just(DynDim("b", 4)))
ttypes = st.builds(
    lambda dt, shape: TensorType(dt, tuple(shape)), st.sampled_from(DTYPES), st.lists(dims, max_size=5)
)
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=6),
    st.sampled_from(["nchw", "nhwc", "same-upper", "oihw", "ceil", "int64", "v0", "v1"]),
    st.lists(st.integers(-5, 8), max_size=6),
    st.lists(st.floats(-3, 3), max_size=4),
    st.lists(st.sampled_from(["relu", "tanh", "v0"]), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers()),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(sorted(REGISTRY)), st.lists(ttypes, min_size=0, max_size=6), st.integers(0, 6), st.data()
)
def test_bind_never_crashes(op: str, operand_types: list, n_pos: int, data: st.DataObject) -> None:
    spec = REGISTRY[op]
    types = {f"v{i}": t for i, t in enumerate(operand_types)}
    keys = [*spec.options, *spec.operand_options, *spec.accepts, "bogus"]
    options = data.draw(st.dictionaries(st.sampled_from(keys), values, max_size=5))
    inputs = [f"v{i}" for i in range(min(n_pos, len(types)))]
    n_out = data.draw(st.integers(1, 4))
    node = Node("n", op, inputs, options, outputs=[f"o{i}" for i in range(n_out)])
    try:
        b = bind(node, types)
    except WebxnnError:
        return
    for _, t in b.outputs:
        assert all(isinstance(d, DynDim) or (isinstance(d, int) and d >= 1) for d in t.shape), (op, t)


EXAMPLES = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "webnn-graph"


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"webnn-graph examples not found at {EXAMPLES}")
def test_webnn_graph_examples_infer() -> None:
    """Integration with the parser: every example graph (the invalid_dtype one aside) binds."""
    import webxnn

    checked = 0
    for f in sorted(EXAMPLES.rglob("*.webnn")):
        if f.name == "invalid_dtype.webnn":
            continue
        try:
            g = webxnn.parse(f.read_text(), file=str(f))
        except ParseError as e:  # the parser's own tests own this
            pytest.skip(f"parser rejected {f.name}: {e}")
        types = infer(g)
        assert all(ref in types for ref in g.outputs.values())
        checked += 1
    assert checked >= 10
