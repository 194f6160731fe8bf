"""Ray Data throughput: a model over N inputs through `webxnn.ray.Predictor` on 1 and 2 actors (one thread
each), against a plain loop over the same inputs in this process (one Program, one thread). Needs
`webxnn[ray]`. Ray's start-up (`ray.init`) is not timed; the actors' start (model load) is, as a job pays it.

    python -m bench ray --model mobilenetv2.onnx --inputs 512
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import webxnn
from webxnn.ray import Predictor


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench ray", description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help=".onnx / .webnn / .xnn model with one input")
    ap.add_argument("--inputs", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--actors", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    import ray

    blob = webxnn.compile(args.model) if not args.model.endswith(".xnn") else open(args.model, "rb").read()
    prog = webxnn.load(blob, threads=1)
    info = prog.inputs[0]
    rows = np.random.default_rng(0).standard_normal((args.inputs, *info.shape[1:])).astype(np.float32)

    pred = Predictor(blob, threads=1)
    pred({"x": rows[:2]})  # warm up

    def plain_loop() -> float:
        t = time.perf_counter()
        for start in range(0, len(rows), args.batch_size):
            pred({"x": rows[start : start + args.batch_size]})
        return time.perf_counter() - t

    loop_s = plain_loop()
    results = [("plain loop", 1, loop_s)]

    ray.init(
        num_cpus=max(args.actors), include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
    )
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    ds = ray.data.from_numpy(rows).materialize()  # in the object store before timing
    for n in args.actors:
        t = time.perf_counter()
        out = ds.map_batches(
            Predictor,
            fn_constructor_kwargs={"model": blob, "threads": 1, "columns": "data"},
            batch_size=args.batch_size,
            concurrency=n,
            num_cpus=1,
            batch_format="numpy",
        ).materialize()
        results.append((f"Ray Data, {n} actor(s)", n, time.perf_counter() - t))
        assert out.count() == len(rows)
    ray.shutdown()
    # again after Ray: on a shared machine the two loops bracket the Ray runs (the better one is the base)
    results.append(("plain loop, again", 1, plain_loop()))
    loop_s = min(loop_s, results[-1][2])

    print(f"{args.model}: {len(rows)} inputs, batch {args.batch_size}, 1 thread per worker")
    print(f"{'how':<24}{'workers':>8}{'s':>9}{'inputs/s':>10}{'vs loop':>9}{'overhead':>10}")
    for how, n, s in results:
        per_worker = len(rows) / s / n
        ideal = len(rows) / loop_s
        print(
            f"{how:<24}{n:>8}{s:>9.2f}{len(rows) / s:>10.1f}{loop_s / s:>8.2f}x"
            f"{(ideal / per_worker - 1) * 100:>9.0f}%"
        )
    print("overhead: per-worker throughput below the plain loop's, in % (0 = Ray costs nothing)")
    return 0
