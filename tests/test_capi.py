"""The C API (webxnn/runtime.h) driven through cffi in ABI mode, the way an embedder would use it: load,
describe, run, and the error path with wx_last_error."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

import webxnn
from test_runtime_util import GraphBuilder, simple_fc_blob
from webxnn import runtime

cffi = pytest.importorskip("cffi")


def _find_lib() -> tuple[pathlib.Path, pathlib.Path] | None:
    for root in webxnn.__path__:
        lib = pathlib.Path(root) / "_lib" / "libwebxnn.so"
        header = pathlib.Path(root) / "_lib" / "include" / "webxnn" / "runtime.h"
        if lib.exists() and header.exists():
            return lib, header
    return None


def _cdef(header: str) -> str:
    """The header as cffi can read it: keep integer #defines, drop other preprocessor lines, WX_API and the
    extern "C" wrapper."""
    text = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    lines = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            if re.match(r"#define\s+\w+\s+\d+\s*$", s):
                lines.append(s)
            continue
        if s in ('extern "C" {', "}") and not lines or s == 'extern "C" {':
            continue
        lines.append(line)
    out = "\n".join(lines).replace("WX_API ", "")
    # the closing brace of extern "C" is the last lone "}" in the file
    idx = out.rstrip().rfind("}")
    if out.rstrip().endswith("}") and out[idx - 1] == "\n":
        out = out[:idx]
    return out


@pytest.fixture(scope="module")
def capi():  # noqa: ANN201
    found = _find_lib()
    if found is None:
        pytest.skip("libwebxnn.so not found in the installed package")
    lib_path, header = found
    ffi = cffi.FFI()
    ffi.cdef(_cdef(header.read_text()))
    lib = ffi.dlopen(str(lib_path))
    return ffi, lib


def _load(ffi, lib, blob: bytes, threads: int = 1):  # noqa: ANN001, ANN202
    opts = ffi.new("wx_options*", {"threads": threads})
    out = ffi.new("wx_program**")
    st = lib.wx_load_bytes(blob, len(blob), opts, out)
    return st, out[0]


def test_version_and_describe(capi) -> None:  # noqa: ANN001
    ffi, lib = capi
    assert ffi.string(lib.wx_version()).decode() == webxnn.__version__
    st, prog = _load(ffi, lib, simple_fc_blob())
    assert st == lib.WX_OK, ffi.string(lib.wx_last_error())
    try:
        assert lib.wx_num_inputs(prog) == 1 and lib.wx_num_outputs(prog) == 1
        info = ffi.new("wx_tensor_info*")
        assert lib.wx_input_info(prog, 0, info) == lib.WX_OK
        assert ffi.string(info.name) == b"x" and info.dtype == lib.WX_FLOAT32
        assert [info.dims[d] for d in range(info.rank)] == [2, 3]
        assert lib.wx_output_info(prog, 0, info) == lib.WX_OK
        assert ffi.string(info.name) == b"y" and [info.dims[d] for d in range(info.rank)] == [2, 4]
        assert lib.wx_input_info(prog, 5, info) == lib.WX_ERROR_INVALID_ARGUMENT
        assert b"out of range" in ffi.string(lib.wx_last_error())
    finally:
        lib.wx_free(prog)


def _run(ffi, lib, prog, x: np.ndarray, out_shape: tuple[int, ...], capacity: int | None = None):  # noqa: ANN001, ANN202
    ins = ffi.new("wx_tensor[1]")
    ins[0].data = ffi.cast("void*", x.ctypes.data)
    ins[0].capacity_bytes = x.nbytes
    ins[0].dtype = lib.WX_FLOAT32
    ins[0].rank = x.ndim
    for d, n in enumerate(x.shape):
        ins[0].dims[d] = n
    y = np.zeros(out_shape, np.float32)
    outs = ffi.new("wx_tensor[1]")
    outs[0].data = ffi.cast("void*", y.ctypes.data)
    outs[0].capacity_bytes = y.nbytes if capacity is None else capacity
    st = lib.wx_run(prog, ins, 1, outs, 1)
    return st, y, outs


def test_run_matches_python(capi) -> None:  # noqa: ANN001
    ffi, lib = capi
    blob = simple_fc_blob()
    st, prog = _load(ffi, lib, blob, threads=2)
    assert st == lib.WX_OK
    try:
        x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
        st, y, outs = _run(ffi, lib, prog, x, (2, 4))
        assert st == lib.WX_OK, ffi.string(lib.wx_last_error())
        assert outs[0].rank == 2 and (outs[0].dims[0], outs[0].dims[1]) == (2, 4)
        want = runtime.load(blob).run({"x": x})["y"]
        np.testing.assert_array_equal(y, want)
        assert ffi.string(lib.wx_last_error()) == b""
        # too small an output buffer is an input error that names the output
        st, _, _ = _run(ffi, lib, prog, x, (2, 4), capacity=8)
        assert st == lib.WX_ERROR_INPUT
        assert b"output 'y': needs 32 bytes, buffer has 8" in ffi.string(lib.wx_last_error())
        # a wrong shape names the input
        st, _, _ = _run(ffi, lib, prog, np.zeros((2, 5), np.float32), (2, 4))
        assert st == lib.WX_ERROR_INPUT
        assert b"input 'x': expected shape [2, 3], got [2, 5]" in ffi.string(lib.wx_last_error())
    finally:
        lib.wx_free(prog)


def test_pool_options(capi) -> None:  # noqa: ANN001
    """wx_options.flags: a polling budget and the process's shared pool (sized by wx_set_threads) give the
    same bytes as a single-threaded run; unknown flag bits, out-of-range budgets and a budget for the shared
    pool are refused."""
    ffi, lib = capi
    blob = simple_fc_blob()
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    want = runtime.load(blob).run({"x": x})["y"]
    assert lib.wx_set_threads(2, 0) == lib.WX_OK
    for flags, spin in (
        (lib.WX_OPTION_SPIN_US, 0),
        (lib.WX_OPTION_SPIN_US, 50),
        (lib.WX_OPTION_SHARED_POOL, 0),
    ):
        opts = ffi.new("wx_options*", {"threads": 2, "flags": flags, "spin_us": spin})
        out = ffi.new("wx_program**")
        assert lib.wx_load_bytes(blob, len(blob), opts, out) == lib.WX_OK, ffi.string(lib.wx_last_error())
        try:
            for _ in range(20):  # past the run-mode exploration (runtime/run_mode.h)
                st, y, _ = _run(ffi, lib, out[0], x, (2, 4))
                assert st == lib.WX_OK
                np.testing.assert_array_equal(y, want)
        finally:
            lib.wx_free(out[0])
    for flags, spin, words in (
        (8, 0, b"unknown bits"),
        (lib.WX_OPTION_SPIN_US, 2_000_000, b"over 1000000"),
        (lib.WX_OPTION_SPIN_US | lib.WX_OPTION_SHARED_POOL, 50, b"size the shared one with wx_set_threads"),
    ):
        opts = ffi.new("wx_options*", {"threads": 2, "flags": flags, "spin_us": spin})
        out = ffi.new("wx_program**")
        assert lib.wx_load_bytes(blob, len(blob), opts, out) == lib.WX_ERROR_INVALID_ARGUMENT
        assert out[0] == ffi.NULL and words in ffi.string(lib.wx_last_error())
    assert lib.wx_set_threads(2, 2_000_000) == lib.WX_ERROR_INVALID_ARGUMENT


def test_load_errors(capi, tmp_path) -> None:  # noqa: ANN001
    ffi, lib = capi
    st, prog = _load(ffi, lib, b"\0\0\0\0XH00junk")
    assert st == lib.WX_ERROR_FORMAT and prog == ffi.NULL
    assert b"header: truncated" in ffi.string(lib.wx_last_error())
    out = ffi.new("wx_program**")
    assert lib.wx_load_file(str(tmp_path / "nope.xnn").encode(), ffi.NULL, out) == lib.WX_ERROR_IO
    assert b"cannot open" in ffi.string(lib.wx_last_error())
    assert lib.wx_load_bytes(ffi.NULL, 0, ffi.NULL, ffi.NULL) == lib.WX_ERROR_INVALID_ARGUMENT
    b = GraphBuilder()
    x = b.input("x", [2])
    y = b.output(b.value([2]), "y")
    b.node("WXUnary", op="is_nan", alpha=0.0, beta=0.0, input_id=x, output_id=y, flags=0)
    st, prog = _load(ffi, lib, b.build())  # is_nan must give uint8
    assert st == lib.WX_ERROR_UNSUPPORTED and b"node 0 (WXUnary)" in ffi.string(lib.wx_last_error())


def test_load_file_maps(capi, tmp_path) -> None:  # noqa: ANN001
    ffi, lib = capi
    path = tmp_path / "m.xnn"
    path.write_bytes(simple_fc_blob())
    out = ffi.new("wx_program**")
    assert lib.wx_load_file(str(path).encode(), ffi.NULL, out) == lib.WX_OK
    try:
        x = np.ones((2, 3), np.float32)
        st, y, _ = _run(ffi, lib, out[0], x, (2, 4))
        assert st == lib.WX_OK
        np.testing.assert_array_equal(y, runtime.load(path).run([x])["y"])
    finally:
        lib.wx_free(out[0])


def test_dynamic_dims_in_info(capi) -> None:  # noqa: ANN001
    """wx_tensor_info.dynamic[] marks the metadata's dyn dims; a wrong fixed dim is WX_ERROR_INPUT."""
    from webxnn.xnn.ir import DynDimRef
    from webxnn.xnn.writer import serialize

    ffi, lib = capi
    b = GraphBuilder()
    x = b.input("x", [4, 3])
    y = b.output(b.value([4, 3]), "y")
    b.node("XNNAbs", input_id=x, output_id=y, flags=0)
    g = b.graph()
    g.metadata.dyn_dims = [DynDimRef(0, 0, "batch", 4)]
    st, prog = _load(ffi, lib, serialize(g))
    assert st == lib.WX_OK, ffi.string(lib.wx_last_error())
    try:
        info = ffi.new("wx_tensor_info*")
        assert lib.wx_input_info(prog, 0, info) == lib.WX_OK
        assert [info.dynamic[d] for d in range(info.rank)] == [1, 0]
        xs = np.float32([[-1, 2, -3], [4, -5, 6]])
        st, y, outs = _run(ffi, lib, prog, xs, (2, 3))
        assert st == lib.WX_OK, ffi.string(lib.wx_last_error())
        assert (outs[0].dims[0], outs[0].dims[1]) == (2, 3)
        np.testing.assert_array_equal(y, np.abs(xs))
        st = _run(ffi, lib, prog, np.zeros((2, 5), np.float32), (2, 5))[0]
        assert st == lib.WX_ERROR_INPUT and b"axis 1 is fixed at 3" in ffi.string(lib.wx_last_error())
    finally:
        lib.wx_free(prog)


def test_xnnrun_help_documents_itself() -> None:
    """`xnnrun --help` says what each option takes, what inputs default to and the --input file format; a bad
    argument gets the one-line usage on stderr and exit status 64."""
    exe = shutil.which("xnnrun")
    if exe is None:
        pytest.skip("xnnrun is not on PATH (installed with the package's scripts)")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    for words in (
        "--threads N",
        "--input name=file.bin",
        "raw little-endian bytes",
        "filled with ones",
        "64 bad usage",
    ):
        assert words in out.stdout
    assert "--spin-us N" in out.stdout
    for args in (["--bogus"], ["m.xnn", "--spin-us", "2000000"], ["m.xnn", "--spin-us", "x"]):
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == 64 and r.stderr.startswith("usage: xnnrun"), args
    bad = subprocess.run([exe, "--bogus"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 64
    assert bad.stderr.startswith("usage: xnnrun") and "--help" in bad.stderr


def test_xnnrun_refuses_inputs_over_its_stated_limit(tmp_path) -> None:  # noqa: ANN001
    """A blob may declare x: f32[4294967295, 5] (80 GB): xnnrun says so against --max-bytes and exits 4,
    instead of dying of std::bad_alloc (exit 134) or filling 20 GB before running; an --input file of the
    wrong size is refused before a byte of it is read."""
    import webxnn

    exe = shutil.which("xnnrun")
    if exe is None:
        pytest.skip("xnnrun is not on PATH (installed with the package's scripts)")

    def blob(decl: str) -> str:
        path = tmp_path / f"m{len(list(tmp_path.iterdir()))}.xnn"
        text = f'webnn_graph "t" v1 {{ inputs {{ x: {decl}; }} nodes {{ y = relu(x); }} outputs {{ y; }} }}'
        path.write_bytes(webxnn.compile(webxnn.parse(text)))
        return str(path)

    big = blob("f32[4294967295, 5]")
    r = subprocess.run([exe, big, "--quiet"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 4, r.stderr
    assert "input 'x' float32 [4294967295, 5] needs 85899345900 bytes" in r.stderr
    assert "at most 4294967296 bytes (--max-bytes)" in r.stderr
    small = blob("f32[1024]")
    r = subprocess.run([exe, small, "--quiet", "--max-bytes", "4096"], capture_output=True, text=True)
    assert r.returncode == 4 and "output 'y' float32 [1024] needs 4096 bytes" in r.stderr
    assert subprocess.run([exe, small, "--quiet", "--max-bytes", "8192"]).returncode == 0
    assert (
        subprocess.run(
            [exe, small, "--quiet", "--threads", "2", "--spin-us", "0", "--repeat", "5"]
        ).returncode
        == 0
    )
    wrong = tmp_path / "x.bin"
    wrong.write_bytes(bytes(12))
    r = subprocess.run([exe, small, "--quiet", "--input", f"x={wrong}"], capture_output=True, text=True)
    assert r.returncode == 3 and "has 12 bytes, input 'x' needs 4096" in r.stderr
    assert "--max-bytes N" in subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
