"""ONNX's own node conformance cases run through webxnn the way a user would: import → compile → load → run.

`onnx.backend.test.case.node.collect_testcases()` builds ~1,900 cases in memory (a model, inputs, expected
outputs; no data files). int64 graph inputs (shapes, axes, pads, repeats, k, indices) are frozen into
initializers first, as exported models have them. Each case ends as one of

- pass: every output has the expected shape and values within tolerance,
- wrong: an output differs (shape, or values beyond tolerance) — a silent wrong answer,
- refused: a `webxnn.WebxnnError` (import, compile or load says it cannot),
- crashed: any other exception.

Tolerances: each case's own, as ONNX's backend test runner uses them (rtol 1e-3, atol 1e-7 for nearly all);
every passing case also holds them on this machine's AVX2 kernels, so nothing is widened, except for
spectral ops (DFT, STFT): an element's error there scales with the whole signal, not with the element, and
ONNX's expected data is itself a float32 FFT (1.9e-7 where the exact inverse DFT is 0), so their atol is at
least 1e-6 x the largest expected magnitude. Integer and bool
outputs are compared exactly, and an output's dtype must be the expected one (bool comes back as uint8, the
WebNN encoding).

`python tests/onnx_backend_cases.py [names...]` prints the per-op table (refusals split into by design, when
every reason given is a category of webxnn/onnx/refusals.py, and gap) and each wrong / crashed case; `--gaps`
also prints each gap; `--freeze` rewrites the expected list (onnx_backend_expected.txt) that
test_onnx_backend_suite.py checks.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PASS, WRONG, REFUSED, CRASHED = "pass", "wrong", "refused", "crashed"


@dataclass
class Outcome:
    name: str
    status: str
    detail: str = ""


def cases() -> list[Any]:
    """The onnx package's node test cases, sorted by name."""
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):  # some cases divide by zero on purpose
        warnings.simplefilter("ignore")
        return sorted(node.collect_testcases(), key=lambda c: c.name)


def freeze_int64(model: Any, inputs: list[Any]) -> tuple[Any, list[tuple[str, Any]]]:
    """A copy of `model` whose int64 tensor inputs are initializers holding `inputs`' values; the remaining
    (name, value) feeds."""
    from onnx import TensorProto, numpy_helper

    m = type(model)()
    m.CopyFrom(model)
    keep, feeds = [], []
    for vi, value in zip(model.graph.input, inputs):
        value = _tensor(value)
        if (
            vi.type.HasField("tensor_type")
            and vi.type.tensor_type.elem_type == TensorProto.INT64
            and isinstance(value, np.ndarray)
        ):
            m.graph.initializer.append(numpy_helper.from_array(value, vi.name))
        else:
            keep.append(vi)
            feeds.append((vi.name, value))
    del m.graph.input[:]
    m.graph.input.extend(keep)
    return m, feeds


def _tensor(value: Any) -> Any:
    """numpy scalars as 0-D arrays, TensorProtos (types numpy lacks) decoded; anything else unchanged."""
    if isinstance(value, np.generic):
        return np.asarray(value)
    if type(value).__name__ == "TensorProto":
        from onnx import numpy_helper

        return numpy_helper.to_array(value)
    return value


def _empty(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.size == 0


def _as_feed(value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"a {type(value).__name__} input (sequence/optional), not a tensor")
    return value.astype(np.uint8) if value.dtype == np.bool_ else value  # WebNN bool is uint8


def compare(got: np.ndarray, want: Any, rtol: float, atol: float) -> str:
    """'' when `got` matches the expected output, else what differs."""
    want = _tensor(want)
    if not isinstance(want, np.ndarray):
        return f"expected a {type(want).__name__} output"
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype == np.bool_:
        want = want.astype(np.uint8)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "iub" or got.dtype.kind in "iub" and want.dtype.kind != "f":
        bad = got.astype(np.int64) != want.astype(np.int64)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            g, w = got.reshape(-1)[k], want.reshape(-1)[k]
            return f"{int(bad.sum())}/{bad.size} differ, e.g. [{k}] {g} vs {w}"
        return ""
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return ""
    k = int(np.flatnonzero(~close)[0])
    return (
        f"{int((~close).sum())}/{close.size} beyond rtol {rtol:g} atol {atol:.3g}, e.g. [{k}] "
        f"{g.reshape(-1)[k]:.6g} vs {w.reshape(-1)[k]:.6g}"
    )


SPECTRAL = ("dft", "stft")  # see the module docstring: atol relative to the signal's magnitude


def run_case(case: Any, threads: int = 1) -> Outcome:
    import webxnn
    from webxnn.errors import WebxnnError

    try:
        for inputs, expected in case.data_sets:
            model, feeds = freeze_int64(case.model, inputs)
            g = webxnn.from_onnx(model)
            prog = webxnn.load(webxnn.compile(g), threads=threads)
            # an input declared empty is a constant to webxnn: the program has no such input
            outs = list(prog.run([_as_feed(v) for _, v in feeds if not _empty(v)]).values())
            if len(outs) != len(expected):
                return Outcome(case.name, WRONG, f"{len(outs)} outputs, expected {len(expected)}")
            for o, (got, want) in enumerate(zip(outs, expected)):
                atol = case.atol
                if op_of(case.name) in SPECTRAL:
                    atol = max(atol, 1e-6 * float(np.abs(_tensor(want)).max(initial=0.0)))
                why = compare(got, want, case.rtol, atol)
                if why:
                    return Outcome(case.name, WRONG, f"output {o}: {why}")
    except WebxnnError as e:
        return Outcome(case.name, REFUSED, f"{type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001 - anything else is a crash, which is what we measure
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return Outcome(case.name, CRASHED, f"{type(e).__name__}: {e} ({tb.filename}:{tb.lineno})")
    return Outcome(case.name, PASS)


def op_of(name: str) -> str:
    """The op family of a case name: test_averagepool_2d_pads -> averagepool."""
    return re.sub(r"^test_", "", name).split("_")[0]


BY_DESIGN, GAP = "by design", "gap"


def refusal_kind(detail: str) -> str:
    """BY_DESIGN when every reason a refusal gives is one of refusals.categories()' (a node list's indented
    reason lines, else the whole message), GAP otherwise (an op or attribute not learned yet)."""
    from webxnn.onnx.refusals import categories

    whys = [why for _, why in categories()]
    lines = detail.splitlines()
    reasons = [ln.strip() for ln in lines if ln.startswith("      ")] if len(lines) > 1 else [detail]
    ok = bool(reasons) and all(any(w in r for w in whys) for r in reasons)
    return BY_DESIGN if ok else GAP


def status_of(o: Outcome) -> str:
    """pass / wrong / crashed, or a refusal split into by design / gap."""
    return refusal_kind(o.detail) if o.status == REFUSED else o.status


def table(outcomes: list[Outcome]) -> str:
    by_op: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        by_op[op_of(o.name)][status_of(o)] += 1
    total = Counter(status_of(o) for o in outcomes)
    cols = (PASS, WRONG, BY_DESIGN, GAP, CRASHED)
    lines = [f"{'op':<28}" + "".join(f"{c:>10}" for c in cols)]
    for op in sorted(by_op, key=lambda k: (-by_op[k][GAP], -by_op[k][BY_DESIGN], k)):
        lines.append(f"{op:<28}" + "".join(f"{by_op[op][c]:>10}" for c in cols))
    lines.append(f"{'total':<28}" + "".join(f"{total[c]:>10}" for c in cols))
    return "\n".join(lines)


EXPECTED = Path(__file__).with_name("onnx_backend_expected.txt")


def read_expected(path: Path = EXPECTED) -> dict[str, str]:
    """{case name: 'pass' | 'refused' | 'gap'} from the frozen list (`# ...` lines are comments); 'refused'
    is a refusal by design."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            status, name = line.split()
            out[name] = status
    return out


def write_expected(outcomes: list[Outcome], path: Path = EXPECTED) -> None:
    import onnx

    bad = [o.name for o in outcomes if o.status not in (PASS, REFUSED)]
    if bad:
        raise SystemExit(f"not freezing: {len(bad)} wrong or crashed cases ({', '.join(bad[:5])} ...)")
    head = [
        f"# ONNX node conformance cases (onnx {onnx.__version__}) through webxnn: what each should do.",
        "# Regenerate with `python tests/onnx_backend_cases.py --freeze` after an importer change.",
    ]
    lines = [f"{frozen_status(o)} {o.name}" for o in outcomes]
    path.write_text("\n".join(head + lines) + "\n", encoding="utf-8")


def frozen_status(o: Outcome) -> str:
    """How the expected list records an outcome: pass, refused (by design) or gap."""
    status = status_of(o)
    return REFUSED if status == BY_DESIGN else status


def main(argv: list[str]) -> int:
    import time

    freeze, gaps = "--freeze" in argv, "--gaps" in argv
    names = {a for a in argv if not a.startswith("--")}
    picked = [c for c in cases() if not names or c.name in names]
    t0 = time.perf_counter()
    outcomes = [run_case(c) for c in picked]
    dt = time.perf_counter() - t0
    if len(picked) > 20:
        print(table(outcomes))
    for o in outcomes:
        if o.status in (WRONG, CRASHED) or names or (gaps and status_of(o) == GAP):
            print(f"{status_of(o):>9} {o.name}: {o.detail[:300]}")
    print(
        f"{len(picked)} cases in {dt:.1f} s: "
        + ", ".join(f"{k} {v}" for k, v in Counter(status_of(o) for o in outcomes).items())
    )
    if freeze and not names:
        write_expected(outcomes)
        print(f"wrote {EXPECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
