"""`webxnn demo`: the whole path on the bundled example — parse, compile, load, run, time."""

from __future__ import annotations

import pathlib
import time

import numpy as np

EXAMPLE = pathlib.Path(__file__).resolve().parent / "examples" / "tiny_cnn.webnn"


def run_demo(threads: int | None = None, repeat: int = 200) -> dict[str, np.ndarray]:
    from .compiler import compile as compile_graph
    from .dsl import load_graph
    from .runtime import load

    t0 = time.perf_counter()
    graph = load_graph(EXAMPLE)
    t1 = time.perf_counter()
    blob = compile_graph(graph)
    t2 = time.perf_counter()
    prog = load(blob, threads=threads)
    t3 = time.perf_counter()
    print(f"example: {EXAMPLE.name} ({len(graph.nodes)} nodes)")
    print(
        f"parse {1e3 * (t1 - t0):.2f} ms, compile {1e3 * (t2 - t1):.2f} ms -> {len(blob):,} byte .xnn, "
        f"load {1e3 * (t3 - t2):.2f} ms"
    )
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    outputs = prog.run({"x": x})
    for name, arr in outputs.items():
        top = np.argsort(arr.reshape(-1))[::-1][:3]
        ranked = ", ".join(f"class {i}: {arr.reshape(-1)[i]:.4f}" for i in top)
        print(f"output {name}{list(arr.shape)}: sum {arr.sum():.6f}; top 3: {ranked}")
    times = []
    for _ in range(repeat):
        s = time.perf_counter()
        prog.run({"x": x})
        times.append(time.perf_counter() - s)
    if times:
        print(
            f"latency ({prog.threads} thread(s), {repeat} runs): median {np.median(times) * 1e6:.1f} us, "
            f"min {np.min(times) * 1e6:.1f} us"
        )
    return outputs
