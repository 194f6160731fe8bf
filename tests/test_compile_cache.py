"""`webxnn.load(path)` of a model compiles it on the fly with the ONNX import options, and through an on-disk
compile cache keyed by content: a hit skips the import, any change to the model, its weights or the options
is a new key, a damaged entry is compiled again, writers never leave half files, and a cache folder that
cannot be written only warns."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import webxnn
from test_usability import assert_one_line_error, cli, subprocess_env
from webxnn import compile_cache
from webxnn.demo import EXAMPLE

onnx = pytest.importorskip("onnx")


def _matmul_model(folder: pathlib.Path, w: np.ndarray, external: bool = True) -> pathlib.Path:
    """y = x @ w with x: [batch_size, 3]; w in the external data file `m.data` unless `external` is False."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch_size", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch_size", 4])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = folder / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=external, location="m.data", size_threshold=0)
    return path


def _weights(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)


@pytest.fixture
def model(tmp_path: pathlib.Path) -> pathlib.Path:
    return _matmul_model(tmp_path, _weights(0))


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _entries(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(folder.glob("*.xnn"))


def test_load_takes_the_onnx_import_options(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    fixed = webxnn.load(model, override_dims={"batch_size": 2})
    assert fixed.inputs[0].shape == (2, 3) and fixed.inputs[0].dynamic == (None, None)
    bounded = webxnn.load(model, dyn_max=8)
    assert bounded.inputs[0].shape == (8, 3) and bounded.inputs[0].dynamic == ("batch_size", None)
    np.testing.assert_allclose(bounded.run({"x": X})["y"], X @ _weights(0), rtol=1e-6)
    # webxnn.compile of a path takes them too
    assert webxnn.load(webxnn.compile(model, dyn_max={"batch_size": 4})).inputs[0].shape == (4, 3)
    # a graph takes its sidecars instead, named as load_graph takes them
    sidecars = {"weights": EXAMPLE.with_suffix(".weights"), "manifest": EXAMPLE.with_suffix(".manifest.json")}
    assert webxnn.load(EXAMPLE, **sidecars).blob() == webxnn.compile(EXAMPLE)
    # options a kind of file has no use for are refused, saying why
    for path, options, words in (
        (EXAMPLE, {"override_dims": {"batch_size": 1}}, "is a .webnn text file, whose dims are fixed"),
        (EXAMPLE, {"dyn_max": 8}, "ONNX import options"),
        (model, {"weights": EXAMPLE.with_suffix(".weights")}, "an ONNX model: it holds its weights"),
    ):
        with pytest.raises(webxnn.OptionError, match=words):
            webxnn.load(path, **options)
    blob = webxnn.compile(EXAMPLE)
    xnn = tmp_path / "t.xnn"
    xnn.write_bytes(blob)
    for target in (blob, xnn):
        with pytest.raises(webxnn.OptionError, match="this is a compiled .xnn blob"):
            webxnn.load(target, dyn_max=8)
    with pytest.raises(webxnn.OptionError, match="give them to webxnn.from_onnx"):
        webxnn.compile(webxnn.from_onnx(model), dyn_max=8)
    assert_one_line_error(cli("compile", str(EXAMPLE), "--dim-max", "8"), "ONNX import options")


def test_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("WEBXNN_CACHE_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compile_cache.cache_folder(True) == tmp_path / "env"
    monkeypatch.delenv("WEBXNN_CACHE_DIR")
    assert compile_cache.cache_folder(True) == tmp_path / "xdg" / "webxnn"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # invalid by the XDG spec: ignored
    assert compile_cache.cache_folder(True) == tmp_path / "home" / ".cache" / "webxnn"
    assert compile_cache.cache_folder(False) is None
    assert compile_cache.cache_folder(tmp_path / "mine") == tmp_path / "mine"
    with pytest.raises(webxnn.OptionError, match="cache must be False, True or a folder path"):
        compile_cache.cache_folder(3)  # type: ignore[arg-type]
    # cache=True with the variable: the entry lands there
    monkeypatch.setenv("WEBXNN_CACHE_DIR", str(tmp_path / "env"))
    webxnn.load(EXAMPLE, cache=True)
    assert len(_entries(tmp_path / "env")) == 1


def test_a_hit_does_not_import_the_model(
    model: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    first = webxnn.load(model, cache=folder, dyn_max=8)
    [entry] = _entries(folder)

    def no_import(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was imported again")

    monkeypatch.setattr("webxnn.compiler.read_model", no_import)
    monkeypatch.setattr("webxnn.onnx.from_onnx", no_import)
    for mmap in (True, False):
        again = webxnn.load(model, cache=folder, dyn_max=8, mmap=mmap)
        assert again.inputs == first.inputs
        np.testing.assert_array_equal(again.run({"x": X})["y"], first.run({"x": X})["y"])
        assert again.blob() == entry.read_bytes()
    assert _entries(folder) == [entry]
    with pytest.raises(AssertionError, match="imported again"):  # no cache: compiled, as before
        webxnn.load(model, dyn_max=8)


def test_the_key_covers_weights_options_and_model(
    model: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"

    def run(**options: object) -> np.ndarray:
        return webxnn.load(model, cache=folder, **options).run({"x": X})["y"]  # type: ignore[arg-type]

    np.testing.assert_allclose(run(), X @ _weights(0), rtol=1e-6)
    assert len(_entries(folder)) == 1
    run()
    assert len(_entries(folder)) == 1  # same model, same options: the same entry
    # new weights in the external data file only (the .onnx bytes unchanged)
    data = tmp_path / "m.data"
    assert data.read_bytes() == _weights(0).tobytes()
    (tmp_path / "new.data").write_bytes(_weights(1).tobytes())
    (tmp_path / "new.data").replace(data)  # a new file: a map of the old one may still be open
    np.testing.assert_allclose(run(), X @ _weights(1), rtol=1e-6)
    assert len(_entries(folder)) == 2
    # each import option is part of the key
    assert run(dyn_max=4).shape == (2, 4) and len(_entries(folder)) == 3
    assert run(dyn_max={"batch_size": 4}).shape == (2, 4) and len(_entries(folder)) == 4
    assert run(override_dims={"batch_size": 2}).shape == (2, 4) and len(_entries(folder)) == 5
    # the model's own bytes: the weights inline now
    _matmul_model(tmp_path, _weights(2), external=False)
    np.testing.assert_allclose(run(), X @ _weights(2), rtol=1e-6)
    assert len(_entries(folder)) == 6
    # a .webnn graph: its .weights sidecar is part of the key
    graph = tmp_path / "g" / EXAMPLE.name
    graph.parent.mkdir()
    for f in EXAMPLE.parent.glob(EXAMPLE.stem + ".*"):
        (graph.parent / f.name).write_bytes(f.read_bytes())
    key = compile_cache.cache_key(graph, "webnn")
    weights = graph.with_suffix(".weights")
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert compile_cache.cache_key(graph, "webnn") != key
    # and webxnn's version
    monkeypatch.setattr(webxnn, "__version__", webxnn.__version__ + "+other")
    compile_cache._code_fingerprint.cache_clear()
    try:
        assert compile_cache.cache_key(graph, "webnn") not in (key, compile_cache.cache_key(graph, "json"))
    finally:
        monkeypatch.undo()
        compile_cache._code_fingerprint.cache_clear()


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage"])
def test_a_damaged_entry_is_compiled_again(model: pathlib.Path, tmp_path: pathlib.Path, damage: str) -> None:
    folder = tmp_path / "cache"
    webxnn.load(model, cache=folder)
    [entry] = _entries(folder)
    good = entry.read_bytes()
    bad = {"empty": b"", "truncated": good[: len(good) // 2], "garbage": b"\x00" * 4 + b"XH00" + b"\xff" * 64}
    entry.write_bytes(bad[damage])
    prog = webxnn.load(model, cache=folder)
    np.testing.assert_allclose(prog.run({"x": X})["y"], X @ _weights(0), rtol=1e-6)
    assert entry.read_bytes() == good  # replaced by the recompiled blob


def test_concurrent_writers(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Two processes compiling the same model into the same cache at once: both run it, one whole entry is
    left and no temporary file."""
    folder = tmp_path / "cache"
    script = textwrap.dedent(
        f"""
        import numpy as np, webxnn
        prog = webxnn.load({str(model)!r}, cache={str(folder)!r}, threads=1)
        print(prog.run({{"x": np.ones((2, 3), np.float32)}})["y"].sum())
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    assert outs[0][0] == outs[1][0]
    assert [f.suffix for f in folder.iterdir()] == [".xnn"]  # one entry, no .tmp left
    [entry] = _entries(folder)
    assert entry.read_bytes() == webxnn.compile(model)


def test_an_unwritable_cache_folder_warns(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # a folder below a file cannot be made, whoever runs the test
    with pytest.warns(webxnn.WebxnnWarning, match="compile cache .*a-file/cache: cannot write"):
        prog = webxnn.load(model, cache=blocker / "cache")
    np.testing.assert_allclose(prog.run({"x": X})["y"], X @ _weights(0), rtol=1e-6)
    r = cli("run", str(model), "--cache-dir", str(blocker / "cache"), "--random-inputs")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "webxnn: warning: compile cache" in r.stderr


def test_cli_run_cache(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "cache"
    args = ["run", str(model), "--cache-dir", str(folder), "--random-inputs", "--dim-max", "4"]
    r = cli(*args)
    assert r.returncode == 0 and "y: float32[4, 4]" in r.stdout, r.stderr
    [entry] = _entries(folder)
    # what runs the second time is the entry: one compiled with another bound, put in its place, shows
    entry.write_bytes(webxnn.compile(model, dyn_max=3))
    r = cli(*args)
    assert r.returncode == 0 and "y: float32[3, 4]" in r.stdout, r.stderr
    # --cache: the per-user folder ($WEBXNN_CACHE_DIR here)
    env_folder = tmp_path / "env"
    r = cli("run", str(model), "--cache", "--random-inputs", WEBXNN_CACHE_DIR=str(env_folder))
    assert r.returncode == 0, r.stderr
    assert len(_entries(env_folder)) == 1
