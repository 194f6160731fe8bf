"""webxnn's `.pte` in ExecuTorch's runtime beside webxnn running the same `.pte`: outputs and times.

`python -m bench pte [--models resnet18 minilm mobilenetv2] [--threads 1 2] [--repeat 10] [--rounds 3]`

Each model (the ONNX graphs of bench/models.py) is compiled once by webxnn to a `.pte` (`webxnn.to_pte`), then
run by ExecuTorch's Python runtime (its XNNPACK delegate; needs the `executorch` extra) and by webxnn
(`webxnn.load(pte)`), and checked against onnxruntime on the ONNX. Reported: the `.pte` size, each runtime's
max abs difference from onnxruntime as a fraction of onnxruntime's output range, webxnn vs ExecuTorch
(max abs diff and 1 - cosine similarity), and the median latency of each per thread count (alternating
rounds, best round; ExecuTorch's thread pool is resized to the same count).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.common import best_of_rounds, onnxruntime_or_none, ort_session, positive_int, result_path
from bench.models import minilm, mobilenet_v2, resnet18

MODELS: dict[str, Callable[[], tuple[bytes, dict[str, np.ndarray]]]] = {
    "resnet18": resnet18,
    "minilm": minilm,
    "mobilenetv2": mobilenet_v2,
}


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64)))


def _executorch_threads(n: int) -> None:
    from executorch.extension.pybindings.portable_lib import _unsafe_reset_threadpool  # noqa: PLC0415

    _unsafe_reset_threadpool(n)


def measure(name: str, threads: list[int], repeat: int, rounds: int) -> dict[str, Any]:
    import onnx  # noqa: PLC0415

    import webxnn  # noqa: PLC0415
    from webxnn.pte.executorch import load_in_executorch  # noqa: PLC0415

    model, feeds = MODELS[name]()
    entry: dict[str, Any] = {"model": name}
    t0 = time.perf_counter()
    pte = webxnn.to_pte(webxnn.from_onnx(onnx.load_from_string(model)))
    entry["compile_s"] = time.perf_counter() - t0
    entry["pte_bytes"] = len(pte)
    et = load_in_executorch(pte)
    wx = webxnn.load(pte)
    (y_et,) = et.run(feeds).values()
    (y_wx,) = wx.run(feeds).values()
    if onnxruntime_or_none() is not None:
        (ref,) = ort_session(model, 2).run(None, feeds)
        rng = float(np.ptp(ref))
        entry["et_vs_ort"] = float(np.max(np.abs(y_et.reshape(ref.shape) - ref))) / rng
        entry["webxnn_vs_ort"] = float(np.max(np.abs(y_wx.reshape(ref.shape) - ref))) / rng
    entry["webxnn_vs_et_max_abs"] = float(np.max(np.abs(y_wx - y_et)))
    entry["webxnn_vs_et_1_minus_cosine"] = 1.0 - _cosine(y_wx, y_et)
    entry["runs"] = []
    for t in threads:
        _executorch_threads(t)  # before loading: the delegate takes the pool when it is initialised
        et_t, wx_t = load_in_executorch(pte), webxnn.load(pte, threads=t)
        calls = {"et_ms": lambda p=et_t: p.run(feeds), "webxnn_ms": lambda p=wx_t: p.run(feeds)}
        entry["runs"].append({"threads": t, **best_of_rounds(calls, repeat, rounds)})
    return entry


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| model | .pte bytes | ExecuTorch vs ORT | webxnn vs ORT | webxnn vs ExecuTorch (max abs / 1-cos) "
        "| thr | ExecuTorch ms | webxnn ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in results:
        if "error" in e:
            lines.append(f"| {e['model']} | {e['error']} |||||||")
            continue
        for k, r in enumerate(e["runs"]):
            head = (
                f"| {e['model']} | {e['pte_bytes']:,} | {e.get('et_vs_ort', float('nan')):.2g} "
                f"| {e.get('webxnn_vs_ort', float('nan')):.2g} "
                f"| {e['webxnn_vs_et_max_abs']:.2g} / {e['webxnn_vs_et_1_minus_cosine']:.1g} "
                if k == 0
                else "| | | | | "
            )
            lines.append(head + f"| {r['threads']} | {r['et_ms']:.2f} | {r['webxnn_ms']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench pte", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=positive_int, default=10, help="calls per round")
    parser.add_argument("--rounds", type=positive_int, default=3)
    args = parser.parse_args(argv)
    results = []
    for name in args.models:
        try:
            results.append(measure(name, args.threads, args.repeat, args.rounds))
        except Exception as e:  # noqa: BLE001 - reported, the other models still run
            results.append({"model": name, "error": f"{type(e).__name__}: {str(e)[:300]}"})
    print(markdown(results))
    path = result_path("pte", args.models == list(MODELS) and args.threads == [1, 2], "json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    print(f"\nJSON: {path}")
    return 0
