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
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("suite", choices=sorted(SUITES))
    args, rest = parser.parse_known_args(argv)
    module = __import__(SUITES[args.suite], fromlist=["main"])
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main())
