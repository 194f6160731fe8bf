"""`python -m tests.fuzz onnx|text|blob|pte --count N [--seed S] [--first K] [--timeout T] [--memory-gib G]
[--in-process]`."""

from __future__ import annotations

import argparse
import sys

from . import HARNESSES, runner


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("harness", choices=sorted(HARNESSES))
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=0, help="first case number (to reproduce one case)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case before it is a hang")
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="run cases in this process (default: a watched child: a native hang or crash is a finding)",
    )
    ap.add_argument("--memory-gib", type=float, default=4.0, help="address-space limit of this process")
    args = ap.parse_args(argv)
    runner.limit_memory(args.memory_gib)
    harness = HARNESSES[args.harness](args.seed)
    try:
        rep = runner.run(
            harness.make,
            harness.check,
            args.count,
            first=args.first,
            timeout=args.timeout,
            isolate=not args.in_process,
            progress=lambda r: print(f"  {r.cases} cases, {r.seconds:.0f} s, {dict(r.outcomes)}", flush=True),
        )
    finally:
        harness.close()
    print(rep.summary())
    return 1 if rep.findings else 0


if __name__ == "__main__":
    sys.exit(main())
