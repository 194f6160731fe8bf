"""Shared test fixtures and helpers: where the conformance data lives (../shared/conformance beside the repo),
the test-only native module (webxnn._testing), and the field sets of 2-D convolution and pooling nodes."""

from __future__ import annotations

import importlib
import pathlib
from types import ModuleType

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
CONFORMANCE = REPO.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance_dir() -> pathlib.Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"conformance data not found at {CONFORMANCE}")
    return CONFORMANCE


def _bench_model(factory: pytest.TempPathFactory, name: str) -> pathlib.Path:
    """bench.models.<name>()'s ONNX bytes (seeded, built in code) written once per session to a temp file."""
    from bench import models

    data, _ = getattr(models, name)()
    path = factory.mktemp("models") / f"{name}.onnx"
    path.write_bytes(data)
    return path


@pytest.fixture(scope="session")
def mobilenetv2_onnx(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """MobileNetV2 (seeded weights, input `input` [1, 3, 224, 224]) as an .onnx file."""
    return _bench_model(tmp_path_factory, "mobilenet_v2")


@pytest.fixture(scope="session")
def minilm_onnx(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A 6-layer MiniLM-style encoder (seeded weights, input `input` [1, 128, 384]) as an .onnx file."""
    return _bench_model(tmp_path_factory, "minilm")


TESTING_BUILD = 'pip install -Ccmake.define.WEBXNN_TESTING=ON ".[test]"'


def load_testing_module() -> ModuleType:
    """webxnn._testing: the kernels (`.kernels`) and the arena placement bound one by one, which the product
    module leaves out. Built only with the CMake option WEBXNN_TESTING; when it is absent, the calling test
    module (called at module level) or test skips, with a reason that gives the command that builds it."""
    try:
        return importlib.import_module("webxnn._testing")
    except ModuleNotFoundError as e:
        if e.name != "webxnn._testing":
            raise
        pytest.skip(
            f"webxnn._testing is not built (the CMake option WEBXNN_TESTING is off): build it with "
            f"{TESTING_BUILD}",
            allow_module_level=True,
        )


Pads = tuple[int, int, int, int]


def conv_fields(
    kernel: tuple[int, int],
    pads: Pads = (0, 0, 0, 0),
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
    gic: int = 1,
    goc: int = 1,
    adj: tuple[int, int] = (0, 0),
) -> dict[str, int]:
    """The geometry fields of an XNNConv2d / XNNDepthwiseConv2d / XNNDeconvolution2d node; pads are (top,
    right, bottom, left), gic / goc the input / output channels per group, adj the deconv adjustment."""
    return dict(
        padding_top=pads[0],
        padding_right=pads[1],
        padding_bottom=pads[2],
        padding_left=pads[3],
        kernel_height=kernel[0],
        kernel_width=kernel[1],
        subsampling_height=stride[0],
        subsampling_width=stride[1],
        dilation_height=dilation[0],
        dilation_width=dilation[1],
        group_input_channels=gic,
        group_output_channels=goc,
        groups=groups,
        adjustment_height=adj[0],
        adjustment_width=adj[1],
    )


def pool_fields(
    size: tuple[int, int],
    stride: tuple[int, int],
    pads: Pads = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1),
) -> dict[str, int]:
    """The window fields of an XNN/WX 2-D pooling node; pads are (top, right, bottom, left)."""
    return dict(
        padding_top=pads[0],
        padding_right=pads[1],
        padding_bottom=pads[2],
        padding_left=pads[3],
        pooling_height=size[0],
        pooling_width=size[1],
        stride_height=stride[0],
        stride_width=stride[1],
        dilation_height=dilation[0],
        dilation_width=dilation[1],
    )
