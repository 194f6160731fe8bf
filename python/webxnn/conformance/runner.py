"""Run WPT-style conformance cases through the whole public path and judge them as WPT does.

One case: `ops.wpt.case_to_graph` → `.webnn` text (`Graph.to_text`) → `webxnn.parse` + the case's constants
attached as weights (so the text printer and parser are really exercised) → `webxnn.compile` → `webxnn.load`
→ `Program.run` → `compare.compare` on every expected output.

Verdicts: "pass"; "unsupported" (compile or load raised UnsupportedError: a known gap, not a bug); "fail"
(ran, but an output is wrong: the worst outcome, reported with the first bad element); "error" (any other
exception, at any stage: a bug somewhere, the `stage` says where).
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import UnsupportedError, WebxnnError, WeightsError
from ..graph import Graph
from .compare import compare

STATUSES = ("pass", "fail", "unsupported", "error")


class RunnableProgram(Protocol):
    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


CompileFn = Callable[[Graph], bytes]
LoadFn = Callable[[bytes], RunnableProgram]


@dataclass
class CaseResult:
    """The verdict on one case. `op` is the conformance file's stem (one table row per file); `operators`
    the MLGraphBuilder methods the case calls. `max_ulp` / `max_atol` are the worst distances seen over all
    outputs (None when no output of that kind was compared); `tolerance` is the case's."""

    op: str
    name: str
    status: str
    detail: str = ""
    # where an error/unsupported/fail happened: build, text, compile, load, inputs, run, compare
    stage: str = ""
    operators: list[str] = field(default_factory=list)
    max_ulp: float | None = None
    max_atol: float | None = None
    tolerance: dict[str, Any] | None = None
    seconds: float = 0.0
    file: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _default_compile(graph: Graph) -> bytes:
    from ..compiler import compile as compile_graph

    return compile_graph(graph)


def _default_load(blob: bytes) -> RunnableProgram:
    from ..runtime import load

    return load(blob)


def _short(e: BaseException) -> str:
    msg = str(e).strip().replace("\n", " | ")
    if len(msg) > 400:
        msg = msg[:400] + "…"
    return f"{type(e).__name__}: {msg}"


def _crash(e: BaseException) -> str:
    """A non-webxnn exception is an internal bug: keep the innermost frame so the report can say where."""
    tb = traceback.extract_tb(e.__traceback__)
    where = ""
    if tb:
        f = tb[-1]
        fname = f.filename if f.filename.startswith("<") else os.path.relpath(f.filename)
        where = f" [at {fname}:{f.lineno}]"
    return f"internal error {_short(e)}{where}"


def case_text(case: dict[str, Any]) -> tuple[str, dict[str, np.ndarray]]:
    """The case as `.webnn` text and its constants' arrays (the weights, keyed by const name)."""
    from ..ops.wpt import case_to_graph

    g = case_to_graph(case)
    return g.to_text(), dict(g.weights)


def run_case(
    case: dict[str, Any], op: str = "", *, compile_fn: CompileFn | None = None, load_fn: LoadFn | None = None
) -> CaseResult:
    """Build, compile, load, run and check one case. Never raises for a bad case: the verdict says it."""
    from .. import parse
    from ..constants import attach_weights
    from ..ops.wpt import case_array, case_to_graph

    compile_fn = compile_fn or _default_compile
    load_fn = load_fn or _default_load
    operators = [str(o.get("name")) for o in case.get("operators", [])]
    res = CaseResult(
        op=op or (operators[0] if operators else "?"),
        name=str(case.get("name", "")),
        status="error",
        operators=operators,
        tolerance=case.get("tolerance"),
    )
    t0 = time.perf_counter()
    stage = "build"
    try:
        g = case_to_graph(case)
        stage = "text"
        text = g.to_text()
        parsed = parse(text)
        _check_round_trip(g, parsed)
        attach_weights(parsed, g.weights)
        missing = [
            c for c, d in parsed.consts.items() if c not in parsed.weights and d.init.kind == "weights"
        ]
        if missing:
            raise WeightsError(f"weights for {missing} not attached after the text round trip")
        stage = "compile"
        blob = compile_fn(parsed)
        stage = "load"
        prog = load_fn(blob)
        stage = "inputs"
        inputs = {name: case_array(desc) for name, desc in case.get("inputs", {}).items()}
        stage = "run"
        outs = prog.run(inputs)
        stage = "compare"
        _judge(res, case, outs)
    except UnsupportedError as e:
        # only the compiler and the loader may decline a case; anywhere else it is a bug
        res.status = "unsupported" if stage in ("compile", "load") else "error"
        res.stage, res.detail = stage, _short(e)
    except WebxnnError as e:
        res.status, res.stage, res.detail = "error", stage, _short(e)
    except Exception as e:  # noqa: BLE001 - a crash in any stage is a verdict, not a reason to stop the suite
        res.status, res.stage, res.detail = "error", stage, _crash(e)
    res.seconds = time.perf_counter() - t0
    return res


def _signature(g: Graph) -> tuple[Any, ...]:
    # what the text must preserve; node ids of multi-output nodes and `multi_assign` are spelling only
    return (g.inputs, g.consts, g.outputs, [(n.op, n.inputs, n.options, n.outputs) for n in g.nodes])


def _check_round_trip(built: Graph, parsed: Graph) -> None:
    """The printed-and-parsed graph must say what the built one says (else the DSL printer or parser is wrong
    and every later verdict would be about a different graph)."""
    a, b = _signature(built), _signature(parsed)
    if a == b:
        return
    what = ("inputs", "consts", "outputs", "nodes")
    diff = [w for w, x, y in zip(what, a, b) if x != y]
    if "nodes" in diff:
        for k, (x, y) in enumerate(zip(a[3], b[3])):
            if x != y:
                diff.append(f"node {k}: built {x!r}, parsed {y!r}")
                break
    raise WebxnnError(f"the .webnn text round trip changed the graph ({'; '.join(diff)})")


def _judge(res: CaseResult, case: dict[str, Any], outs: Mapping[str, np.ndarray]) -> None:
    expected: dict[str, Any] = case.get("expectedOutputs", {})
    missing = [k for k in expected if k not in outs]
    if missing:
        res.status, res.stage = "fail", "compare"
        res.detail = f"output(s) {missing} not produced (got {list(outs)})"
        return
    failures: list[str] = []
    for name, desc in expected.items():
        c = compare(outs[name], desc, case.get("tolerance"))
        if c.kind == "ATOL":
            res.max_atol = max(res.max_atol or 0.0, c.distance)
        else:
            res.max_ulp = max(res.max_ulp or 0.0, c.distance)
        if not c.ok:
            failures.append(f"{name}: {c.describe()}")
    if failures:
        res.status, res.stage, res.detail = "fail", "compare", "; ".join(failures)
    else:
        res.status, res.stage = "pass", ""


def load_cases(path: str | os.PathLike[str]) -> tuple[str, list[dict[str, Any]]]:
    """A conformance file's stem and its cases (the file is `{"cases": [...]}` or a bare list)."""
    p = Path(path)
    doc = json.loads(p.read_text())
    cases = doc["cases"] if isinstance(doc, dict) else doc
    return p.stem, list(cases)


def case_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every `*.json` case file under the given files/directories, sorted by name within each directory."""
    out: list[Path] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            out.extend(sorted(p.glob("*.json")))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(2, "no such file or directory", str(p))
    return out


def _selected(stem: str, case: dict[str, Any], ops: set[str] | None) -> bool:
    if not ops:
        return True
    names = {stem} | {str(o.get("name")) for o in case.get("operators", [])}
    return bool(names & ops)


def run_file(
    path: str | os.PathLike[str],
    *,
    ops: Iterable[str] | None = None,
    name_filter: str | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    **kw: Any,
) -> list[CaseResult]:
    """Run every (selected) case of one file."""
    stem, cases = load_cases(path)
    opset = set(ops) if ops else None
    results = []
    for case in cases:
        if not _selected(stem, case, opset):
            continue
        if name_filter and name_filter not in str(case.get("name", "")):
            continue
        r = run_case(case, stem, **kw)
        r.file = str(path)
        results.append(r)
        if on_result:
            on_result(r)
    return results


def run_dir(
    paths: Iterable[str | os.PathLike[str]],
    *,
    ops: Iterable[str] | None = None,
    name_filter: str | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    **kw: Any,
) -> list[CaseResult]:
    """Run every case of every `*.json` file in `paths` (directories or files)."""
    results: list[CaseResult] = []
    for f in case_files(paths):
        results.extend(run_file(f, ops=ops, name_filter=name_filter, on_result=on_result, **kw))
    return results


@dataclass
class OpSummary:
    op: str
    cases: int = 0
    passed: int = 0
    unsupported: int = 0
    failed: int = 0
    errors: int = 0
    first_failure: str = ""


def summarize(results: Iterable[CaseResult]) -> list[OpSummary]:
    """One row per op (file stem), in first-seen order. `first_failure` names the first failed or errored case
    (or, when none, the first unsupported one in parentheses)."""
    rows: dict[str, OpSummary] = {}
    first_unsupported: dict[str, str] = {}
    for r in results:
        s = rows.setdefault(r.op, OpSummary(r.op))
        s.cases += 1
        if r.status == "pass":
            s.passed += 1
        elif r.status == "unsupported":
            s.unsupported += 1
            first_unsupported.setdefault(r.op, f"({r.name}: {r.detail})")
        elif r.status == "fail":
            s.failed += 1
        else:
            s.errors += 1
        if r.status in ("fail", "error") and not s.first_failure:
            s.first_failure = f"{r.name}: [{r.status} at {r.stage}] {r.detail}"
    for op, s in rows.items():
        if not s.first_failure and op in first_unsupported:
            s.first_failure = first_unsupported[op]
    return list(rows.values())


def format_table(rows: list[OpSummary], width: int = 110) -> str:
    """The per-op table as fixed-width text, with a total line."""
    opw = max([len("op"), *(len(r.op) for r in rows)])
    head = f"{'op':<{opw}}  {'cases':>5}  {'pass':>5}  {'unsup':>5}  {'fail':>5}  {'error':>5}  first failure"
    lines = [head, "-" * len(head)]
    tot = OpSummary("total")
    for r in rows:
        first = r.first_failure
        room = max(20, width - len(head) + len("first failure"))
        if len(first) > room:
            first = first[: room - 1] + "…"
        lines.append(
            f"{r.op:<{opw}}  {r.cases:>5}  {r.passed:>5}  {r.unsupported:>5}  {r.failed:>5}  "
            f"{r.errors:>5}  {first}"
        )
        tot.cases += r.cases
        tot.passed += r.passed
        tot.unsupported += r.unsupported
        tot.failed += r.failed
        tot.errors += r.errors
    lines.append("-" * len(head))
    lines.append(
        f"{'total':<{opw}}  {tot.cases:>5}  {tot.passed:>5}  {tot.unsupported:>5}  {tot.failed:>5}  "
        f"{tot.errors:>5}"
    )
    return "\n".join(lines)


__all__ = [
    "STATUSES",
    "CaseResult",
    "OpSummary",
    "run_case",
    "run_file",
    "run_dir",
    "case_files",
    "load_cases",
    "case_text",
    "summarize",
    "format_table",
]
