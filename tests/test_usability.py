"""webxnn behaves like onnxruntime and never surprises: one error class for missing files, every kind of file
recognised and named when given to the wrong command, any model path loads, and the command line (run as a
user runs it, in a subprocess) answers bad arguments and bad files with one line, never a traceback."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import webxnn
from webxnn.demo import EXAMPLE
from webxnn.filekind import sniff, sniff_bytes

REPO = pathlib.Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # the package as the tests import it (an install, or PYTHONPATH=python)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(pathlib.Path(webxnn.__file__).parents[1]), env.get("PYTHONPATH", "")]
    )
    return subprocess.run(
        [sys.executable, "-m", "webxnn", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def assert_one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "error:" in last, r.stderr
    for w in words:
        assert w in last, r.stderr


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("blob") / "tiny.xnn"
    out.write_bytes(webxnn.compile(EXAMPLE))
    return out


# 1. one error class for a file that is missing or cannot be read


@pytest.mark.parametrize("call", [webxnn.load, webxnn.load_graph, webxnn.from_onnx, webxnn.compile])
def test_missing_file_is_one_error_class(call, tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "nope.model"
    with pytest.raises(webxnn.FileError) as e:
        call(missing)
    assert isinstance(e.value, webxnn.WebxnnError) and isinstance(e.value, FileNotFoundError)
    assert str(e.value) == f"{missing}: no such file" and e.value.filename == str(missing)


def test_folder_is_a_file_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(webxnn.FileError, match="is a folder"):
        webxnn.load(tmp_path)


# 3. kinds of file told from their bytes, and named when given to the wrong command


def test_sniff_kinds(blob: pathlib.Path, tmp_path: pathlib.Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros(3))
    np.savez(tmp_path / "a.npz", a=np.zeros(3))
    (tmp_path / "g.json").write_text('{"format": "webnn-graph-json"}')
    assert sniff(blob) == "xnn" and sniff(EXAMPLE) == "webnn"
    assert sniff(EXAMPLE.with_suffix(".weights")) == "weights"
    assert sniff(tmp_path / "a.npy") == "npy" and sniff(tmp_path / "a.npz") == "npz"
    assert sniff(tmp_path / "g.json") == "json"
    assert sniff_bytes(b"\x1c\0\0\0ET12" + bytes(16), ".pte") == "pte"
    # an ONNX ModelProto: ir_version (field 1, varint), then producer_name (field 2, bytes)
    assert sniff_bytes(b"\x08\x08\x12\x07pytorch:\x00", "") == "onnx"
    assert sniff_bytes(b"\x00\x01\x02\x03 binary junk", "") == "unknown"


def test_wrong_kinds_are_named(blob: pathlib.Path, tmp_path: pathlib.Path) -> None:
    with pytest.raises(webxnn.WebxnnError, match=r"this is a compiled \.xnn blob.*webxnn run"):
        webxnn.compile(blob)
    with pytest.raises(webxnn.WebxnnError, match=r"this is a compiled \.xnn blob"):
        webxnn.load_graph(blob)
    with pytest.raises(webxnn.WebxnnError, match=r"this is a \.weights file"):
        webxnn.load(EXAMPLE.with_suffix(".weights"))
    pte = tmp_path / "m.pte"
    pte.write_bytes(b"\x1c\0\0\0ET12" + bytes(64))
    # a .pte is run as the XnnpackBackend payload it carries; one without is refused saying what it holds
    with pytest.raises(
        webxnn.UnsupportedError, match=r"one XnnpackBackend delegate call; this one has 0 method"
    ):
        webxnn.load(pte)


# 4. any model path loads; compile takes a path


def test_load_and_compile_take_any_model_path(blob: pathlib.Path) -> None:
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = webxnn.load(blob).run({"x": x})["probs"]
    np.testing.assert_array_equal(webxnn.load(EXAMPLE).run({"x": x})["probs"], want)
    assert webxnn.compile(EXAMPLE) == webxnn.compile(webxnn.load_graph(EXAMPLE))
    with pytest.raises(TypeError):
        webxnn.compile(42)  # type: ignore[arg-type]


def test_load_and_run_onnx_path(tmp_path: pathlib.Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "relu.onnx"
    onnx.save(model, str(path))
    assert sniff(path) == "onnx"
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(webxnn.load(path).run([x])["y"], np.maximum(x, 0))
    np.save(tmp_path / "x.npy", x)
    r = cli("run", str(path), "--input", f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), np.maximum(x, 0))


# 2. the command line: argument ranges, one-line errors, --debug, --version


@pytest.mark.parametrize(
    "args",
    [
        ["run", "{blob}", "--threads", "-3"],
        ["demo", "--threads", "-1"],
        ["run", "{blob}", "--random-inputs", "--profile", "-2"],
        ["run", "{blob}", "--random-inputs", "--profile", "0"],
        ["run", "{blob}", "--random-inputs", "--repeat", "-1"],
        ["run", "{blob}", "--random-inputs", "--repeat", "x"],
    ],
)
def test_cli_refuses_bad_counts(args: list[str], blob: pathlib.Path) -> None:
    r = cli(*(a.format(blob=blob) for a in args))
    assert_one_line_error(r, "argument --")
    assert "usage:" in r.stderr


def test_cli_errors_are_one_line(blob: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert_one_line_error(cli("compile", str(EXAMPLE), "-o", str(tmp_path)), "webxnn: error:", "folder")
    assert_one_line_error(cli("run", str(tmp_path / "m.xnn")), "webxnn: error:", "m.xnn: no such file")
    assert_one_line_error(cli("compile", str(blob)), "compiled .xnn blob", "webxnn run")
    assert_one_line_error(
        cli("run", str(blob), "--input", f"x={EXAMPLE.with_suffix('.weights')}"), ".weights file", "--input x"
    )
    assert_one_line_error(
        cli("run", str(blob), "--input", f"x={tmp_path / 'nope.npy'}"), "nope.npy: no such file", "--input x"
    )
    r = cli("--debug", "run", str(tmp_path / "m.xnn"))
    assert r.returncode != 0 and "Traceback" in r.stderr and "FileError" in r.stderr


def test_cli_version() -> None:
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"webxnn {webxnn.__version__}"


def test_cli_runs_a_webnn_graph(tmp_path: pathlib.Path) -> None:
    r = cli("run", str(EXAMPLE), "--random-inputs", "--repeat", "2", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "probs: float32[1, 10]" in r.stdout and (tmp_path / "probs.npy").is_file()


# 5. validate checks weights; weights unpack -o; inspect --json shapes are lists


def test_validate_needs_the_weights(tmp_path: pathlib.Path) -> None:
    import shutil

    from webxnn.cli import main

    graph = tmp_path / "tiny_cnn.webnn"
    shutil.copy(EXAMPLE, graph)
    r = cli("validate", str(graph))
    assert_one_line_error(r, "6 of 6 consts use @weights", "tiny_cnn.weights", "--no-weights")
    assert main(["validate", str(graph), "--no-weights"]) == 0
    assert main(["validate", str(EXAMPLE)]) == 0
    short = tmp_path / "short.weights"
    short.write_bytes(EXAMPLE.with_suffix(".weights").read_bytes()[:100])
    assert_one_line_error(
        cli(
            "validate",
            str(graph),
            "--weights",
            str(short),
            "--manifest",
            str(EXAMPLE.with_suffix(".manifest.json")),
        ),
        "past the end",
    )


def test_weights_unpack_short_output_option(tmp_path: pathlib.Path) -> None:
    r = cli(
        "weights",
        "unpack",
        "--weights",
        str(EXAMPLE.with_suffix(".weights")),
        "--manifest",
        str(EXAMPLE.with_suffix(".manifest.json")),
        "-o",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "conv1_w.npy").is_file()


def test_inspect_json_shapes_are_lists(blob: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    import json

    from webxnn.cli import main

    assert main(["inspect", str(EXAMPLE), "--json"]) == 0
    g = json.loads(capsys.readouterr().out)
    assert g["inputs"]["x"] == {"dtype": "float32", "shape": [1, 3, 32, 32]}
    assert g["outputs"]["probs"]["shape"] == [1, 10]
    assert main(["inspect", str(blob), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"][0]["dims"] == [1, 3, 32, 32]
    dyn = tmp_path / "dyn.webnn"
    dyn.write_text(
        'webnn_graph "d" v1 {\n  inputs { x: f32[dyn("batch", 4), 3]; }\n'
        "  nodes { y = relu(x); }\n  outputs { y; }\n}\n"
    )
    assert main(["inspect", str(dyn), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["x"] == {
        "dtype": "float32",
        "shape": [4, 3],
        "dynamic": ["batch", None],
    }


# 6. run(inputs, outputs=[names])


def test_run_selected_outputs(tmp_path: pathlib.Path) -> None:
    g = webxnn.parse(
        'webnn_graph "two" v1 {\n  inputs { x: f32[2]; }\n  nodes {\n    a = relu(x);\n'
        "    b = neg(x);\n  }\n  outputs { a; b; }\n}\n"
    )
    prog = webxnn.load(webxnn.compile(g))
    x = np.array([-1, 2], np.float32)
    assert list(prog.run([x])) == ["a", "b"]
    only = prog.run([x], outputs=["b"])
    assert list(only) == ["b"] and only["b"].tolist() == [1, -2]
    assert list(prog.run({"x": x}, outputs=["b", "a"])) == ["b", "a"]
    with pytest.raises(webxnn.InputError, match=r"unknown output\(s\) \['c'\]; the outputs are \['a', 'b'\]"):
        prog.run([x], outputs=["c"])
    with pytest.raises(webxnn.InputError, match="list of output names"):
        prog.run([x], outputs="a")  # type: ignore[arg-type]


def test_load_names_wrong_bytes_and_leaves_junk_to_the_verifier(tmp_path: pathlib.Path) -> None:
    with pytest.raises(webxnn.FormatError, match=r"these bytes are a \.webnn text file.*webxnn compile"):
        webxnn.load(EXAMPLE.read_bytes())
    junk = tmp_path / "junk.xnn"
    junk.write_bytes(b"\x01\x02" * 30)
    with pytest.raises(webxnn.FormatError, match="file identifier"):  # the blob verifier's own words
        webxnn.load(junk)


# 8. run(..., out={name: array}): the caller's arrays, checked, written in place


def _two_outputs() -> webxnn.Program:
    g = webxnn.parse(
        'webnn_graph "two" v2 {\n  inputs { x: f32[dyn("n", 4), 3]; }\n  nodes {\n    a = relu(x);\n'
        "    b = neg(x);\n  }\n  outputs { a; b; }\n}\n"
    )
    return webxnn.load(webxnn.compile(g))


def test_run_into_caller_arrays() -> None:
    prog = _two_outputs()
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    a = np.full((2, 3), 7, np.float32)
    b = np.empty((2, 3), np.float32)
    got = prog.run({"x": x}, out={"a": a, "b": b})
    assert got["a"] is a and got["b"] is b
    np.testing.assert_array_equal(a, np.maximum(x, 0))
    np.testing.assert_array_equal(b, -x)
    only_b = np.empty((2, 3), np.float32)
    got = prog.run([x], out={"b": only_b}, outputs=["b", "a"])
    assert got["b"] is only_b and list(got) == ["b", "a"]
    np.testing.assert_array_equal(got["a"], np.maximum(x, 0))
    rows = np.zeros((4, 3), np.float32)
    got = prog.run([x], out={"a": rows[1:3]})  # a C-contiguous view: written in place
    assert np.shares_memory(got["a"], rows)
    np.testing.assert_array_equal(rows, [[0, 0, 0], [0, 2, 0], [4, 0, 6], [0, 0, 0]])
    small = np.empty((1, 3), np.float32)
    prog.run([x[:1]], out={"b": small})  # the shape the inputs give, not the declared bound
    np.testing.assert_array_equal(small, -x[:1])


@pytest.mark.parametrize(
    "out, words",
    [
        ({"a": np.empty((2, 3), np.float64)}, r"out\['a'\]: expected dtype float32, got float64"),
        ({"a": np.empty((4, 3), np.float32)}, r"out\['a'\]: expected shape \[2, 3\], got \[4, 3\]"),
        ({"a": np.empty((3, 2), np.float32).T}, r"out\['a'\]: must be C-contiguous"),
        ({"a": np.empty((2, 3), np.float32), "c": np.empty(1)}, r"out: unknown output\(s\) \['c'\]"),
        ({"a": [[0.0] * 3] * 2}, r"out\['a'\]: expected a numpy array, got list"),
        ("a", r"out must be a dict"),
    ],
)
def test_run_into_caller_arrays_checked(out, words: str) -> None:
    prog = _two_outputs()
    x = np.ones((2, 3), np.float32)
    with pytest.raises(webxnn.InputError, match=words):
        prog.run([x], out=out)


def test_run_into_caller_arrays_refuses_aliases() -> None:
    prog = _two_outputs()
    x = np.ones((2, 3), np.float32)
    ro = np.empty((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(webxnn.InputError, match=r"out\['a'\]: is read-only"):
        prog.run([x], out={"a": ro})
    with pytest.raises(webxnn.InputError, match=r"out\['a'\]: shares memory with an input"):
        prog.run([x], out={"a": x})
    same = np.empty((2, 3), np.float32)
    with pytest.raises(webxnn.InputError, match=r"out\['b'\]: shares memory with an input or another output"):
        prog.run([x], out={"a": same, "b": same})

