"""`webxnn quantize`: the main cli.py calls `add_cli(subparsers)`."""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any

from ..errors import WebxnnError
from .observers import METHODS
from .plan import MODES


def strict_json(obj: object) -> object:
    """The report as strict JSON: an SNR of inf (no noise) or -inf (no signal) becomes the string "inf" /
    "-inf" (json.dumps would write the non-standard Infinity, which JSON readers refuse)."""
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if hasattr(obj, "item"):  # numpy scalars
        return strict_json(obj.item())
    return obj


def _run(args: argparse.Namespace) -> int:
    from ..atomic import write_text
    from ..compiler import read_model
    from ..onnx.cli import dim_options
    from .api import DEFAULT_METHOD, layer_table, quantize

    to = args.to or _kind_of(args.output)
    if os.path.isdir(args.output):
        raise WebxnnError(f"-o {args.output}: is a folder; name the .{to} file to write")
    # --override-dim / --dim-max apply here, where the model is read
    graph = read_model(args.model, args.weights, args.manifest, **dim_options(args))
    result = quantize(
        graph,
        args.calibration,
        random=args.random,
        method=args.method or DEFAULT_METHOD,
        mode=args.mode,
        percentile=args.percentile,
        keep_fp32=args.keep_fp32 or (),
        target_snr=args.target_snr,
        equalize=args.equalize,
        bias_correction=args.bias_correction,
        threads=args.threads,
        quiet=args.quiet,
    )
    rep = result.report
    if to == "webnn":
        from ..dsl import write_graph

        written = [str(p) for p in write_graph(result.graph, args.output)]
    else:
        data = result.pte() if to == "pte" else result.xnn()
        from ..atomic import atomic_open

        with atomic_open(args.output, "wb") as f:
            f.write(data)
        written = [f"{args.output} ({len(data):,} bytes)"]
    if args.report:
        write_text(args.report, json.dumps(strict_json(rep), indent=1, allow_nan=False) + "\n")
        written.append(args.report)
    if not args.quiet:
        q = rep["quantized_layers"]
        print(
            f"{q['static']} static and {q['dynamic']} dynamic int8 layers, {rep['method']} ranges from "
            f"{rep['samples']} samples (calibration {rep['calibration_seconds']:.1f} s)"
        )
        if rep.get("kept_fp32_for_target"):
            print(f"kept fp32 for --target-snr: {', '.join(rep['kept_fp32_for_target'])}")
        if "layers" in rep:
            print(layer_table(rep["layers"], limit=None if args.all_layers else 15))
            for name, snr in rep["output_snr_db"].items():
                print(f"output {name}: SNR {snr:.2f} dB against fp32")
    for w in written:
        print(f"wrote {w}")
    return 0


def _kind_of(path: str) -> str:
    low = path.lower()
    return "pte" if low.endswith(".pte") else "webnn" if low.endswith((".webnn", ".json")) else "xnn"


def _snr(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of dB, got {text!r}") from None
    if v != v:
        raise argparse.ArgumentTypeError("expected a number of dB, got NaN")
    return v


def add_cli(subparsers: Any) -> None:
    from ..cli import _add_graph_args, non_negative_int, positive_int

    p = subparsers.add_parser(
        "quantize",
        help="post-training int8: calibrate an fp32 model and write an int8 .xnn (or QDQ .webnn, .pte)",
        description="Calibrate an fp32 model in webxnn's runtime, write its int8 form and report the SNR of "
        "every quantized layer against fp32 (worst first).",
    )
    _add_graph_args(p)
    data = p.add_mutually_exclusive_group(required=True)
    data.add_argument(
        "--calibration",
        metavar="DATA",
        help="a folder of .npz (keyed by input name) / .npy files, or one .npz with a batch axis",
    )
    data.add_argument(
        "--random", type=positive_int, metavar="N", help="N seeded random samples (smoke tests only)"
    )
    p.add_argument("-o", "--output", required=True, help="the .xnn (or .pte, or .webnn with --to webnn)")
    p.add_argument(
        "--to", choices=["xnn", "webnn", "pte"], help="what to write (default: from -o's extension)"
    )
    p.add_argument("--method", choices=METHODS, help="activation range observer (default: mse)")
    p.add_argument("--percentile", type=float, default=99.999, help="for --method percentile")
    p.add_argument("--mode", choices=MODES, default="auto", help="static, dynamic, or auto per op")
    p.add_argument("--keep-fp32", nargs="+", metavar="NAME", help="layers (node ids) to leave fp32")
    p.add_argument(
        "--target-snr",
        type=_snr,
        metavar="DB",
        help="keep the fewest worst layers fp32 until every output's SNR against fp32 reaches DB",
    )
    p.add_argument(
        "--equalize",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="cross-layer equalization (default: off; with per-channel weights it cost MobileNetV2 0.7 dB)",
    )
    p.add_argument(
        "--bias-correction",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="correct each layer's bias for the mean shift its int8 weights cause (default: on)",
    )
    p.add_argument("--report", metavar="R.json", help="write the report (per-layer SNR, ...) as JSON")
    p.add_argument("--all-layers", action="store_true", help="print every layer, not the 15 worst")
    p.add_argument("--threads", type=non_negative_int, default=None, help="threads for calibration runs")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no table")
    p.set_defaults(func=_run)
