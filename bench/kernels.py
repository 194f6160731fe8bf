"""Kernel speed: GEMM, convolutions and pooling of the KernelTable against the FMA peak, numpy and ORT.

`python -m bench kernels [--threads 1 2] [--repeat 15] [--rounds 3] [--json PATH] [--png PATH] [--isa best]`

Every row times the kernel alone (weights packed once, outside the timing; activations preallocated): the
median of `repeat` calls, best of `rounds` passes over all rows (the passes interleave webxnn, numpy and
ORT). The peak is measured in the same run by 12 independent FMA chains per thread, on the table's fp32
vectors (ymm; zmm on avx512vnni, whose fp32 tiles are 512 bits wide).
The int8 GEMM rows (kernels.qgemm: u8 activations x per-channel s8 weights, requantized to s8) are measured
against the int8 peak of the same run (independent chains of the table's multiply step per thread: 12 vpdpbusd
on a VNNI table, else 10 vpmaddubsw + vpmaddwd + vpaddd), with
the fp32 GEMM of the same shape and onnxruntime's QLinearMatMul (u8 x s8 -> u8) beside them; the int8 conv
and depthwise rows (kernels.qconv2d, qdwconv2d) likewise, with onnxruntime's QLinearConv (group = C for dw).
numpy (its BLAS, GEMM rows only) and onnxruntime (a one-node ONNX model, NCHW, IO-bound buffers) run the same
shapes with the same thread count; both are optional and their columns read "-" when absent.
"""

from __future__ import annotations

import argparse
import json
import pathlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.common import (
    can_limit_numpy_threads,
    contention_warning,
    copy_bandwidth,
    fma_peaks,
    int8_peaks,
    int8_step,
    median_ms,
    numpy_threads,
    onnxruntime_or_none,
    ort_session,
    positive_int,
    progress,
    result_path,
    testing_kernels,
    time_calls,
)


@dataclass
class Case:
    name: str
    kind: str  # gemm | qgemm | conv | deconv | dwconv | maxpool | qadd | qgap
    # 2 * MACs (maxpool: comparisons, qadd / qgap: elements read, reported but no % of peak; qgemm: int8 ops)
    flops: float
    params: dict[str, Any] = field(default_factory=dict)


def _gemm(m: int, n: int, k: int) -> Case:
    return Case(f"gemm {m}x{n}x{k}", "gemm", 2.0 * m * n * k, {"M": m, "N": n, "K": k})


def _qgemm(m: int, n: int, k: int, what: str = "") -> Case:
    return Case(f"int8 gemm {m}x{n}x{k}{what}", "qgemm", 2.0 * m * n * k, {"M": m, "N": n, "K": k})


def _conv(name: str, h: int, w: int, c: int, oc: int, k: int, s: int, pad: int) -> Case:
    oh, ow = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    return Case(
        name,
        "conv",
        2.0 * oh * ow * oc * c * k * k,
        {"H": h, "W": w, "C": c, "OC": oc, "k": k, "s": s, "pad": pad},
    )


def _qdwconv(h: int, c: int, s: int) -> Case:
    o = (h + 2 - 3) // s + 1
    name = f"int8 dwconv 3x3{f' s{s}' if s > 1 else ''} {h}x{h}x{c}"
    return Case(name, "qdwconv", 2.0 * o * o * c * 9, {"H": h, "W": h, "C": c, "k": 3, "s": s, "pad": 1})


def _qconv(name: str, h: int, c: int, oc: int, k: int, s: int, pad: int) -> Case:
    o = (h + 2 * pad - k) // s + 1
    return Case(
        name,
        "qconv",
        2.0 * o * o * oc * c * k * k,
        {"H": h, "W": h, "C": c, "OC": oc, "k": k, "s": s, "pad": pad},
    )


INT8_KINDS = ("qgemm", "qconv", "qdwconv")  # rows measured against the int8 peak, in a table of their own
NO_PEAK_KINDS = ("maxpool", "qadd", "qgap")  # memory-bound rows: no % of a compute peak

CASES: list[Case] = [
    _gemm(384, 384, 384),
    _gemm(1024, 1024, 1024),
    _gemm(128, 3072, 768),
    _gemm(64, 768, 768),
    _gemm(1, 1000, 2048),
    _gemm(1, 4096, 4096),
    _conv("conv 3x3 56x56x64->64", 56, 56, 64, 64, 3, 1, 1),
    _conv("conv 1x1 56x56x64->256", 56, 56, 64, 256, 1, 1, 0),
    Case("dwconv 3x3 112x112x32", "dwconv", 2.0 * 112 * 112 * 32 * 9, {"H": 112, "W": 112, "C": 32, "k": 3}),
    _conv("stem 3x3 s2 224x224x3->32", 224, 224, 3, 32, 3, 2, 1),
    Case(
        "maxpool 3x3 s2 112x112x64",
        "maxpool",
        56.0 * 56 * 64 * 9,
        {"H": 112, "W": 112, "C": 64, "k": 3, "s": 2, "pad": 1},
    ),
    # A decoder's upsampling step (not in the issue's list: transposed convolution has its own kernel).
    Case(
        "deconv 4x4 s2 28x28x64->64",
        "deconv",
        2.0 * 28 * 28 * 64 * 64 * 16,
        {"H": 28, "W": 28, "C": 64, "OC": 64, "k": 4, "s": 2, "pad": 1},
    ),
    # qint8 element-wise rows (ORT: com.microsoft QLinearAdd / QLinearGlobalAveragePool, u8, channels last)
    Case("int8 add 56x56x64 (residual)", "qadd", 56.0 * 56 * 64 * 2, {"n": 56 * 56 * 64}),
    Case("int8 global avg pool 7x7x1280", "qgap", 49.0 * 1280, {"HW": 49, "C": 1280}),
    _qgemm(384, 384, 384),
    _qgemm(128, 3072, 768),
    _qgemm(1, 4096, 4096),
    _qgemm(3136, 64, 576, " (conv 3x3 56x56x64->64 as GEMM)"),
    Case(
        "int8 conv 3x3 56x56x64->64",
        "qconv",
        2.0 * 56 * 56 * 64 * 64 * 9,
        {"H": 56, "W": 56, "C": 64, "OC": 64, "k": 3, "s": 1, "pad": 1},
    ),
    # image stems: 3 input channels, short K (qconv2d's fp32-accumulation path on AVX2)
    _qconv("int8 stem 3x3 s2 224x224x3->32", 224, 3, 32, 3, 2, 1),  # MobileNetV2's
    _qconv("int8 stem 7x7 s2 224x224x3->64", 224, 3, 64, 7, 2, 3),  # ResNet-50's
    _qdwconv(112, 32, 1),  # MobileNetV2's first depthwise (the fp32 dwconv row's shape)
    _qdwconv(56, 144, 2),
]


# ------------------------------------------------------------------------------------------ inputs
def _aligned64(a: np.ndarray) -> np.ndarray:
    """A copy of `a` starting on a 64-byte boundary, as every tensor in a Program's arena does (numpy's large
    arrays start 16 bytes past one, which splits a quarter of the 32-byte loads across cache lines)."""
    buf = np.empty(a.size + 64 // a.itemsize, a.dtype)
    skip = (-buf.ctypes.data % 64) // a.itemsize
    out = buf[skip : skip + a.size].reshape(a.shape)
    out[...] = a
    return out


def _inputs(case: Case, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {k: _aligned64(v) for k, v in _raw_inputs(case, rng).items()}


def _raw_inputs(case: Case, rng: np.random.Generator) -> dict[str, np.ndarray]:
    p = case.params
    f32 = np.float32
    if case.kind == "gemm":
        return {
            "A": rng.standard_normal((p["M"], p["K"]), f32),
            "B": rng.standard_normal((p["K"], p["N"]), f32),
        }
    if case.kind == "qgemm":  # and the fp32 GEMM of the same shape
        return {
            "A": rng.integers(0, 256, (p["M"], p["K"])).astype(np.uint8),
            "B": rng.integers(-127, 128, (p["N"], p["K"])).astype(np.int8),
            "w_scales": rng.uniform(0.005, 0.02, p["N"]).astype(f32),
            "Af": rng.standard_normal((p["M"], p["K"]), f32),
            "Bf": rng.standard_normal((p["K"], p["N"]), f32),
        }
    if case.kind == "qconv":  # and the fp32 conv of the same shape
        return {
            "x": rng.integers(0, 256, (1, p["H"], p["W"], p["C"])).astype(np.uint8),
            "w": rng.integers(-127, 128, (p["OC"], p["k"], p["k"], p["C"])).astype(np.int8),
            "w_scales": rng.uniform(0.005, 0.02, p["OC"]).astype(f32),
            "xf": rng.standard_normal((1, p["H"], p["W"], p["C"]), f32),
            "wf": rng.standard_normal((p["OC"], p["k"], p["k"], p["C"]), f32) * f32(0.1),
        }
    if case.kind == "qdwconv":  # and the fp32 depthwise conv of the same shape
        return {
            "x": rng.integers(0, 256, (1, p["H"], p["W"], p["C"])).astype(np.uint8),
            "w": rng.integers(-127, 128, (1, p["k"], p["k"], p["C"])).astype(np.int8),
            "w_scales": rng.uniform(0.005, 0.02, p["C"]).astype(f32),
            "xf": rng.standard_normal((1, p["H"], p["W"], p["C"]), f32),
            "wf": rng.standard_normal((1, p["k"], p["k"], p["C"]), f32),
        }
    if case.kind == "qadd":  # for ORT (webxnn's timed entry makes its own operands)
        return {k: rng.integers(0, 256, p["n"]).astype(np.uint8) for k in ("a", "b")}
    if case.kind == "qgap":
        return {"x": rng.integers(0, 256, (1, 7, 7, p["C"])).astype(np.uint8)}
    if case.kind in ("conv", "deconv"):
        return {
            "x": rng.standard_normal((1, p["H"], p["W"], p["C"]), f32),
            "w": rng.standard_normal((p["OC"], p["k"], p["k"], p["C"]), f32) * f32(0.1),
        }
    if case.kind == "dwconv":
        return {
            "x": rng.standard_normal((1, p["H"], p["W"], p["C"]), f32),
            "w": rng.standard_normal((1, p["k"], p["k"], p["C"]), f32),
        }
    return {"x": rng.standard_normal((1, p["H"], p["W"], p["C"]), f32)}


def _webxnn_times(
    case: Case, data: dict[str, np.ndarray], threads: int, repeat: int, isa: str
) -> list[float]:
    K = testing_kernels()
    p = case.params
    if case.kind == "gemm":
        return K.time_gemm(data["A"], data["B"], isa=isa, threads=threads, repeat=repeat)
    if case.kind == "qgemm":
        return K.time_qgemm(data["A"], data["B"], data["w_scales"], isa=isa, threads=threads, repeat=repeat)
    if case.kind == "qadd":
        return K.time_qadd(p["n"], isa=isa, threads=threads, repeat=repeat)
    if case.kind == "qgap":
        return K.time_qglobal_avg_pool(p["HW"], p["C"], isa=isa, threads=threads, repeat=repeat)
    if case.kind == "qconv":
        pad = p["pad"]
        return K.time_qconv2d(
            data["x"],
            data["w"],
            data["w_scales"],
            pads=[pad] * 4,
            strides=[p["s"]] * 2,
            isa=isa,
            threads=threads,
            repeat=repeat,
        )
    if case.kind == "qdwconv":
        return K.time_qdwconv2d(
            data["x"],
            data["w"],
            data["w_scales"],
            pads=[p["pad"]] * 4,
            strides=[p["s"]] * 2,
            isa=isa,
            threads=threads,
            repeat=repeat,
        )
    if case.kind == "conv":
        pad = p["pad"]
        return K.time_conv2d(
            data["x"],
            data["w"],
            pads=(pad, pad, pad, pad),
            strides=(p["s"], p["s"]),
            isa=isa,
            threads=threads,
            repeat=repeat,
        )
    if case.kind == "deconv":
        pad = p["pad"]
        return K.time_deconv2d(
            data["x"],
            data["w"],
            pads=(pad, pad, pad, pad),
            strides=(p["s"], p["s"]),
            isa=isa,
            threads=threads,
            repeat=repeat,
        )
    if case.kind == "dwconv":
        return K.time_dwconv2d(
            data["x"], data["w"], pads=(1, 1, 1, 1), isa=isa, threads=threads, repeat=repeat
        )
    pad = p["pad"]
    return K.time_max_pool2d(
        data["x"],
        (p["k"], p["k"]),
        pads=(pad, pad, pad, pad),
        strides=(p["s"], p["s"]),
        isa=isa,
        threads=threads,
        repeat=repeat,
    )


# ------------------------------------------------------------------------------------------ onnxruntime
def _onnx_model(case: Case, data: dict[str, np.ndarray]) -> tuple[bytes, dict[str, np.ndarray]]:
    """A one-node ONNX model computing `case` (NCHW for convs: ORT's native layout) and its feeds."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    p = case.params
    f = TensorProto.FLOAT
    if case.kind in ("qadd", "qgap"):
        return _ms_qlinear_model(case, data)
    if case.kind == "qgemm":  # QLinearMatMul, u8 x s8 per-column -> u8, as the int8 quantizers emit it
        return _qlinear_model("QLinearMatMul", data["A"], np.ascontiguousarray(data["B"].T), data["w_scales"])
    if case.kind == "qconv":  # QLinearConv, NCHW
        return _qlinear_model(
            "QLinearConv",
            np.ascontiguousarray(data["x"].transpose(0, 3, 1, 2)),
            np.ascontiguousarray(data["w"].transpose(0, 3, 1, 2)),
            data["w_scales"],
            kernel_shape=[p["k"], p["k"]],
            strides=[p["s"]] * 2,
            pads=[p["pad"]] * 4,
        )
    if case.kind == "qdwconv":  # QLinearConv with one group per channel, NCHW
        return _qlinear_model(
            "QLinearConv",
            np.ascontiguousarray(data["x"].transpose(0, 3, 1, 2)),
            np.ascontiguousarray(data["w"].transpose(3, 0, 1, 2)),  # [C, 1, kh, kw]
            data["w_scales"],
            kernel_shape=[p["k"], p["k"]],
            strides=[p["s"]] * 2,
            pads=[p["pad"]] * 4,
            group=p["C"],
        )
    if case.kind == "gemm":
        node = helper.make_node("MatMul", ["A", "B"], ["Y"])
        inits = [numpy_helper.from_array(data["B"], "B")]
        feeds = {"A": data["A"]}
        inputs = [helper.make_tensor_value_info("A", f, list(data["A"].shape))]
    else:
        x = np.ascontiguousarray(data["x"].transpose(0, 3, 1, 2))
        feeds = {"X": x}
        inputs = [helper.make_tensor_value_info("X", f, list(x.shape))]
        if case.kind == "maxpool":
            pad = p["pad"]
            node = helper.make_node(
                "MaxPool",
                ["X"],
                ["Y"],
                kernel_shape=[p["k"], p["k"]],
                strides=[p["s"], p["s"]],
                pads=[pad] * 4,
            )
            inits = []
        elif case.kind == "deconv":
            w = np.ascontiguousarray(data["w"].transpose(3, 0, 1, 2))  # OHWI -> ONNX [C_in, C_out, kh, kw]
            node = helper.make_node(
                "ConvTranspose",
                ["X", "W"],
                ["Y"],
                kernel_shape=[p["k"], p["k"]],
                strides=[p["s"], p["s"]],
                pads=[p["pad"]] * 4,
            )
            inits = [numpy_helper.from_array(w, "W")]
        else:
            if case.kind == "conv":
                w = np.ascontiguousarray(data["w"].transpose(0, 3, 1, 2))
                group, stride, pad = 1, p["s"], p["pad"]
            else:
                w = np.ascontiguousarray(data["w"].transpose(3, 0, 1, 2))  # [C, 1, kh, kw]
                group, stride, pad = p["C"], 1, 1
            node = helper.make_node(
                "Conv",
                ["X", "W"],
                ["Y"],
                kernel_shape=list(w.shape[2:]),
                group=group,
                strides=[stride, stride],
                pads=[pad] * 4,
            )
            inits = [numpy_helper.from_array(w, "W")]
    graph = helper.make_graph([node], "k", inputs, [helper.make_tensor_value_info("Y", f, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), feeds


def _qlinear_model(
    op: str, x: np.ndarray, w: np.ndarray, w_scales: np.ndarray, **attrs: Any
) -> tuple[bytes, dict[str, np.ndarray]]:
    """A one-node QLinearMatMul / QLinearConv model: u8 input x (zero point 128), s8 weights w with
    per-output-channel scales, u8 output; and its feeds."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    n_out = w.shape[1] if op == "QLinearMatMul" else w.shape[0]
    inits = [
        numpy_helper.from_array(v, n)
        for n, v in (
            ("x_scale", np.array(0.02, np.float32)),
            ("x_zp", np.array(128, np.uint8)),
            ("W", w),
            ("w_scale", w_scales),
            ("w_zp", np.zeros(n_out, np.int8)),
            ("y_scale", np.array(0.5, np.float32)),
            ("y_zp", np.array(128, np.uint8)),
        )
    ]
    node = helper.make_node(
        op, ["X", "x_scale", "x_zp", "W", "w_scale", "w_zp", "y_scale", "y_zp"], ["Y"], **attrs
    )
    u8 = TensorProto.UINT8
    graph = helper.make_graph(
        [node],
        "k",
        [helper.make_tensor_value_info("X", u8, list(x.shape))],
        [helper.make_tensor_value_info("Y", u8, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model.SerializeToString(), {"X": x}


def _ms_qlinear_model(case: Case, data: dict[str, np.ndarray]) -> tuple[bytes, dict[str, np.ndarray]]:
    """onnxruntime's contrib QLinearAdd (two u8 vectors) or QLinearGlobalAveragePool (u8 NHWC,
    channels_last=1) and its feeds."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    def q(name: str, scale: float, zp: int) -> list:
        return [
            numpy_helper.from_array(np.array(scale, np.float32), f"{name}_scale"),
            numpy_helper.from_array(np.array(zp, np.uint8), f"{name}_zp"),
        ]

    u8 = TensorProto.UINT8
    if case.kind == "qadd":
        ins = ["A", "a_scale", "a_zp", "B", "b_scale", "b_zp", "y_scale", "y_zp"]
        node = helper.make_node("QLinearAdd", ins, ["Y"], domain="com.microsoft")
        inits = q("a", 0.05, 131) + q("b", 0.04, 123) + q("y", 0.07, 129)
        feeds = {"A": data["a"], "B": data["b"]}
    else:
        ins = ["A", "a_scale", "a_zp", "y_scale", "y_zp"]
        node = helper.make_node(
            "QLinearGlobalAveragePool", ins, ["Y"], domain="com.microsoft", channels_last=1
        )
        inits = q("a", 0.05, 131) + q("y", 0.02, 124)
        feeds = {"A": data["x"]}
    inputs = [helper.make_tensor_value_info(k, u8, list(v.shape)) for k, v in feeds.items()]
    graph = helper.make_graph([node], "k", inputs, [helper.make_tensor_value_info("Y", u8, None)], inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model.SerializeToString(), feeds


def _ort_times(case: Case, data: dict[str, np.ndarray], threads: int, repeat: int) -> list[float]:
    model, feeds = _onnx_model(case, data)
    sess = ort_session(model, threads)
    binding = sess.io_binding()
    for k, v in feeds.items():
        binding.bind_cpu_input(k, v)
    binding.bind_output("Y")
    return time_calls(lambda: sess.run_with_iobinding(binding), repeat, warmup=2, min_seconds=0.2)


def _numpy_times(case: Case, data: dict[str, np.ndarray], threads: int, repeat: int) -> list[float] | None:
    if case.kind != "gemm" or not can_limit_numpy_threads():
        return None
    out = np.empty((case.params["M"], case.params["N"]), np.float32)
    with numpy_threads(threads):
        return time_calls(lambda: np.matmul(data["A"], data["B"], out=out), repeat, warmup=2, min_seconds=0.2)


# ------------------------------------------------------------------------------------------ driver
def run(
    cases: list[Case],
    threads_list: list[int],
    repeat: int,
    isa: str,
    with_ort: bool,
    with_numpy: bool,
    show_progress: bool,
    rounds: int = 3,
) -> dict[str, Any]:
    """Times every (case, threads) in `rounds` passes over the whole list; each runtime keeps the median of
    its best pass (other processes on a small machine come and go; this keeps a burst from landing on one
    row or one runtime only). The FMA peak is the best of its samples: one before every case (~50 ms), so a
    tenant that comes and goes within a pass still shows in the warning, and a copy's bandwidth at the start
    of each pass (another tenant streaming memory)."""
    K = testing_kernels()

    info = dict(K.cpu_info())
    samples: list[dict[int, float]] = []  # the FMA peaks before each case
    int8_samples: list[dict[int, float]] = []  # the int8 peaks before each int8 case
    copies: list[float] = []  # copy bandwidth at the start of each pass
    rng = np.random.default_rng(0)
    datas = {c.name: _inputs(c, rng) for c in cases}
    best: dict[tuple[str, int, str], float] = {}
    work = [(r, c, t) for r in range(rounds) for c in cases for t in threads_list]

    def keep(key: tuple[str, int, str], ms: float) -> None:
        best[key] = min(best.get(key, ms), ms)

    for _round, case, t in progress(work, "kernels", show_progress):
        if case is cases[0] and t == threads_list[0]:
            copies.append(copy_bandwidth())
        if t == threads_list[0]:
            samples.append(fma_peaks(threads_list, isa))
            if case.kind in INT8_KINDS:
                int8_samples.append(int8_peaks(threads_list, isa))
        data = datas[case.name]
        keep((case.name, t, "webxnn_ms"), median_ms(_webxnn_times(case, data, t, repeat, isa)))
        if case.kind == "qgemm":
            fp32 = K.time_gemm(data["Af"], data["Bf"], isa=isa, threads=t, repeat=repeat)
            keep((case.name, t, "fp32_ms"), median_ms(fp32))
        if case.kind == "qconv":
            pads, strides = (case.params["pad"],) * 4, (case.params["s"],) * 2
            fp32 = K.time_conv2d(
                data["xf"], data["wf"], pads=pads, strides=strides, isa=isa, threads=t, repeat=repeat
            )
            keep((case.name, t, "fp32_ms"), median_ms(fp32))
        if case.kind == "qdwconv":
            pads, strides = (case.params["pad"],) * 4, (case.params["s"],) * 2
            fp32 = K.time_dwconv2d(
                data["xf"], data["wf"], pads=pads, strides=strides, isa=isa, threads=t, repeat=repeat
            )
            keep((case.name, t, "fp32_ms"), median_ms(fp32))
        if with_numpy:
            nt = _numpy_times(case, data, t, repeat)
            if nt:
                keep((case.name, t, "numpy_ms"), median_ms(nt))
        if with_ort:
            keep((case.name, t, "ort_ms"), median_ms(_ort_times(case, data, t, repeat)))
    peaks = {t: max(s[t] for s in samples) for t in threads_list}  # the best of the passes
    int8_peaks_best = {t: max(s[t] for s in int8_samples) for t in threads_list} if int8_samples else {}
    rows: list[dict[str, Any]] = []
    for case in cases:
        for t in threads_list:
            row: dict[str, Any] = {"case": case.name, "kind": case.kind, "threads": t}
            for key in ("webxnn_ms", "numpy_ms", "ort_ms", "fp32_ms"):
                row[key] = best.get((case.name, t, key))
            row["gflops"] = case.flops / (row["webxnn_ms"] * 1e-3) * 1e-9  # GOP/s for int8 rows
            peak = int8_peaks_best.get(t) if case.kind in INT8_KINDS else peaks[t]
            row["pct_peak"] = 100.0 * row["gflops"] / peak if case.kind not in NO_PEAK_KINDS else None
            rows.append(row)
    return {
        "cpu": info,
        "isa": isa,
        "rounds": rounds,
        "peak_gflops": {str(t): p for t, p in peaks.items()},
        "int8_peak_gops": {str(t): p for t, p in int8_peaks_best.items()},
        "int8_peak_step": int8_step(isa),
        "copy_gbs": copies,
        "warning": contention_warning(samples, copies),
        "rows": rows,
    }


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown(result: dict[str, Any]) -> str:
    peaks = ", ".join(
        f"{t} thread{'s' if t != '1' else ''}: {p:.1f}" for t, p in result["peak_gflops"].items()
    )
    lines = [
        f"FMA peak (GFLOP/s) — {peaks}; isa={result['isa']}",
        "",
        "| kernel | thr | webxnn ms | GFLOP/s | % peak | numpy ms | ORT ms | webxnn/ORT |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        if r["kind"] in INT8_KINDS:
            continue
        ort = r.get("ort_ms")
        ratio = r["webxnn_ms"] / ort if ort else None
        gf = "-" if r["kind"] in NO_PEAK_KINDS else f"{r['gflops']:.1f}"
        lines.append(
            f"| {r['case']} | {r['threads']} | {r['webxnn_ms']:.3f} | {gf} "
            f"| {_fmt(r['pct_peak'], '.1f')} "
            f"| {_fmt(r.get('numpy_ms'), '.3f')} | {_fmt(ort, '.3f')} | {_fmt(ratio, '.2f')} |"
        )
    lines += _int8_markdown(result)
    if result.get("warning"):
        lines += ["", result["warning"]]
    lines += [
        "",
        "GFLOP/s and % peak count the direct algorithm's flops (2 x multiply-adds). The AVX2 "
        "table runs 3x3 stride-1 convolutions with >= 16 channels on each side by Winograd F(4x4,3x3), "
        "which does 4x fewer multiplies, so those rows can pass 100 % of the FMA peak.",
    ]
    return "\n".join(lines)


def _int8_markdown(result: dict[str, Any]) -> list[str]:
    rows = [r for r in result["rows"] if r["kind"] in INT8_KINDS]
    if not rows:
        return []
    peaks = ", ".join(
        f"{t} thread{'s' if t != '1' else ''}: {p:.1f}" for t, p in result.get("int8_peak_gops", {}).items()
    )
    lines = [
        "",
        f"int8 peak (GOP/s, {result.get('int8_peak_step', 'vpmaddubsw + vpmaddwd + vpaddd')}) — {peaks}",
        "",
        "| int8 (u8 x s8 -> s8) | thr | webxnn ms | GOP/s | % int8 peak | fp32 ms "
        "| int8 / fp32 speed | ORT int8 ms | webxnn/ORT |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ort, fp32 = r.get("ort_ms"), r.get("fp32_ms")
        lines.append(
            f"| {r['case']} | {r['threads']} | {r['webxnn_ms']:.3f} | {r['gflops']:.1f} "
            f"| {_fmt(r['pct_peak'], '.1f')} | {_fmt(fp32, '.3f')} "
            f"| {_fmt(fp32 / r['webxnn_ms'] if fp32 else None, '.2f')} | {_fmt(ort, '.3f')} "
            f"| {_fmt(r['webxnn_ms'] / ort if ort else None, '.2f')} |"
        )
    return lines


def plot(result: dict[str, Any], path: pathlib.Path) -> bool:
    """A bar chart of GFLOP/s per kernel and thread count (webxnn vs ORT); False when matplotlib is absent or
    no row has flops (a max-pool-only run)."""
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    rows = [r for r in result["rows"] if r["kind"] not in (*NO_PEAK_KINDS, *INT8_KINDS)]
    if not rows:
        return False
    names = list(dict.fromkeys(r["case"] for r in rows))
    threads = sorted({r["threads"] for r in rows})
    flops = {c.name: c.flops for c in CASES}
    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.8 / (2 * len(threads))
    for i, t in enumerate(threads):
        for j, (key, label) in enumerate((("webxnn_ms", "webxnn"), ("ort_ms", "ORT"))):
            vals = []
            for n in names:
                r = next(r for r in rows if r["case"] == n and r["threads"] == t)
                ms = r.get(key)
                vals.append(flops[n] / (ms * 1e-3) * 1e-9 if ms else 0.0)
            xs = [k + (2 * i + j) * width for k in range(len(names))]
            ax.bar(xs, vals, width, label=f"{label} {t}T")
    for t, pk in result["peak_gflops"].items():
        ax.axhline(pk, linestyle="--", linewidth=0.8, color="gray")
        ax.text(len(names) - 0.5, pk, f"FMA peak {t}T", fontsize=8, va="bottom", ha="right")
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("GFLOP/s")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench kernels",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=positive_int, default=15, help="calls per timing")
    parser.add_argument(
        "--rounds", type=positive_int, default=3, help="passes over all rows; the best median counts"
    )
    parser.add_argument("--isa", default="best", help="kernel table: best, avx2, scalar, avxvnni, avx512vnni")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of case names to keep")
    parser.add_argument("--no-ort", action="store_true")
    parser.add_argument("--no-numpy", action="store_true")
    parser.add_argument(
        "--json",
        type=pathlib.Path,
        default=None,
        help="default: bench/out/kernels.json for the full suite, else kernels-partial.json",
    )
    parser.add_argument(
        "--png",
        type=pathlib.Path,
        default=None,
        help="default: bench/out/kernels.png for the full suite, else kernels-partial.png",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.only or any(s in c.name for s in args.only)]
    if not cases:
        parser.error(
            f"--only {' '.join(args.only)}: no case name contains that; the cases are: "
            + "; ".join(c.name for c in CASES)
        )
    with_ort = not args.no_ort and onnxruntime_or_none() is not None
    if not args.no_ort and not with_ort:
        print("onnxruntime not installed: ORT columns skipped")
    result = run(
        cases,
        args.threads,
        args.repeat,
        args.isa,
        with_ort,
        not args.no_numpy,
        not args.no_progress,
        args.rounds,
    )
    print(markdown(result))
    # Only the full suite replaces the README's results; a partial run (--only, other threads, isa or
    # comparisons) gets files of its own.
    full = (
        not args.only
        and sorted(args.threads) == [1, 2]
        and args.isa == "best"
        and with_ort
        and not args.no_numpy
    )
    json_path = args.json or result_path("kernels", full, "json")
    png_path = args.png or result_path("kernels", full, "png")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, indent=2))
    print(f"\nJSON: {json_path}")
    if plot(result, png_path):
        print(f"plot: {png_path}")
    return 0
