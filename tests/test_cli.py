"""The `webxnn` command line, driven as a user would (in-process through `cli.main`)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from webxnn.cli import main
from webxnn.demo import EXAMPLE


@pytest.fixture()
def blob_path(tmp_path: pathlib.Path) -> pathlib.Path:
    out = tmp_path / "tiny.xnn"
    assert main(["compile", str(EXAMPLE), "-o", str(out)]) == 0
    return out


def test_compile_run_writes_outputs(blob_path: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert (
        main(
            [
                "run",
                str(blob_path),
                "--input",
                f"x={tmp_path / 'x.npy'}",
                "--output-dir",
                str(tmp_path / "out"),
                "--repeat",
                "3",
                "--profile",
                "2",
            ]
        )
        == 0
    )
    probs = np.load(tmp_path / "out" / "probs.npy")
    assert probs.shape == (1, 10) and abs(float(probs.sum()) - 1.0) < 1e-5
    text = capsys.readouterr().out
    assert "probs: float32[1, 10]" in text and "median" in text and "XNNConv2d" in text


def test_inspect_blob_and_graph(blob_path: pathlib.Path, capsys) -> None:
    assert main(["inspect", str(blob_path)]) == 0
    text = capsys.readouterr().out
    assert "XNNConv2d" in text and "probs" in text and "arena" in text
    assert main(["inspect", str(blob_path), "--json"]) == 0
    json.loads(capsys.readouterr().out)
    assert main(["inspect", str(EXAMPLE)]) == 0
    text = capsys.readouterr().out
    assert "conv2d x2" in text and "MACs" in text


def test_validate_and_convert(tmp_path: pathlib.Path, capsys) -> None:
    assert main(["validate", str(EXAMPLE)]) == 0
    assert "valid" in capsys.readouterr().out
    out = tmp_path / "tiny.json"
    assert main(["convert", str(EXAMPLE), "--to", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["format"] == "webnn-graph-json"
    assert main(["convert", str(EXAMPLE), "--to", "webnn"]) == 0
    assert "webnn_graph" in capsys.readouterr().out


def test_weights_pack_unpack_roundtrip(tmp_path: pathlib.Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "a.npy", a)
    w, m = tmp_path / "w.weights", tmp_path / "w.manifest.json"
    a_spec = f"a={tmp_path / 'a.npy'}"
    assert main(["weights", "pack", "--weights", str(w), "--manifest", str(m), a_spec]) == 0
    assert (
        main(
            [
                "weights",
                "unpack",
                "--weights",
                str(w),
                "--manifest",
                str(m),
                "--output-dir",
                str(tmp_path / "u"),
            ]
        )
        == 0
    )
    np.testing.assert_array_equal(np.load(tmp_path / "u" / "a.npy"), a)


def test_errors_are_one_line_and_exit_2(tmp_path: pathlib.Path, capsys) -> None:
    bad = tmp_path / "bad.webnn"
    bad.write_text('webnn_graph "b" v1 {\n  nodes { y = relu(; }\n}\n')
    assert main(["compile", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webxnn: error: ") and "bad.webnn:2:" in err
    junk = tmp_path / "junk.xnn"
    junk.write_bytes(b"\0\0\0\0XH00" + b"\xff" * 40)
    assert main(["run", str(junk), "--random-inputs"]) == 2
    assert "error: " in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.xnn")]) == 2


def test_run_without_inputs_says_what_to_pass(blob_path: pathlib.Path, capsys) -> None:
    assert main(["run", str(blob_path)]) == 2
    err = capsys.readouterr().err
    assert "x: float32[1, 3, 32, 32]" in err and "--random-inputs" in err


def test_run_reports_wrong_input(blob_path: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 8, 8), np.float32))
    assert main(["run", str(blob_path), "--input", f"x={tmp_path / 'x.npy'}"]) == 2
    assert "x" in capsys.readouterr().err


def test_demo_and_info(capsys) -> None:
    assert main(["demo", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "probs" in out and "latency" in out
    assert main(["info"]) == 0
    assert "isa" in capsys.readouterr().out


def test_run_reads_an_input_from_a_pipe(blob_path: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    """`--input x=<(...)` names a pipe, which can be read only once: sniffed and parsed from one read."""
    import os
    import threading

    fifo = tmp_path / "x.fifo"
    os.mkfifo(fifo)
    buf = tmp_path / "x.npy"
    np.save(buf, np.ones((1, 3, 32, 32), np.float32))
    writer = threading.Thread(target=lambda: fifo.write_bytes(buf.read_bytes()))
    writer.start()
    assert main(["run", str(blob_path), "--input", f"x={fifo}"]) == 0
    writer.join()
    assert "float32" in capsys.readouterr().out


def test_run_refuses_truncated_or_foreign_input_files(
    blob_path: pathlib.Path, tmp_path: pathlib.Path, capsys
) -> None:
    np.save(tmp_path / "x.npy", np.ones((1, 3, 32, 32), np.float32))
    cut = tmp_path / "cut.npy"
    cut.write_bytes((tmp_path / "x.npy").read_bytes()[:100])  # the header, no data
    text = tmp_path / "t.npy"
    text.write_text("hello")
    for path in (cut, text):
        assert main(["run", str(blob_path), "--input", f"x={path}"]) == 2
        err = capsys.readouterr().err
        assert "error: " in err and "Traceback" not in err and str(path) in err


def test_convert_onnx_writes_the_weights_its_text_names(tmp_path: pathlib.Path, capsys) -> None:
    """`convert m.onnx --to webnn|json -o F` writes F's weight sidecars too (import-onnx does): the text names
    @weights that must be loadable, and the written graph runs like the .onnx."""
    onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed")
    from onnx import TensorProto, helper

    w = np.arange(8, dtype=np.float32).reshape(4, 2)
    g = helper.make_graph(
        [helper.make_node("Gather", ["W", "ids"], ["y"], axis=0)],
        "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor("W", TensorProto.FLOAT, [4, 2], w.ravel())],
    )
    src = tmp_path / "g.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), src)
    ids = tmp_path / "ids.npy"
    np.save(ids, np.array([3, 0, -1]))
    for to in ("webnn", "json"):
        out = tmp_path / f"m.{to}"
        assert main(["convert", str(src), "--to", to, "-o", str(out)]) == 0
        assert (tmp_path / "m.weights").exists() and (tmp_path / "m.manifest.json").exists()
        capsys.readouterr()
        assert main(["run", str(out), "--input", f"ids={ids}"]) == 0
        assert "[6, 7, 0, 1, 6, 7]" in capsys.readouterr().out
