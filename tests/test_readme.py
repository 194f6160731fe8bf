"""The README's Python example runs as written, from the repository root."""

from __future__ import annotations

import os
import re

import pytest

from conftest import REPO


def test_readme_python_example_runs() -> None:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    if not blocks:
        pytest.fail("README.md has no ```python example")
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        scope: dict = {}
        exec(compile(blocks[0], "README.md", "exec"), scope)  # noqa: S102 - our own README
    finally:
        os.chdir(cwd)
    assert scope["out"]["probs"].shape == (1, 10)
