"""Mutated `.webnn` text, JSON graphs and weights manifests. Seeds: the bundled example (its weights and
manifest are written beside every text and JSON case, so `@weights` consts resolve), a few small graphs
written here that cover consts (`@scalar`, `@bytes`), options of every kind and dynamic dims, and the shared
conformance graphs when present. Mutators, one per level:

- `mutate_graph`: grammar-aware, on the parsed graph (AST): option values to extremes or other kinds, options
  dropped or borrowed from other nodes, inputs rewired (to later values too), op names swapped, dims and
  dtypes changed, nodes dropped or reordered, outputs rewired; printed back, so the text still parses and the
  damage reaches validation, lowering and the runtime.
- `mutate_text`: token by token (numbers to extremes, identifiers and dtypes swapped, tokens dropped, repeated
  or moved, truncation, bytes that are not UTF-8).
- `mutate_chars`: characters and a vocabulary of grammar pieces spliced anywhere (the parser's error paths).
- `mutate_json`: as a tree (values of another type, extreme numbers, keys dropped or added, deep nesting);
  manifests as JSON trees and the `.weights` header as bytes.

Whatever parses must print and re-parse to the same graph (text and JSON); it is then compiled, loaded and
run when small."""

from __future__ import annotations

import json
import pickle
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
    'webnn_graph "x" v2 @quantized { inputs { a: f32[dyn("n", 4), 2]; b: i64[]; } consts { c: u8[2] '
    '@bytes([1, 2]); d: f16[] @scalar(-1.5e-3); e: f32[2] @weights("k.v"); } nodes { [p, q] = split(a, '
    'splits=[1, 1], axis=1); r = concat([p, q], axis=1, m={"s": "\\"q\\\\", t: [true, false, null]}); } '
    "outputs { r, q; p } } # end",
]
# The shared conformance graphs, seeds too when this checkout has them.
CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "webnn-graph"

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
_NUMBER, _IDENT = re.compile(r"-?\d"), re.compile(r"[A-Za-z_]")


# Grammar pieces `mutate_chars` splices in anywhere.
_VOCAB = [
    *'{}[]();,=:"\\#\n ',
    "\r\n",
    "@bytes",
    "@scalar",
    "@weights",
    "@quantized",
    "dyn",
    "true",
    "false",
    "null",
    "nullx",
    "-",
    "1e999",
    "4294967296",
    "256",
    "-0.5",
    "1e",
    "0x1",
    "inputs",
    "nodes",
    "outputs",
    "consts",
    "f32",
    "u8",
    "x",
    "$",
    "/",
    ".",
    "é",
    "\x00",
    "webnn_graph",
    "v1",
    "v3",
    "[a, b] =",
    "y = x;",
    "relu(",
    "9223372036854775808",
    "[" * 80,
]


@dataclass
class Case:
    kind: str  # "text", "json", "manifest"
    data: bytes
    weights: bytes = b""  # manifest cases: the (maybe damaged) .weights file
    seed_index: int = 0  # text and JSON cases: the seed whose sidecars go beside it


def _pick(rng: np.random.Generator, seq: list[Any]) -> Any:
    return seq[int(rng.integers(0, len(seq)))]


def mutate_text(rng: np.random.Generator, text: str) -> bytes:
    out = text
    for _ in range(int(rng.integers(1, 4))):
        toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(out)]
        if not toks:
            break
        s, e, tok = _pick(rng, toks)
        kind = int(rng.integers(0, 12))
        numbers = [t for t in toks if _NUMBER.match(t[2])] if kind <= 4 else []
        if kind <= 4 and numbers:  # mostly semantic damage: the syntax stays valid
            s, e, tok = _pick(rng, numbers)
            new = _pick(rng, _NUMBERS[:-3]) if rng.random() < 0.9 else _pick(rng, _NUMBERS)
        elif kind <= 6:  # another identifier or dtype of the same text
            words = [t for t in toks if _IDENT.match(t[2])]
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


def mutate_chars(rng: np.random.Generator, s: str) -> bytes:
    """Characters and grammar pieces deleted, spliced, repeated or copied anywhere (or, one time in ten, a
    text made of grammar pieces only)."""
    if rng.random() < 0.1:
        s = "".join(_pick(rng, _VOCAB) for _ in range(int(rng.integers(0, 31))))
    for _ in range(int(rng.integers(1, 5))):
        op = int(rng.integers(0, 6))
        i = int(rng.integers(0, len(s) + 1))
        j = min(len(s), i + int(rng.integers(0, 13)))
        if op == 0:
            s = s[:i] + s[j:]
        elif op == 1:
            s = s[:i] + _pick(rng, _VOCAB) + s[i:]
        elif op == 2:
            s = s[:i] + s[i:j] * int(rng.integers(2, 4)) + s[j:]
        elif op == 3:
            s = s[:i]
        elif op == 4:
            s = s[:i] + chr(int(rng.integers(0, 0x300))) + s[j:]
        else:
            k = int(rng.integers(0, len(s) + 1))
            s = s[:i] + s[k : k + 8] + s[i:]
    return s.encode("utf-8", "surrogateescape")


_OPTION_INTS = [0, 1, 2, 3, -1, -2, 4294967295, 4294967296, 2**31, -(2**31) - 1, 2**63 - 1, 65536]
_OPTION_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-7, 3.4e38, 1e39, -1e300, 65504.0]
_OPTION_STRS = [
    *("float32", "int8", "linear", "nearest-neighbor", "constant", "edge", "reflection"),
    *("nchw", "nhwc", "oihw", "ohwi", "x", ""),
]


def _option_value(rng: np.random.Generator, old: Any, names: list[str]) -> Any:
    """A value for an option that held `old`: mostly one of the same kind (so parsing and option checks
    pass and the damage reaches shapes and kernels), sometimes another kind."""
    if rng.random() < 0.15:
        old = _pick(rng, [0, 0.5, "x", [1], True, None])
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return _pick(rng, _OPTION_INTS) if rng.random() < 0.5 else old + int(rng.integers(-2, 3))
    if isinstance(old, float):
        return _pick(rng, _OPTION_FLOATS)
    if isinstance(old, str):
        return _pick(rng, names + _OPTION_STRS) if rng.random() < 0.5 else _pick(rng, _OPTION_STRS)
    if isinstance(old, list):
        new = list(old)
        op = int(rng.integers(0, 3))
        if op == 0 and new:
            new[int(rng.integers(0, len(new)))] = _option_value(rng, new[0], names)
        elif op == 1 and new:
            del new[int(rng.integers(0, len(new)))]
        else:
            new.append(new[-1] if new and rng.random() < 0.5 else _pick(rng, _OPTION_INTS))
        return new
    return _pick(rng, _OPTION_INTS)


def _dim(rng: np.random.Generator, old: Any) -> Any:
    from webxnn.graph import DynDim

    if isinstance(old, DynDim):
        return DynDim(old.name, _pick(rng, [1, 2, 3, 4294967295, old.max_size * 2]))
    return _pick(rng, [1, 2, 3, 5, 8, max(1, old - 1), old + 1, 65536, 4294967295, old * 2])


def _mutate_graph_once(rng: np.random.Generator, g: Any, ops: list[str]) -> None:
    from webxnn.graph import DTYPES, ConstInit

    values = [*g.inputs, *g.consts, *(o for n in g.nodes for o in n.outputs)]
    kind = int(rng.integers(0, 10))
    node = _pick(rng, g.nodes) if g.nodes else None
    if node is not None and kind <= 2:  # an option: another value, dropped, or borrowed from another node
        borrowed = [(k, v) for n in g.nodes for k, v in n.options.items()]
        op = int(rng.integers(0, 4))
        if node.options and op <= 1:
            key = _pick(rng, sorted(node.options))
            node.options[key] = _option_value(rng, node.options[key], values)
        elif node.options and op == 2:
            del node.options[_pick(rng, sorted(node.options))]
        elif borrowed:
            key, val = _pick(rng, borrowed)
            node.options[key] = _option_value(rng, val, values) if rng.random() < 0.5 else val
    elif node is not None and kind == 3 and node.inputs:  # rewire an input (maybe to a later value)
        node.inputs[int(rng.integers(0, len(node.inputs)))] = _pick(rng, values)
    elif node is not None and kind == 4:  # another op, or an input more or less
        if rng.random() < 0.6:
            node.op = _pick(rng, ops)
        elif node.inputs and rng.random() < 0.5:
            del node.inputs[-1]
        else:
            node.inputs.append(_pick(rng, values))
    elif kind <= 6:  # a dim or a dtype of an input or a const
        decls = [*g.inputs.values(), *g.consts.values()]
        if not decls:
            return
        d = _pick(rng, decls)
        if rng.random() < 0.6 and d.shape:
            i = int(rng.integers(0, len(d.shape)))
            d.shape[i] = _dim(rng, d.shape[i])
        elif rng.random() < 0.5:
            if d.shape and rng.random() < 0.5:
                del d.shape[int(rng.integers(0, len(d.shape)))]
            else:
                d.shape.insert(int(rng.integers(0, len(d.shape) + 1)), _pick(rng, [1, 2, 3]))
        else:
            d.dtype = _pick(rng, sorted(DTYPES))
        init = getattr(d, "init", None)
        if init is not None and init.kind == "bytes" and rng.random() < 0.5:
            d.init = ConstInit("scalar", value=_pick(rng, [0, 1, -1, 0.5, 255, 1e38]))
    elif kind == 7 and len(g.nodes) > 1:  # drop a node, or swap two (a use before definition)
        i, j = (int(x) for x in rng.integers(0, len(g.nodes), 2))
        if rng.random() < 0.5:
            del g.nodes[i]
        else:
            g.nodes[i], g.nodes[j] = g.nodes[j], g.nodes[i]
    elif kind == 8 and g.outputs:  # an output to another value
        key = _pick(rng, sorted(g.outputs))
        g.outputs[key] = _pick(rng, values)
        if rng.random() < 0.5:  # text names an output by its value
            g.outputs = {v: v for v in g.outputs.values()}
    else:  # a scalar const's value
        scalars = [c for c in g.consts.values() if c.init.kind == "scalar"]
        if scalars:
            _pick(rng, scalars).init.value = _pick(rng, [0, -1, 1e30, 3.5, 2**31, -(2**63), 1e-40, 65505.0])


def mutate_graph(rng: np.random.Generator, g: Any, ops: list[str], as_json: bool = False) -> bytes:
    """1-3 AST-level changes to (a copy of) graph g, printed as `.webnn` text (or as JSON)."""
    new = pickle.loads(pickle.dumps(g))  # a deep copy, 5x faster than copy.deepcopy
    for _ in range(int(rng.integers(1, 4))):
        _mutate_graph_once(rng, new, ops)
    try:
        return (new.to_json() if as_json else new.to_text()).encode("utf-8", "surrogateescape")
    except Exception:  # noqa: BLE001 - a change the printer cannot write: token damage to the seed instead
        return mutate_text(rng, g.to_text())


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
    """The seeds, parsed once: texts, their graphs and JSON forms (None where a conformance text does not
    parse), and per seed the `.weights` + manifest to write beside it: the example's own, generated data
    for the other seeds' `@weights` consts."""

    def __init__(self) -> None:
        import webxnn
        from webxnn.ops.registry import REGISTRY

        ex = Path(webxnn.__file__).parent / "examples"
        self.texts = [(ex / "tiny_cnn.webnn").read_text(), *SMALL]
        if CONFORMANCE.is_dir():
            self.texts += [f.read_text() for f in sorted(CONFORMANCE.rglob("*.webnn"))]
        self.graphs: list[Any] = []
        for t in self.texts:
            try:
                self.graphs.append(webxnn.parse(t))
            except webxnn.WebxnnError:  # a conformance graph of a newer syntax: a text seed only
                self.graphs.append(None)
        self.parsed = [i for i, g in enumerate(self.graphs) if g is not None]
        self.jsons = [g.to_json() if g is not None else None for g in self.graphs]
        self.ops = sorted(REGISTRY)
        self.manifest = (ex / "tiny_cnn.manifest.json").read_text()
        self.weights = (ex / "tiny_cnn.weights").read_bytes()
        self.sidecars = [(self.weights, self.manifest)] + [_sidecars(g) for g in self.graphs[1:]]


def _sidecars(g: Any) -> tuple[bytes, str]:
    """A `.weights` file and manifest holding small random data for every `@weights` const of `g`."""
    from webxnn.constants.files import pack_weights, weights_consts, weights_ref
    from webxnn.graph import DTYPES

    rng = np.random.default_rng(0)
    arrays, dtypes = {}, {}
    for c in weights_consts(g) if g is not None else []:
        shape = [int(d) for d in c.shape]
        if np.prod(shape, dtype=np.int64) > 1 << 18:
            continue  # a large matrix stays unresolved (WeightsError) rather than be written case after case
        arrays[weights_ref(c)] = (rng.standard_normal(shape) * 0.1).astype(DTYPES[c.dtype])
        dtypes[weights_ref(c)] = c.dtype
    with tempfile.TemporaryDirectory() as d:
        pack_weights(arrays, Path(d) / "w.weights", Path(d) / "w.manifest.json", dtypes)
        return (Path(d) / "w.weights").read_bytes(), (Path(d) / "w.manifest.json").read_text()


def make(corpus: Corpus, seed: int, k: int) -> Case:
    rng = np.random.default_rng([seed, k])
    which = k % 5
    if which <= 1:  # text: mostly on the graph (the damage reaches validation and beyond), else tokens, chars
        level = rng.random()
        if level < 0.6:
            i = _pick(rng, corpus.parsed)
            return Case("text", mutate_graph(rng, corpus.graphs[i], corpus.ops), seed_index=i)
        i = int(rng.integers(0, len(corpus.texts)))
        mutator = mutate_text if level < 0.9 else mutate_chars
        return Case("text", mutator(rng, corpus.texts[i]), seed_index=i)
    if which <= 3:  # JSON: half on the graph, half as a JSON tree (the reader's own checks)
        i = _pick(rng, corpus.parsed)
        if rng.random() < 0.5:
            return Case("json", mutate_graph(rng, corpus.graphs[i], corpus.ops, as_json=True), seed_index=i)
        return Case("json", mutate_json(rng, corpus.jsons[i]), seed_index=i)
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
    """One folder per seed holding that seed's `.weights` + manifest, written once, beside which each of its
    text and JSON cases is written (rewriting the sidecars whenever the seed changed cost a third of a
    case); manifest cases get a folder of their own."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="webxnn-fuzz-text-"))
        self.seeded: set[int] = set()

    def seed_dir(self, corpus: Corpus, i: int) -> Path:
        """The folder of seed i, its sidecars written on first use."""
        d = self.root / f"s{i}"
        if i not in self.seeded:
            d.mkdir()
            weights, manifest = corpus.sidecars[i]
            (d / "m.weights").write_bytes(weights)
            (d / "m.manifest.json").write_text(manifest)
            self.seeded.add(i)
        return d

    def manifest_dir(self, corpus: Corpus) -> Path:
        """The folder of manifest cases: the example's text, written on first use."""
        d = self.root / "manifest"
        if not d.is_dir():
            d.mkdir()
            (d / "m.webnn").write_text(corpus.texts[0])
        return d

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def round_trip(g: Any, from_text: bool) -> None:
    """What parses prints and re-parses to the same graph: through JSON, and through text when it came from
    text (a JSON graph may rename outputs, which text cannot say)."""
    from webxnn.dsl import parse, parse_json, to_json, to_text

    if from_text:
        assert parse(to_text(g)) == g, "graph -> text -> graph changed the graph"
    assert parse_json(to_json(g)) == g, "graph -> JSON -> graph changed the graph"


def check(corpus: Corpus, work: Workdir, case: Case) -> None:
    import webxnn

    from .run_graph import compile_and_run

    if case.kind in ("text", "json"):  # through the file reader, as a user's file would come
        d = work.seed_dir(corpus, case.seed_index)
        path, other = (d / "m.webnn", d / "m.json") if case.kind == "text" else (d / "m.json", d / "m.webnn")
        other.unlink(missing_ok=True)
        path.write_bytes(case.data)
        g = webxnn.load_graph(path)
        round_trip(g, case.kind == "text")
        if any(c.init.kind == "weights" and name not in g.weights for name, c in g.consts.items()):
            return  # a weight the manifest lacks: loading said so, or the graph does not use it
    else:
        d = work.manifest_dir(corpus)
        (d / "m.weights").write_bytes(case.weights)
        (d / "m.manifest.json").write_bytes(case.data)
        g = webxnn.load_graph(d / "m.webnn")
    compile_and_run(g)
