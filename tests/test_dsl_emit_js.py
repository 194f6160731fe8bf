"""emit-js: the generated module is valid JavaScript, and run against a recording mock MLGraphBuilder it
makes the spec-shaped calls (method parameters positional) with the right constant data."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from webxnn.dsl import load_graph, load_manifest, pack_weights, parse
from webxnn.dsl.emit_js import to_js

CONF = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "webnn-graph"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node not installed")

# A mock MLGraphBuilder: records every call, operands are {op, id}; constant data is summarized.
HARNESS = r"""
import { readFileSync } from "node:fs";
import { buildGraph } from "./graph.mjs";
const calls = [];
let next = 0;
const enc = (a) => {
  if (a && a.__operand) return {operand: a.id};
  if (Array.isArray(a)) return a.map(enc);
  if (ArrayBuffer.isView(a)) return {typed: a.constructor.name, values: Array.from(a, Number)};
  if (a && typeof a === "object") return Object.fromEntries(Object.entries(a).map(([k, x]) => [k, enc(x)]));
  return a;
};
globalThis.MLGraphBuilder = class {
  constructor(ctx) { return new Proxy({}, { get: (_, op) => (...args) => {
    calls.push({op, args: enc(args)});
    if (op === "build") return {built: true};
    if (op === "split") {
      const n = typeof args[1] === "number" ? args[1] : args[1].length;
      return Array.from({length: n}, () => ({__operand: true, id: next++}));
    }
    return {__operand: true, id: next++};
  }}); }
};
const [weightsPath, manifestPath] = process.argv.slice(2);
const weights = weightsPath ? readFileSync(weightsPath) : undefined;
const manifest = manifestPath ? JSON.parse(readFileSync(manifestPath, "utf8")) : undefined;
await buildGraph({}, weights, manifest, {});
console.log(JSON.stringify(calls));
"""


def _run(tmp: pathlib.Path, js: str, *args: str) -> list[dict]:
    (tmp / "graph.mjs").write_text(js)
    (tmp / "harness.mjs").write_text(HARNESS)
    chk = subprocess.run(
        [NODE, "--check", str(tmp / "graph.mjs")], capture_output=True, text=True, timeout=60
    )
    assert chk.returncode == 0, chk.stderr
    r = subprocess.run([NODE, str(tmp / "harness.mjs"), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_format_reference_calls(tmp_path: pathlib.Path) -> None:
    d = CONF / "examples-0.4.0"
    if not d.is_dir():
        pytest.skip("conformance data not found")
    g = load_graph(d / "format_reference.webnn")
    calls = _run(
        tmp_path, to_js(g), str(d / "format_reference.weights"), str(d / "format_reference.manifest.json")
    )
    ops = [c["op"] for c in calls]
    assert ops == ["input", "constant", "constant", "constant", "add", "split", "concat", "build"]
    assert calls[0]["args"] == ["input", {"dataType": "float32", "shape": [8, 4]}]
    assert calls[1]["args"][1] == {"typed": "Float32Array", "values": [0.5]}
    assert calls[2]["args"][1] == {"typed": "Uint8Array", "values": [1, 1, 0, 0]}
    w = np.array(calls[3]["args"][1]["values"], np.float32)
    np.testing.assert_array_equal(w, g.const_array("external_weight").ravel())
    assert calls[4]["args"] == [{"operand": 0}, {"operand": 1}]  # metadata annotation dropped
    assert calls[5]["args"] == [{"operand": 4}, [2, 2], {"axis": 1}]  # splits positional
    assert calls[6]["args"] == [[{"operand": 5}, {"operand": 6}], 1]  # concat(sequence, axis)
    assert calls[7]["args"] == [{"result": {"operand": 7}}]


def test_method_parameters_positional_and_operand_options(tmp_path: pathlib.Path) -> None:
    g = parse("""webnn_graph "t" v1 {
      inputs { x: f32[1, 3, 4, 4]; a: f32[2, 3]; }
      consts { w: f32[2, 3, 1, 1] @weights("w"); b: f32[2] @weights("b"); s: i64[2] @scalar(-1);
               q: i4[3] @bytes([1, 15, 7]); }
      nodes {
        c = conv2d(x, w, b, strides=[1, 1], inputLayout="nchw");
        c2 = conv2d(x, w, bias=b);
        r = reshape(c, newShape=[2, 16]);
        sm = softmax(r, axis=1, label="sm");
        sl = slice(sm, starts=[0, 0], sizes=[1, 8], strides=[1, 2]);
        t = transpose(sl, permutation=[1, 0]);
        k = cast(t, to="Int32");
        p = pad(a, beginningPadding=[0, 1], endingPadding=[1, 0], value=0.5);
        [s0] = split(a);
        e = gemm(a, a, c=a, bTranspose=true);
      }
      outputs { k p s0 e c2 }
    }""")
    m_dir = tmp_path / "m"
    m_dir.mkdir()
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((2, 3, 1, 1)).astype(np.float32), np.array([0.25, -1], np.float32)
    pack_weights({"w": w, "b": b}, m_dir / "t.weights", m_dir / "t.manifest.json")
    js = to_js(g, manifest=load_manifest(m_dir / "t.manifest.json"))  # offsets baked in
    calls = _run(tmp_path, js, str(m_dir / "t.weights"))
    by_op: dict[str, list[dict]] = {}
    for c in calls:
        by_op.setdefault(c["op"], []).append(c)
    consts = by_op["constant"]
    np.testing.assert_array_equal(np.float32(consts[0]["args"][1]["values"]), w.ravel())
    np.testing.assert_array_equal(np.float32(consts[1]["args"][1]["values"]), b)
    assert consts[2]["args"][1] == {"typed": "BigInt64Array", "values": [-1, -1]}
    assert consts[3]["args"][1] == {"typed": "Uint8Array", "values": [0xF1, 0x07]}  # int4 packed
    conv, conv2 = by_op["conv2d"]
    assert conv["args"] == [
        {"operand": 0},
        {"operand": 2},
        {"strides": [1, 1], "inputLayout": "nchw", "bias": {"operand": 3}},
    ]
    assert conv2["args"] == [{"operand": 0}, {"operand": 2}, {"bias": {"operand": 3}}]
    assert by_op["reshape"][0]["args"][1:] == [[2, 16]]
    assert by_op["softmax"][0]["args"][1:] == [1, {"label": "sm"}]
    assert by_op["slice"][0]["args"][1:] == [[0, 0], [1, 8], {"strides": [1, 2]}]
    assert by_op["transpose"][0]["args"][1:] == [{"permutation": [1, 0]}]
    assert by_op["cast"][0]["args"][1:] == ["int32"]
    assert by_op["pad"][0]["args"][1:] == [[0, 1], [1, 0], {"value": 0.5}]
    assert by_op["split"][0]["args"][1:] == [1]
    assert by_op["gemm"][0]["args"][2] == {"c": {"operand": 1}, "bTranspose": True}
    assert calls[-1]["op"] == "build" and set(calls[-1]["args"][0]) == {"k", "p", "s0", "e", "c2"}


def test_odd_names_are_safe(tmp_path: pathlib.Path) -> None:
    g = parse(
        'webnn_graph "q\\"`${x}" v2 { inputs { $a.b/c: f32[dyn("n`", 3)]; __proto__: f32[3]; } '
        "nodes { y = add($a.b/c, __proto__); } outputs { y } }"
    )
    calls = _run(tmp_path, to_js(g))
    assert calls[0]["args"] == ["$a.b/c", {"dataType": "float32", "shape": [3]}]
    assert calls[2] == {"op": "add", "args": [{"operand": 0}, {"operand": 1}]}
