"""`webxnn view`: a model in Netron (the optional `view` extra, `pip install 'webxnn[view]'`).

A `.xnn` blob, or a `.webnn` / `.json` graph or `.onnx` model compiled in memory, is shown as webxnn reads it
(`xnn.netron`: node types, source names, attributes, quantization, metadata); an ExecuTorch `.pte` goes to
Netron's own ExecuTorch reader unchanged. Netron serves the page from this process on a loopback port.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
from typing import Any

from .errors import UnsupportedError

_NETRON = "webxnn view needs Netron: pip install 'webxnn[view]' (or pip install netron)"


def _netron() -> Any:
    try:
        import netron
    except ModuleNotFoundError as e:
        if e.name != "netron":
            raise
        raise UnsupportedError(_NETRON) from None
    return netron


def netron_json(path: str | os.PathLike[str]) -> bytes:
    """The Netron message (JSON bytes) for a `.xnn` blob or a graph / ONNX model compiled in memory."""
    from .compiler import GRAPH_KINDS
    from .compiler import compile as compile_model
    from .filekind import expect
    from .xnn.netron import netron_message
    from .xnn.reader import read

    kind = expect(path, ("xnn", *GRAPH_KINDS), what="a .xnn blob, a .webnn/.json graph or an .onnx model")
    blob = pathlib.Path(path).read_bytes() if kind == "xnn" else compile_model(path)
    msg = netron_message(read(blob), os.path.basename(path), blob_size=len(blob))
    return json.dumps(msg, ensure_ascii=False, allow_nan=False).encode()


def serve(path: str | os.PathLike[str], port: int = 0, browse: bool = True) -> tuple[str, int]:
    """Serve `path` in Netron on 127.0.0.1:`port` (0: a free port) and return the address; the server runs
    in a thread of this process until `stop(address)` or the process ends."""
    from .filekind import expect

    path = os.fspath(path)
    # the file first: a missing or wrong file is named even where Netron is not installed
    kind = expect(path, ("xnn", "pte", "webnn", "json", "onnx"), what="a model to view")
    netron = _netron()
    if kind == "pte":
        return netron.serve(os.path.abspath(path), None, address=("127.0.0.1", port), browse=browse)
    data = bytearray(netron_json(path))  # a bytearray: Netron serves it as the file's bytes
    # Netron also serves the files beside the one it shows: name a folder that does not exist (made unique,
    # then removed), so that there are none
    beside = tempfile.mkdtemp(prefix="webxnn-view-")
    os.rmdir(beside)
    name = os.path.join(beside, os.path.basename(path) + ".netron")
    return netron.serve(name, data, address=("127.0.0.1", port), browse=browse)


def stop(address: tuple[str, int]) -> None:
    _netron().stop(address)


def cmd_view(args: argparse.Namespace) -> int:
    host, port = serve(args.model, args.port, browse=not args.no_browser)
    print(f"Netron: http://{host}:{port} (Ctrl-C stops it)", flush=True)
    _netron().wait()
    return 0


def add_cli(sub: Any) -> None:
    p = sub.add_parser("view", help="open a .xnn/.pte/.webnn/.onnx model in Netron (webxnn[view])")
    p.add_argument("model", help=".xnn blob, ExecuTorch .pte, .webnn/.json graph or .onnx model")
    p.add_argument("--port", type=int, default=0, help="loopback port to serve on (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="only serve; print the address")
    p.set_defaults(func=cmd_view)


__all__ = ["netron_json", "serve", "stop"]
