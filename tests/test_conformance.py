"""The conformance runner: WPT's comparison rules on hand-made examples, the runner's verdicts with a fake
compiler/runtime, the command line, and then every case file in ../shared/conformance/wpt and wpt-extra run
end to end (text → compile → load → run), one test per file.

A case the compiler or runtime declines ("unsupported") is recorded, not failed; a wrong answer or any other
error fails its file's test, listing every bad case."""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np
import pytest

from webxnn.conformance import compare as C
from webxnn.conformance.cli import add_cli
from webxnn.conformance.cli import main as cli_main
from webxnn.conformance.runner import (
    CaseResult,
    case_text,
    format_table,
    load_cases,
    run_case,
    summarize,
)
from webxnn.errors import FormatError, UnsupportedError

CONFORMANCE = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance"
LARGE = 1 << 20  # elements; WPT's 6000x6000 "large inputs" cases get their own test


def f32(x: float) -> np.float32:
    return np.float32(x)


def next_up(x: float, n: int = 1) -> np.float32:
    v = np.float32(x)
    for _ in range(n):
        v = np.nextafter(v, np.float32(np.inf))
    return v


# ----------------------------------------------------------------------------------------- float32 ULP


def test_f32_ulp_basics() -> None:
    d = C.ulp_distance_f32
    assert d(np.float32([1.0]), [1.0])[0] == 0
    assert d(np.array([next_up(1.0)]), [1.0])[0] == 1
    assert d(np.array([next_up(1.0, 5)]), [1.0])[0] == 5
    # negative numbers: one step away in magnitude is one ULP, either direction
    assert d(np.array([np.nextafter(f32(-1.0), f32(-2.0))]), [-1.0])[0] == 1
    assert d(np.array([np.nextafter(f32(-1.0), f32(0.0))]), [-1.0])[0] == 1
    # +0 and -0 are the same integer in sign-magnitude
    assert d(np.float32([-0.0]), [0.0])[0] == 0
    assert d(np.float32([0.0]), [-0.0])[0] == 0
    # across zero: smallest subnormals on either side are 2 apart (1 + 1), not 2^31
    tiny = np.float32(1e-45)
    assert tiny > 0
    assert d(np.array([tiny]), [-float(tiny)])[0] == 2
    assert d(np.array([tiny]), [0.0])[0] == 1
    # far apart across zero: magnitudes add
    one_bits = int(np.float32(1.0).view(np.uint32))
    assert d(np.float32([1.0]), [-1.0])[0] == 2 * one_bits
    # largest finite to inf is one step
    assert d(np.float32([np.inf]), [float(np.finfo(np.float32).max)])[0] == 1


def test_f32_expected_is_rounded_to_float32_first() -> None:
    # 0.1 is not a float32; WPT stores the expected number in a Float32Array before taking its bits
    assert C.ulp_distance_f32(np.float32([0.1]), [0.1])[0] == 0
    assert C.ulp_distance_f32(np.array([next_up(0.1)]), [0.1])[0] == 1


def test_f32_nan_never_passes_for_a_number() -> None:
    d = C.ulp_distance_f32(np.float32([np.nan, np.nan, 1.0]), [np.nan, 1.0, np.nan])
    assert d[0] == 0
    assert d[1] == C.FAR and d[2] == C.FAR
    # a negative-signed NaN (x86's default NaN) is still a NaN
    neg_nan = np.array([0xFFC00000], dtype=np.uint32).view(np.float32)
    assert C.ulp_distance_f32(neg_nan, [np.nan])[0] == 0


def test_f32_ordered_is_monotonic() -> None:
    xs = np.float32([-np.inf, -3.5, -1e-45, -0.0, 0.0, 1e-45, 2.0, np.inf])
    keys = C.f32_ordered(xs)
    assert list(keys) == sorted(keys)
    assert keys[3] == keys[4] == 0


# ----------------------------------------------------------------------------------------- float16 ULP


def test_to_half_exact_values() -> None:
    h = C.to_half_bits
    vals = [1.0, -2.0, 0.5, 65504.0, 2.0**-14, 2.0**-24, 0.0, -0.0]
    want = [0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0400, 0x0001, 0x0000, 0x8000]
    assert list(h(np.array(vals))) == want


def test_to_half_rounds_half_up_not_to_even() -> None:
    h = C.to_half_bits
    # 1 + 2^-11 is exactly between 0x3C00 and 0x3C01; numpy (round to even) picks 0x3C00, WPT picks 0x3C01
    tie = 1.0 + 2.0**-11
    assert int(np.float16(tie).view(np.uint16)) == 0x3C00
    assert h(np.array([tie]))[0] == 0x3C01
    assert h(np.array([-tie]))[0] == 0xBC01  # half up in magnitude
    # subnormal tie: 2.5 * 2^-24 → 3 (even rounding would give 2)
    assert h(np.array([2.5 * 2.0**-24]))[0] == 0x0003
    # the rounding carry walks into the exponent: 65520 is halfway to 65536 → inf
    assert h(np.array([65520.0]))[0] == 0x7C00
    # below 2^-24 the helper flushes to a signed zero (even 2^-25, which half-up would round up)
    assert h(np.array([2.0**-25, -(2.0**-25)])).tolist() == [0x0000, 0x8000]
    # too big and NaN
    assert h(np.array([1e6, -1e6, np.inf])).tolist() == [0x7C00, 0xFC00, 0x7C00]
    assert (h(np.array([np.nan]))[0] & 0x7C00) == 0x7C00 and (h(np.array([np.nan]))[0] & 0x3FF) != 0


def test_to_half_matches_numpy_away_from_ties() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(2000) * 100, rng.standard_normal(2000) * 1e-5]).astype(np.float32)
    bits = x.view(np.uint32)
    # drop float32 values that are exact fp16 ties (the only place the two roundings differ)
    keep = (bits & 0x1FFF) != 0x1000
    x = x[keep & (np.abs(x) >= 2.0**-14)]  # normal range: numpy and the helper agree bit for bit
    assert (C.to_half_bits(x) == x.astype(np.float16).view(np.uint16)).all()


def test_f16_distance() -> None:
    d = C.ulp_distance_f16
    assert d(np.float16([1.0]), [1.0])[0] == 0
    one_up = np.array([0x3C01], dtype=np.uint16).view(np.float16)
    assert d(one_up, [1.0])[0] == 1
    # ±0 are equal
    assert d(np.float16([-0.0]), [0.0])[0] == 0
    assert d(np.float16([0.0]), [-0.0])[0] == 0
    # across zero the uint16 patterns are far apart (WPT compares raw unsigned bits)
    tiny = np.array([0x0001], dtype=np.uint16).view(np.float16)
    assert d(tiny, [-(2.0**-24)])[0] == 0x8001 - 0x0001
    # the expected number is rounded half up: actual 0x3C01 is exact for the tie
    assert d(one_up, [1.0 + 2.0**-11])[0] == 0
    assert d(np.float16([np.nan]), [np.nan])[0] == 0
    assert d(np.float16([np.nan]), [1.0])[0] == C.FAR


# ----------------------------------------------------------------------------------------- integers, ATOL


def test_int_distance_exact_beyond_2_53() -> None:
    big = 2**63 - 1
    a = np.array([big, -(2**63), 5, -5], dtype=np.int64)
    e = np.array([big - 1, big, -5, 5], dtype=np.int64)
    assert C.int_distance(a, e).tolist() == [1, 2**64 - 1, 10, 10]
    u = np.array([2**64 - 1, 2**53 + 1, 0], dtype=np.uint64)
    v = np.array([2**64 - 2, 2**53, 2**64 - 1], dtype=np.uint64)
    assert C.int_distance(u, v).tolist() == [1, 1, 2**64 - 1]
    assert C.int_distance(np.uint8([0, 255]), np.uint8([255, 0])).tolist() == [255, 255]


def test_compare_uint64_above_2_53_is_exact() -> None:
    desc = {"dataType": "uint64", "shape": [2], "data": [2**53 + 1, 18446744073709551615]}
    ok = C.compare(np.array([2**53 + 1, 2**64 - 1], dtype=np.uint64), desc, {"kind": "ULP", "value": 0})
    assert ok.ok and ok.kind == "INT"
    bad = C.compare(np.array([2**53, 2**64 - 1], dtype=np.uint64), desc, {"kind": "ULP", "value": 0})
    assert not bad.ok and bad.first_bad == 0 and bad.distance == 1


def test_atol() -> None:
    desc = {"dataType": "float32", "shape": [3], "data": [1.0, -2.0, 0.0]}
    tol = {"kind": "ATOL", "value": 1e-3}
    assert C.compare(np.float32([1.0009, -2.0009, -0.0005]), desc, tol).ok
    c = C.compare(np.float32([1.0, -2.002, 0.0]), desc, tol)
    assert not c.ok and c.first_bad == 1 and c.kind == "ATOL"
    assert abs(c.distance - 0.002) < 1e-6


# ----------------------------------------------------------------------------------------- compare()


def test_compare_float32_ulp_tolerance() -> None:
    desc = {"dataType": "float32", "shape": [2, 2], "data": [1.0, 2.0, -3.0, 0.0]}
    got = np.float32([[1.0, 2.0], [-3.0, 0.0]])
    got[1, 0] = np.nextafter(np.nextafter(f32(-3.0), f32(-4.0)), f32(-4.0))  # 2 ULP off
    assert C.compare(got, desc, {"kind": "ULP", "value": 2}).ok
    c = C.compare(got, desc, {"kind": "ULP", "value": 1})
    assert not c.ok and c.first_bad == 2 and c.distance == 2
    assert "[1, 0]" in c.describe()  # the index is given as coordinates


def test_compare_fill_checks_first_1000_only() -> None:
    desc = {"dataType": "float32", "shape": [40, 50], "data": 3.0}  # 2000 elements, one number
    got = np.full((40, 50), 3.0, dtype=np.float32)
    got.flat[1500] = 99.0  # beyond the checked prefix
    c = C.compare(got, desc, {"kind": "ULP", "value": 0})
    assert c.ok and c.fill and c.checked == 1000
    got.flat[999] = 3.5
    c = C.compare(got, desc, {"kind": "ULP", "value": 0})
    assert not c.ok and c.first_bad == 999
    # a one-element list is a fill too
    desc = {"dataType": "float32", "shape": [2, 3], "data": [1.5]}
    assert C.compare(np.full((2, 3), 1.5, np.float32), desc, None).ok
    # ...but not for a single-element shape
    values, fill = C.expected_values({"dataType": "float32", "shape": [1], "data": [1.5]})
    assert not fill and values.tolist() == [1.5]


def test_compare_rejects_dtype_and_shape_mismatch() -> None:
    desc = {"dataType": "float32", "shape": [], "data": [2.0]}
    assert C.compare(np.array(2.0, dtype=np.float32), desc, None).ok  # a true 0-D result
    c = C.compare(np.float32([2.0]), desc, None)
    assert not c.ok and "shape" in c.problem
    c = C.compare(np.array(2.0, dtype=np.float64), desc, None)
    assert not c.ok and "dtype" in c.problem


def test_compare_uint8_logical_output() -> None:
    desc = {"dataType": "uint8", "shape": [4], "data": [0, 1, 1, 0]}
    assert C.compare(np.uint8([0, 1, 1, 0]), desc, {"kind": "ULP", "value": 0}).ok
    c = C.compare(np.uint8([0, 1, 0, 0]), desc, {"kind": "ULP", "value": 0})
    assert not c.ok and c.first_bad == 2


def test_compare_float16() -> None:
    desc = {"dataType": "float16", "shape": [3], "data": [1.0, -0.0, 1.0 + 2.0**-11]}
    got = np.array([0x3C00, 0x0000, 0x3C01], dtype=np.uint16).view(np.float16)
    assert C.compare(got, desc, {"kind": "ULP", "value": 0}).ok
    got = np.array([0x3C00, 0x0000, 0x3C00], dtype=np.uint16).view(np.float16)  # numpy's even rounding
    c = C.compare(got, desc, {"kind": "ULP", "value": 0})
    assert not c.ok and c.first_bad == 2 and c.kind == "ULP-f16"
    assert C.compare(got, desc, {"kind": "ULP", "value": 1}).ok


# ----------------------------------------------------------------------------------------- runner (fakes)


def _relu_case(shape: list[int] | None = None, name: str = "relu fake") -> dict:
    shape = [2, 3] if shape is None else shape
    n = int(np.prod(shape))
    data = [float(v) for v in np.linspace(-2.5, 2.5, n)]
    return {
        "name": name,
        "inputs": {"x": {"dataType": "float32", "shape": shape, "data": data}},
        "constants": {"k": {"dataType": "float32", "shape": shape, "data": [1.0] * n}},
        "operators": [
            {"name": "add", "arguments": [{"a": "x"}, {"b": "k"}], "outputs": "t"},
            {"name": "relu", "arguments": [{"input": "t"}], "outputs": "y"},
        ],
        "expectedOutputs": {
            "y": {"dataType": "float32", "shape": shape, "data": [max(0.0, v + 1.0) for v in data]}
        },
        "tolerance": {"kind": "ULP", "value": 0},
    }


class _FakeProgram:
    """Computes add+relu in numpy from the weights the runner attached; `skew` breaks one element."""

    def __init__(self, graph, skew: int = 0, raise_on_run: Exception | None = None) -> None:
        self.graph, self.skew, self.raise_on_run = graph, skew, raise_on_run

    def run(self, inputs):
        if self.raise_on_run:
            raise self.raise_on_run
        (x,) = inputs.values()
        y = np.maximum(x + self.graph.weights["k"], 0).astype(np.float32)
        if self.skew:
            y.flat[-1] = next_up(float(y.flat[-1]), self.skew)
        return {"y": y}


def _fakes(
    skew: int = 0,
    compile_error: Exception | None = None,
    load_error: Exception | None = None,
    run_error: Exception | None = None,
    seen: list | None = None,
):
    holder = {}

    def compile_fn(graph):
        if compile_error:
            raise compile_error
        holder["g"] = graph
        if seen is not None:
            seen.append(graph)
        return b"blob"

    def load_fn(blob):
        assert blob == b"blob"
        if load_error:
            raise load_error
        return _FakeProgram(holder["g"], skew, run_error)

    return {"compile_fn": compile_fn, "load_fn": load_fn}


def test_runner_pass_goes_through_text_with_weights_attached() -> None:
    seen: list = []
    r = run_case(_relu_case(), "relu", **_fakes(seen=seen))
    assert r.status == "pass", r.detail
    assert r.max_ulp == 0 and r.operators == ["add", "relu"]
    (g,) = seen
    # the compiler got the graph parsed back from text, with the constant's data as weights
    assert g.source is None and set(g.weights) == {"k"}
    assert g.weights["k"].dtype == np.float32 and g.weights["k"].shape == (2, 3)
    text, weights = case_text(_relu_case())
    assert '@weights("k")' in text and "relu(t)" in text and set(weights) == {"k"}


def test_runner_wrong_answer_is_fail_with_first_index() -> None:
    r = run_case(_relu_case(), "relu", **_fakes(skew=3))
    assert r.status == "fail" and r.stage == "compare"
    assert "element [1, 2]" in r.detail and "distance 3" in r.detail and r.max_ulp == 3


def test_runner_verdicts_for_exceptions() -> None:
    r = run_case(_relu_case(), "relu", **_fakes(compile_error=UnsupportedError("no relu today")))
    assert (r.status, r.stage) == ("unsupported", "compile") and "no relu today" in r.detail
    r = run_case(_relu_case(), "relu", **_fakes(load_error=UnsupportedError("fp16 only")))
    assert (r.status, r.stage) == ("unsupported", "load")
    r = run_case(_relu_case(), "relu", **_fakes(load_error=FormatError("bad blob at 12")))
    assert (r.status, r.stage) == ("error", "load") and "FormatError" in r.detail
    r = run_case(_relu_case(), "relu", **_fakes(run_error=KeyError("oops")))
    assert (r.status, r.stage) == ("error", "run") and "internal error" in r.detail
    # an UnsupportedError while running is not a decline: the blob was accepted
    r = run_case(_relu_case(), "relu", **_fakes(run_error=UnsupportedError("late")))
    assert (r.status, r.stage) == ("error", "run")
    # a case the ops layer cannot even build (unknown op) is an error, not a crash of the runner
    bad = _relu_case()
    bad["operators"][1]["name"] = "reluu"
    r = run_case(bad, "relu", **_fakes())
    assert (r.status, r.stage) == ("error", "build")


def test_runner_missing_output_is_fail() -> None:
    class NoOutputs:
        def run(self, inputs):
            return {"w": np.zeros(1, np.float32)}

    r = run_case(_relu_case(), "relu", compile_fn=lambda g: b"", load_fn=lambda blob: NoOutputs())
    assert r.status == "fail" and "['y'] not produced" in r.detail


def test_runner_special_character_names() -> None:
    case = _relu_case(name='relu "quoted" back\\slash × ünï')
    case["inputs"] = {"$x.in/1": case["inputs"]["x"]}
    case["operators"][0]["arguments"][0] = {"a": "$x.in/1"}
    seen: list = []
    r = run_case(case, "relu", **_fakes(seen=seen))
    assert r.status == "pass", r.detail
    assert seen[0].name == case["name"] and list(seen[0].inputs) == ["$x.in/1"]


def test_summary_and_table() -> None:
    rs = [
        CaseResult("add", "a1", "pass"),
        CaseResult("add", "a2", "unsupported", "fp16"),
        CaseResult("add", "a3", "fail", "element 0: got 1", stage="compare"),
        CaseResult("relu", "r1", "unsupported", "nope"),
        CaseResult("relu", "r2", "error", "boom", stage="run"),
    ]
    rows = summarize(rs)
    assert [(r.op, r.cases, r.passed, r.unsupported, r.failed, r.errors) for r in rows] == [
        ("add", 3, 1, 1, 1, 0),
        ("relu", 2, 0, 1, 0, 1),
    ]
    assert rows[0].first_failure.startswith("a3: [fail at compare]")
    assert rows[1].first_failure.startswith("r2: [error at run]")
    table = format_table(rows)
    assert "total" in table.splitlines()[-1] and "add" in table


# ----------------------------------------------------------------------------------------- command line


def test_add_cli_registers_subcommand() -> None:
    parser = argparse.ArgumentParser(prog="webxnn")
    add_cli(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["conformance", "d1", "d2", "--op", "conv2d", "--json", "o.json"])
    assert args.paths == ["d1", "d2"] and args.op == ["conv2d"] and args.json == "o.json"
    assert callable(args.func)


def test_cli_missing_dir(capsys) -> None:
    assert cli_main(["/nonexistent/conformance/dir"]) == 2
    assert "no such file" in capsys.readouterr().err


def _runtime_available() -> bool:
    try:
        import webxnn.runtime  # noqa: F401
    except ImportError:
        return False
    return True


needs_runtime = pytest.mark.skipif(not _runtime_available(), reason="webxnn._runtime not built")


@needs_runtime
def test_cli_end_to_end(tmp_path, capsys) -> None:
    cases = [_relu_case(), _relu_case([], "relu 0D scalar")]
    (tmp_path / "relu.json").write_text(json.dumps({"cases": cases}))
    out_json = tmp_path / "out.json"
    rc = cli_main([str(tmp_path), "--json", str(out_json), "--case", "fake"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "relu" in text and "total" in text
    doc = json.loads(out_json.read_text())
    assert doc["summary"][0]["passed"] == 1 and doc["cases"][0]["status"] == "pass"


@needs_runtime
def test_scalar_0d_case_end_to_end() -> None:
    res = run_case(_relu_case([], "relu 0D scalar"), "relu")
    assert res.status == "pass", res.detail


# ----------------------------------------------------------------------------------------- the data


def _case_files() -> list[pathlib.Path]:
    return [p for sub in ("wpt", "wpt-extra") for p in sorted((CONFORMANCE / sub).glob("*.json"))]


def _numel(case: dict) -> int:
    descs = [
        *case.get("inputs", {}).values(),
        *(case.get("constants") or {}).values(),
        *case.get("expectedOutputs", {}).values(),
    ]
    return max([int(np.prod(d["shape"], dtype=np.int64)) for d in descs] or [0])


def _file_params() -> list:
    files = _case_files()
    if not files:
        return [pytest.param(None, id="no-conformance-data")]
    return [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in files]


def _large_params() -> list:
    out = []
    for p in _case_files():
        for case in load_cases(p)[1]:
            if _numel(case) > LARGE:
                out.append(pytest.param(p, case["name"], id=f"{p.stem}:{case['name']}"))
    return out or [pytest.param(None, None, id="no-large-cases")]


def _check(results: list[CaseResult], what: str) -> None:
    bad = [r for r in results if r.status in ("fail", "error")]
    if bad:
        lines = [f"{len(bad)} of {len(results)} case(s) in {what} are wrong or broken:"]
        lines += [f"  - {r.name}: [{r.status} at {r.stage}] {r.detail}" for r in bad]
        pytest.fail("\n".join(lines), pytrace=False)
    passed = [r for r in results if r.status == "pass"]
    unsupported = [r for r in results if r.status == "unsupported"]
    if unsupported and not passed:
        reasons = sorted({r.detail.split(" [from")[0][:120] for r in unsupported})
        pytest.skip(f"{what}: all {len(unsupported)} case(s) unsupported: " + " | ".join(reasons[:3]))


@needs_runtime
@pytest.mark.parametrize("path", _file_params())
def test_conformance_file(path: pathlib.Path | None, record_property) -> None:
    if path is None:
        pytest.skip(f"conformance data not found at {CONFORMANCE}")
    stem, cases = load_cases(path)
    results = [run_case(c, stem) for c in cases if _numel(c) <= LARGE]
    record_property("cases", len(results))
    record_property("passed", sum(r.status == "pass" for r in results))
    record_property("unsupported", sum(r.status == "unsupported" for r in results))
    _check(results, f"{path.parent.name}/{path.name}")


@needs_runtime
@pytest.mark.parametrize(("path", "name"), _large_params())
def test_conformance_large_case(path: pathlib.Path | None, name: str | None) -> None:
    """WPT's 6000x6000 fill-valued cases: 36M-element inputs, only the first 1000 outputs checked."""
    if path is None:
        pytest.skip("no large cases in the conformance data")
    stem, cases = load_cases(path)
    (case,) = [c for c in cases if c["name"] == name]
    _check([run_case(case, stem)], f"{path.name}: {name}")
