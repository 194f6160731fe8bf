"""Shape/dtype inference of every op against the WPT conformance cases (and webnn-baseline extras).

Each case becomes a Graph via `webxnn.ops.wpt.case_to_graph`; the inferred type of every expected output
must equal the case's dataType and shape. Run with `-s` to see the per-op pass counts.
"""

from __future__ import annotations

import collections
import json
import pathlib

import pytest

from webxnn.errors import WebxnnError
from webxnn.graph import DynDim, Graph, Node, Operand
from webxnn.ops import REGISTRY, bind, bind_all, infer
from webxnn.ops.wpt import case_array, case_to_graph

CONF = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance"


def _cases() -> dict[str, list[dict]]:
    by_op: dict[str, list[dict]] = collections.defaultdict(list)
    for sub in ("wpt", "wpt-extra"):
        for f in sorted((CONF / sub).glob("*.json")):
            for case in json.loads(f.read_text())["cases"]:
                by_op[case["operators"][0]["name"]].append(case)
    return dict(sorted(by_op.items()))


CASES = _cases() if CONF.is_dir() else {}
needs_conf = pytest.mark.skipif(not CASES, reason=f"conformance data not found at {CONF}")


def _check(case: dict) -> str | None:
    """None when the inferred output types match, else a description of the mismatch."""
    try:
        g = case_to_graph(case)
        types = infer(g)
    except WebxnnError as e:
        return f"{case['name']}: {e}"
    for name, want in case["expectedOutputs"].items():
        got = types[name]
        if got.dtype != want["dataType"] or list(got.shape) != list(want["shape"]):
            return (
                f"{case['name']}: {name} inferred {got.dtype}{list(got.shape)}, expected "
                f"{want['dataType']}{want['shape']}"
            )
    return None


@needs_conf
@pytest.mark.parametrize("op", list(CASES) or ["<none>"])
def test_wpt_shapes(op: str) -> None:
    failures = [msg for case in CASES[op] if (msg := _check(case)) is not None]
    assert not failures, "\n".join(failures)


@needs_conf
def test_wpt_pass_rate_report(capsys: pytest.CaptureFixture[str]) -> None:
    counts = {op: (sum(_check(c) is None for c in cases), len(cases)) for op, cases in CASES.items()}
    with capsys.disabled():
        print("\nWPT shape inference per op:")
        print(" ".join(f"{op}:{p}/{n}" for op, (p, n) in counts.items()))
        total = sum(p for p, _ in counts.values()), sum(n for _, n in counts.values())
        print(f"total {total[0]}/{total[1]}")
    assert all(p == n for p, n in counts.values())


@needs_conf
def test_every_wpt_op_is_registered() -> None:
    assert set(CASES) <= set(REGISTRY)


@needs_conf
def test_case_to_graph_structure() -> None:
    case = next(c for c in CASES["conv2d"] if "bias" in json.dumps(c["operators"]))
    g = case_to_graph(case)
    (node,) = g.nodes
    assert node.op == "conv2d" and len(node.inputs) == 2
    assert node.options["bias"] in g.consts
    for name, c in g.consts.items():
        assert c.init.kind == "weights" and c.init.ref == name
        assert g.weights[name].shape == tuple(c.shape)
    (b,) = bind_all(g)
    assert b.operands["bias"] == node.options["bias"]
    # method parameters become named options, operands stay positional
    split = case_to_graph(CASES["split"][0]).nodes[0]
    assert split.options["splits"] == 3 and split.inputs == ["splitInput"]
    concat = case_to_graph(CASES["concat"][-1]).nodes[0]
    assert len(concat.inputs) >= 2 and "axis" in concat.options
    cast = case_to_graph(CASES["cast"][0]).nodes[0]
    assert cast.options["type"] == "int32" and len(cast.inputs) == 1


def test_case_array_fill_value() -> None:
    a = case_array({"dataType": "float16", "shape": [2, 3], "data": 1.5})
    assert a.dtype.name == "float16" and a.shape == (2, 3) and (a == 1.5).all()
    b = case_array({"dataType": "int64", "shape": [2], "data": [2**62 + 1, -3]})
    assert b.tolist() == [2**62 + 1, -3]


def _rebuilt(b) -> Node:
    """A node that spells BoundNode `b` out again: required operands positional, the rest as options."""
    from webxnn.ops import get

    spec = get(b.op)
    if spec.variadic:
        inputs = list(b.operands[spec.inputs[0]])
        options = dict(b.options)
    else:
        inputs = [b.operands[r] for r in spec.inputs]
        options = {**b.options, **{r: v for r, v in b.operands.items() if r not in spec.inputs and v}}
    return Node(b.node.id, b.op, inputs, options, outputs=[n for n, _ in b.outputs])


@needs_conf
def test_binding_is_idempotent() -> None:
    """Feeding a BoundNode's op, operands and options back through bind gives the same BoundNode (lowering
    passes that build new nodes from bound ones rely on it)."""
    for cases in CASES.values():
        for case in cases:
            g = case_to_graph(case)
            types = infer(g)
            for b in bind_all(g):
                again = bind(_rebuilt(b), types, g)
                assert (again.op, again.operands, again.options, again.outputs) == (
                    b.op,
                    b.operands,
                    b.options,
                    b.outputs,
                ), case["name"]


def test_binding_is_idempotent_with_dynamic_dims() -> None:
    d = DynDim("batch", 4)
    g = Graph(inputs={"x": Operand("x", "float32", [d, 1, 3, 4])})
    g.nodes = [
        Node("a", "squeeze", ["x"], {"axes": [1]}),
        Node("b", "reshape", ["a"], {"newShape": [-1, 12]}),
        Node("c", "slice", ["b"], {"starts": [0, 2], "sizes": [-1, 4]}),
    ]
    g.outputs = {"c": "c"}
    types = infer(g)
    for b in bind_all(g):
        again = bind(_rebuilt(b), types, g)
        assert (again.op, again.options, again.outputs) == (b.op, b.options, b.outputs)
