"""Front-end speed: parse time of generated `.webnn` graphs of growing size (linear time is the contract)."""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import positive_int
from webxnn.dsl import parse


def chain_graph(n: int) -> str:
    """A realistic chain: matmul / add with annotations / softmax, repeated, with comments."""
    lines = [
        'webnn_graph "chain" v1 {',
        "  inputs { x: f32[1, 128]; }",
        '  consts { W: f32[128, 128] @weights("W"); b: f32[128] @scalar(0.5); }',
        "  nodes {",
    ]
    prev = "x"
    for i in range(n):
        op = (
            f"matmul({prev}, W);  # step {i}",
            f'add({prev}, b, label="layer{i}", metadata={{k: [1, 2.5]}});',
            f"softmax({prev}, axis=1);",
        )[i % 3]
        lines.append(f"    n{i} = {op}")
        prev = f"n{i}"
    lines += ["  }", f"  outputs {{ {prev}; }}", "}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench parse")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--repeat", type=positive_int, default=5)
    args = parser.parse_args(argv)
    print("| nodes | bytes | median ms | µs / node |")
    print("|---:|---:|---:|---:|")
    for n in args.sizes:
        text = chain_graph(n)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            parse(text)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"| {n} | {len(text):,} | {med * 1e3:.1f} | {med * 1e6 / n:.1f} |")
    return 0
