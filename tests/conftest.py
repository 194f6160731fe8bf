"""Shared test fixtures and helpers: where the conformance data lives (../shared/conformance beside the repo),
and the field set of a 2-D pooling node."""

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


Pads = tuple[int, int, int, int]


def pool_fields(size: tuple[int, int], stride: tuple[int, int], pads: Pads = (0, 0, 0, 0),
                dilation: tuple[int, int] = (1, 1)) -> dict[str, int]:
    """The window fields of an XNN/WX 2-D pooling node; pads are (top, right, bottom, left)."""
    return dict(padding_top=pads[0], padding_right=pads[1], padding_bottom=pads[2], padding_left=pads[3],
                pooling_height=size[0], pooling_width=size[1], stride_height=stride[0],
                stride_width=stride[1], dilation_height=dilation[0], dilation_width=dilation[1])
