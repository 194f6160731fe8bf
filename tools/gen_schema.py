"""Build step: run flatc on a schema (schema/xnngraph.fbs, schema/program.fbs) for C++ and Python.

flatc's Python output imports its namespace as a top-level package (`from fb_xnnpack.X import X`). We ship it
inside webxnn instead, so this rewrites those imports to be package-relative. Called by CMakeLists.txt;
nothing it writes is committed.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys


def main() -> int:
    flatc, schema, out_cpp, out_py = sys.argv[1:5]
    out_py_dir = pathlib.Path(out_py)
    tmp = out_py_dir.parent / (out_py_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([flatc, "--cpp", "--scoped-enums", "-o", out_cpp, schema], check=True)
    subprocess.run([flatc, "--python", "-o", str(tmp), schema], check=True)
    shutil.rmtree(out_py_dir, ignore_errors=True)
    match = re.search(r"^namespace\s+(\w+)\s*;", pathlib.Path(schema).read_text(), re.M)
    if match is None:
        raise SystemExit(f"{schema}: no `namespace` declaration")
    namespace = match.group(1)
    (tmp / namespace).rename(out_py_dir)
    shutil.rmtree(tmp, ignore_errors=True)
    pattern = re.compile(rf"from {namespace}\.(\w+) import")
    for path in out_py_dir.glob("*.py"):
        text = path.read_text()
        path.write_text(pattern.sub(r"from .\1 import", text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
