"""`python -m bench quantize`: webxnn quantize against onnxruntime's quantize_static (MinMax, Entropy) on the
torch exports (seeded torchvision weights) in ../ab: output SNR against fp32 with 64 calibration samples,
on those samples and on 16 held-out ones, and webxnn's calibration time.

The inputs are seeded synthetic images (smooth low-frequency fields plus noise, ImageNet-normalized scale):
no image data set can be fetched here. ORT gets the very same samples through a CalibrationDataReader, with
its defaults for QDQ (per-channel int8 weights, uint8 activations)."""

from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
import time

import numpy as np

import webxnn
from bench.common import result_path
from webxnn.quantize.accuracy import snr_db

MODELS = ("mobilenetv2", "resnet50")
METHODS = ("minmax", "ema", "percentile", "mse", "entropy")
SAMPLES = 64


def images(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        low = rng.standard_normal((1, 3, 14, 14)).astype(np.float32)
        img = np.kron(low, np.ones((1, 1, 16, 16), np.float32))
        img += 0.3 * rng.standard_normal(img.shape).astype(np.float32)
        out.append(img.astype(np.float32))
    return out


def snr(ref: list[np.ndarray], got: list[np.ndarray]) -> float:
    r = np.concatenate([a.reshape(-1) for a in ref]).astype(np.float64)
    g = np.concatenate([a.reshape(-1) for a in got]).astype(np.float64)
    return snr_db(float(np.sum(r * r)), float(np.sum((r - g) ** 2)))


class _Reader:
    def __init__(self, name: str, xs: list[np.ndarray]) -> None:
        self.it = iter([{name: x} for x in xs])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.it, None)

    def rewind(self) -> None:
        pass


def ort_int8(path: pathlib.Path, calib: list[np.ndarray], method: str, tmp: pathlib.Path) -> pathlib.Path:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = tmp / f"{path.stem}.pre.onnx"
    if not pre.exists():
        quant_pre_process(str(path), str(pre), skip_symbolic_shape=True)
    out = tmp / f"{path.stem}.ort-{method}.onnx"
    quantize_static(
        str(pre),
        str(out),
        _Reader("input", calib),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        calibrate_method=getattr(CalibrationMethod, method),
    )
    return out


def ort_run(path: pathlib.Path, xs: list[np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return [s.run(None, {name: x})[0] for x in xs]


def webxnn_run(blob: bytes, xs: list[np.ndarray]) -> list[np.ndarray]:
    prog = webxnn.load(blob, threads=2)
    return [next(iter(prog.run({"input": x}).values())) for x in xs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench quantize", description=__doc__)
    p.add_argument("--dir", default=str(pathlib.Path(__file__).resolve().parents[1].parent / "ab"))
    p.add_argument("--models", nargs="+", default=list(MODELS))
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--no-ort", action="store_true")
    p.add_argument("--equalize", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--bias-correction", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    calib, held = images(args.samples, 0), images(16, 1)
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = pathlib.Path(tmpd)
        for m in args.models:
            path = pathlib.Path(args.dir) / f"{m}.onnx"
            fp32 = webxnn.compile(webxnn.from_onnx(path))
            ref_c, ref_h = webxnn_run(fp32, calib), webxnn_run(fp32, held)
            rows: dict[str, dict[str, float]] = {}
            for method in args.methods:
                t0 = time.perf_counter()
                q = webxnn.quantize(
                    path,
                    [{"input": x} for x in calib],
                    method=method,
                    layer_report=False,
                    equalize=args.equalize,
                    bias_correction=args.bias_correction,
                )
                total = time.perf_counter() - t0
                blob = q.xnn()
                rows[f"webxnn {method}"] = {
                    "snr_calib": snr(ref_c, webxnn_run(blob, calib)),
                    "snr_held": snr(ref_h, webxnn_run(blob, held)),
                    "calibration_s": q.report["calibration_seconds"],
                    "total_s": total,
                }
                print(m, method, rows[f"webxnn {method}"], flush=True)
            if not args.no_ort:
                ref_co, ref_ho = ort_run(path, calib), ort_run(path, held)
                for method in ("MinMax", "Entropy"):
                    t0 = time.perf_counter()
                    out = ort_int8(path, calib, method, tmp)
                    total = time.perf_counter() - t0
                    rows[f"ORT {method}"] = {
                        "snr_calib": snr(ref_co, ort_run(out, calib)),
                        "snr_held": snr(ref_ho, ort_run(out, held)),
                        "total_s": total,
                    }
                    print(m, method, rows[f"ORT {method}"], flush=True)
            results[m] = rows
    print()
    print(
        "| model | quantizer | output SNR dB (calibration samples) | output SNR dB (16 held out) "
        "| calibration s | total s |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for m, rows in results.items():
        for k, r in rows.items():
            cal = f"{r['calibration_s']:.1f}" if "calibration_s" in r else "—"
            print(f"| {m} | {k} | {r['snr_calib']:.2f} | {r['snr_held']:.2f} | {cal} | {r['total_s']:.1f} |")
    full = (
        set(args.models) == set(MODELS)
        and set(args.methods) == set(METHODS)
        and args.samples == SAMPLES
        and not (args.no_ort or args.equalize or not args.bias_correction)
    )  # the README's table: anything less goes to quantize-partial.json
    out = result_path("quantize", full, "json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    return 0
