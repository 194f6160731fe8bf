"""Filters are permuted at compile time: conv oihw/hwio/ohwi/ihwo → OHWI, depthwise → 1HWO, convTranspose
iohw/hwoi/ohwi → per-group OHWI — checked against numpy on small arrays, and numerically end to end."""

from __future__ import annotations

import numpy as np
import pytest

from test_lower_ops import ref_conv2d, ref_conv_transpose2d
from webxnn.compiler import compile_graph
from webxnn.dsl import parse
from webxnn.xnn import reference

# logical OIHW → the layout the graph declares
TO_CONV_LAYOUT = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}
# logical IOHW → the layout the graph declares
TO_DECONV_LAYOUT = {"iohw": (0, 1, 2, 3), "hwoi": (2, 3, 1, 0), "ohwi": (1, 2, 3, 0)}


def _const(xg, vid: int) -> np.ndarray:
    v = xg.value(vid)
    return np.asarray(xg.constants[v.constant_buffer_idx]).reshape(v.dims)


def _conv_graph(layout: str, w_decl: tuple, groups: int, c: int, op: str = "conv2d") -> str:
    shape = ", ".join(map(str, w_decl))
    return (
        f'webnn_graph "t" v1 {{ inputs {{ x: f32[1, {c}, 5, 6]; }} '
        f'consts {{ w: f32[{shape}] @weights("w"); }} '
        f'nodes {{ y = {op}(x, w, groups={groups}, filterLayout="{layout}"); }} outputs {{ y; }} }}'
    )


@pytest.mark.parametrize("layout", list(TO_CONV_LAYOUT))
@pytest.mark.parametrize("groups", [1, 2])
def test_conv_filter_layouts(layout: str, groups: int) -> None:
    rng = np.random.default_rng(groups)
    oihw = rng.standard_normal((6, 4 // groups, 3, 2)).astype(np.float32)
    w = np.ascontiguousarray(oihw.transpose(TO_CONV_LAYOUT[layout]))
    xg = compile_graph(parse(_conv_graph(layout, w.shape, groups, 4)), weights={"w": w})
    conv = next(n for n in xg.nodes if n.kind == "XNNConv2d")
    np.testing.assert_array_equal(_const(xg, conv.fields["filter_id"]), oihw.transpose(0, 2, 3, 1))
    f = conv.fields
    assert (f["groups"], f["group_input_channels"]) == (groups, 4 // groups)
    assert f["group_output_channels"] == 6 // groups
    assert (f["kernel_height"], f["kernel_width"]) == (3, 2)
    x = rng.standard_normal((1, 4, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(
        reference.run(xg, {"x": x})["y"], ref_conv2d(x, oihw, groups=groups), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("layout", ["oihw", "hwio", "ihwo"])
def test_depthwise_filter_is_1hwo(layout: str) -> None:
    rng = np.random.default_rng(3)
    oihw = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)  # 3 channels, multiplier 2
    w = np.ascontiguousarray(oihw.transpose(TO_CONV_LAYOUT[layout]))
    xg = compile_graph(parse(_conv_graph(layout, w.shape, 3, 3)), weights={"w": w})
    dw = next(n for n in xg.nodes if n.kind == "XNNDepthwiseConv2d")
    np.testing.assert_array_equal(_const(xg, dw.fields["filter_id"]), oihw.transpose(1, 2, 3, 0))
    assert dw.fields["groups"] == 3 and dw.fields["group_output_channels"] == 2
    x = rng.standard_normal((1, 3, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(
        reference.run(xg, {"x": x})["y"], ref_conv2d(x, oihw, groups=3), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("layout", list(TO_DECONV_LAYOUT))
@pytest.mark.parametrize("groups", [1, 2])
def test_conv_transpose_filter_layouts(layout: str, groups: int) -> None:
    rng = np.random.default_rng(10 + groups)
    iohw = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)  # in 4, out/groups 3
    w = np.ascontiguousarray(iohw.transpose(TO_DECONV_LAYOUT[layout]))
    xg = compile_graph(parse(_conv_graph(layout, w.shape, groups, 4, "convTranspose2d")), weights={"w": w})
    node = next(n for n in xg.nodes if n.kind == "XNNConvTranspose2d")
    gic = 4 // groups
    want = iohw.reshape(groups, gic, 3, 2, 3).transpose(0, 2, 3, 4, 1).reshape(groups * 3, 2, 3, gic)
    np.testing.assert_array_equal(_const(xg, node.fields["filter_id"]), want)
    x = rng.standard_normal((1, 4, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(
        reference.run(xg, {"x": x})["y"], ref_conv_transpose2d(x, iohw, groups=groups), rtol=1e-5, atol=1e-5
    )
