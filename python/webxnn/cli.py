"""The `webxnn` command line: compile, run, inspect, validate, convert, weights, demo, info.

Every subcommand reports bad input (any WebxnnError, or an OSError such as an output path that is a folder)
as one line `webxnn: error: ...` on stderr and exit status 2, the way argparse reports bad arguments; the
global `--debug` shows the traceback instead. Nothing here holds logic the Python API lacks.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pathlib
import sys
import time
import warnings
from collections.abc import Sequence

import numpy as np

from .errors import FileError, InputError, WebxnnError, WebxnnWarning, WeightsError
from .filekind import HEAD_BYTES, expect_head, require_file, sniff, sniff_bytes


def _count(minimum: int):
    """An argparse type: an integer >= `minimum`, refused by argparse (usage + exit 2) otherwise."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {n}")
        return n

    parse.__name__ = "positive_int" if minimum > 0 else "non_negative_int"
    return parse


positive_int = _count(1)
non_negative_int = _count(0)


def _load_graph(args: argparse.Namespace):
    from .compiler import read_model
    from .onnx.cli import dim_options

    return read_model(args.model, args.weights, args.manifest, **dim_options(args))


def _load_array(path: str, what: str) -> np.ndarray:
    # Read once, then check and parse the bytes: a pipe (`--input x=<(...)`) cannot be read twice.
    try:
        with open(require_file(path), "rb") as f:
            data = f.read()
    except FileError as e:  # say which argument named the file
        raise FileError(e.path, f"{e.reason} ({what})") from None
    except OSError as e:
        raise FileError.from_os_error(path, e) from None
    expect_head(data[:HEAD_BYTES], path, ("npy",), InputError, what=f"a .npy array ({what})")
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{what}: cannot read {path!r}: {e}") from None


def cmd_compile(args: argparse.Namespace) -> int:
    from .compiler import compile_graph
    from .xnn.writer import serialize_to_file

    graph = _load_graph(args)
    fmt = args.format or ("pte" if (args.output or "").lower().endswith(".pte") else "xnn")
    out = args.output or str(pathlib.Path(args.model).with_suffix("." + fmt))
    if os.path.isdir(out):
        raise WebxnnError(f"-o {out}: is a folder; name the .{fmt} file to write")
    if fmt == "pte":  # an ExecuTorch program around the payload
        from .pte.writer import to_pte

        if args.profile == "webxnn":
            raise WebxnnError("--format pte needs --profile executorch (the default for .pte)")
        data = to_pte(graph, inline=args.inline)
        with open(out, "wb") as f:
            f.write(data)
        print(f"wrote {out} ({len(data):,} bytes, ExecuTorch program, XnnpackBackend delegate)")
        return 0
    # streamed: each constant is laid out and written in turn, so the blob is never whole in memory
    size = serialize_to_file(compile_graph(graph, profile=args.profile or "webxnn"), out)
    print(f"wrote {out} ({size:,} bytes)")
    return 0


def split_input_spec(spec: str, names: Sequence[str]) -> tuple[str, str]:
    """(input name, file) of `--input SPEC`. Input names may hold '=' (ONNX names are free text), so the split
    is at the '=' whose left part is one of the model's input `names`; when several are (inputs "a" and
    "a=b"), the reading whose file exists wins. InputError listing the names when none is, or naming the
    readings when it stays ambiguous. (xnnrun splits its --input the same way.)"""
    cuts = [i for i, c in enumerate(spec) if c == "=" and spec[:i] in names]
    if len(cuts) > 1:
        present = [i for i in cuts if os.path.isfile(spec[i + 1 :])]
        cuts = present if len(present) == 1 else cuts
    if len(cuts) == 1:
        return spec[: cuts[0]], spec[cuts[0] + 1 :]
    if cuts:
        readings = " or ".join(f"{spec[:i]!r} from {spec[i + 1 :]!r}" for i in cuts)
        raise InputError(f"--input {spec!r} is ambiguous: input {readings}")
    if "=" not in spec:
        raise InputError(f"--input {spec!r}: expected NAME=FILE.npy; the model's inputs are {list(names)}")
    raise InputError(
        f"--input {spec!r}: no input of the model is named by the part before an '='; "
        f"its inputs are {list(names)}"
    )


def _parse_inputs(specs: Sequence[str], prog) -> dict[str, np.ndarray]:
    feeds: dict[str, np.ndarray] = {}
    names = [i.name for i in prog.inputs]
    for spec in specs:
        name, path = split_input_spec(spec, names)
        feeds[name] = _load_array(path, f"--input {name}")
    return feeds


def _random_inputs(prog, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in prog.inputs:
        dtype = np.dtype(info.dtype)
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(info.shape).astype(dtype)
        else:
            feeds[info.name] = rng.integers(0, 4, size=info.shape).astype(dtype)
    return feeds


def _time_runs(prog, feeds: dict[str, np.ndarray], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        prog.run(feeds)
        times.append(time.perf_counter() - t0)
    return times


def _describe_array(a: np.ndarray) -> str:
    flat = a.reshape(-1)
    head = ", ".join(f"{v:.6g}" for v in flat[:6]) + (", ..." if flat.size > 6 else "")
    return f"{a.dtype}{list(a.shape)} [{head}]"


def cmd_run(args: argparse.Namespace) -> int:
    from .onnx.cli import dim_options
    from .runtime import load

    t0 = time.perf_counter()
    # a graph or ONNX model is compiled in memory first (or found in the compile cache)
    cache = args.cache_dir or args.cache
    prog = load(
        args.model,
        args.threads,
        weights=args.weights,
        manifest=args.manifest,
        cache=cache,
        **dim_options(args),
    )
    load_ms = (time.perf_counter() - t0) * 1e3
    if not args.input and not args.random_inputs and prog.inputs:
        wanted = ", ".join(f"{i.name}: {i.dtype}{list(i.shape)}" for i in prog.inputs)
        raise InputError(
            f"no inputs given; the model takes {wanted}. Pass --input NAME=FILE.npy for each, "
            "or --random-inputs"
        )
    feeds = _random_inputs(prog) if args.random_inputs else _parse_inputs(args.input, prog)
    outputs = prog.run(feeds)
    times = _time_runs(prog, feeds, args.repeat) if args.repeat else []
    print(f"{args.model}: loaded in {load_ms:.2f} ms, threads={prog.threads}")
    for name, arr in outputs.items():
        print(f"  {name}: {_describe_array(arr)}")
    if times:
        print(
            f"latency over {len(times)} runs: median {np.median(times) * 1e3:.3f} ms, "
            f"min {np.min(times) * 1e3:.3f} ms"
        )
    if args.profile:
        from .xnn.describe import node_precisions
        from .xnn.reader import read

        precisions = node_precisions(read(_xnn_bytes(prog.blob(), args.model)))
        _print_profile(prog, feeds, args.profile, precisions)
    if args.output_dir:
        from .atomic import atomic_open

        out_dir = pathlib.Path(args.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, arr in outputs.items():
            with atomic_open(out_dir / f"{_safe_filename(name)}.npy", "wb") as f:
                np.save(f, arr)
        print(f"wrote {len(outputs)} output(s) to {out_dir}/")
    return 0


def _safe_filename(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "output"


def _xnn_bytes(data: bytes, where: str) -> bytes:
    """The `.xnn` blob of `data`: itself, or an ExecuTorch program's XnnpackBackend payload (named data
    resolved), the blob the runtime runs."""
    if sniff_bytes(bytes(data[:256])) == "pte":
        from .pte.reader import payload_for_runtime

        return payload_for_runtime(data, where)
    return data


def cmd_inspect(args: argparse.Namespace) -> int:
    kind = sniff(args.model)
    if kind in ("xnn", "pte"):
        from .xnn.describe import describe, summary_dict
        from .xnn.reader import read

        data = pathlib.Path(args.model).read_bytes()
        program: dict = {}
        if kind == "pte":  # the XnnpackBackend payload it runs, named data resolved
            program = {"pte_bytes": len(data)}
            data = _xnn_bytes(data, args.model)
            program["payload_bytes"] = len(data)
        g = read(data)
        plan = _runtime_plan(data)
        if args.json:
            extra = {"executorch_program": program} if program else {}
            print(json.dumps({**summary_dict(g, blob_size=len(data)), **extra, "runtime": plan}, indent=1))
        else:
            if program:
                print(
                    f"ExecuTorch program ({program['pte_bytes']:,} bytes) running this XnnpackBackend "
                    f"payload ({program['payload_bytes']:,} bytes)"
                )
            print(describe(g, blob_size=len(data)))
            print(_describe_plan(plan))
        return 0
    from .graphinfo import describe_graph

    graph = _load_graph(args)
    print(describe_graph(graph, as_json=args.json))
    return 0


def _runtime_plan(blob: bytes) -> dict:
    """What the runtime makes of a blob: arena and packed-weight bytes, steps, fusions, aliases (or why it
    cannot load it: the description of the blob itself still stands)."""
    from .errors import UnsupportedError
    from .runtime import load

    try:
        prog = load(blob, threads=1)
    except UnsupportedError as e:
        return {"error": str(e)}
    steps = prog.plan()
    return {
        "peak_arena_bytes": prog.peak_arena_bytes,
        "packed_weight_bytes": prog.packed_weight_bytes,
        "steps": sum(1 for s in steps if not s.get("aliased")),
        "fused_nodes": sum(len(s.get("fused", [])) for s in steps),
        "aliased_nodes": sum(1 for s in steps if s.get("aliased")),
    }


def _describe_plan(plan: dict) -> str:
    if "error" in plan:
        return f"runtime plan: this runtime cannot load the blob: {plan['error']}"
    return (
        f"runtime plan: {plan['steps']} steps ({plan['fused_nodes']} nodes fused into their producer, "
        f"{plan['aliased_nodes']} reshapes/copies aliased), arena {plan['peak_arena_bytes']:,} bytes "
        f"per run, packed weights {plan['packed_weight_bytes']:,} bytes"
    )


def _print_profile(prog, feeds: dict[str, np.ndarray], repeat: int, precisions: list[str]) -> None:
    rows = sorted(prog.profile(feeds, repeat=repeat), key=lambda r: -r["ms"])
    total = sum(r["ms"] for r in rows) or 1.0
    print(f"profile (median of {repeat} runs per step, slowest first):")
    for r in rows:
        if r.get("aliased"):
            continue
        fused = f" +{len(r['fused'])} fused" if r.get("fused") else ""
        ahead = f", prefetching node {r['prefetches']}'s weights" if r.get("prefetches") is not None else ""
        # a thread of the pool that was late (its core busy elsewhere) shows as a wait at the step's end
        wait = f", {r['wait_ms']:.3f} ms waiting for threads" if r.get("wait_ms", 0.0) >= 0.001 else ""
        print(
            f"  {r['ms']:8.3f} ms {100 * r['ms'] / total:5.1f}%  node {r['node']:<4} {r['kind']:<26}"
            f"{precisions[r['node']] if r['node'] < len(precisions) else '':<8}"
            f"{list(r['shape'])} {r.get('source') or ''}{fused}{ahead}{wait}"
        )


def cmd_validate(args: argparse.Namespace) -> int:
    from .ops import validate

    graph = _load_graph(args)
    validate(graph)
    external = [n for n, c in graph.consts.items() if c.init.kind == "weights"]
    unresolved = [n for n in external if n not in graph.weights]
    if unresolved and not args.no_weights:
        # the sidecars were neither found nor named (found or named ones were read and checked by the loader):
        # compile would fail, so this graph is not valid as given
        stem = pathlib.Path(args.model).stem
        raise WeightsError(
            f"{args.model}: {len(unresolved)} of {len(graph.consts)} consts use @weights "
            f"({', '.join(unresolved[:3])}{', ...' if len(unresolved) > 3 else ''}) but no "
            f"weights file was found beside it (looked for {stem}.weights and model.weights); "
            "pass --weights and --manifest, or --no-weights to check the graph alone"
        )
    checked = "weights not checked" if unresolved else f"{len(external)} weights checked"
    print(
        f"{args.model}: valid ({len(graph.inputs)} inputs, {len(graph.consts)} consts, "
        f"{len(graph.nodes)} nodes, {len(graph.outputs)} outputs; {checked})"
    )
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    graph = _load_graph(args)
    if args.output and args.to in ("json", "webnn"):  # with the weights the text refers to, beside it
        from .dsl import write_graph

        for path in write_graph(graph, args.output, args.to):
            print(f"wrote {path}")
        return 0
    if args.to == "json":
        text = graph.to_json()
    elif args.to == "webnn":
        text = graph.to_text()
    else:
        from .dsl.emit_js import to_js

        text = to_js(graph)
    if args.output:
        from .atomic import write_text

        write_text(args.output, text)
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_weights(args: argparse.Namespace) -> int:
    from .constants import pack_weights, unpack_weights

    if args.action == "pack":
        arrays = {}
        for spec in args.arrays:
            name, sep, path = spec.partition("=")
            if not sep:
                path, name = spec, pathlib.Path(spec).stem
            arrays[name] = _load_array(path, name)
        pack_weights(arrays, args.weights, args.manifest)
        print(f"wrote {args.weights} and {args.manifest} ({len(arrays)} tensors)")
    else:
        names = unpack_weights(args.weights, args.manifest, args.output_dir)
        print(f"wrote {len(names)} .npy files to {args.output_dir}/")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(threads=args.threads, repeat=args.repeat)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from . import __version__
    from .cpuinfo import cpu_info

    print(f"webxnn {__version__}")
    for key, value in cpu_info().items():
        print(f"  {key}: {value}")
    return 0


_GRAPH_HELP = "a .webnn or .json graph, or an .onnx model (needs webxnn[onnx])"


def _add_graph_args(p: argparse.ArgumentParser, model_help: str = _GRAPH_HELP) -> None:
    p.add_argument("model", help=model_help)
    p.add_argument("--weights", help=".weights file (default: found beside the graph)")
    p.add_argument("--manifest", help="weights manifest (default: found beside the graph)")
    from .onnx.cli import add_dim_args  # no onnx import until a command reads a model

    add_dim_args(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="webxnn", description="WebNN graphs to .xnn blobs, and a CPU runtime"
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"webxnn {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="compile a .webnn/.json graph to a .xnn blob")
    _add_graph_args(p)
    p.add_argument("-o", "--output", help="output .xnn (or .pte) path (default: beside the model)")
    p.add_argument(
        "--profile",
        choices=["webxnn", "executorch"],
        default=None,
        help="executorch: only what ExecuTorch's XNNPACK delegate accepts "
        "(default: webxnn; executorch for .pte)",
    )
    p.add_argument(
        "--format",
        choices=["xnn", "pte"],
        default=None,
        help="pte: an ExecuTorch program running the blob as its XnnpackBackend delegate "
        "(default: from the -o extension, else xnn)",
    )
    p.add_argument("--inline", action="store_true", help="pte: the payload inside the program, not a segment")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("run", help="run a .xnn blob (or a graph / ONNX model, compiled first) on .npy inputs")
    _add_graph_args(p, "a .xnn blob, or a .webnn/.json graph or .onnx model (compiled in memory first)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    p.add_argument("--random-inputs", action="store_true", help="feed seeded random inputs instead")
    p.add_argument(
        "--cache",
        action="store_true",
        help="keep a graph's or ONNX model's compiled blob in the compile cache ($WEBXNN_CACHE_DIR, else "
        "$XDG_CACHE_HOME/webxnn, else ~/.cache/webxnn), keyed by the model's content and options, and "
        "reuse it",
    )
    p.add_argument("--cache-dir", metavar="DIR", help="--cache in this folder")
    p.add_argument("-o", "--output-dir", help="write each output as NAME.npy here")
    p.add_argument("--threads", type=non_negative_int, default=None, help="threads per run (0: one per core)")
    p.add_argument("--repeat", type=positive_int, default=None, metavar="N", help="also time N runs")
    p.add_argument(
        "--profile",
        type=positive_int,
        default=None,
        metavar="N",
        help="time every step over N runs and print them, slowest first",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("inspect", help="describe a .xnn blob or a .webnn/.json graph")
    _add_graph_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("validate", help="check a graph's ops, operands, options, weights")
    _add_graph_args(p)
    p.add_argument(
        "--no-weights",
        action="store_true",
        help="check the graph without its weights (when they are not at hand)",
    )
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("convert", help="convert a graph to JSON, .webnn text or WebNN JavaScript")
    _add_graph_args(p)
    p.add_argument("--to", choices=["json", "webnn", "js"], required=True)
    p.add_argument("-o", "--output")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("weights", help="pack .npy arrays into .weights + manifest, or unpack")
    actions = p.add_subparsers(dest="action", required=True)
    pack = actions.add_parser("pack", help="write NAME=FILE.npy arrays as a WGWT .weights + manifest")
    pack.add_argument("arrays", nargs="+", metavar="NAME=FILE.npy")
    unpack = actions.add_parser("unpack", help="write each tensor of a .weights file as NAME.npy")
    unpack.add_argument("-o", "--output-dir", default=".")
    for q in (pack, unpack):
        q.add_argument("--weights", required=True)
        q.add_argument("--manifest", required=True)
        q.set_defaults(func=cmd_weights)

    p = sub.add_parser("demo", help="compile and run the bundled example model")
    p.add_argument("--threads", type=non_negative_int, default=None, help="threads per run (0: one per core)")
    p.add_argument("--repeat", type=positive_int, default=200)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("info", help="version, CPU features and the chosen kernels")
    p.set_defaults(func=cmd_info)

    from .conformance.cli import add_cli as add_conformance_cli
    from .onnx.cli import add_cli as add_onnx_cli  # no onnx import until the command runs

    add_onnx_cli(sub)
    add_conformance_cli(sub)
    from .view import add_cli as add_view_cli  # no netron import until the command runs

    add_view_cli(sub)
    from .quantize.cli import add_cli as add_quantize_cli

    add_quantize_cli(sub)
    return parser


def _error(message: str) -> int:
    print(f"webxnn: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *rest: object, **kw: object) -> None:
            if issubclass(category, WebxnnWarning):  # one line, like the errors
                print(f"webxnn: warning: {message}", file=sys.stderr)
            else:
                shown(message, category, *rest, **kw)  # type: ignore[arg-type]

        warnings.showwarning = show
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        return args.func(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (WebxnnError, OSError) as e:
        if args.debug:
            raise
        if isinstance(e, WebxnnError):
            return _error(str(e))
        # an OSError of ours (reading an input, writing an output): the file and the reason, once
        return _error(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e))


if __name__ == "__main__":
    raise SystemExit(main())
