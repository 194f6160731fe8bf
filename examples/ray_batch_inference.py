"""Score a folder of `.npy` inputs with a webxnn model on Ray Data, one model per actor.

    python examples/ray_batch_inference.py model.onnx inputs/ -o scores.csv --actors 2 --threads 1

Each `.npy` file holds one input row (e.g. a (3, 224, 224) float32 image for MobileNetV2). The files are
read in batches, run through `webxnn.ray.Predictor` on a pool of actors, and written to a CSV, one line per
file in the folder's sorted order: the file name, the top-1 class of the first output and its score.
`--address` joins a running cluster (the model path must then exist on every node, or pass a `.xnn` blob
bytes instead); without it Ray starts locally with `--actors` CPUs.
"""

from __future__ import annotations

import argparse
import csv
import pathlib

import numpy as np
import ray

from webxnn.ray import Predictor


def read_npy(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Paths -> a stacked batch of their arrays (the path column is kept to name the results)."""
    return {"path": batch["path"], "data": np.stack([np.load(p, allow_pickle=False) for p in batch["path"]])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help=".xnn, .webnn or .onnx model")
    ap.add_argument("folder", type=pathlib.Path, help="folder of .npy files, one input row each")
    ap.add_argument("-o", "--output", type=pathlib.Path, default=pathlib.Path("scores.csv"))
    ap.add_argument("--actors", type=int, default=2, help="model replicas (one CPU each)")
    ap.add_argument("--threads", type=int, default=1, help="threads per run in each actor")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-batch", type=int, default=None, help="bound for an ONNX model's symbolic batch")
    ap.add_argument("--address", default=None, help="a running Ray cluster (default: start one here)")
    args = ap.parse_args()

    files = sorted(str(p) for p in args.folder.glob("*.npy"))
    if not files:
        ap.error(f"no .npy files in {args.folder}")
    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.actors, include_dashboard=False, _node_ip_address="127.0.0.1")
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    model = str(pathlib.Path(args.model).resolve())
    scores = (
        ray.data.from_items([{"path": f} for f in files])
        .map_batches(read_npy, batch_size=args.batch_size)
        .map_batches(
            Predictor,
            fn_constructor_kwargs={
                "model": model,
                "threads": args.threads,
                "max_batch": args.max_batch,
                "columns": "data",
            },
            batch_size=args.batch_size,
            concurrency=args.actors,
            num_cpus=args.threads,
        )
    )
    with args.output.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file", "class", "score"])
        for batch in scores.iter_batches(batch_size=args.batch_size, batch_format="numpy"):
            out = next(v for k, v in batch.items() if k != "path").reshape(len(batch["path"]), -1)
            for path, row in zip(batch["path"], out):
                k = int(np.argmax(row))
                w.writerow([pathlib.Path(path).name, k, f"{row[k]:.6g}"])
    print(f"{len(files)} files scored -> {args.output}")


if __name__ == "__main__":
    main()
