"""Weights manifest, `.weights` layouts (WGWT header, headerless, unaligned with gaps), sidecars,
const data."""

from __future__ import annotations

import json
import pathlib
import shutil
import struct

import numpy as np
import pytest

from webxnn.dsl import (
    attach_weights,
    const_array,
    load_graph,
    load_manifest,
    pack_weights,
    parse,
    unpack_weights,
)
from webxnn.errors import FileError, ParseError, UnsupportedError, ValidationError, WeightsError
from webxnn.graph import DTYPES

CONF = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "webnn-graph"


def _conf(sub: str) -> pathlib.Path:
    d = CONF / sub
    if not d.is_dir():
        pytest.skip(f"conformance data not found at {d}")
    return d


def _synthesize(manifest: dict, path: pathlib.Path, arrays: dict[str, np.ndarray], header: bool) -> None:
    """Write a `.weights` file for `manifest`, each tensor at its absolute byteOffset; gaps are filled with
    0xEE so that reading the wrong bytes shows."""
    end = max((t["byteOffset"] + t["byteLength"] for t in manifest["tensors"].values()), default=0)
    buf = bytearray(b"\xee" * max(end, 8 if header else 0))
    if header:
        buf[:8] = b"WGWT" + struct.pack("<I", 1)
    for key, t in manifest["tensors"].items():
        data = arrays[key].astype(DTYPES[t["dataType"]]).tobytes()
        assert len(data) == t["byteLength"]
        buf[t["byteOffset"] : t["byteOffset"] + len(data)] = data
    path.write_bytes(bytes(buf))


def _arrays_for(manifest: dict, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(t["shape"]).astype(np.float32) for k, t in manifest["tensors"].items()}


def test_resnet_head_all_layouts_give_identical_arrays(tmp_path: pathlib.Path) -> None:
    ex = _conf("examples")
    wgwt = json.loads((ex / "resnet_head.manifest.json").read_text())
    headerless = json.loads((ex / "weights.manifest.json").read_text())
    assert wgwt["tensors"]["W"]["byteOffset"] == 8 and headerless["tensors"]["W"]["byteOffset"] == 0
    arrays = _arrays_for(wgwt)
    # unaligned, out of order, with gaps
    unaligned = json.loads(json.dumps(wgwt))
    unaligned["tensors"]["b"]["byteOffset"] = 3
    unaligned["tensors"]["W"]["byteOffset"] = 3 + 4000 + 17
    results = []
    for name, man, header in (("wgwt", wgwt, True), ("raw", headerless, False), ("odd", unaligned, False)):
        d = tmp_path / name
        d.mkdir()
        shutil.copy(ex / "resnet_head.webnn", d / "resnet_head.webnn")
        (d / "resnet_head.manifest.json").write_text(json.dumps(man))
        _synthesize(man, d / "resnet_head.weights", arrays, header)
        g = load_graph(d / "resnet_head.webnn")  # sidecars found next to the graph
        assert g.source == str(d / "resnet_head.webnn")
        results.append({k: const_array(g, k) for k in ("W", "b")})
    for r in results:
        for k in ("W", "b"):
            assert r[k].dtype == np.float32 and r[k].shape == arrays[k].shape
            np.testing.assert_array_equal(r[k], arrays[k])
    assert not results[2]["W"].flags.writeable  # a view into the read-only map


def test_explicit_paths_relative_to_graph(tmp_path: pathlib.Path) -> None:
    ex = _conf("examples")
    man = json.loads((ex / "weights.manifest.json").read_text())
    arrays = _arrays_for(man, 1)
    (tmp_path / "g").mkdir()
    shutil.copy(ex / "resnet_head.webnn", tmp_path / "g" / "net.webnn")
    shutil.copy(ex / "weights.manifest.json", tmp_path / "g" / "w.manifest.json")
    _synthesize(man, tmp_path / "g" / "w.bin", arrays, header=False)
    g = load_graph(tmp_path / "g" / "net.webnn", weights="w.bin", manifest="w.manifest.json")
    np.testing.assert_array_equal(const_array(g, "b"), arrays["b"])
    # a .weights path without manifest: <stem>.manifest.json next to the weights file
    shutil.copy(tmp_path / "g" / "w.bin", tmp_path / "g" / "w.weights")
    g = attach_weights(parse((ex / "resnet_head.webnn").read_text()), tmp_path / "g" / "w.weights")
    np.testing.assert_array_equal(const_array(g, "W"), arrays["W"])


def test_model_sidecars_and_missing_weights(tmp_path: pathlib.Path) -> None:
    text = 'webnn_graph "t" v1 { consts { w: f32[2] @weights("k"); } outputs { w } }'
    (tmp_path / "a.webnn").write_text(text)
    g = load_graph(tmp_path / "a.webnn")  # no sidecars: loads, data unresolved
    with pytest.raises(WeightsError, match=r"const 'w'.*@weights\('k'\).*no weights"):
        const_array(g, "w")
    pack_weights(
        {"k": np.array([1.5, -2], np.float32)}, tmp_path / "model.weights", tmp_path / "manifest.json"
    )
    g = load_graph(tmp_path / "a.webnn")
    np.testing.assert_array_equal(const_array(g, "w"), [1.5, -2])
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(WeightsError, match="no manifest"):
        load_graph(tmp_path / "a.webnn")
    with pytest.raises(FileError, match=r"nope\.weights: no such file \(the weights file\)"):
        load_graph(tmp_path / "a.webnn", weights="nope.weights")
    with pytest.raises(FileError, match=r"nope\.json: no such file \(the weights manifest\)"):
        load_graph(tmp_path / "a.webnn", weights="model.weights", manifest="nope.json")


def test_safetensors_unsupported(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.webnn").write_text('webnn_graph "t" v1 { consts { w: f32[2]; } outputs { w } }')
    (tmp_path / "a.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(UnsupportedError, match="safetensors"):
        load_graph(tmp_path / "a.webnn")


def test_graph_without_weights_consts_ignores_sidecars(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.webnn").write_text('webnn_graph "t" v1 { consts { w: f32[2] @scalar(1); } outputs { w } }')
    (tmp_path / "a.weights").write_bytes(b"junk")
    g = load_graph(tmp_path / "a.webnn")
    np.testing.assert_array_equal(const_array(g, "w"), [1, 1])


def test_json_graph_file_sniffed(tmp_path: pathlib.Path) -> None:
    g = parse('webnn_graph "t" v1 { inputs { x: f32[1]; } outputs { x } }')
    (tmp_path / "g.webnn").write_text("\n  " + g.to_json())  # content decides, not the extension
    assert load_graph(tmp_path / "g.webnn") == g
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ParseError, match="UTF-8"):
        load_graph(tmp_path / "bad.json")
    with pytest.raises(FileError, match="missing.webnn: no such file"):
        load_graph(tmp_path / "missing.webnn")


def test_format_reference_with_real_weights() -> None:
    d = _conf("examples-0.4.0")
    g = load_graph(d / "format_reference.webnn")
    w = const_array(g, "external_weight")
    np.testing.assert_allclose(w.ravel(), np.arange(16, dtype=np.float32) / 10, rtol=1e-6)
    bias = const_array(g, "bias")
    assert bias.shape == () and bias.dtype == np.float32
    np.testing.assert_array_equal(const_array(g, "inline_mask"), np.array([1, 1, 0, 0], np.uint8))
    # the graph computes concat(split(input + bias)) = input + 0.5
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    left, right = np.split(x + bias, [2], axis=1)
    np.testing.assert_array_equal(np.concatenate([left, right], axis=1), x + np.float32(0.5))


def test_mobilenet_manifest_loads() -> None:
    m = load_manifest(_conf("rustnn-examples") / "mobilenetv2_manifest.json")
    e = m.tensors["operand_1"]
    assert (e.dtype, e.shape, e.byte_offset, e.byte_length) == ("float32", (32, 3, 3, 3), 8, 3456)


# -- checks -----------------------------------------------------------------------------------------------

G = parse(
    'webnn_graph "t" v1 { consts { w: f32[2, 3] @weights("enc.w"); s: f32[1] @scalar(2); } outputs { w s } }'
)


def _setup(tmp_path: pathlib.Path, tensors: dict, file_size: int = 64, header: bool = False) -> tuple:
    man = {"format": "wg-weights-manifest", "version": 1, "endianness": "little", "tensors": tensors}
    mp = tmp_path / "m.json"
    mp.write_text(json.dumps(man))
    wp = tmp_path / "m.weights"
    data = bytearray(file_size)
    if header:
        data[:8] = b"WGWT" + struct.pack("<I", 1)
    wp.write_bytes(bytes(data))
    return wp, mp


def _t(dtype: str = "float32", shape: list | None = None, off: int = 8, length: int = 24) -> dict:
    return {
        "dataType": dtype,
        "shape": [2, 3] if shape is None else shape,
        "byteOffset": off,
        "byteLength": length,
    }


@pytest.mark.parametrize(
    "tensors,size,pattern",
    [
        ({"other": _t()}, 64, r"const 'w' \(weights key 'enc.w'\): not in manifest"),
        (
            {"enc.w": _t(dtype="float16", length=12)},
            64,
            r"dataType float16 does not match the const's float32",
        ),
        ({"enc.w": _t(shape=[3, 2])}, 64, r"shape \[3, 2\] does not match the const's \[2, 3\]"),
        ({"enc.w": _t(length=20)}, 64, r"byteLength 20 but float32\[2, 3\] needs 24"),
        ({"enc.w": _t(off=48)}, 64, r"bytes \[48, 72\) are past the end of .*\(64 bytes\)"),
        ({"enc.w": _t(), "enc_w": _t()}, 64, None),  # exact key wins, no ambiguity
        ({"enc::w": _t(), "enc__w": _t()}, 64, r"not in manifest"),
    ],
)
def test_manifest_checks_name_the_culprit(
    tmp_path: pathlib.Path, tensors: dict, size: int, pattern: str | None
) -> None:
    wp, mp = _setup(tmp_path, tensors, size)
    g = parse(G.to_text())
    if pattern is None:
        attach_weights(g, wp, mp)
        assert const_array(g, "w").shape == (2, 3)
        return
    with pytest.raises(WeightsError, match=pattern):
        attach_weights(g, wp, mp)


def test_name_normalization_fallback(tmp_path: pathlib.Path) -> None:
    g = parse('webnn_graph "t" v1 { consts { w: f32[2, 3] @weights("onnx__MatMul_0"); } outputs { w } }')
    wp, mp = _setup(tmp_path, {"onnx::MatMul.0": _t(off=0)})
    attach_weights(g, wp, mp)
    assert const_array(g, "w").shape == (2, 3)
    wp, mp = _setup(tmp_path, {"onnx::MatMul_0": _t(off=0), "onnx__MatMul.0": _t(off=0)})
    g.weights.clear()
    with pytest.raises(WeightsError, match="ambiguous"):
        attach_weights(g, wp, mp)


@pytest.mark.parametrize(
    "edit,pattern",
    [
        (lambda m: m.pop("endianness"), "missing required field 'endianness'"),
        (lambda m: m.update(format="x"), "format must be"),
        (lambda m: m.update(version=2), "unsupported manifest version 2"),
        (lambda m: m.update(endianness="big"), "endianness must be"),
        (lambda m: m.update(tensors=[]), "tensors must be an object"),
        (
            lambda m: m["tensors"]["a"].pop("byteLength"),
            r"tensors\['a'\]: missing required field 'byteLength'",
        ),
        (lambda m: m["tensors"]["a"].update(byteOffset=-1), r"byteOffset: expected a non-negative integer"),
        (lambda m: m["tensors"]["a"].update(dataType="float64"), r"unknown data type"),
        (lambda m: m["tensors"]["a"].update(shape=[1.5]), r"shape\[0\]"),
        (lambda m: m["tensors"]["a"].update(layout="col-major"), r"row-major"),
    ],
)
def test_manifest_is_strict(tmp_path: pathlib.Path, edit, pattern: str) -> None:  # noqa: ANN001
    m = {
        "format": "webnn-weights-manifest",
        "version": 1,
        "endianness": "little",
        "tensors": {
            "a": {"dataType": "float32", "shape": [1], "byteOffset": 0, "byteLength": 4, "layout": None}
        },
    }
    load_manifest(m)  # the 0.3 resolver's test spelling is accepted
    edit(m)
    p = tmp_path / "m.json"
    p.write_text(json.dumps(m))
    with pytest.raises(WeightsError, match=pattern):
        load_manifest(p)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(WeightsError, match="not a valid JSON"):
        load_manifest(tmp_path / "bad.json")


def test_wgwt_header_version_checked(tmp_path: pathlib.Path) -> None:
    wp, mp = _setup(tmp_path, {"enc.w": _t()}, header=True)
    attach_weights(parse(G.to_text()), wp, mp)
    data = bytearray(wp.read_bytes())
    data[4] = 2
    wp.write_bytes(bytes(data))
    with pytest.raises(WeightsError, match="WGWT header version 2"):
        attach_weights(parse(G.to_text()), wp, mp)
    # a headerless file whose first tensor merely starts with "WGWT" is not a header
    wp, mp = _setup(tmp_path, {"enc.w": _t(off=0)}, header=True)
    data = bytearray(wp.read_bytes())
    data[4] = 9
    wp.write_bytes(bytes(data))
    g = attach_weights(parse(G.to_text()), wp, mp)
    assert const_array(g, "w").tobytes()[:4] == b"WGWT"


def test_empty_weights_file(tmp_path: pathlib.Path) -> None:
    g = parse('webnn_graph "t" v1 { consts { w: f32[0] @weights("e"); v: f32[1]; } outputs { w v } }')
    wp, mp = _setup(tmp_path, {"e": _t(shape=[0], off=0, length=0), "v": _t(shape=[1], off=0, length=4)}, 0)
    with pytest.raises(WeightsError, match="const 'v'.*past the end"):
        attach_weights(g, wp, mp)


def test_attach_dict() -> None:
    g = parse(G.to_text())
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    attach_weights(g, {"enc.w": w})
    np.testing.assert_array_equal(const_array(g, "w"), w)
    g = parse(G.to_text())
    attach_weights(g, {"w": w})  # by const name too
    assert const_array(g, "w") is w
    with pytest.raises(WeightsError, match=r"dtype float64, expected float32"):
        attach_weights(parse(G.to_text()), {"w": w.astype(np.float64)})
    with pytest.raises(WeightsError, match=r"shape \[3, 2\], expected \[2, 3\]"):
        attach_weights(parse(G.to_text()), {"w": w.reshape(3, 2)})


def test_const_array_kinds() -> None:
    g = parse(
        'webnn_graph "t" v1 { consts { a: i32[2, 2] @scalar(-7); b: f32[] @scalar(1e-5); '
        "c: i64[1] @bytes([255, 255, 255, 255, 255, 255, 255, 127]); "
        "d: f16[2] @bytes([0, 60, 0, 188]); "
        "e: i4[2] @scalar(-8); } outputs { a b c d e } }"
    )
    np.testing.assert_array_equal(const_array(g, "a"), np.full((2, 2), -7, np.int32))
    b = const_array(g, "b")
    assert b.shape == () and b.dtype == np.float32 and b == np.float32(1e-5)
    assert const_array(g, "c").tolist() == [2**63 - 1]
    assert const_array(g, "d").tolist() == [1.0, -1.0]
    assert const_array(g, "e").dtype == np.int8
    with pytest.raises(ValidationError, match="no const named 'zz'"):
        const_array(g, "zz")
    assert g.const_array("a").shape == (2, 2)


def test_pack_unpack_roundtrip(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {
        "a.b": rng.standard_normal((3, 5)).astype(np.float32),
        "i/64": np.arange(7, dtype=np.int64),
        "h": rng.standard_normal(9).astype(np.float16),
        "u": np.arange(3, dtype=np.uint8),
        "q": np.array([-8, 7], np.int8),
        "s": np.float32(2.5),
    }
    m = pack_weights(arrays, tmp_path / "p.weights", tmp_path / "p.manifest.json", dtypes={"q": "int4"})
    raw = (tmp_path / "p.weights").read_bytes()
    assert raw[:8] == b"WGWT\x01\x00\x00\x00"
    assert m.tensors["a.b"].byte_offset == 8 and m.tensors["q"].dtype == "int4"
    assert m.tensors["i/64"].byte_offset == 8 + 60  # contiguous, unaligned int64 is fine
    out = unpack_weights(tmp_path / "p.weights", tmp_path / "p.manifest.json", tmp_path / "out")
    for k, v in arrays.items():
        back = np.load(out[k])
        assert back.shape == np.shape(v)
        np.testing.assert_array_equal(back, v)
    assert out["i/64"].name == "i_64.npy"
    with pytest.raises(WeightsError, match="no WebNN equivalent"):
        pack_weights({"b": np.array([True])}, tmp_path / "x.weights", tmp_path / "x.json")
