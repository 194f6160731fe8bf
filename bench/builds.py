"""Two webxnn builds side by side: the same ONNX models timed under each, in interleaved blocks.

`python -m bench builds --a /venv-before/bin/python --b /venv-after/bin/python [--models ...] [--rounds 4]`

For a change that must not move speed (a reorganisation, a refactor of a kernel's source): install each
build in its own environment (`pip install .` of each commit), then name their interpreters. Each block is a
fresh process of one build (`python -m bench.builds --child MODEL`): import, compile, load at each thread
count, 0.5 s warm-up, `--repeat` runs; it reports the fastest run (the figure least moved by other tenants).
The builds alternate, the order flipping every round, with a pause between blocks; the table gives each
build's best block and the median block, and the ratio B/A of the best blocks. The models are the `models`
suite's, written once to `--dir`.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import positive_int


def child(path: str, repeat: int, threads: list[int]) -> dict[int, float]:
    """Fastest run in ms per thread count, under the webxnn this interpreter imports."""
    import numpy as np  # noqa: PLC0415

    import webxnn  # noqa: PLC0415

    blob = webxnn.compile(webxnn.from_onnx(path))  # not compile(path): older builds take only a Graph
    out = {}
    for t in threads:
        prog = webxnn.load(blob, threads=t)
        rng = np.random.default_rng(0)
        feeds = {}
        for info in prog.inputs:
            if "int" in str(info.dtype):
                feeds[info.name] = np.ones(info.shape, dtype=info.dtype)
            else:
                feeds[info.name] = rng.standard_normal(info.shape).astype(info.dtype)
        end = time.perf_counter() + 0.5
        while time.perf_counter() < end:
            prog.run(feeds)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            prog.run(feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        out[t] = min(times)
        time.sleep(0.2)
    return out


def compare(a: str, b: str, paths: list[pathlib.Path], rounds: int, repeat: int, threads: list[int]) -> str:
    """The markdown table of an interleaved run of builds `a` and `b` (interpreter paths)."""
    blocks: dict[tuple[str, int, str], list[float]] = {}
    for r in range(rounds):
        order = [("A", a), ("B", b)] if r % 2 == 0 else [("B", b), ("A", a)]
        for path in paths:
            for tag, py in order:
                cmd = [py, "-m", "bench.builds", "--child", str(path), "--repeat", str(repeat), "--threads"]
                cmd += [str(t) for t in threads]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    raise SystemExit(f"build {tag} ({py}) failed on {path.name}:\n{res.stderr[-2000:]}")
                for t, ms in json.loads(res.stdout).items():
                    blocks.setdefault((path.stem, int(t), tag), []).append(ms)
                time.sleep(0.5)
    lines = [
        "| model | threads | A best / median ms | B best / median ms | B/A (best) |",
        "|---|---:|---:|---:|---:|",
    ]
    for path in paths:
        for t in threads:
            ta, tb = blocks[(path.stem, t, "A")], blocks[(path.stem, t, "B")]
            lines.append(
                f"| {path.stem} | {t} | {min(ta):.2f} / {statistics.median(ta):.2f} "
                f"| {min(tb):.2f} / {statistics.median(tb):.2f} | {min(tb) / min(ta):.3f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench builds",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--a", help="the interpreter of build A (e.g. the commit before a change)")
    parser.add_argument("--b", default=sys.executable, help="the interpreter of build B (default: this one)")
    parser.add_argument("--models", nargs="+", default=["mobilenetv2", "resnet50", "minilm"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=positive_int, default=4)
    parser.add_argument("--repeat", type=positive_int, default=30, help="runs per block")
    parser.add_argument("--dir", type=pathlib.Path, default=None, help="where the ONNX models are written")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.repeat, args.threads)))
        return 0
    if not args.a:
        parser.error("--a (the interpreter of the build to compare with) is required")
    from bench.models import MODELS  # noqa: PLC0415

    folder = args.dir or pathlib.Path(tempfile.mkdtemp(prefix="webxnn-builds-"))
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in args.models:
        path = folder / f"{name}.onnx"
        if not path.exists():
            path.write_bytes(MODELS[name]()[0])
        paths.append(path)
    print(compare(args.a, args.b, paths, args.rounds, args.repeat, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
