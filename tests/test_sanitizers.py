"""`threads_check` (csrc/sanitize/threads_check.cc) runs the thread-pool scenarios of test_runtime_pool.py and
concurrent runs of Programs (own pools, the shared pool, the C API) from C++ threads, in two sanitizer builds:
ThreadSanitizer (-DWEBXNN_TSAN=ON: a data race is exit 66) and AddressSanitizer + UBSan (-DWEBXNN_SANITIZE=ON,
the Debug build test_hostile_blobs.py makes for xnnrun: a use after free or a leak between threads is exit 99,
undefined behaviour 98). A wrong result is exit 1. Slow: each build alone takes minutes."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

import webxnn
from sanitize_build import ASAN_ENV, ASAN_REPORTS, require_sanitized
from test_runtime_util import chain_blob

DYNAMIC = """webnn_graph "dyn" v1 {
  inputs { x: f32[dyn("n", 8), 32]; }
  consts { w: f32[32, 48] @scalar(0.01); b: f32[48] @scalar(0.5); }
  nodes {
    m = matmul(x, w);
    a = add(m, b);
    r = relu(a);
    s = softmax(r, axis=1);
  }
  outputs { s; }
}"""


# name: (CMake option, build type, environment, what a report says). The ASan build's folder and type are
# test_hostile_blobs.py's, so after it only threads_check compiles.
SANITIZERS = {
    "tsan": (
        "WEBXNN_TSAN",
        "RelWithDebInfo",
        {"TSAN_OPTIONS": "halt_on_error=1:exitcode=66:second_deadlock_stack=1"},
        ("ThreadSanitizer",),
    ),
    "asan": ("WEBXNN_SANITIZE", "Debug", ASAN_ENV, ASAN_REPORTS),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SANITIZERS))
def test_pool_and_concurrent_runs_under_sanitizers(name: str, tmp_path: pathlib.Path) -> None:
    option, build_type, options, reports = SANITIZERS[name]
    exe = require_sanitized(name, option, "threads_check", build_type=build_type)
    blobs = []
    for blob_name, blob in (("chain", chain_blob()), ("dyn", webxnn.compile(webxnn.parse(DYNAMIC)))):
        path = tmp_path / f"{blob_name}.xnn"
        path.write_bytes(blob)
        blobs.append(str(path))
    env = dict(os.environ, **options)
    r = subprocess.run([str(exe), *blobs], capture_output=True, text=True, env=env, timeout=1800)
    report = any(what in r.stderr for what in reports)
    assert r.returncode == 0 and not report, f"rc={r.returncode}\n{r.stderr[-6000:]}"
    assert r.stdout.count(": ok") == 1 + len(blobs), r.stdout
