"""The ThreadSanitizer build: `threads_check` (csrc/sanitize/threads_check.cc) runs the thread-pool scenarios
of test_runtime_pool.py and concurrent runs of Programs (own pools, the shared pool, the C API) from C++
threads, built with -DWEBXNN_TSAN=ON. A data race is a TSan report (exit 66); a wrong result is exit 1.
Slow: the build alone takes minutes. (The ASan/UBSan build runs in test_hostile_blobs.py.)"""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

import webxnn
from sanitize_build import require_sanitized
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


@pytest.mark.slow
def test_pool_and_concurrent_runs_under_tsan(tmp_path: pathlib.Path) -> None:
    exe = require_sanitized("tsan", "WEBXNN_TSAN", "threads_check", build_type="RelWithDebInfo")
    blobs = []
    for name, blob in (("chain", chain_blob()), ("dyn", webxnn.compile(webxnn.parse(DYNAMIC)))):
        path = tmp_path / f"{name}.xnn"
        path.write_bytes(blob)
        blobs.append(str(path))
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1")
    r = subprocess.run([str(exe), *blobs], capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0 and "ThreadSanitizer" not in r.stderr, f"rc={r.returncode}\n{r.stderr[-6000:]}"
    assert r.stdout.count(": ok") == 1 + len(blobs), r.stdout
