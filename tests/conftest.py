"""Shared test fixtures: where the conformance data lives (../shared/conformance beside the repo)."""

from __future__ import annotations

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
CONFORMANCE = REPO.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance_dir() -> pathlib.Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"conformance data not found at {CONFORMANCE}")
    return CONFORMANCE
