"""`webxnn view`: the Netron message built from a blob (names, webxnn's node types, quantization, metadata),
then the real thing: Netron serving it on a free loopback port, loaded in headless Chromium (Debian's
`chromium`) through the DevTools protocol, with the graph's node names on the page and nothing logged as an
error. The browser may reach only 127.0.0.1."""

from __future__ import annotations

import json
import pathlib
import urllib.parse
from collections.abc import Iterator

import numpy as np
import pytest

from headless_chromium import Browser, find_browser
from test_runtime_util import GraphBuilder, per_channel, per_tensor, wx_chain_blob
from webxnn.demo import EXAMPLE
from webxnn.view import netron_json
from webxnn.xnn.ir import Datatype


def _qs8_fc_blob() -> bytes:
    b = GraphBuilder()
    xi = b.input("x", [2, 4])
    xq = b.value([2, 4], Datatype.QINT8, per_tensor(0.05, 3))
    b.node("XNNConvert", input_id=xi, output_id=xq, flags=0)
    wi = b.const(np.ones((3, 4), np.int8), Datatype.QCINT8, per_channel([0.01, 0.02, 0.03], 0))
    yq = b.value([2, 3], Datatype.QINT8, per_tensor(0.1, -2))
    b.node("XNNFullyConnected", input1_id=xq, filter_id=wi, bias_id=-1 & 0xFFFFFFFF, output_id=yq, flags=0)
    y = b.output(b.value([2, 3]), "y")
    b.node("XNNConvert", input_id=yq, output_id=y, flags=0)
    return b.build()


def _message(path: pathlib.Path | str) -> dict:
    return json.loads(netron_json(path))


def test_message_keeps_source_names_types_and_metadata() -> None:
    m = _message(EXAMPLE)
    assert m["signature"] == "netron:webxnn" and m["format"] == "webxnn XNNGraph"
    g = m["graphs"][0]
    nodes = {(n["name"], n["type"]["name"]) for n in g["nodes"]}
    assert ("c1:conv2d", "XNNConv2d") in nodes and ("probs:softmax", "XNNSoftmax") in nodes
    conv = next(n for n in g["nodes"] if n["type"]["name"] == "XNNConv2d")
    assert {"name": "kernel", "value": [3, 3]} in conv["attributes"]
    assert {"name": "output_min_max", "value": [0.0, "inf"]} in conv["attributes"]  # JSON has no inf
    weights = g["values"][conv["inputs"][1]["value"][0]]
    assert "initializer" in weights
    assert [a["name"] for a in g["inputs"]] == ["x"] and [a["name"] for a in g["outputs"]] == ["probs"]
    meta = {e["name"]: e["value"] for e in m["metadata"]}
    assert meta["source"] == "tiny_cnn.webnn" and meta["producer"].startswith("webxnn")
    assert meta["header"].startswith("XH00")


def test_message_shows_webxnn_nodes_and_quantization(tmp_path: pathlib.Path) -> None:
    (tmp_path / "wx.xnn").write_bytes(wx_chain_blob())
    m = _message(tmp_path / "wx.xnn")
    kinds = {n["type"]["name"] for n in m["graphs"][0]["nodes"]}
    assert {"WXGather", "WXWhere", "WXQuantize"} <= kinds
    assert "WXGather" in next(e["value"] for e in m["metadata"] if e["name"] == "webxnn node types")
    (tmp_path / "q.xnn").write_bytes(_qs8_fc_blob())
    types = [v["type"]["dataType"] for v in _message(tmp_path / "q.xnn")["graphs"][0]["values"]]
    assert "qint8 (scale=0.05 zp=3)" in types
    assert any(t.startswith("qcint8 (per-channel dim=0, 3 scales [0.01..0.03]") for t in types)


def test_cli_view_names_a_bad_model(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    from webxnn.cli import main

    (tmp_path / "x.npy").write_bytes(b"\x93NUMPY" + b"\0" * 64)
    assert main(["view", str(tmp_path / "nope.xnn"), "--no-browser"]) == 2
    assert main(["view", str(tmp_path / "x.npy"), "--port", "0", "--no-browser"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(e.startswith("webxnn: error: ") for e in err)
    assert "nope.xnn" in err[0] and ("x.npy" in err[1] or "netron" in err[1].lower())


# ------------------------------------------------------------------------------------------ in a browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    pytest.importorskip("netron", reason="Netron is not installed (pip install 'webxnn[view]')")
    exe = find_browser()
    if exe is None:
        pytest.skip("no headless Chromium on PATH (Debian: apt-get install chromium)")
    b = Browser(exe, loopback_only=True)
    # Netron asks for cookie consent before it opens a model; the answer lives in a cookie
    b.call(
        "Storage.setCookies", cookies=[{"name": "consent", "value": "1", "domain": "127.0.0.1", "path": "/"}]
    )
    try:
        yield b
    finally:
        b.close()


def _page_errors(b: Browser) -> list[str]:
    """The errors but the requests off this machine that the browser refuses on purpose (Netron's usage
    report to Google Analytics)."""

    def refused(e: str) -> bool:
        host = urllib.parse.urlsplit(e.split(" ", 1)[0]).hostname
        return "ERR_NAME_NOT_RESOLVED" in e and host not in (None, "127.0.0.1")

    return [e for e in b.errors if not refused(e)]


@pytest.mark.slow  # a browser and a graph layout: several seconds each
@pytest.mark.parametrize("model", ["tiny_cnn.webnn", "wx.xnn"])
def test_netron_shows_the_graph(model: str, browser: Browser, tmp_path: pathlib.Path) -> None:
    from webxnn import view

    if model == "wx.xnn":
        path, names = tmp_path / model, ["WXGather", "WXScatterND", "WXQuantize"]
        path.write_bytes(wx_chain_blob())
    else:
        path, names = EXAMPLE, ["c1:conv2d", "probs:softmax", "XNNConv2d"]
    address = view.serve(path, 0, browse=False)
    try:
        browser.errors.clear()
        browser.call("Page.navigate", session=True, url=f"http://{address[0]}:{address[1]}/")
        state = browser.wait_for(
            r"/\b(default|alert)\b/.test(document.body.className) && document.body.className", 120
        )
        message = browser.evaluate("document.getElementById('message-text').textContent")
        assert "alert" not in state, message
        html = browser.evaluate("document.getElementById('canvas').outerHTML")
        for name in names:
            assert name in html, f"{name} not on the page"
        assert not _page_errors(browser)
    finally:
        view.stop(address)
