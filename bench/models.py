"""Model speed: MobileNetV2, ResNet-50 and a 6-layer MiniLM-sized encoder, webxnn vs onnxruntime; and the
int8 models, both runtimes on the same quantized file: MobileNetV2 and ResNet-50 static (QDQ,
`quantize_static`), MiniLM dynamic (`quantize_dynamic`).

`python -m bench models [--models mobilenetv2 resnet50 minilm mobilenetv2-int8 resnet50-int8 minilm-int8dyn]
[--threads 1 2] [--repeat 10] [--rounds 3]`

Each model is defined once here as an ONNX graph (onnx.helper, weights seeded, batch-norm already folded into
the convolution biases as an exporter would), and the same ONNX bytes go to onnxruntime and to webxnn
(`webxnn.from_onnx` -> `webxnn.compile` -> `webxnn.load`). The two runtimes are timed in alternating rounds
(`repeat` calls each) and each reports the median of its best round, so a burst of load from other processes
does not land on one of them only. Reported: median latency per thread count, the
webxnn/ORT ratio, the 1->2 thread speed-up (for webxnn also from 1- and 2-thread blocks back to back, see
paired_speedup) and the load time (verify + pack). A model that fails to import or
compile is reported with the ops it is missing, and the others still run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pathlib
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.common import (
    alternating_blocks,
    best_of_rounds,
    block_ms,
    contention_warning,
    copy_bandwidth,
    fma_peaks,
    onnxruntime_or_none,
    ort_session,
    paired_ratio,
    positive_int,
    progress,
    result_path,
)

OPSET = 17


# ------------------------------------------------------------------------------------------ graph builder
class Builder:
    """Collects ONNX nodes and seeded initializers; `conv`, `matmul`... return the output name."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.n = 0

    def _name(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"

    def const(self, arr: np.ndarray, p: str = "w") -> str:
        from onnx import numpy_helper  # noqa: PLC0415

        name = self._name(p)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(self, op: str, inputs: list[str], p: str | None = None, **attrs: Any) -> str:
        from onnx import helper  # noqa: PLC0415

        out = self._name(p or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def weight(self, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return (self.rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(np.float32)

    def conv(
        self, x: str, cin: int, cout: int, k: int, s: int = 1, groups: int = 1, act: str | None = None
    ) -> str:
        w = self.const(self.weight((cout, cin // groups, k, k), (cin // groups) * k * k))
        b = self.const((self.rng.standard_normal(cout) * 0.01).astype(np.float32), "b")
        pad = (k - 1) // 2
        y = self.node("Conv", [x, w, b], kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4, group=groups)
        if act == "relu":
            y = self.node("Relu", [y])
        elif act == "relu6":
            y = self.node(
                "Clip",
                [y, self.const(np.array(0.0, np.float32), "lo"), self.const(np.array(6.0, np.float32), "hi")],
            )
        return y

    def linear(self, x: str, k: int, n: int) -> str:
        w = self.const(self.weight((k, n), k) * np.float32(0.5))
        b = self.const((self.rng.standard_normal(n) * 0.01).astype(np.float32), "b")
        return self.node("Add", [self.node("MatMul", [x, w]), b])

    def model(self, inputs: list[tuple[str, list[int]]], outputs: list[str]) -> bytes:
        from onnx import TensorProto, helper  # noqa: PLC0415

        graph = helper.make_graph(
            self.nodes,
            "bench",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
            self.inits,
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        return m.SerializeToString()


# ------------------------------------------------------------------------------------------ models
# MobileNetV2's inverted residual stages (width 1.0): expansion t, channels c, blocks n, stride s
MOBILENET_V2_BLOCKS = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def mobilenet_v2() -> tuple[bytes, dict[str, np.ndarray]]:
    b = Builder(1)
    x = b.conv("input", 3, 32, 3, 2, act="relu6")
    cin = 32
    for t, c, n, s in MOBILENET_V2_BLOCKS:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else b.conv(x, cin, hidden, 1, act="relu6")
            y = b.conv(y, hidden, hidden, 3, stride, groups=hidden, act="relu6")
            y = b.conv(y, hidden, c, 1)
            x = b.node("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    x = b.conv(x, cin, 1280, 1, act="relu6")
    x = b.node("GlobalAveragePool", [x])
    x = b.node("Flatten", [x], axis=1)
    x = b.linear(x, 1280, 1000)
    feeds = {"input": np.random.default_rng(7).standard_normal((1, 3, 224, 224), np.float32)}
    return b.model([("input", [1, 3, 224, 224])], [x]), feeds


def _resnet(seed: int, stage_blocks: list[int], bottleneck: bool, feed_seed: int) -> tuple[bytes, dict]:
    """A torchvision-shaped ResNet (batch norm folded): bottleneck blocks (ResNet-50) or basic ones (-18)."""
    b = Builder(seed)
    x = b.conv("input", 3, 64, 7, 2, act="relu")
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for (width, stride), blocks in zip([(64, 1), (128, 2), (256, 2), (512, 2)], stage_blocks):
        for i in range(blocks):
            s = stride if i == 0 else 1
            if bottleneck:
                cout = width * 4
                y = b.conv(x, cin, width, 1, act="relu")
                y = b.conv(y, width, width, 3, s, act="relu")
                y = b.conv(y, width, cout, 1)
            else:
                cout = width
                y = b.conv(x, cin, width, 3, s, act="relu")
                y = b.conv(y, width, width, 3)
            short = b.conv(x, cin, cout, 1, s) if s != 1 or cin != cout else x
            x = b.node("Relu", [b.node("Add", [y, short])])
            cin = cout
    x = b.node("GlobalAveragePool", [x])
    x = b.node("Flatten", [x], axis=1)
    x = b.linear(x, cin, 1000)
    feeds = {"input": np.random.default_rng(feed_seed).standard_normal((1, 3, 224, 224), np.float32)}
    return b.model([("input", [1, 3, 224, 224])], [x]), feeds


def resnet50() -> tuple[bytes, dict[str, np.ndarray]]:
    return _resnet(2, [3, 4, 6, 3], bottleneck=True, feed_seed=8)


def resnet18() -> tuple[bytes, dict[str, np.ndarray]]:
    """Used by `bench pte` (and the ExecuTorch round-trip test)."""
    return _resnet(4, [2, 2, 2, 2], bottleneck=False, feed_seed=10)


def minilm(
    layers: int = 6, seq: int = 128, hidden: int = 384, heads: int = 12, ffn: int = 1536
) -> tuple[bytes, dict[str, np.ndarray]]:
    """A BERT-style post-LN encoder on precomputed embeddings [1, seq, hidden] (MiniLM-L6-H384 sizes)."""
    b = Builder(3)
    dh = hidden // heads

    def shape(*dims: int) -> str:
        return b.const(np.array(dims, np.int64), "shape")

    def layer_norm(x: str) -> str:
        g = b.const((1 + 0.1 * b.rng.standard_normal(hidden)).astype(np.float32), "g")
        be = b.const((0.1 * b.rng.standard_normal(hidden)).astype(np.float32), "beta")
        return b.node("LayerNormalization", [x, g, be], axis=-1, epsilon=1e-12)

    def heads_of(x: str) -> str:  # [1, S, H] -> [1, heads, S, dh]
        return b.node("Transpose", [b.node("Reshape", [x, shape(1, seq, heads, dh)])], perm=[0, 2, 1, 3])

    x = "input"
    for _ in range(layers):
        q, k, v = (heads_of(b.linear(x, hidden, hidden)) for _ in range(3))
        kt = b.node("Transpose", [k], perm=[0, 1, 3, 2])
        scale = b.const(np.array(1 / math.sqrt(dh), np.float32), "s")
        scores = b.node("Mul", [b.node("MatMul", [q, kt]), scale])
        ctx = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), v])
        ctx = b.node("Reshape", [b.node("Transpose", [ctx], perm=[0, 2, 1, 3]), shape(1, seq, hidden)])
        x = layer_norm(b.node("Add", [x, b.linear(ctx, hidden, hidden)]))
        h = b.linear(x, hidden, ffn)
        # gelu as exported by PyTorch (erf form): x * 0.5 * (1 + erf(x / sqrt 2))
        e = b.node("Erf", [b.node("Div", [h, b.const(np.array(math.sqrt(2), np.float32), "r2")])])
        h = b.node(
            "Mul",
            [
                b.node("Mul", [h, b.node("Add", [e, b.const(np.array(1, np.float32), "one")])]),
                b.const(np.array(0.5, np.float32), "half"),
            ],
        )
        x = layer_norm(b.node("Add", [x, b.linear(h, ffn, hidden)]))
    feeds = {"input": np.random.default_rng(9).standard_normal((1, seq, hidden), np.float32)}
    return b.model([("input", [1, seq, hidden])], [x]), feeds


# quantized models: the fp32 ones through onnxruntime's quantize_static (QDQ, per-channel s8 weights, u8
# activations: the usual recipe), calibrated on a fixed seeded set; kept in bench/out/int8-cache/ under the
# hash of the fp32 model, since calibrating ResNet-50 takes a while
INT8_CACHE = pathlib.Path(__file__).resolve().parent / "out" / "int8-cache"
CALIBRATION_INPUTS = 8


class _Calibration:
    """onnxruntime.quantization's CalibrationDataReader over seeded normal inputs."""

    def __init__(self, feeds: dict[str, np.ndarray]) -> None:
        rng = np.random.default_rng(1234)
        self.it = iter(
            [
                {k: rng.standard_normal(v.shape).astype(v.dtype) for k, v in feeds.items()}
                for _ in range(CALIBRATION_INPUTS)
            ]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.it, None)


def _int8_cached(
    stem: str, model: bytes, quantize: Callable[[pathlib.Path, pathlib.Path], None], digits: int = 16
) -> bytes:
    """The int8 model `quantize(fp32_path, int8_path)` makes of `model`, cached in INT8_CACHE under `stem` and
    the fp32 bytes' sha256 (quantizing takes seconds to minutes). `digits` of the hash name the file (12 for
    the dynamic minilm, whose cached files predate this helper). Made in a scratch folder next to the cache
    and moved in whole, so an interrupted run leaves no half file."""
    path = INT8_CACHE / f"{stem}-{hashlib.sha256(model).hexdigest()[:digits]}.onnx"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            src, dst = pathlib.Path(tmp) / "fp32.onnx", pathlib.Path(tmp) / "int8.onnx"
            src.write_bytes(model)
            quantize(src, dst)
            dst.replace(path)
    return path.read_bytes()


def quantized(name: str, make: Callable[[], tuple[bytes, dict[str, np.ndarray]]]) -> Callable[[], Any]:
    """`make`'s model through onnxruntime's `quantize_static` (QDQ, per-channel int8 weights, uint8
    activations calibrated on seeded normal inputs), cached."""

    def build() -> tuple[bytes, dict[str, np.ndarray]]:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static  # noqa: PLC0415

        model, feeds = make()

        def run(src: pathlib.Path, dst: pathlib.Path) -> None:
            quantize_static(
                str(src),
                str(dst),
                _Calibration(feeds),
                quant_format=QuantFormat.QDQ,
                per_channel=True,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
            )

        return _int8_cached(name, model, run), feeds

    return build


def minilm_int8_dynamic() -> tuple[bytes, dict[str, np.ndarray]]:
    """`minilm` through onnxruntime's `quantize_dynamic` (int8 per-tensor weights, the default):
    DynamicQuantizeLinear + MatMulInteger on every linear layer, cached."""
    from onnxruntime.quantization import quantize_dynamic  # noqa: PLC0415

    model, feeds = minilm()
    return _int8_cached("minilm-int8dyn", model, quantize_dynamic, digits=12), feeds


MODELS: dict[str, Callable[[], tuple[bytes, dict[str, np.ndarray]]]] = {
    "mobilenetv2": mobilenet_v2,
    "resnet50": resnet50,
    "minilm": minilm,
    # int8 rows: the same models quantized, onnxruntime's int8 beside webxnn's on the same file
    "mobilenetv2-int8": quantized("mobilenetv2", mobilenet_v2),
    "resnet50-int8": quantized("resnet50", resnet50),
    "minilm-int8dyn": minilm_int8_dynamic,
}


# ------------------------------------------------------------------------------------------ webxnn side
def _missing_ops(model_bytes: bytes, err: Exception) -> str:
    """The ONNX op types of the model the importer does not know (or the error text if all are known)."""
    try:
        import onnx  # noqa: PLC0415

        from webxnn.onnx import supported_ops  # noqa: PLC0415

        ops = sorted({n.op_type for n in onnx.load_from_string(model_bytes).graph.node})
        missing = [o for o in ops if o not in set(supported_ops())]
        if missing:
            return "missing ONNX ops: " + ", ".join(missing)
    except Exception:  # noqa: BLE001 - best effort diagnostics only
        pass
    return f"{type(err).__name__}: {err}"


def webxnn_compile(model_bytes: bytes) -> bytes:
    import onnx  # noqa: PLC0415

    import webxnn  # noqa: PLC0415

    graph = webxnn.from_onnx(onnx.load_from_string(model_bytes))
    return webxnn.compile(graph)


# ------------------------------------------------------------------------------------------ driver
def run(
    names: list[str], threads_list: list[int], repeat: int, show_progress: bool, rounds: int = 3
) -> dict[str, Any]:
    import webxnn  # noqa: PLC0415

    ort = onnxruntime_or_none()
    results: list[dict[str, Any]] = []
    # At the start and after each model's thread count: another tenant shows in the peaks or the copies. The
    # peaks are sampled on the vectors the Programs' kernels use (zmm on avx512vnni): on the Xeon VM a
    # neighbour on the second vCPU's core has halved its zmm throughput while its ymm peak read 2x.
    peaks, copies = [fma_peaks(threads_list)], [copy_bandwidth()]
    for name in progress(names, "models", show_progress):
        model, feeds = MODELS[name]()
        entry: dict[str, Any] = {"model": name, "onnx_bytes": len(model), "runs": []}
        blob = None
        try:
            t0 = time.perf_counter()
            blob = webxnn_compile(model)
            entry["compile_ms"] = (time.perf_counter() - t0) * 1e3
        except Exception as e:  # noqa: BLE001 - reported, the other models still run
            entry["error"] = _missing_ops(model, e)
        ref = None
        programs: dict[int, Any] = {}
        # int8 models: also against what the Q/DQ graph means (onnxruntime unoptimized: fp32 between the Q/DQ
        # nodes, no int8 kernel); onnxruntime's AVX2 int8 kernel lets vpmaddubsw saturate, webxnn's is exact.
        qdq_ref = None
        if ort is not None and "int8" in name:
            qdq_ref = ort_session(model, 1, optimize=False).run(None, feeds)[0]
        for t in threads_list:
            run_: dict[str, Any] = {"threads": t}
            calls: dict[str, Callable[[], Any]] = {}
            if ort is not None:
                sess = ort_session(model, t)
                calls["ort_ms"] = lambda s=sess, f=feeds: s.run(None, f)
                ref = sess.run(None, feeds)[0]
            if blob is not None:
                try:
                    t0 = time.perf_counter()
                    prog = webxnn.load(blob, threads=t)
                    run_["load_ms"] = (time.perf_counter() - t0) * 1e3
                    y = next(iter(prog.run(feeds).values()))
                    if ref is not None:
                        run_["max_abs_diff_vs_ort"] = float(np.max(np.abs(y.reshape(ref.shape) - ref)))
                        run_["diff_pct_vs_ort"] = _pct_of_range(y, ref)
                    if qdq_ref is not None:
                        run_["diff_pct_vs_qdq_fp32"] = _pct_of_range(y, qdq_ref)
                        run_["ort_diff_pct_vs_qdq_fp32"] = _pct_of_range(ref, qdq_ref)
                    calls["webxnn_ms"] = lambda p=prog, f=feeds: p.run(f)
                    programs[t] = prog
                    run_["kernels"] = prog.kernels
                except Exception as e:  # noqa: BLE001
                    entry["error"] = f"{type(e).__name__}: {e}"
            run_.update(best_of_rounds(calls, repeat, rounds))
            if run_.get("webxnn_ms") and run_.get("ort_ms"):
                run_["ratio"] = run_["webxnn_ms"] / run_["ort_ms"]
            entry["runs"].append(run_)
            peaks.append(fma_peaks(threads_list))
            copies.append(copy_bandwidth())
        by_t = {r["threads"]: r for r in entry["runs"]}
        if 1 in by_t and 2 in by_t:
            for key in ("webxnn_ms", "ort_ms"):
                if by_t[1].get(key) and by_t[2].get(key):
                    entry[f"{key.split('_')[0]}_speedup_2t"] = by_t[1][key] / by_t[2][key]
        if 1 in programs and 2 in programs:
            entry["webxnn_speedup_2t_paired"] = paired_speedup(
                programs[1], programs[2], feeds, repeat, rounds
            )
        results.append(entry)
    return {
        "cpu": webxnn.cpu_info(),
        "models": results,
        "peak_gflops": [{str(t): p for t, p in s.items()} for s in peaks],
        "copy_gbs": copies,
        "warning": contention_warning(peaks, copies),
    }


def paired_speedup(one: Any, two: Any, feeds: dict[str, np.ndarray], repeat: int, rounds: int) -> float:
    """webxnn's 2-thread speed-up from blocks of the two Programs back to back: the median over 2 x `rounds`
    rounds of (1-thread block median) / (2-thread block median). The columns' figures come from blocks minutes
    apart, in which a shared host's second vCPU may be free for one and taken for the other; two neighbouring
    blocks share its state. It includes the 2-thread Program's run-mode choice (Program.run_modes): where the
    second vCPU is taken, its runs go to the caller alone and the figure falls toward 1. (onnxruntime gets no
    such figure: its 2-thread workers spin on after a run, into the 1-thread block that follows.)"""
    per = alternating_blocks(
        {t: (lambda p=p: block_ms(lambda: p.run(feeds), repeat)) for t, p in ((1, one), (2, two))}, 2 * rounds
    )
    return paired_ratio(per[1], per[2])


def _pct_of_range(y: np.ndarray, ref: np.ndarray) -> float:
    """Max |y - ref| in % of ref's range (the issue's accuracy measure for int8 models)."""
    span = float(np.max(ref) - np.min(ref)) or 1.0
    return 100.0 * float(np.max(np.abs(y.reshape(ref.shape) - ref))) / span


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| model | thr | webxnn ms | ORT ms | webxnn/ORT | load ms | max abs diff (% range) "
        "| % range vs Q/DQ in fp32: webxnn / ORT | 2T speed-up (webxnn / ORT) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for e in result["models"]:
        for r in e["runs"]:
            su = ""
            qdq = ""
            if r.get("diff_pct_vs_qdq_fp32") is not None:
                qdq = f"{r['diff_pct_vs_qdq_fp32']:.2f} / {_f(r.get('ort_diff_pct_vs_qdq_fp32'), '.2f')} %"
            if r["threads"] == 2:
                paired = e.get("webxnn_speedup_2t_paired")
                su = f"{_f(e.get('webxnn_speedup_2t'), '.2f')} / {_f(e.get('ort_speedup_2t'), '.2f')}"
                su += f" (webxnn paired {paired:.2f})" if paired else ""
            lines.append(
                f"| {e['model']} | {r['threads']} | {_f(r.get('webxnn_ms'), '.2f')} | "
                f"{_f(r.get('ort_ms'), '.2f')} | {_f(r.get('ratio'), '.2f')} "
                f"| {_f(r.get('load_ms'), '.1f')} "
                f"| {_f(r.get('max_abs_diff_vs_ort'), '.2g')} ({_f(r.get('diff_pct_vs_ort'), '.2f')} %) "
                f"| {qdq} | {su} |"
            )
        if e.get("error"):
            notes.append(f"- {e['model']}: {e['error']}")
    if result.get("warning"):
        notes.append(result["warning"])
    return "\n".join(lines + ([""] + notes if notes else []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench models",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=positive_int, default=10, help="calls per round")
    parser.add_argument(
        "--rounds", type=positive_int, default=3, help="alternating rounds; the best round's median counts"
    )
    parser.add_argument(
        "--json",
        type=pathlib.Path,
        default=None,
        help="where the JSON goes (default: bench/out/models.json for a run of every model "
        "at 1 and 2 threads, else bench/out/models-partial.json)",
    )
    parser.add_argument(
        "--save-onnx", type=pathlib.Path, default=None, help="also write the ONNX models here"
    )
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--contended", action="store_true", help="run the contended suite instead (python -m bench contended)"
    )
    args, rest = parser.parse_known_args(argv)
    if args.contended:
        from bench.contended import main as contended_main  # noqa: PLC0415

        return contended_main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        import onnx  # noqa: F401, PLC0415
    except ImportError:
        print("the models suite needs the `onnx` package (pip install onnx)")
        return 1
    if args.save_onnx:
        args.save_onnx.mkdir(parents=True, exist_ok=True)
        for n in args.models:
            (args.save_onnx / f"{n}.onnx").write_bytes(MODELS[n]()[0])
    result = run(args.models, args.threads, args.repeat, not args.no_progress, args.rounds)
    print(markdown(result))
    path = args.json or default_json_path(args.models, args.threads)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"\nJSON: {path}")
    return 0


def default_json_path(models: list[str], threads: list[int]) -> pathlib.Path:
    """The JSON's default place: the full suite is every model at 1 and 2 threads (see result_path)."""
    return result_path("models", sorted(models) == sorted(MODELS) and sorted(threads) == [1, 2], "json")
