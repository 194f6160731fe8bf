"""Load speed: verify + plan time of a `.xnn` blob with ~N MB of weights, from bytes and from a file; and the
fixed cost of one `run` from Python (a 1-element graph: argument checks, binding, the call, the result)."""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time

import numpy as np

import webxnn
from bench.common import positive_int


def mlp_graph(megabytes: float) -> tuple[webxnn.Graph, dict[str, np.ndarray]]:
    """A stack of 512x512 fully connected layers holding about `megabytes` of fp32 weights."""
    width = 512
    layers = max(1, int(megabytes * 2**20 // (width * width * 4)))
    consts = "\n".join(f"    w{i}: f32[{width}, {width}]; b{i}: f32[{width}];" for i in range(layers))
    nodes, prev = [], "x"
    for i in range(layers):
        nodes.append(f"    m{i} = matmul({prev}, w{i}); a{i} = add(m{i}, b{i}); r{i} = relu(a{i});")
        prev = f"r{i}"
    text = (
        f'webnn_graph "mlp" v1 {{\n  inputs {{ x: f32[1, {width}]; }}\n  consts {{\n{consts}\n  }}\n'
        f"  nodes {{\n{chr(10).join(nodes)}\n  }}\n  outputs {{ {prev}; }}\n}}\n"
    )
    rng = np.random.default_rng(0)
    weights = {}
    for i in range(layers):
        weights[f"w{i}"] = (rng.standard_normal((width, width)) * 0.05).astype(np.float32)
        weights[f"b{i}"] = np.zeros(width, np.float32)
    return webxnn.parse(text), weights


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench load")
    parser.add_argument("--megabytes", type=float, nargs="+", default=[10.0])
    parser.add_argument("--repeat", type=positive_int, default=5)
    args = parser.parse_args(argv)
    print("| weights MB | blob bytes | compile ms | load from bytes ms | load from file (mmap) ms |")
    print("|---:|---:|---:|---:|---:|")
    for mb in args.megabytes:
        graph, weights = mlp_graph(mb)
        t0 = time.perf_counter()
        blob = webxnn.compile(graph, weights=weights)
        compile_ms = (time.perf_counter() - t0) * 1e3
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "mlp.xnn"
            path.write_bytes(blob)
            from_bytes = _median_ms(lambda b=blob: webxnn.load(b, threads=1), args.repeat)
            from_file = _median_ms(lambda p=str(path): webxnn.load(p, threads=1), args.repeat)
        print(f"| {mb:g} | {len(blob):,} | {compile_ms:.0f} | {from_bytes:.2f} | {from_file:.2f} |")
    print()
    us = run_overhead_us()
    print(f"`run` of a 1-element graph from Python: {us:.2f} µs (best of 10 averages over 2000 calls)")
    return 0


def run_overhead_us() -> float:
    """Microseconds per `Program.run` of y = x + x on one float: what a call costs before any kernel work."""
    text = (
        'webnn_graph "one" v1 {\n  inputs { x: f32[1]; }\n  nodes { y = add(x, x); }\n  outputs { y; }\n}\n'
    )
    prog = webxnn.load(webxnn.compile(webxnn.parse(text)), threads=1)
    feeds = {"x": np.ones(1, np.float32)}
    for _ in range(2000):
        prog.run(feeds)
    best = float("inf")
    for _ in range(10):
        t0 = time.perf_counter()
        for _ in range(2000):
            prog.run(feeds)
        best = min(best, (time.perf_counter() - t0) / 2000 * 1e6)
    return best
