"""Shared test fixtures and helpers: where the conformance data lives (../shared/conformance beside the repo),
the test-only native module (webxnn._testing), and the field sets of 2-D convolution and pooling nodes."""

from __future__ import annotations

import importlib
import os
import pathlib
import pickle
import subprocess
import sys
from types import ModuleType
from typing import Any

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


# The kernel tables the int8 GEMM tests compare (isa= names): vnni-emu is the VNNI tables' kernels with
# vpdpbusd emulated in AVX2 (testing builds on x86-64), which is how they are tested on CPUs without VNNI.
INT8_TABLES = ("scalar", "avx2", "vnni-emu", "avxvnni", "avx512vnni")
VNNI_TABLES = ("vnni-emu", "avxvnni", "avx512vnni")
_MISSING = {
    "avx2": "this CPU has no AVX2 + FMA + F16C",
    "vnni-emu": "this build has no vnni-emu table (x86-64 testing builds on an AVX2 CPU have it)",
    "avxvnni": "this CPU has no AVX-VNNI (the vnni-emu table runs the same kernels)",
    "avx512vnni": "this CPU has no AVX512-VNNI + VL + BW (the vnni-emu table runs the same kernels)",
}


def int8_isas(kernels: ModuleType) -> list[str]:
    """The INT8_TABLES this build has and this CPU runs (for tests that loop over every table)."""
    have = set(kernels.tables())
    return [t for t in INT8_TABLES if t in have]


def table_params(kernels: ModuleType, names: tuple[str, ...]) -> list:
    """`names` as pytest.params, each skipping, saying why, where this build or CPU lacks the table."""
    have = set(kernels.tables())
    return [
        pytest.param(n, id=n, marks=() if n in have else pytest.mark.skip(reason=_MISSING.get(n, "absent")))
        for n in names
    ]


def outputs_with_isa(
    isa: str, cases: list[tuple[bytes, Any]], tmp_path: pathlib.Path
) -> list[dict[str, Any]]:
    """Each (blob, input array) run by a process whose runtime uses the kernel table `isa` (WEBXNN_ISA), at 1
    and 2 threads: the outputs (a dict each) of case 0 at 1 thread, case 0 at 2, case 1 at 1, ..."""
    path = tmp_path / f"cases-{isa}.pkl"
    path.write_bytes(pickle.dumps(cases))
    code = (
        "import pickle, sys, webxnn\n"
        "assert webxnn.cpu_info()['isa'] == sys.argv[2], webxnn.cpu_info()\n"
        "cases = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "outs = [webxnn.load(b, threads=t).run([x]) for b, x in cases for t in (1, 2)]\n"
        "open(sys.argv[1], 'wb').write(pickle.dumps(outs))\n"
    )
    env = dict(os.environ, WEBXNN_ISA=isa)
    subprocess.run([sys.executable, "-c", code, str(path), isa], env=env, check=True)
    return pickle.loads(path.read_bytes())


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
