"""`python -m bench <suite> [options]`: run one benchmark suite and print its table."""

from __future__ import annotations

import argparse
import sys

SUITES = {
    "parse": "bench.parse",
    "load": "bench.load",
    "kernels": "bench.kernels",
    "models": "bench.models",
    "layers": "bench.layers",
    "builds": "bench.builds",
    "contended": "bench.contended",
    "ray": "bench.ray_data",
    "view": "bench.netron_load",
    "pte": "bench.pte",
    "quantize": "bench.quantize",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # With a suite named first, -h/--help belongs to the suite (its options), not to this dispatcher.
    suite_first = bool(argv) and argv[0] in SUITES
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__, add_help=not suite_first)
    parser.add_argument("suite", choices=sorted(SUITES))
    args, rest = parser.parse_known_args(argv)
    module = __import__(SUITES[args.suite], fromlist=["main"])
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main())
