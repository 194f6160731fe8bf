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


def _run(args: argparse.Namespace) -> int:
    from . import import_onnx

    written = import_onnx(args.model, args.output, parse_override_dims(args.override_dim))
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
    p.add_argument(
        "--override-dim",
        action="append",
        metavar="NAME=N",
        help="fix a symbolic input dim, e.g. batch_size=1 (repeatable)",
    )
    p.set_defaults(func=_run)
