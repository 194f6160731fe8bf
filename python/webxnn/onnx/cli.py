"""`webxnn import-onnx`: the lead's cli.py calls `add_cli(subparsers)`."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InputError


def parse_override_dims(items: list[str] | None) -> dict[str, int]:
    """["batch_size=1", "sequence_length=128"] -> {"batch_size": 1, "sequence_length": 128}."""
    out: dict[str, int] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not value.strip().isdigit() or int(value) < 1:
            raise InputError(f"--override-dim {item!r}: expected NAME=N with N a positive integer")
        out[name.strip()] = int(value)
    return out


def parse_dim_max(items: list[str] | None) -> int | dict[str, int] | None:
    """["batch_size=64"] -> {"batch_size": 64}; ["64"] -> 64 (every symbolic dim not fixed); [] -> None."""
    if not items:
        return None
    if len(items) == 1 and items[0].strip().isdigit():
        if int(items[0]) < 1:
            raise InputError(f"--dim-max {items[0]!r}: expected a positive integer")
        return int(items[0])
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value.strip().isdigit() or int(value) < 1:
            raise InputError(
                f"--dim-max {item!r}: expected NAME=N with N a positive integer (or one N for every dim)"
            )
        out[name.strip()] = int(value)
    return out


def add_dim_args(p: argparse.ArgumentParser) -> None:
    """--override-dim and --dim-max, for every command that reads an .onnx model."""
    p.add_argument(
        "--override-dim",
        action="append",
        metavar="NAME=N",
        help=".onnx only: fix a symbolic input dim, e.g. batch_size=1 (repeatable)",
    )
    p.add_argument(
        "--dim-max",
        action="append",
        metavar="NAME=N",
        help=".onnx only: keep a symbolic input dim dynamic, any size 1..N at run time, e.g. batch_size=64 "
        "(repeatable; a bare N bounds every symbolic dim not fixed)",
    )


def dim_options(args: argparse.Namespace) -> dict:
    """The `override_dims` and `dyn_max` keywords of `from_onnx` / `read_model`, from the parsed flags."""
    return {
        "override_dims": parse_override_dims(getattr(args, "override_dim", None)),
        "dyn_max": parse_dim_max(getattr(args, "dim_max", None)),
    }


def _run(args: argparse.Namespace) -> int:
    from . import import_onnx

    written = import_onnx(args.model, args.output, **dim_options(args))
    for p in written:
        print(p)
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the `import-onnx` subcommand (its handler is `args.func(args) -> exit code`)."""
    p = subparsers.add_parser(
        "import-onnx",
        help="convert an ONNX model to .webnn (+ .weights + .manifest.json)",
        description="Convert an ONNX model to a webnn-graph-compatible .webnn file (or .json with -o x.json) "
        "plus <stem>.weights and <stem>.manifest.json. Needs: pip install 'webxnn[onnx]'.",
    )
    p.add_argument("model", help="the .onnx file")
    p.add_argument("-o", "--output", help="output .webnn or .json (default: <model>.webnn)")
    add_dim_args(p)
    p.set_defaults(func=_run)
