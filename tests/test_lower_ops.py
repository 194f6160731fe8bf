"""Lowering, checked numerically: each case is a small WebNN graph, compiled to XNN IR and executed by the
numpy reference interpreter (`webxnn.xnn.reference`), compared with numpy written straightforwardly on the
WebNN semantics (NCHW, OIHW, ...). `test_end_to_end.py` runs the same CASES through the C++ runtime."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from webxnn.compiler import compile_graph
from webxnn.dsl import parse
from webxnn.xnn import reference

# ---------------------------------------------------------------------------------------------- numpy refs


def ref_conv2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    pads=(0, 0, 0, 0),
    strides=(1, 1),
    dils=(1, 1),
    groups: int = 1,
) -> np.ndarray:
    """NCHW input, OIHW filter, pads [t, b, l, r]: the textbook loops."""
    n, c, h, wd = x.shape
    o, gi, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    oh = (h + pads[0] + pads[1] - dils[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[2] + pads[3] - dils[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, o, oh, ow))
    goc = o // groups
    for oc in range(o):
        g = oc // goc
        for i in range(oh):
            for j in range(ow):
                r0, c0 = i * strides[0], j * strides[1]
                patch = xp[
                    :,
                    g * gi : (g + 1) * gi,
                    r0 : r0 + dils[0] * (kh - 1) + 1 : dils[0],
                    c0 : c0 + dils[1] * (kw - 1) + 1 : dils[1],
                ]
                y[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def ref_conv_transpose2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    pads=(0, 0, 0, 0),
    strides=(1, 1),
    out_pad=(0, 0),
    groups: int = 1,
) -> np.ndarray:
    """NCHW input, IOHW filter ([in, out/groups, kh, kw]): scatter each input pixel."""
    n, c, h, wd = x.shape
    _, goc, kh, kw = w.shape
    gic = c // groups
    fh, fw = (h - 1) * strides[0] + kh + out_pad[0], (wd - 1) * strides[1] + kw + out_pad[1]
    y = np.zeros((n, goc * groups, fh, fw))
    for ic in range(c):
        g = ic // gic
        for i in range(h):
            for j in range(wd):
                r0, c0 = i * strides[0], j * strides[1]
                pix = x[:, ic, i, j][:, None, None, None]
                y[:, g * goc : (g + 1) * goc, r0 : r0 + kh, c0 : c0 + kw] += pix * w[ic]
    y = y[:, :, pads[0] : fh - pads[1], pads[2] : fw - pads[3]]
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def ref_pool(x: np.ndarray, k, strides=(1, 1), pads=(0, 0, 0, 0), kind: str = "max", ceil: bool = False):
    n, c, h, w = x.shape

    def osz(size, kk, s, pb, pe):
        num = size + pb + pe - kk
        return (-(-num // s) if ceil else num // s) + 1

    oh, ow = osz(h, k[0], strides[0], pads[0], pads[1]), osz(w, k[1], strides[1], pads[2], pads[3])
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - pads[0], j * strides[1] - pads[2]
            rs, cs = slice(max(r0, 0), min(r0 + k[0], h)), slice(max(c0, 0), min(c0 + k[1], w))
            win = x[:, :, rs, cs]
            y[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return y


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# ---------------------------------------------------------------------------------------------- cases


@dataclass
class Case:
    name: str
    text: str
    weights: dict[str, np.ndarray]
    inputs: dict[str, np.ndarray]
    expected: Callable[[dict[str, np.ndarray], dict[str, np.ndarray]], dict[str, np.ndarray]]


def _graph(inputs: str, consts: str, nodes: str, outputs: str) -> str:
    return (
        f'webnn_graph "t" v1 {{\n  inputs {{ {inputs} }}\n  consts {{ {consts} }}\n'
        f"  nodes {{\n{nodes}\n  }}\n  outputs {{ {outputs} }}\n}}\n"
    )


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def make_cases() -> list[Case]:
    cases: list[Case] = []
    r = _rng(1)

    # resnet_head-like: matmul + add + softmax (matmul → FullyConnected with the bias fused)
    W, b = _f32(r, 64, 10, scale=0.2), _f32(r, 10)
    cases.append(
        Case(
            "resnet_head",
            _graph(
                "x: f32[1, 64];",
                'W: f32[64, 10] @weights("W"); b: f32[10] @weights("b");',
                "logits0 = matmul(x, W);\n logits = add(logits0, b);\n probs = softmax(logits, axis=1);",
                "probs;",
            ),
            {"W": W, "b": b},
            {"x": _f32(r, 1, 64)},
            lambda i, w: {"probs": softmax(i["x"].astype(np.float64) @ w["W"] + w["b"], 1)},
        )
    )

    # tiny CNN: conv(+bias+relu) → maxPool → conv → relu → global avg pool → reshape → matmul → softmax
    w1, b1, w2, b2 = _f32(r, 4, 3, 3, 3, scale=0.3), _f32(r, 4), _f32(r, 6, 4, 3, 3, scale=0.3), _f32(r, 6)
    fw, fb = _f32(r, 6, 5), _f32(r, 5)

    def cnn(i, w):
        y = np.maximum(ref_conv2d(i["x"], w["w1"], w["b1"], (1, 1, 1, 1)), 0)
        y = ref_pool(y, (2, 2), (2, 2))
        y = np.maximum(ref_conv2d(y, w["w2"], w["b2"], (1, 1, 1, 1), (2, 2)), 0)
        y = y.mean(axis=(2, 3))
        return {"probs": softmax(y @ w["fw"] + w["fb"], 1)}

    cases.append(
        Case(
            "cnn",
            _graph(
                "x: f32[1, 3, 8, 8];",
                'w1: f32[4, 3, 3, 3] @weights("w1"); b1: f32[4] @weights("b1"); '
                'w2: f32[6, 4, 3, 3] @weights("w2"); b2: f32[6] @weights("b2"); '
                'fw: f32[6, 5] @weights("fw"); fb: f32[5] @weights("fb");',
                "c1 = conv2d(x, w1, bias=b1, padding=[1, 1, 1, 1]);\n r1 = relu(c1);\n"
                " p1 = maxPool2d(r1, windowDimensions=[2, 2], strides=[2, 2]);\n"
                " c2 = conv2d(p1, w2, bias=b2, strides=[2, 2], padding=[1, 1, 1, 1]);\n r2 = relu(c2);\n"
                " g = averagePool2d(r2);\n flat = reshape(g, newShape=[1, 6]);\n"
                " l0 = matmul(flat, fw);\n l = add(l0, fb);\n probs = softmax(l, axis=1);",
                "probs;",
            ),
            {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "fw": fw, "fb": fb},
            {"x": _f32(r, 1, 3, 8, 8)},
            cnn,
        )
    )

    # depthwise conv (groups == channels, multiplier 2) with stride and asymmetric padding, bias via add
    dw, db = _f32(r, 6, 1, 3, 3), _f32(r, 6)
    cases.append(
        Case(
            "depthwise",
            _graph(
                "x: f32[2, 3, 7, 7];",
                'w: f32[6, 1, 3, 3] @weights("w"); b: f32[6, 1, 1] @weights("b");',
                "c = conv2d(x, w, groups=3, strides=[2, 2], padding=[1, 0, 0, 1]);\n y = add(c, b);",
                "y;",
            ),
            {"w": dw, "b": db.reshape(6, 1, 1)},
            {"x": _f32(r, 2, 3, 7, 7)},
            lambda i, w: {
                "y": ref_conv2d(i["x"], w["w"], None, (1, 0, 0, 1), (2, 2), groups=3)
                + w["b"].reshape(1, 6, 1, 1)
            },
        )
    )

    # grouped (not depthwise) conv with dilation, filter given as hwio
    gw = _f32(r, 4, 2, 3, 3)
    cases.append(
        Case(
            "grouped_hwio",
            _graph(
                "x: f32[1, 4, 9, 9];",
                'w: f32[3, 3, 2, 4] @weights("w");',
                'y = conv2d(x, w, groups=2, dilations=[2, 2], filterLayout="hwio");',
                "y;",
            ),
            {"w": np.ascontiguousarray(gw.transpose(2, 3, 1, 0))},
            {"x": _f32(r, 1, 4, 9, 9)},
            lambda i, w: {"y": ref_conv2d(i["x"], gw, None, dils=(2, 2), groups=2)},
        )
    )

    # conv in nhwc/ohwi needs no transposes
    ow_ = _f32(r, 5, 3, 2, 2)
    cases.append(
        Case(
            "conv_nhwc",
            _graph(
                "x: f32[1, 6, 6, 3];",
                'w: f32[5, 2, 2, 3] @weights("w");',
                'y = conv2d(x, w, inputLayout="nhwc", filterLayout="ohwi", strides=[2, 2]);\n z = clamp(y, '
                "minValue=-0.5, maxValue=0.5);",
                "z;",
            ),
            {"w": np.ascontiguousarray(ow_.transpose(0, 2, 3, 1))},
            {"x": _f32(r, 1, 6, 6, 3)},
            lambda i, w: {
                "z": np.clip(
                    ref_conv2d(i["x"].transpose(0, 3, 1, 2), ow_, strides=(2, 2)), -0.5, 0.5
                ).transpose(0, 2, 3, 1)
            },
        )
    )

    # convTranspose2d, stride 2, padding and output padding, grouped
    tw, tb = _f32(r, 4, 3, 3, 3), _f32(r, 6)
    cases.append(
        Case(
            "conv_transpose",
            _graph(
                "x: f32[1, 4, 3, 3];",
                'w: f32[4, 3, 3, 3] @weights("w"); b: f32[6] @weights("b");',
                "y = convTranspose2d(x, w, bias=b, groups=2, strides=[2, 2], padding=[1, 1, 0, 1], "
                "outputPadding=[1, 1]);",
                "y;",
            ),
            {"w": tw, "b": tb},
            {"x": _f32(r, 1, 4, 3, 3)},
            lambda i, w: {"y": ref_conv_transpose2d(i["x"], w["w"], w["b"], (1, 1, 0, 1), (2, 2), (1, 1), 2)},
        )
    )

    # concat of a conv output (NHWC region) with a graph input, then slice and pad in the region
    cw = _f32(r, 2, 2, 1, 1)

    def cat(i, w):
        c = ref_conv2d(i["x"], w["w"])
        y = np.concatenate([c, i["x"]], axis=1)
        s = y[:, 1:4, 1:4, 0:3]
        return {"y": np.pad(s, ((0, 0), (0, 1), (1, 0), (2, 1)), constant_values=0.5)}

    cases.append(
        Case(
            "concat_slice_pad",
            _graph(
                "x: f32[1, 2, 4, 5];",
                'w: f32[2, 2, 1, 1] @weights("w");',
                "c = conv2d(x, w);\n cc = concat([c, x], axis=1);\n"
                " s = slice(cc, starts=[0, 1, 1, 0], sizes=[1, 3, 3, 3]);\n"
                " y = pad(s, beginningPadding=[0, 0, 1, 2], endingPadding=[0, 1, 0, 1], value=0.5);",
                "y;",
            ),
            {"w": cw},
            {"x": _f32(r, 1, 2, 4, 5)},
            cat,
        )
    )

    # six-way concat (chained Concatenate5 + Concatenate2) and transpose
    cases.append(
        Case(
            "concat6_transpose",
            _graph(
                "a: f32[2, 3]; b: f32[2, 1];",
                "",
                "c = concat([a, b, a, b, a, b], axis=1);\n t = transpose(c, permutation=[1, 0]);",
                "t;",
            ),
            {},
            {"a": _f32(r, 2, 3), "b": _f32(r, 2, 1)},
            lambda i, w: {"t": np.concatenate([i["a"], i["b"]] * 3, axis=1).T},
        )
    )

    # element-wise broadcasting, sub/div/min/max, sigmoid, tanh
    k = _f32(r, 3, 1)
    cases.append(
        Case(
            "elementwise",
            _graph(
                "x: f32[2, 3, 4]; y: f32[4];",
                'k: f32[3, 1] @weights("k"); two: f32[] @scalar(2.0);',
                "a = add(x, y);\n s = sub(a, k);\n m = mul(s, y);\n d = div(m, two);\n"
                " mx = max(d, x);\n mn = min(mx, k);\n sg = sigmoid(mn);\n th = tanh(x);",
                "sg; th;",
            ),
            {"k": k},
            {"x": _f32(r, 2, 3, 4), "y": _f32(r, 4)},
            lambda i, w: {
                "sg": sigmoid(
                    np.minimum(np.maximum((i["x"] + i["y"] - w["k"]) * i["y"] / 2.0, i["x"]), w["k"])
                ),
                "th": np.tanh(i["x"]),
            },
        )
    )

    # gemm with transposes, alpha, beta and C
    ga, gb, gc = _f32(r, 5, 3), _f32(r, 4, 5), _f32(r, 4)
    cases.append(
        Case(
            "gemm",
            _graph(
                "a: f32[5, 3];",
                'b: f32[4, 5] @weights("b"); c: f32[4] @weights("c");',
                "y = gemm(a, b, c=c, alpha=0.5, beta=2.0, aTranspose=true, bTranspose=true);",
                "y;",
            ),
            {"b": gb, "c": gc},
            {"a": ga},
            lambda i, w: {"y": 0.5 * i["a"].T @ w["b"].T + 2.0 * w["c"]},
        )
    )

    # batched matmul of two inputs, softmax over a middle axis
    cases.append(
        Case(
            "bmm_softmax_axis",
            _graph("a: f32[2, 3, 4]; b: f32[4, 5];", "", "m = matmul(a, b);\n y = softmax(m, axis=1);", "y;"),
            {},
            {"a": _f32(r, 2, 3, 4), "b": _f32(r, 4, 5)},
            lambda i, w: {"y": softmax(i["a"] @ i["b"], 1)},
        )
    )

    # average pool with padding (excluded from the divisor), ceil rounding; leakyRelu/elu/hardSwish
    def pools(i, w):
        a = ref_pool(i["x"], (3, 3), (2, 2), (1, 1, 1, 1), "avg", ceil=True)
        m = ref_pool(i["x"], (2, 2), (2, 2), (0, 0, 0, 0), "max", ceil=True)
        return {"a": np.where(a >= 0, a, 0.1 * a), "m": np.where(m >= 0, m, 0.7 * np.expm1(np.minimum(m, 0)))}

    cases.append(
        Case(
            "pools",
            _graph(
                "x: f32[1, 2, 6, 7];",
                "",
                "a0 = averagePool2d(x, windowDimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], "
                'roundingType="ceil");\n a = leakyRelu(a0, alpha=0.1);\n'
                ' m0 = maxPool2d(x, windowDimensions=[2, 2], strides=[2, 2], roundingType="ceil");\n'
                " m = elu(m0, alpha=0.7);",
                "a; m;",
            ),
            {},
            {"x": _f32(r, 1, 2, 6, 7)},
            pools,
        )
    )

    # prelu and hardSwish inside a conv region; identity and graph input passed straight to an output
    pw, slope = _f32(r, 3, 3, 1, 1), np.abs(_f32(r, 3, 1, 1)) * 0.2

    def prelu(i, w):
        c = ref_conv2d(i["x"], w["w"])
        p = np.where(c >= 0, c, c * w["s"])
        return {"h": p * np.clip(p + 3, 0, 6) / 6, "x2": i["x"]}

    cases.append(
        Case(
            "prelu_hardswish_identity",
            _graph(
                "x: f32[1, 3, 4, 4];",
                'w: f32[3, 3, 1, 1] @weights("w"); s: f32[3, 1, 1] @weights("s");',
                "c = conv2d(x, w);\n p = prelu(c, s);\n h = hardSwish(p);\n x2 = identity(x);",
                "h; x2;",
            ),
            {"w": pw, "s": slope},
            {"x": _f32(r, 1, 3, 4, 4)},
            prelu,
        )
    )

    # reshape into 4-D and a conv after it; exp/abs/neg/sqrt/floor/ceil unary chain
    uw = _f32(r, 2, 1, 2, 2)

    def unary(i, w):
        x4 = i["x"].reshape(1, 1, 4, 6)
        c = ref_conv2d(x4, w["w"])
        return {"u": np.ceil(np.floor(np.sqrt(np.abs(-np.exp(c * 0.1))) * 4.0))}

    cases.append(
        Case(
            "reshape_conv_unary",
            _graph(
                "x: f32[4, 6];",
                'w: f32[2, 1, 2, 2] @weights("w"); k: f32[] @scalar(0.1); f: f32[] @scalar(4.0);',
                "x4 = reshape(x, newShape=[1, 1, 4, 6]);\n c = conv2d(x4, w);\n s = mul(c, k);\n"
                " e = exp(s);\n n = neg(e);\n a = abs(n);\n q = sqrt(a);\n q4 = mul(q, f);\n"
                " fl = floor(q4);\n u = ceil(fl);",
                "u;",
            ),
            {"w": uw},
            {"x": _f32(r, 4, 6)},
            unary,
        )
    )
    return cases


CASES = make_cases()


def compile_case(case: Case):
    return compile_graph(parse(case.text), weights=case.weights)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lowered_graph_matches_numpy(case: Case) -> None:
    xg = compile_case(case)
    got = reference.run(xg, case.inputs)
    want = case.expected(case.inputs, case.weights)
    assert set(got) == set(want)
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5, err_msg=f"{case.name}:{name}")
        assert got[name].shape == w.shape
