"""The `conformance` command: shared by `python -m webxnn.conformance` and `webxnn conformance`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import WebxnnError
from .runner import CaseResult, format_table, run_dir, summarize


def configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="DIR",
        help="conformance directories (e.g. ../shared/conformance/wpt) or single <op>.json files",
    )
    p.add_argument(
        "--op",
        action="append",
        default=[],
        metavar="OP",
        help="only this op (file stem or operator name); repeatable",
    )
    p.add_argument("--case", default=None, metavar="TEXT", help="only cases whose name contains TEXT")
    p.add_argument("--json", default=None, metavar="OUT", help="write every case's verdict to OUT as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="list every failed/errored case")
    p.add_argument("--progress", action="store_true", help="print each case's verdict as it finishes")
    p.add_argument(
        "--runtime",
        choices=("webxnn", "executorch"),
        default="webxnn",
        help="run the cases in webxnn (default) or compiled to .pte in ExecuTorch's runtime (needs the "
        "`executorch` extra); 'unsupported' then means the executorch profile cannot express the case",
    )
    p.set_defaults(func=cmd_conformance)
    return p


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register `webxnn conformance DIR...` on the main CLI's subparsers."""
    p = subparsers.add_parser(
        "conformance", help="run WPT-style WebNN conformance cases and print a per-op table"
    )
    return configure(p)


def runtime_fns(runtime: str) -> dict[str, Any]:
    """`run_case`'s compile/load functions for `runtime` (none: webxnn's own)."""
    if runtime != "executorch":
        return {}
    from ..pte.executorch import executorch_runtime, load_in_executorch
    from ..pte.writer import to_pte

    executorch_runtime()  # not installed: say so once, before any case runs
    return {"compile_fn": to_pte, "load_fn": load_in_executorch}


def cmd_conformance(args: argparse.Namespace) -> int:
    """Run, print the table (and details with -v); exit 1 when any case failed or errored, else 0."""

    def progress(r: CaseResult) -> None:
        print(
            f"{r.status:<11} {r.op}: {r.name} ({r.seconds:.2f}s){' — ' + r.detail if r.detail else ''}",
            flush=True,
        )

    results = run_dir(
        args.paths,
        ops=args.op or None,
        name_filter=args.case,
        on_result=progress if args.progress else None,
        **runtime_fns(args.runtime),
    )
    rows = summarize(results)
    print(format_table(rows))
    bad = [r for r in results if r.status in ("fail", "error")]
    if args.verbose and bad:
        print("\nfailures:")
        for r in bad:
            print(f"- {r.op} / {r.name}: [{r.status} at {r.stage}] {r.detail}")
    if args.json:
        doc = {"summary": [vars(s) for s in rows], "cases": [r.to_json() for r in results]}
        from ..atomic import write_text

        write_text(args.json, json.dumps(doc, indent=1, default=float))
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    p = configure(argparse.ArgumentParser(prog="python -m webxnn.conformance", description=__doc__))
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except FileNotFoundError as e:
        print(f"error: {e.filename or e}: no such file or directory", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except WebxnnError as e:  # e.g. --runtime executorch without executorch installed
        print(f"error: {e}", file=sys.stderr)
        return 2
