"""Real-world PyTorch models exported to ONNX and checked end to end through webxnn (issue 6).

    python tools/torch_models.py export --out DIR        # DIR/<model>.onnx (opset 17) + seeded inputs
    python tools/torch_models.py check DIR               # import, compile, run vs onnxruntime: a table
    python tools/torch_models.py mem DIR/resnet50.onnx   # peak memory of import + compile (own process)

The architectures are written here from their papers (torchvision and transformers are not usable with
the torch on this machine): MobileNetV2 (inverted residuals, ReLU6, BN), ResNet-18/50 (basic and
bottleneck blocks) and a MiniLM-L6-shaped BERT encoder (token-type + position embeddings, additive
attention mask, post-LN, erf GELU). Weights are random but seeded, and BN statistics are randomized too
so batch-norm folding is really exercised. `check` needs only onnx + onnxruntime + webxnn, not torch.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# ----------------------------------------------------------------------------------------------- models
# torch is imported lazily so `check` and `mem` run without it.


def _nn() -> Any:
    import torch.nn as nn

    return nn


def _make_divisible(v: float, divisor: int = 8) -> int:
    """Round channel counts to a multiple of 8, never dropping more than 10% (the MobileNet rule)."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: str | None = "relu6") -> Any:
    nn = _nn()
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act == "relu6":
        layers.append(nn.ReLU6(inplace=True))
    elif act == "relu":
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


def mobilenet_v2(width: float = 1.0, num_classes: int = 1000) -> Any:
    """MobileNetV2 (Sandler et al. 2018): a 3x3 stem, 17 inverted residual blocks, a 1x1 head to 1280."""
    import torch.nn as nn

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            layers: list[Any] = []
            if expand != 1:
                layers.append(_conv_bn(cin, hidden, 1))
            layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden),  # depthwise
                       _conv_bn(hidden, cout, 1, act=None)]  # linear bottleneck: no activation
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNetV2(nn.Module):
        # (expansion t, channels c, repeats n, first stride s) per stage, from the paper's Table 2
        SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                    (6, 160, 3, 2), (6, 320, 1, 1)]

        def __init__(self) -> None:
            super().__init__()
            cin = _make_divisible(32 * width)
            last = _make_divisible(1280 * max(1.0, width))
            blocks: list[Any] = [_conv_bn(3, cin, 3, 2)]
            for t, c, n, s in self.SETTINGS:
                cout = _make_divisible(c * width)
                for i in range(n):
                    blocks.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                    cin = cout
            blocks.append(_conv_bn(cin, last, 1))
            self.features = nn.Sequential(*blocks)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

        def forward(self, x: Any) -> Any:
            x = self.features(x)
            x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.classifier(x)

    return MobileNetV2()


def resnet(depth: int = 18, width: int = 64, num_classes: int = 1000) -> Any:
    """ResNet (He et al. 2015): 7x7 stem + max pool, four stages of basic (18/34) or bottleneck (50+)
    blocks with projection shortcuts where the shape changes, global average pool, fc."""
    import torch.nn as nn

    class Basic(nn.Module):
        expansion = 1

        def __init__(self, cin: int, planes: int, stride: int) -> None:
            super().__init__()
            self.a = _conv_bn(cin, planes, 3, stride, act="relu")
            self.b = _conv_bn(planes, planes, 3, act=None)
            self.short = (_conv_bn(cin, planes, 1, stride, act=None) if stride != 1 or cin != planes
                          else nn.Identity())

        def forward(self, x: Any) -> Any:
            return nn.functional.relu(self.b(self.a(x)) + self.short(x))

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin: int, planes: int, stride: int) -> None:
            super().__init__()
            out = planes * 4
            # stride on the 3x3 conv ("ResNet v1.5"), as most exported ResNet-50s have it
            self.a = _conv_bn(cin, planes, 1, act="relu")
            self.b = _conv_bn(planes, planes, 3, stride, act="relu")
            self.c = _conv_bn(planes, out, 1, act=None)
            self.short = (_conv_bn(cin, out, 1, stride, act=None) if stride != 1 or cin != out
                          else nn.Identity())

        def forward(self, x: Any) -> Any:
            return nn.functional.relu(self.c(self.b(self.a(x))) + self.short(x))

    block, counts = {18: (Basic, [2, 2, 2, 2]), 34: (Basic, [3, 4, 6, 3]),
                     50: (Bottleneck, [3, 4, 6, 3])}[depth]

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(_conv_bn(3, width, 7, 2, act="relu"), nn.MaxPool2d(3, 2, 1))
            layers: list[Any] = []
            cin = width
            for i, n in enumerate(counts):
                planes = width * 2 ** i
                for j in range(n):
                    layers.append(block(cin, planes, 2 if (j == 0 and i > 0) else 1))
                    cin = planes * block.expansion
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x: Any) -> Any:
            x = self.layers(self.stem(x))
            return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))

    return ResNet()


def bert_encoder(layers: int = 6, hidden: int = 384, heads: int = 12, intermediate: int = 1536,
                 vocab: int = 30522, max_pos: int = 512, type_vocab: int = 2) -> Any:
    """A BERT encoder shaped like MiniLM-L6 (Devlin et al. 2018; Wang et al. 2020): word + position +
    token-type embeddings, LayerNorm, then post-LN transformer layers with erf GELU. Inputs input_ids,
    attention_mask and token_type_ids (int64 [B, S]); output the last hidden state [B, S, hidden]."""
    import torch
    import torch.nn as nn

    head_dim = hidden // heads

    class SelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
            self.out = nn.Linear(hidden, hidden)
            self.norm = nn.LayerNorm(hidden, eps=1e-12)

        def split(self, t: Any) -> Any:
            b, s, _ = t.shape
            return t.view(b, s, heads, head_dim).transpose(1, 2)  # [B, H, S, D]

        def forward(self, x: Any, bias: Any) -> Any:
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim) + bias
            ctx = torch.matmul(scores.softmax(-1), v).transpose(1, 2)
            ctx = ctx.reshape(ctx.shape[0], ctx.shape[1], hidden)
            return self.norm(x + self.out(ctx))

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = SelfAttention()
            self.up = nn.Linear(hidden, intermediate)
            self.down = nn.Linear(intermediate, hidden)
            self.norm = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x: Any, bias: Any) -> Any:
            x = self.attn(x, bias)
            return self.norm(x + self.down(nn.functional.gelu(self.up(x))))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(max_pos, hidden)
            self.token_type = nn.Embedding(type_vocab, hidden)
            self.norm = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            b, s = input_ids.shape
            pos = torch.arange(s, dtype=torch.long, device=input_ids.device).unsqueeze(0).expand(b, s)
            x = self.norm(self.word(input_ids) + self.pos(pos) + self.token_type(token_type_ids))
            # padded keys get the most negative float added to their scores (Equal/Where/Expand in ONNX)
            keep = attention_mask[:, None, None, :].expand(b, 1, s, s)
            bias = torch.where(keep == 0, torch.tensor(torch.finfo(torch.float32).min),
                               torch.tensor(0.0))
            for layer in self.layers:
                x = layer(x, bias)
            return x

    return Encoder()


def _randomize_bn(model: Any) -> None:
    """Fresh BatchNorm layers are the identity; give them seeded non-trivial statistics and affine terms."""
    import torch

    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)


# ------------------------------------------------------------------------------------------ the model set

IMAGE = "image"


def image_inputs(size: int = 224) -> dict[str, np.ndarray]:
    return {"input": np.random.default_rng(7).standard_normal((1, 3, size, size)).astype(np.float32)}


def text_inputs(seq: int = 128, vocab: int = 30522, pad: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    ids = rng.integers(0, vocab, (1, seq), dtype=np.int64)
    mask = np.ones((1, seq), np.int64)
    if pad:
        mask[:, seq - pad:] = 0
    types = np.zeros((1, seq), np.int64)
    types[:, seq // 2:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


# name -> (builder, inputs) ; builders take no arguments
SPECS: dict[str, tuple[Callable[[], Any], Callable[[], dict[str, np.ndarray]]]] = {
    "mobilenet_v2": (lambda: mobilenet_v2(), lambda: image_inputs()),
    "resnet18": (lambda: resnet(18), lambda: image_inputs()),
    "resnet50": (lambda: resnet(50), lambda: image_inputs()),
    "minilm_l6": (lambda: bert_encoder(), lambda: text_inputs(pad=28)),
}


def export(model: Any, inputs: dict[str, np.ndarray], path: Path, dynamic: bool = False) -> None:
    """Export `model` (eval mode) to `path` with the classic TorchScript exporter at opset 17. Static
    shapes by default; `dynamic` makes dim 0 of every input "batch" (and dim 1 of 2-D inputs "seq"), so
    the graph carries Shape → Gather → Unsqueeze → Concat → Reshape chains for `override_dims` to fold."""
    import torch

    model.eval()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    axes = None
    if dynamic:
        axes = {k: ({0: "batch", 1: "seq"} if v.ndim == 2 else {0: "batch"}) for k, v in inputs.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, args, str(path), input_names=list(inputs), output_names=["output"],
                          opset_version=17, dynamo=False, do_constant_folding=True, dynamic_axes=axes)


# Tiny versions of the same architectures (same graph structure, small widths) for the test suite.
TINY_SPECS: dict[str, tuple[Callable[[], Any], Callable[[], dict[str, np.ndarray]]]] = {
    "mobilenet_v2": (lambda: mobilenet_v2(width=0.25, num_classes=10), lambda: image_inputs(32)),
    "resnet18": (lambda: resnet(18, width=8, num_classes=10), lambda: image_inputs(32)),
    "resnet50": (lambda: resnet(50, width=4, num_classes=10), lambda: image_inputs(32)),
    "minilm_l6": (lambda: bert_encoder(layers=2, hidden=32, heads=4, intermediate=64, vocab=100, max_pos=32),
                  lambda: text_inputs(seq=16, vocab=100, pad=3)),
}


def build(name: str, seed: int = 0, tiny: bool = False) -> tuple[Any, dict[str, np.ndarray]]:
    """The seeded model `name` (eval mode) and its seeded inputs."""
    import torch

    torch.manual_seed(seed)
    make, inputs = (TINY_SPECS if tiny else SPECS)[name]
    model = make()
    _randomize_bn(model)
    return model.eval(), inputs()


def cmd_export(out: Path, names: list[str]) -> None:
    for name in names:
        model, inputs = build(name)
        path = out / f"{name}.onnx"
        t = time.perf_counter()
        export(model, inputs, path)
        np.savez(out / f"{name}.inputs.npz", **inputs)
        print(f"{path}: {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t:.1f}s", flush=True)


# ------------------------------------------------------------------------------------------------ check

def ort_session(path: Path, threads: int = 1) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def median_ms(fn: Callable[[], Any], n: int = 20) -> float:
    fn()  # warm up
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def check_model(path: Path, inputs: dict[str, np.ndarray], threads: int = 1, reps: int = 20,
                override_dims: dict[str, int] | None = None) -> dict[str, Any]:
    """Import, compile, load and run `path` with webxnn; run onnxruntime on the same inputs; compare.
    `rel_err` is max |webxnn - ORT| over the output's range (max - min of the ORT output). `reps=0` skips
    the timing."""
    import webxnn

    row: dict[str, Any] = {"model": path.stem, "onnx_mb": path.stat().st_size / 1e6}
    t = time.perf_counter()
    g = webxnn.from_onnx(path, override_dims=override_dims)
    row["import_s"] = time.perf_counter() - t
    t = time.perf_counter()
    blob = webxnn.compile(g)
    row["compile_s"] = time.perf_counter() - t
    row["blob_mb"] = len(blob) / 1e6
    prog = webxnn.load(blob, threads=threads)
    feeds = {i.name: inputs[i.name] for i in prog.inputs}
    got = prog.run(feeds)
    sess = ort_session(path, threads)
    want = sess.run(None, inputs)
    names = [o.name for o in sess.get_outputs()]
    err = 0.0
    for name, w in zip(names, want):
        gv = got[name]
        if gv.shape != w.shape:
            raise AssertionError(f"{path.stem} output {name}: shape {gv.shape}, onnxruntime {w.shape}")
        rng = float(np.max(w) - np.min(w)) or 1.0
        err = max(err, float(np.max(np.abs(gv.astype(np.float64) - w.astype(np.float64)))) / rng)
    row["rel_err"] = err
    if reps:
        row["webxnn_ms"] = median_ms(lambda: prog.run(feeds), reps)
        row["ort_ms"] = median_ms(lambda: sess.run(None, inputs), reps)
    return row


def cmd_check(d: Path, names: list[str], threads: int, reps: int) -> int:
    rows = []
    failed = 0
    for name in names:
        path = d / f"{name}.onnx"
        if not path.exists():
            print(f"{path}: missing (run export first)", file=sys.stderr)
            failed += 1
            continue
        inputs = dict(np.load(d / f"{name}.inputs.npz"))
        try:
            row = check_model(path, inputs, threads, reps)
        except Exception as e:  # report every model, then fail
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            failed += 1
            continue
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if row["rel_err"] > 1e-4:
            failed += 1
    print("| model | ONNX MB | import s | compile s | blob MB | max err / range | webxnn ms | ORT ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ok = "" if r["rel_err"] <= 1e-4 else " **FAIL**"
        print(f"| {r['model']} | {r['onnx_mb']:.1f} | {r['import_s']:.2f} | {r['compile_s']:.2f} | "
              f"{r['blob_mb']:.1f} | {r['rel_err']:.1e}{ok} | {r['webxnn_ms']:.1f} | {r['ort_ms']:.1f} |")
    return 1 if failed else 0


# -------------------------------------------------------------------------------------------------- mem

def _rss_kb() -> tuple[int, int]:
    """(private anonymous, file-backed) resident KiB of this process. File-backed pages (a memory-mapped
    model) are shared with the page cache and can be dropped by the OS; anonymous ones are real copies."""
    anon = file = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1])
            elif line.startswith("RssFile:"):
                file = int(line.split()[1])
    return anon, file


class PeakRss:
    """Samples this process's resident set every millisecond: the peak of a phase, not of the process."""

    def __init__(self) -> None:
        self.anon, self.total = 0, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        anon, file = _rss_kb()
        self.anon = max(self.anon, anon)
        self.total = max(self.total, anon + file)

    def _loop(self) -> None:
        while not self._stop.wait(0.001):
            self._sample()

    def __enter__(self) -> PeakRss:
        self._sample()
        self._t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._t.join()
        self._sample()


def mem_child(path: Path, out: Path | None) -> dict[str, Any]:
    """Import + compile `path` in this process, recording RSS at each phase (MiB): `*_anon` is private
    memory, `*_total` adds the file-backed pages of the memory-mapped model."""
    import gc

    import webxnn
    import webxnn.compiler  # noqa: F401  (imports counted in the baseline, not the phases)
    import webxnn.lower  # noqa: F401
    import webxnn.onnx.convert  # noqa: F401
    import webxnn.xnn.writer  # noqa: F401

    mb = 1 / 1024

    def now(key: str) -> None:
        anon, file = _rss_kb()
        res[key + "_anon"], res[key + "_total"] = anon * mb, (anon + file) * mb

    res: dict[str, Any] = {"model": path.name, "onnx_mb": path.stat().st_size / 1e6}
    # tracemalloc sees every Python object and numpy buffer exactly (a sampler thread cannot run while a
    # long C call such as bytes.join holds the GIL); RSS sampling adds what it cannot see.
    tracemalloc.start()
    now("base")
    t = time.perf_counter()
    with PeakRss() as p:
        g = webxnn.from_onnx(path)
    res["import_s"] = time.perf_counter() - t
    res["import_traced_peak"] = tracemalloc.get_traced_memory()[1] * mb / 1024
    res["import_peak_anon"], res["import_peak_total"] = p.anon * mb, p.total * mb
    now("after_import")
    res["weights_mb"] = sum(np.asarray(a).nbytes for a in g.weights.values()) / 2**20
    tracemalloc.reset_peak()
    t = time.perf_counter()
    with PeakRss() as p:
        if out is None:
            blob = webxnn.compile(g)
            res["blob_mb"] = len(blob) / 2**20
        else:
            from webxnn.compiler import compile_graph
            from webxnn.xnn.writer import serialize_to_file

            res["blob_mb"] = serialize_to_file(compile_graph(g), out) / 2**20
            blob = b""
    res["compile_s"] = time.perf_counter() - t
    res["compile_traced_peak"] = tracemalloc.get_traced_memory()[1] * mb / 1024
    res["compile_peak_anon"], res["compile_peak_total"] = p.anon * mb, p.total * mb
    del blob
    gc.collect()
    now("after_compile")
    return res


def cmd_mem(path: Path, to_file: bool) -> int:
    """Run `mem_child` in a fresh interpreter (so earlier work does not pollute the numbers)."""
    args = [sys.executable, __file__, "_mem_child", str(path)]
    if to_file:
        args.append("--to-file")
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        print(r.stdout, r.stderr, file=sys.stderr)
        return r.returncode
    res = json.loads(r.stdout.strip().splitlines()[-1])
    w = res["weights_mb"]

    def delta(key: str) -> str:
        anon = res[key + "_anon"] - res["base_anon"]
        total = res[key + "_total"] - res["base_total"]
        return f"+{anon:.0f} MiB private ({anon / w:.2f}x weights), +{total:.0f} MiB with file pages"

    print(f"{res['model']}: ONNX {res['onnx_mb']:.1f} MB, weights {w:.1f} MiB, "
          f"blob {res['blob_mb']:.1f} MiB{' (streamed to a file)' if to_file else ' (bytes)'}")
    print(f"  baseline {res['base_anon']:.0f} MiB private (python + numpy + onnx + webxnn modules)")
    print(f"  import  {res['import_s']:.2f}s  peak {delta('import_peak')}; "
          f"traced peak {res['import_traced_peak']:.0f} MiB ({res['import_traced_peak'] / w:.2f}x)")
    print(f"          after  {delta('after_import')}")
    print(f"  compile {res['compile_s']:.2f}s  peak {delta('compile_peak')}; "
          f"traced peak {res['compile_traced_peak']:.0f} MiB ({res['compile_traced_peak'] / w:.2f}x)")
    print(f"          after  {delta('after_compile')} (blob freed)")
    return 0


# --------------------------------------------------------------------------------------------------- cli

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="export the models to DIR/<name>.onnx (needs torch)")
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--models", nargs="*", default=list(SPECS), choices=list(SPECS))
    c = sub.add_parser("check", help="import/compile/run each model vs onnxruntime; print a table")
    c.add_argument("dir", type=Path)
    c.add_argument("--models", nargs="*", default=list(SPECS), choices=list(SPECS))
    c.add_argument("--threads", type=int, default=1)
    c.add_argument("--reps", type=int, default=20)
    m = sub.add_parser("mem", help="peak RSS of import + compile of one model, in a fresh process")
    m.add_argument("model", type=Path)
    m.add_argument("--to-file", action="store_true", help="stream the blob to a file instead of bytes")
    mc = sub.add_parser("_mem_child")
    mc.add_argument("model", type=Path)
    mc.add_argument("--to-file", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "export":
        cmd_export(a.out, a.models)
        return 0
    if a.cmd == "check":
        return cmd_check(a.dir, a.models, a.threads, a.reps)
    if a.cmd == "mem":
        return cmd_mem(a.model, a.to_file)
    out = a.model.with_suffix(".xnn") if a.to_file else None
    print(json.dumps(mem_child(a.model, out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
