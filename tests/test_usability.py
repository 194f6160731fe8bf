"""webxnn behaves like onnxruntime and never surprises: one error class for missing files, every kind of file
recognised and named when given to the wrong command, any model path loads, and the command line (run as a
user runs it, in a subprocess) answers bad arguments and bad files with one line, never a traceback."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import webxnn
from webxnn.demo import EXAMPLE
from webxnn.filekind import sniff, sniff_bytes

REPO = pathlib.Path(__file__).resolve().parents[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    """This environment plus `extra`, for a Python subprocess that imports the package as the tests do (an
    install, or PYTHONPATH=python)."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(pathlib.Path(webxnn.__file__).parents[1]), env.get("PYTHONPATH", "")]
    )
    return env


def cli(*args: str, cwd: pathlib.Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """`webxnn ARGS` in a subprocess, with the variables `env` set."""
    return subprocess.run(
        [sys.executable, "-m", "webxnn", *args],
        capture_output=True,
        text=True,
        env=subprocess_env(**env),
        cwd=cwd,
        timeout=120,
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


# 7. ONNX names kept end to end; symbolic dims kept dynamic up to a bound (dyn_max / --dim-max)

# names an ONNX exporter may well write, none of them a .webnn identifier ("x=1" also holds the CLI's "=")
IN_A, IN_B, OUT_A, OUT_B = "0", "x=1", "logits:0", "ŷ"


def _named_model(path: pathlib.Path, batch: int | str) -> pathlib.Path:
    """y1 = relu(in_a), y2 = in_a + in_b; inputs [batch, 3] ("batch_size" when symbolic)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    dims = [batch, 3]
    graph = helper.make_graph(
        [helper.make_node("Relu", [IN_A], [OUT_A]), helper.make_node("Add", [IN_A, IN_B], [OUT_B])],
        "named",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n in (IN_A, IN_B)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n in (OUT_A, OUT_B)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _feeds(batch: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch)
    return {n: rng.standard_normal((batch, 3)).astype(np.float32) for n in (IN_A, IN_B)}


def _check(got: dict[str, np.ndarray], feeds: dict[str, np.ndarray]) -> None:
    assert list(got) == [OUT_A, OUT_B]
    np.testing.assert_array_equal(got[OUT_A], np.maximum(feeds[IN_A], 0))
    np.testing.assert_array_equal(got[OUT_B], feeds[IN_A] + feeds[IN_B])


def test_onnx_names_kept_end_to_end(tmp_path: pathlib.Path, capsys) -> None:
    model = _named_model(tmp_path / "named.onnx", 2)
    g = webxnn.from_onnx(model)
    assert sorted(g.io_names.values()) == sorted([IN_A, IN_B, OUT_A, OUT_B])
    feeds = _feeds(2)
    for prog in (webxnn.load(model), webxnn.load(webxnn.compile(g)), webxnn.load(webxnn.compile(model))):
        assert [i.name for i in prog.inputs] == [IN_A, IN_B]
        assert [o.name for o in prog.outputs] == [OUT_A, OUT_B]
        _check(prog.run(feeds), feeds)
        assert list(prog.run(feeds, outputs=[OUT_B])) == [OUT_B]
    # through a .xnn file and back, and what inspect says of the blob and of the model
    xnn = tmp_path / "named.xnn"
    r = cli("compile", str(model), "-o", str(xnn))
    assert r.returncode == 0, r.stderr
    _check(webxnn.load(xnn).run(feeds), feeds)
    from webxnn.xnn.describe import summary_dict
    from webxnn.xnn.reader import read

    summary = summary_dict(read(xnn.read_bytes()))
    assert [v["name"] for v in summary["inputs"]] == [IN_A, IN_B]
    assert [v["name"] for v in summary["outputs"]] == [OUT_A, OUT_B]
    r = cli("inspect", str(model), "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert list(info["inputs"]) == [IN_A, IN_B] and info["inputs"][IN_A]["id"] == "_0"
    assert list(info["outputs"]) == [OUT_A, OUT_B]
    # the CLI: --input NAME=FILE with '=' in the name, outputs written under file-safe names
    for n, a in feeds.items():
        np.save(tmp_path / f"in{len(n)}.npy", a)
    for path in (xnn, model):
        out = tmp_path / f"out-{path.suffix[1:]}"
        r = cli(
            "run", str(path), "--input", f"{IN_A}={tmp_path / 'in1.npy'}",
            "--input", f"{IN_B}={tmp_path / 'in3.npy'}", "-o", str(out),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert f"  {OUT_A}: float32[2, 3]" in r.stdout and f"  {OUT_B}: float32[2, 3]" in r.stdout
        np.testing.assert_array_equal(np.load(out / "logits_0.npy"), np.maximum(feeds[IN_A], 0))
    # xnnrun (the C API): the same names
    xnnrun = shutil.which("xnnrun")
    if xnnrun:
        feeds[IN_A].tofile(tmp_path / "a.bin")
        r = subprocess.run(
            [xnnrun, str(xnn), "--input", f"{IN_A}={tmp_path / 'a.bin'}"], capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        assert f"input  {IN_A}: float32 [2, 3]" in r.stdout and f"output {OUT_A}: float32 [2, 3]" in r.stdout
    # the .webnn text cannot hold these names: import-onnx renames them, and says so
    r = cli("import-onnx", str(model), "-o", str(tmp_path / "named.webnn"))
    assert r.returncode == 0, r.stderr
    warned = "webxnn: warning: input/output names that are not .webnn identifiers were renamed: '0' -> '_0'"
    assert warned in r.stderr


def test_input_names_holding_equals_signs(tmp_path: pathlib.Path) -> None:
    """`--input NAME=FILE` splits at the '=' whose left part is one of the model's input names, in `webxnn
    run` and in xnnrun alike: with inputs "a" and "a=b", `a=b=ab.npy` is input "a=b" from ab.npy while no
    file b=ab.npy exists; with both files it is ambiguous, and a name the model lacks lists its inputs."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Sub", ["a", "a=b"], ["y"])],
        "eq",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "a=b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = tmp_path / "eq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    xnn = tmp_path / "eq.xnn"
    xnn.write_bytes(webxnn.compile(model))
    a, ab = np.array([1, 2], np.float32), np.array([10, 40], np.float32)
    xnnrun = shutil.which("xnnrun")
    for ext in (".npy", ".bin"):
        if ext == ".bin" and xnnrun is None:
            continue

        def run(*specs: str, ext: str = ext) -> subprocess.CompletedProcess:
            args = [arg for spec in specs for arg in ("--input", spec)]
            if ext == ".npy":
                return cli("run", str(model), *args, cwd=tmp_path)
            return subprocess.run(
                [xnnrun, str(xnn), *args], capture_output=True, text=True, cwd=tmp_path, timeout=60
            )

        for name, arr in (("a", a), ("ab", ab)):
            if ext == ".npy":
                np.save(tmp_path / f"{name}.npy", arr)
            else:
                arr.tofile(tmp_path / f"{name}.bin")
        r = run(f"a=a{ext}", f"a=b=ab{ext}")
        assert r.returncode == 0, r.stderr
        assert "-9, -38" in r.stdout or "-9 -38" in r.stdout, r.stdout
        (tmp_path / f"b=ab{ext}").write_bytes((tmp_path / f"ab{ext}").read_bytes())
        r = run(f"a=a{ext}", f"a=b=ab{ext}")
        readings = f"input 'a' from 'b=ab{ext}' or 'a=b' from 'ab{ext}'"
        assert r.returncode != 0 and readings in r.stderr and "Traceback" not in r.stderr, r.stderr
        r = run(f"c=a{ext}")
        assert r.returncode != 0 and "its inputs are" in r.stderr and "'a=b'" in r.stderr, r.stderr
        if ext == ".bin":  # xnnrun's status for bad inputs: 1 + WX_ERROR_INPUT
            assert r.returncode == 3 and r.stderr.startswith("xnnrun: --input 'c=a.bin'"), r.stderr
        else:
            assert_one_line_error(r, "--input 'c=a.npy'")


def test_onnx_symbolic_dims_bounded(tmp_path: pathlib.Path) -> None:
    model = _named_model(tmp_path / "dyn.onnx", "batch_size")
    default = webxnn.load(webxnn.compile(webxnn.from_onnx(model)))  # nothing said: dynamic up to 64
    assert default.inputs[0].shape == (64, 3) and default.inputs[0].dynamic == ("batch_size", None)
    _check(default.run(_feeds(5)), _feeds(5))
    for bound in ({"batch_size": 8}, 8):
        prog = webxnn.load(webxnn.compile(webxnn.from_onnx(model, dyn_max=bound)))
        assert prog.inputs[0].shape == (8, 3) and prog.inputs[0].dynamic == ("batch_size", None)
        for batch in (1, 5, 8):
            _check(prog.run(_feeds(batch)), _feeds(batch))
        with pytest.raises(webxnn.InputError, match="0"):
            prog.run(_feeds(9))
    with pytest.warns(webxnn.WebxnnWarning, match=r"dyn_max names 'nosuch', which no model input uses"):
        webxnn.from_onnx(model, dyn_max={"batch_size": 4, "nosuch": 2})
    for bad in (0, {"batch_size": 0}, {"batch_size": 2.5}):
        with pytest.raises(webxnn.InputError, match="must be a positive integer"):
            webxnn.from_onnx(model, dyn_max=bad)  # type: ignore[arg-type]
    # the same from the command line: compile, run, import-onnx
    xnn = tmp_path / "dyn.xnn"
    r = cli("compile", str(model), "-o", str(xnn), "--dim-max", "batch_size=8", "--dim-max", "nosuch=2")
    assert r.returncode == 0, r.stderr
    assert "webxnn: warning: dyn_max names 'nosuch'" in r.stderr and "Traceback" not in r.stderr
    for n, a in _feeds(5).items():
        np.save(tmp_path / f"in{len(n)}.npy", a)
    feed_args = ["--input", f"{IN_A}={tmp_path / 'in1.npy'}", "--input", f"{IN_B}={tmp_path / 'in3.npy'}"]
    r = cli("run", str(xnn), *feed_args)
    assert r.returncode == 0 and f"  {OUT_A}: float32[5, 3]" in r.stdout, r.stderr
    r = cli("run", str(model), "--dim-max", "16", *feed_args)
    assert r.returncode == 0 and f"  {OUT_B}: float32[5, 3]" in r.stdout, r.stderr
    r = cli("run", str(model), *feed_args)  # no bound given: the default (64)
    assert r.returncode == 0 and f"  {OUT_B}: float32[5, 3]" in r.stdout, r.stderr
    assert_one_line_error(cli("run", str(model), "--dim-max", "batch_size=0", *feed_args), "--dim-max")
    assert_one_line_error(cli("run", str(model), "--dim-max", "4", *feed_args), "expected")
    r = cli("import-onnx", str(model), "-o", str(tmp_path / "dyn.webnn"), "--dim-max", "batch_size=8")
    assert r.returncode == 0, r.stderr
    assert 'dyn("batch_size", 8)' in (tmp_path / "dyn.webnn").read_text()


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


# 9. the wheel's metadata, as pip shows it


def test_package_metadata_is_complete() -> None:
    from importlib import metadata

    try:
        md = metadata.metadata("webxnn")
    except metadata.PackageNotFoundError:
        pytest.skip("webxnn is not installed (imported from a source tree)")
    assert "ONNX" in md["Summary"] and md["Requires-Python"] == ">=3.10"
    assert md["Description-Content-Type"] == "text/markdown"
    assert "## Set up and run" in (md["Description"] or md.get_payload() or "")  # type: ignore[attr-defined]
    assert md["Author"] == "webxnn maintainers"
    # PEP 639: an SPDX expression and the license text itself (not the deprecated License :: classifier)
    assert md["License-Expression"] == "Apache-2.0" and md.get_all("License-File") == ["LICENSE"]
    text = metadata.distribution("webxnn").read_text("licenses/LICENSE") or ""
    assert text.split()[:5] == ["Apache", "License", "Version", "2.0,", "January"], text[:200]
    assert "APPENDIX: How to apply the Apache License to your work." in text
    assert text == (REPO / "LICENSE").read_text()
    assert {"webnn", "onnx", "xnnpack"} <= set(md["Keywords"].split(","))
    classifiers = md.get_all("Classifier") or []
    for c in ("Typing :: Typed", "Topic :: Software Development :: Compilers"):
        assert c in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)
    assert "test" in (md.get_all("Provides-Extra") or [])
    assert (pathlib.Path(webxnn.__file__).parent / "py.typed").is_file()  # the type hints reach users


def test_onnx_names_a_blob_cannot_hold_keep_their_identifiers(tmp_path: pathlib.Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x\0y"], ["0"])],
        "nul",
        [helper.make_tensor_value_info("x\0y", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("0", TensorProto.FLOAT, [2])],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "nul.onnx")
    )
    prog = webxnn.load(tmp_path / "nul.onnx")  # a blob name holds no NUL: the identifier stays
    assert [i.name for i in prog.inputs] == ["x_y"] and [o.name for o in prog.outputs] == ["0"]
    assert prog.run({"x_y": np.array([-1, 1], np.float32)})["0"].tolist() == [0, 1]
