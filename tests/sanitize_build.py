"""Builds one native target of the C++ core with a sanitizer (CMake option) in build/<name>, for the slow
sanitizer tests; None when the toolchain is missing (those tests then skip, or fail under CI)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def build_sanitized(name: str, option: str, target: str, build_type: str = "Debug") -> pathlib.Path | None:
    """build/<name>/targets/<target> configured with -D<option>=ON (Python module off), or None."""
    if not shutil.which("cmake") or not (shutil.which("g++") or shutil.which("c++")):
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
        f"-DPython_EXECUTABLE={sys.executable}",
    ]
    if subprocess.run(cfg, capture_output=True).returncode != 0:
        return None
    built = subprocess.run(["cmake", "--build", str(build), "--target", target, "-j2"], capture_output=True)
    if built.returncode != 0:
        return None
    exe = build / "targets" / target  # csrc/CMakeLists.txt builds in the subfolder targets/
    return exe if exe.exists() else None
