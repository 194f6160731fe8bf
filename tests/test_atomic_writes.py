"""Files webxnn writes are replaced atomically (issue 25 item 6), and `load(path, mmap=False)` reads a blob
that may change underneath instead of mapping it."""

from __future__ import annotations

import os
import pathlib
import stat

import numpy as np
import pytest

import webxnn
from webxnn import atomic
from webxnn.cli import main
from webxnn.compiler import compile_graph
from webxnn.xnn import writer

EXAMPLE = pathlib.Path(webxnn.__file__).parent / "examples" / "tiny_cnn.webnn"


def _graph(op: str) -> webxnn.Graph:
    return webxnn.parse(
        f'webnn_graph "t" v1 {{ inputs {{ x: f32[4]; }} nodes {{ y = {op}(x); }} outputs {{ y; }} }}'
    )


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old contents")
    with pytest.raises(RuntimeError, match="disk on fire"):
        with atomic.atomic_open(path) as f:
            f.write(b"half of the new")
            raise RuntimeError("disk on fire")
    assert path.read_bytes() == b"old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]
    atomic.write_text(path, "new")
    assert path.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_permissions_are_kept_or_follow_the_umask(tmp_path: pathlib.Path) -> None:
    old = tmp_path / "old.txt"
    old.write_text("x")
    os.chmod(old, 0o640)
    atomic.write_text(old, "y")
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o640
    new = tmp_path / "new.txt"
    atomic.write_text(new, "z")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o666 & ~mask


def test_a_compile_that_fails_half_way_keeps_the_old_blob(tmp_path: pathlib.Path, monkeypatch) -> None:
    out = tmp_path / "m.xnn"
    assert main(["compile", str(EXAMPLE), "-o", str(out)]) == 0
    good = out.read_bytes()
    real = writer._parts

    def failing(g):  # noqa: ANN001, ANN202 - the flatbuffer, then an error while streaming constants
        parts = real(g)
        yield next(parts)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_parts", failing)
    with pytest.raises(OSError, match="No space left"):
        writer.serialize_to_file(compile_graph(webxnn.load_graph(EXAMPLE)), out)
    assert out.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["m.xnn"]


def test_recompiling_over_a_mapped_blob_leaves_the_loaded_program_running(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "m.xnn"
    out.write_bytes(webxnn.compile(_graph("neg")))
    prog = webxnn.load(out)  # mapped
    x = np.float32([1, -2, 3, -4])
    webxnn.atomic.write_bytes(out, webxnn.compile(_graph("abs")))  # what `compile -o` does
    np.testing.assert_array_equal(prog.run([x])["y"], -x)
    np.testing.assert_array_equal(webxnn.load(out).run([x])["y"], np.abs(x))


def test_load_without_mmap_survives_the_file_being_truncated(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "m.xnn"
    assert main(["compile", str(EXAMPLE), "-o", str(out)]) == 0
    prog = webxnn.load(out, mmap=False)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32), dtype=np.float32)
    want = webxnn.load(out.read_bytes()).run([x])
    with open(out, "r+b") as f:  # truncated in place: a mapped Program would die of SIGBUS here
        f.truncate(64)
    got = prog.run([x])
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    with pytest.raises(webxnn.FileError):
        webxnn.load(tmp_path / "missing.xnn", mmap=False)
