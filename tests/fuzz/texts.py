"""Mutated `.webnn` text, JSON graphs and weights manifests. Seeds: the bundled example (with its weights) and
a few small graphs written here that cover consts (`@scalar`, `@bytes`), options of every kind and dynamic
dims. Text is mutated token by token (numbers to extremes, identifiers and dtypes swapped, tokens dropped,
repeated or moved, truncation, bytes that are not UTF-8); JSON is mutated as a tree (values of another
type, extreme numbers, keys dropped or added, deep nesting); manifests as JSON trees and the `.weights`
header as bytes. What parses is compiled, loaded and run when small."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SMALL = [
    """webnn_graph "a" v1 {
  inputs { x: f32[2, 3]; i: i64[2]; }
  consts { s: f32[2, 3] @scalar(0.5); b: u8[4] @bytes([1, 2, 3, 4]); k: f32[3, 4] @scalar(-1); }
  nodes {
    m = mul(x, s);
    c = clamp(m, minValue=-1.0, maxValue=2.5);
    l = leakyRelu(c, alpha=0.1);
    t = transpose(l, permutation=[1, 0]);
    g = gather(t, i, axis=0);
    mm = matmul(l, k);
    r = reshape(mm, newShape=[4, 2]);
    sm = softmax(r, axis=1);
    cat = concat([sm, sm], axis=0);
    red = reduceMean(cat, axes=[1], keepDimensions=true);
    cst = cast(b, type="float32");
    y = add(red, red);
  }
  outputs { y; g; cst; }
}
""",
    """webnn_graph "b" v2 {
  inputs { x: f32[dyn("n", 8), 4]; }
  consts { w: f32[4, 4] @scalar(1); }
  nodes {
    a = gemm(x, w, alpha=2.0, bTranspose=true);
    p = pad(a, beginningPadding=[0, 1], endingPadding=[0, 1], mode="constant", value=0.0);
    sl = slice(p, starts=[0, 1], sizes=[-1, 4]);
    e = elu(sl, alpha=1.0);
    y = sigmoid(e);
  }
  outputs { y; }
}
""",
    """webnn_graph "c" v1 {
  inputs { x: f32[1, 2, 6, 6]; }
  consts { w: f32[4, 2, 3, 3] @scalar(0.25); bias: f32[4] @scalar(0.0); }
  nodes {
    c = conv2d(x, w, bias=bias, padding=[1, 1, 1, 1], strides=[2, 2], dilations=[1, 1], groups=1);
    n = batchNormalization(c, bias, bias, axis=1, epsilon=1e-5);
    p = averagePool2d(n, windowDimensions=[3, 3], outputSizes=[1, 1]);
    r = resample2d(c, scales=[2.0, 2.0], mode="linear", axes=[2, 3]);
    y = reduceSum(r, axes=[1, 2, 3], keepDimensions=false);
  }
  outputs { y; p; }
}
""",
]

_NUMBERS = [
    "0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "65536",
    "4294967295",
    "4294967296",
    "-2147483649",
    "1e300",
    "-1e39",
    "1e39",
    "1e-400",
    "1.5",
    "0.0",
    "-0.0",
    "18446744073709551616",
    "9223372036854775807",
    "3.4e38",
    "99999999999999999999999999999",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e",
    "0x10",
    "01",
]
_WORDS = [
    "f32",
    "f16",
    "i4",
    "u4",
    "i64",
    "u64",
    "u8",
    "i8",
    "u32",
    "dyn",
    "relu",
    "conv2d",
    "gemm",
    "reshape",
    "x",
    "y",
    "w",
    "@scalar",
    "@bytes",
    "@weights",
    "true",
    "false",
    "null",
    "inputs",
    "consts",
    "nodes",
    "outputs",
    "webnn_graph",
    "v1",
    "v2",
    "v3",
    "axis",
    "newShape",
    "padding",
    "type",
]
_PUNCT = [*'{}[]();,=:"#@\\', "/*", "\x00", "\u00e9", "\udcff"]
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_@][\w@]*|-?\d[\w.+-]*|\S')


@dataclass
class Case:
    kind: str  # "text", "json", "manifest"
    data: bytes
    weights: bytes = b""


def _pick(rng: np.random.Generator, seq: list[Any]) -> Any:
    return seq[int(rng.integers(0, len(seq)))]


def mutate_text(rng: np.random.Generator, text: str) -> bytes:
    toks = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    pieces = list(text)
    out = text
    for _ in range(int(rng.integers(1, 4))):
        toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(out)]
        if not toks:
            break
        s, e, tok = _pick(rng, toks)
        kind = int(rng.integers(0, 12))
        numbers = [t for t in toks if re.match(r"-?\d", t[2])]
        if kind <= 4 and numbers:  # mostly semantic damage: the syntax stays valid
            s, e, tok = _pick(rng, numbers)
            new = _pick(rng, _NUMBERS[:-3]) if rng.random() < 0.9 else _pick(rng, _NUMBERS)
        elif kind <= 6:  # another identifier or dtype of the same text
            words = [t for t in toks if re.match(r"[A-Za-z_]", t[2])]
            s, e, tok = _pick(rng, words or toks)
            new = _pick(rng, [t[2] for t in words] + _WORDS[:10]) if words else tok
        elif kind == 7:
            new = _pick(rng, _NUMBERS + _WORDS)
        elif kind == 8:
            new = ""
        elif kind == 9:  # repeat a span of tokens
            s2, e2, _ = _pick(rng, toks)
            lo, hi = min(s, s2), max(e, e2)
            new = tok + " " + out[lo:hi][:200]
        elif kind == 10:  # a dim list of extremes
            new = "[" + ", ".join(_pick(rng, _NUMBERS[:12]) for _ in range(int(rng.integers(0, 9)))) + "]"
        else:
            new = _pick(rng, _PUNCT)
        out = out[:s] + new + out[e:]
    del pieces
    data = out.encode("utf-8", "surrogateescape") if "\udcff" in out else out.encode()
    if rng.random() < 0.1:
        b = bytearray(data)
        op = int(rng.integers(0, 3))
        if op == 0 and b:
            del b[int(rng.integers(0, len(b))) :]
        elif op == 1 and b:
            b[int(rng.integers(0, len(b)))] = int(rng.integers(128, 256))
        else:
            b[0:0] = b"\xef\xbb\xbf" if rng.random() < 0.5 else b"\xff\xfe"
        data = bytes(b)
    return data


def _mutate_tree(rng: np.random.Generator, doc: Any) -> Any:
    """One structural change somewhere in a JSON tree; returns the (possibly new) root."""
    path: list[tuple[Any, Any]] = []
    node = doc
    while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
        key = _pick(rng, list(node.keys())) if isinstance(node, dict) else int(rng.integers(0, len(node)))
        path.append((node, key))
        node = node[key]
    replacement = _pick(
        rng,
        [
            0,
            -1,
            1,
            2**32,
            2**64,
            -(2**63) - 1,
            1.5,
            1e300,
            -1e39,
            float("nan"),
            None,
            True,
            "",
            "x",
            "float32",
            "u4",
            [],
            [1, 2],
            [[]],
            {},
            {"kind": "scalar"},
            [-1] * 9,
            "\udcff",
            "1" * 400,
        ],
    )
    if not path:
        return replacement
    parent, key = path[-1]
    op = int(rng.integers(0, 4))
    if op == 0 and isinstance(parent, dict):
        del parent[key]
    elif op == 1 and isinstance(parent, dict):
        parent[_pick(rng, ["extra", "shape", "dataType", "init", "options", "byteOffset", "inputs", key])] = (
            replacement
        )
    elif op == 2:
        deep: Any = replacement
        for _ in range(int(rng.integers(1, 3000))):
            deep = [deep]
        parent[key] = deep
    else:
        parent[key] = replacement
    return doc


def mutate_json(rng: np.random.Generator, text: str) -> bytes:
    doc = json.loads(text)
    for _ in range(int(rng.integers(1, 4))):
        doc = _mutate_tree(rng, doc)
    try:
        out = json.dumps(doc, allow_nan=True, ensure_ascii=False).encode("utf-8", "surrogateescape")
    except (ValueError, RecursionError):
        out = text.encode()
    if rng.random() < 0.1:
        b = bytearray(out)
        del b[int(rng.integers(0, len(b))) :]
        out = bytes(b)
    return out


class Corpus:
    """The seeds, parsed once: texts, their JSON forms, and the example's manifest and weights."""

    def __init__(self) -> None:
        import webxnn

        ex = Path(webxnn.__file__).parent / "examples"
        self.texts = [(ex / "tiny_cnn.webnn").read_text(), *SMALL]
        self.jsons = [webxnn.parse(t).to_json() for t in self.texts]
        self.manifest = (ex / "tiny_cnn.manifest.json").read_text()
        self.weights = (ex / "tiny_cnn.weights").read_bytes()


def make(corpus: Corpus, seed: int, k: int) -> Case:
    rng = np.random.default_rng([seed, k])
    which = k % 5
    if which <= 1:
        return Case("text", mutate_text(rng, _pick(rng, corpus.texts)))
    if which <= 3:
        return Case("json", mutate_json(rng, _pick(rng, corpus.jsons)))
    weights = corpus.weights
    if rng.random() < 0.3:  # the .weights header (magic, version) or its length
        b = bytearray(weights)
        pos = int(rng.integers(0, 12))
        b[pos] = int(rng.integers(0, 256))
        if rng.random() < 0.5:
            del b[int(rng.integers(0, len(b))) :]
        weights = bytes(b)
    return Case("manifest", mutate_json(rng, corpus.manifest), weights)


class Workdir:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="webxnn-fuzz-text-"))

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def check(corpus: Corpus, work: Workdir, case: Case) -> None:
    import webxnn

    from .run_graph import compile_and_run

    if case.kind in ("text", "json"):  # through the file reader, as a user's file would come
        path = work.root / ("m.webnn" if case.kind == "text" else "m.json")
        for p in work.root.iterdir():
            p.unlink()
        path.write_bytes(case.data)
        g = webxnn.load_graph(path)
        if any(c.init.kind == "weights" for c in g.consts.values()):
            return  # no weights beside it: loading said so, or the graph does not use them
    else:
        (work.root / "m.webnn").write_text(corpus.texts[0])
        (work.root / "m.weights").write_bytes(case.weights)
        (work.root / "m.manifest.json").write_bytes(case.data)
        g = webxnn.load_graph(work.root / "m.webnn")
    compile_and_run(g)
