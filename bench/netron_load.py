"""Netron's load time for a model shown by `webxnn view`: building the message (read + describe; compiling
first for a .webnn / .onnx model, timed apart) and the page in headless Chromium, from navigation until the
graph is drawn. Needs `webxnn[view]` and Chromium.

    python -m bench view --model resnet50.onnx
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import webxnn
from bench.common import positive_int


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench view", description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--repeat", type=positive_int, default=3)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
    from headless_chromium import Browser, find_browser
    from webxnn import view

    t = time.perf_counter()
    blob = (
        webxnn.compile(args.model)
        if not args.model.endswith(".xnn")
        else pathlib.Path(args.model).read_bytes()
    )
    compile_s = time.perf_counter() - t
    path = pathlib.Path(tempfile.mkdtemp()) / (pathlib.Path(args.model).stem + ".xnn")
    path.write_bytes(blob)
    t = time.perf_counter()
    message = view.netron_json(path)
    message_s = time.perf_counter() - t
    exe = find_browser()
    if exe is None:
        print("no Chromium on PATH")
        return 1
    address = view.serve(path, 0, browse=False)
    b = Browser(exe, loopback_only=True)
    b.call(
        "Storage.setCookies", cookies=[{"name": "consent", "value": "1", "domain": "127.0.0.1", "path": "/"}]
    )
    loads = []
    for _ in range(args.repeat):
        b.call("Page.navigate", session=True, url="about:blank")
        t = time.perf_counter()
        b.call("Page.navigate", session=True, url=f"http://{address[0]}:{address[1]}/")
        time.sleep(0.05)
        b.wait_for(r"/\b(default|alert)\b/.test(document.body.className)", 600)
        loads.append(time.perf_counter() - t)
    state = b.evaluate("document.body.className")
    b.close()
    view.stop(address)
    print(
        f"{args.model}: blob {len(blob) / 1e6:.1f} MB, message {len(message) / 1e3:.0f} kB, "
        f"page state {state!r}"
    )
    print(f"compile {compile_s:.2f} s, message {message_s:.2f} s, page load (median of {args.repeat}) "
          f"{sorted(loads)[len(loads) // 2]:.2f} s, all {[round(x, 2) for x in loads]}")  # fmt: skip
    return 0
