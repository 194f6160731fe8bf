"""Where a model's time goes, step by step, against onnxruntime on the same ONNX graph.

`python -m bench layers [--model mobilenetv2] [--threads 1] [--repeat 20] [--top 12]`

webxnn's per-step profile (`Program.profile`, the minimum over a few rounds of its per-step medians) and
onnxruntime's node profile (`enable_profiling`, the minimum per node after a warm-up) are matched through the
ONNX graph: every webxnn step starts at the ONNX node its source names (an expand conv run inside the
depthwise step that reads it counts from the expand conv), and every ORT node is charged to the last step that
starts at or before it. ORT fuses differently (Conv + Clip into one node named after the Clip, a layout
reorder before the first conv), and nodes it creates under new names (`/MatMulAddFusion`, `ReorderOutput`)
match no step by name. Those of an op type with a webxnn counterpart (Gemm, MatMul: a fully connected
step) then pair in order with the steps of that kind that took nothing, when there are as many of each
(MobileNetV2's classifier); the rest are listed apart, by ORT op type. ORT renames most nodes of transformer
graphs, so there the op-type list is the comparison. Single rows can pair a little differently; the kind
totals and the big differences are what to read. Printed: the totals, the time per webxnn step kind on each
side, the unmatched ORT nodes, and the steps where webxnn loses and wins most.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import re
import tempfile
from typing import Any

import numpy as np

from bench.common import onnxruntime_or_none, ort_session, positive_int
from bench.models import MODELS, webxnn_compile


def ort_node_ms(
    model_bytes: bytes, feeds: dict[str, np.ndarray], threads: int, repeat: int
) -> list[tuple[str, str, float]]:
    """(ORT node name with the layout suffixes `_nchwc`, `_token_N` stripped, op type, kernel ms) per node
    of ORT's optimised graph, the minimum over `repeat` runs after 5 warm-up runs."""
    with tempfile.TemporaryDirectory() as tmp:
        sess = ort_session(model_bytes, threads, profile_prefix=os.path.join(tmp, "ort"))
        for _ in range(5 + repeat):
            sess.run(None, feeds)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    per: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = re.sub(r"(_nchwc)?(_token_\d+)?$", "", e["name"][: -len("_kernel_time")])
            per[(name, e["args"].get("op_name", "?"), e["args"].get("node_index", ""))].append(e["dur"])
    return [(name, op, min(d[5:] or d) / 1e3) for (name, op, _), d in per.items()]


def webxnn_steps(
    blob: bytes, feeds: dict[str, np.ndarray], threads: int, repeat: int
) -> list[dict[str, Any]]:
    """webxnn's profile rows, `ms` the minimum over 3 rounds of each step's median."""
    import webxnn  # noqa: PLC0415

    prog = webxnn.load(blob, threads=threads)
    rounds = [prog.profile(feeds, repeat=repeat) for _ in range(3)]
    return [dict(r, ms=min(x[i]["ms"] for x in rounds)) for i, r in enumerate(rounds[0])]


def _layout_glue(step: dict[str, Any]) -> bool:
    """A transpose the lowering added around a layout-sensitive op (its source is that op, not a transpose):
    it has no ONNX node of its own."""
    return step["kind"] == "XNNStaticTranspose" and not (step["source"] or "").endswith(":transpose")


# ORT op types whose renamed nodes (fusions) pair with webxnn steps of one kind when their counts agree.
_STEP_KIND_OF_OP = {"Gemm": "XNNFullyConnected", "MatMul": "XNNFullyConnected"}


def match(
    model_bytes: bytes, steps: list[dict[str, Any]], ort_nodes: list[tuple[str, str, float]]
) -> tuple[list[float], dict[str, list[float]]]:
    """ORT time charged to each step, and the ORT nodes no step could take (names not in the ONNX graph, or
    nodes before the first step) as [count, ms] per ORT op type."""
    import onnx  # noqa: PLC0415

    nodes = onnx.load_from_string(model_bytes).graph.node
    index = {n.output[0]: i for i, n in enumerate(nodes)}
    index.update({n.name: i for i, n in enumerate(nodes) if n.name})
    starts = [-1 if _layout_glue(s) else index.get((s["source"] or "").split(":")[0], -1) for s in steps]
    taken = set(starts)
    for i, s in enumerate(steps):
        if starts[i] >= 0 and any(f < s["node"] for f in s["fused"]):
            # Convs computed inside this step (a block's expand and depthwise, no steps of their own): start
            # from the earliest Conv up the input chain before the first one another step starts at.
            j = index.get(nodes[starts[i]].input[0], -1)
            while j >= 0 and j not in taken:
                if nodes[j].op_type == "Conv":
                    starts[i] = j
                j = index.get(nodes[j].input[0], -1) if nodes[j].input else -1
    order = sorted((k, i) for i, k in enumerate(starts) if k >= 0)
    keys = [k for k, _ in order]
    charged = [0.0] * len(steps)
    leftover: list[tuple[str, float]] = []
    for name, op, ms in ort_nodes:
        j = index.get(name)
        p = bisect.bisect_right(keys, j) - 1 if j is not None else -1
        if p < 0:
            leftover.append((op, ms))
        else:
            charged[order[p][1]] += ms
    for op, kind in _STEP_KIND_OF_OP.items():
        idle = [i for i, s in enumerate(steps) if s["kind"] == kind and charged[i] == 0.0]
        times = [ms for o, ms in leftover if o == op]
        if idle and len(idle) == len(times):
            for i, ms in zip(idle, times, strict=True):
                charged[i] = ms
            leftover = [(o, ms) for o, ms in leftover if o != op]
    unmatched: dict[str, list[float]] = {}
    for op, ms in leftover:
        u = unmatched.setdefault(op, [0, 0.0])
        u[0] += 1
        u[1] += ms
    return charged, unmatched


def _kind(step: dict[str, Any]) -> str:
    return step["kind"].removeprefix("XNN") + (" + fused" if step["fused"] else "")


def report(
    model: str,
    threads: int,
    steps: list[dict[str, Any]],
    charged: list[float],
    unmatched: dict[str, list[float]],
    top: int,
) -> str:
    wx, ort = sum(s["ms"] for s in steps), sum(charged) + sum(ms for _, ms in unmatched.values())
    lines = [
        f"{model}, {threads} thread(s): webxnn {wx:.3f} ms (sum of steps), onnxruntime {ort:.3f} ms "
        f"(sum of nodes), ratio {wx / ort:.3f}",
        "",
    ]
    if unmatched:
        by_time = sorted(unmatched.items(), key=lambda kv: -kv[1][1])
        lines += [
            "ORT nodes matched to no step, by ORT op type: "
            + ", ".join(f"{op} x{n:.0f} {ms:.3f} ms" for op, (n, ms) in by_time),
            "",
        ]
    lines += ["| webxnn step kind | steps | webxnn ms | ORT ms | difference |", "|---|---:|---:|---:|---:|"]
    kinds: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for s, o in zip(steps, charged, strict=True):
        k = kinds[_kind(s)]
        k[0] += 1
        k[1] += s["ms"]
        k[2] += o
    for name, (n, a, b) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"| {name} | {n} | {a:.3f} | {b:.3f} | {a - b:+.3f} |")
    rows = sorted(range(len(steps)), key=lambda i: steps[i]["ms"] - charged[i])
    for title, pick in (("loses most", rows[::-1][:top]), ("wins most", rows[:top])):
        lines += [
            "",
            f"Steps where webxnn {title}:",
            "",
            "| step | kind | source | output shape | webxnn ms | ORT ms | difference |",
            "|---:|---|---|---|---:|---:|---:|",
        ]
        for i in pick:
            s = steps[i]
            lines.append(
                f"| {i} | {_kind(s)} | "
                f"{s['source']} | {tuple(s['shape'])} | {s['ms']:.3f} | {charged[i]:.3f} | "
                f"{s['ms'] - charged[i]:+.3f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench layers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", default="mobilenetv2", choices=list(MODELS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=positive_int, default=20, help="runs per profile")
    parser.add_argument("--top", type=int, default=12, help="steps listed per direction")
    args = parser.parse_args(argv)
    if onnxruntime_or_none() is None:
        print("the layers suite needs onnxruntime (pip install onnxruntime)")
        return 1
    model_bytes, feeds = MODELS[args.model]()
    steps = webxnn_steps(webxnn_compile(model_bytes), feeds, args.threads, args.repeat)
    charged, unmatched = match(model_bytes, steps, ort_node_ms(model_bytes, feeds, args.threads, args.repeat))
    print(report(args.model, args.threads, steps, charged, unmatched, args.top))
    return 0
