"""Hostile `.webnn` / JSON graphs (issue 25 item 3): `@scalar` constants stay splats until the blob writer
needs their bytes, a constant larger than a blob can hold is a clear error before anything allocates it, and
float options outside the float32 range are a ValidationError naming the op and option (not an
OverflowError from the flatbuffer writer)."""

from __future__ import annotations

import numpy as np
import pytest

import webxnn
from webxnn.constants import const_array
from webxnn.errors import ParseError, ValidationError


def _graph(consts: str, nodes: str, x: str = "f32[2]") -> str:
    consts_block = f"  consts {{ {consts} }}\n" if consts else ""
    return (
        f'webnn_graph "t" v1 {{\n  inputs {{ x: {x}; }}\n{consts_block}'
        f"  nodes {{ {nodes} }}\n  outputs {{ y; }}\n}}\n"
    )


@pytest.mark.parametrize(
    "decl",
    ["f32[65536, 65536, 65536] @scalar(1.0)", "u32[65536, 65536, 65536, 65536] @scalar(1)"],
)
def test_a_constant_too_large_for_a_blob_is_refused_before_it_is_allocated(decl: str) -> None:
    text = _graph(f"big: {decl};", "y = relu(x);")
    with pytest.raises(ParseError, match=r"const 'big': .* bytes, more than a \.xnn blob can hold"):
        webxnn.parse(text)


def test_scalar_consts_are_broadcast_views_until_written() -> None:
    # 1 GB each if materialised; unused, the second is dropped without ever being filled
    text = _graph(
        "c: f32[4, 2] @scalar(3.0); unused: f32[268435456] @scalar(2.0);", "y = add(x, c);", x="f32[4, 2]"
    )
    g = webxnn.parse(text)
    arr = const_array(g, "unused")
    assert arr.shape == (268435456,) and arr.strides == (0,) and not arr.flags.writeable
    p = webxnn.load(webxnn.compile(g))
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(p.run([x])["y"], x + 3)


@pytest.mark.parametrize(
    ("node", "pattern"),
    [
        (
            "y = clamp(x, maxValue=1e300);",
            r"node 'y' \(clamp\): option 'maxValue' = 1e\+300 is outside the float32",
        ),
        (
            "y = leakyRelu(x, alpha=1e39);",
            r"node 'y' \(leakyRelu\): option 'alpha' = 1e\+39 is outside the float32",
        ),
        ("y = elu(x, alpha=-1e39);", r"node 'y' \(elu\): option 'alpha' = -1e\+39"),
    ],
)
def test_float_options_outside_float32_are_validation_errors(node: str, pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        webxnn.compile(webxnn.parse(_graph("", node)))


def test_float_option_edges_still_compile() -> None:
    for node in ("y = clamp(x, maxValue=3.4e38);", "y = clamp(x, maxValue=1e30);"):
        assert webxnn.compile(webxnn.parse(_graph("", node)))


@pytest.mark.parametrize(
    ("x", "node", "pattern"),
    [
        # an output dim beyond uint32 (16 GiB: under the byte limit, so the dim check is what refuses it)
        (
            "f32[1]",
            "y = expand(x, newShape=[4294967296]);",
            r"node 'y' \(expand\): output 'y': dimension 4294967296",
        ),
        (
            "f32[2]",
            "y = pad(x, beginningPadding=[4294967295], endingPadding=[0]);",
            r"node 'y' \(pad\): output 'y': dimension 4294967297 .*\(uint32\)",
        ),
        # every dim fits a uint32 and the bytes fit 2^40, the elements not the runtime's 2^37 (the text
        # fuzzer's, seed 2599, case 60148: a JSON concat of f32[4294967295, 3, 4, 5], refused at load)
        (
            "f32[4294967295, 3, 4, 5]",
            "y = concat([x], axis=0);",
            r"input 'x': shape .* holds 257698037700 elements, more than the runtime's limit of 137438953472",
        ),
        (
            "u8[1]",
            "y = expand(x, newShape=[4294967295, 64]);",
            r"node 'y' \(expand\): output 'y': .* holds 274877906880 elements, more than the runtime's",
        ),
        # every dim fits a uint32, the tensor does not fit the runtime's 2^40 bytes
        (
            "f32[1, 1]",
            "y = expand(x, newShape=[4294967295, 4294967295]);",
            r"node 'y' \(expand\): output 'y': .* bytes, more than the runtime's limit",
        ),
    ],
)
def test_outputs_beyond_the_blob_limits_are_validation_errors(x: str, node: str, pattern: str) -> None:
    """Checked when the graph is validated, naming node, op and output, not by the blob writer later (an
    InvalidIRError naming a value id)."""
    g = webxnn.parse(_graph("", node, x=x))
    with pytest.raises(ValidationError, match=pattern):
        webxnn.compile(g)


@pytest.mark.parametrize("eps", ["-1e-3", "-0.5"])
@pytest.mark.parametrize(
    "node",
    [
        "y = layerNormalization(x, epsilon={eps});",
        "y = instanceNormalization(x, epsilon={eps});",
        "y = batchNormalization(x, m, v, epsilon={eps});",
    ],
)
def test_normalization_epsilon_must_be_non_negative(node: str, eps: str) -> None:
    """The runtime refuses such an epsilon when it loads the blob (a FormatError naming a node number);
    validation says it, naming node and op. (Infinite: tests/test_onnx_hostile.py, as the fuzzer found it.)"""
    text = _graph("m: f32[2] @scalar(0); v: f32[2] @scalar(1);", node.format(eps=eps), x="f32[1, 2, 2, 2]")
    with pytest.raises(ValidationError, match=r"node 'y' .*'epsilon' = .* must be a finite non-negative"):
        webxnn.compile(webxnn.parse(text))


@pytest.mark.parametrize(
    "node",
    [
        "y = maxPool2d(x, windowDimensions=[2, 2], strides=[2, 3.4e38]);",  # text fuzzer seed 2597, case 5165
        "y = maxPool2d(x, windowDimensions=[2, 2], strides=[4294967296, 1]);",
        "y = averagePool2d(x, padding=[0, 0, 0, 4294967296]);",
        "y = conv2d(x, w, dilations=[4294967296, 1]);",
    ],
)
def test_window_options_beyond_uint32_are_validation_errors(node: str) -> None:
    """Found by the text fuzzer: a stride of 3.4e38 (an integer-valued float) still gives an output size of 1,
    so validation passed and the blob writer refused it (InvalidIRError naming a node number and field);
    validation now names node, op and option."""
    g = webxnn.parse(_graph("w: f32[1, 1, 1, 1] @scalar(1);", node, x="f32[1, 1, 8, 8]"))
    with pytest.raises(ValidationError, match=r"node 'y' \(\w+\): option '\w+' = .* above 4294967295"):
        webxnn.compile(g)
