"""The VNNI int8 tables (csrc/kernels/vnni/): qgemm, qconv2d and qd8_gemm on vpdpbusd (ymm tiles on AVX-VNNI,
zmm tiles on AVX512-VNNI), bit-identical to the scalar table, and their choice at load.

avxvnni / avx512vnni run where the CPU has them and skip, saying so, where not; on CPUs without VNNI the
kernels run as the "vnni-emu" table (testing builds): the ymm tables' code with vpdpbusd emulated exactly in
AVX2. The other int8 kernel tests (test_qs8_gemm.py, test_qs8_conv.py, test_qd8.py) loop over every table this
build and CPU run, vnni-emu included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, VNNI_TABLES, load_testing_module, outputs_with_isa, table_params
from test_qs8_gemm import case

Q = load_testing_module().kernels
TABLES = table_params(Q, VNNI_TABLES)
KS = [1, 3, 4, 5, 17, 64, 65, 768, 769, 2049]
NS = [1, 15, 16, 17, 33]
MS = [1, 7, 17]


@pytest.mark.parametrize("isa", TABLES)
@pytest.mark.parametrize("k", KS)
def test_qgemm_equals_scalar(isa: str, k: int) -> None:
    """M x N x K over the tile shapes and their tails, K edges (partial row groups, K blocks), weights with
    -128, zero points at both ends, u8 and s8 activations, 1 and 2 threads: the scalar table's bytes."""
    for i, (m, n) in enumerate((m, n) for m in MS for n in NS):
        a_dtype = ("uint8", "int8")[i % 2]
        a_zp = {"uint8": (0, 255), "int8": (-128, 127)}[a_dtype][(i // 2) % 2]
        out_dtype, out_zp = (("int8", -128), ("uint8", 255), ("int8", 127), ("uint8", 0))[i % 4]
        c = case(m, n, k, a_dtype, out_dtype, a_zp=a_zp, out_zp=out_zp, seed=i * 31 + k, w_lo=-128)
        c["B"][0, :] = -128
        want = Q.qgemm(**c, isa="scalar")
        for t in (1, 2):
            got = Q.qgemm(**c, isa=isa, threads=t)
            assert np.array_equal(got, want), (isa, m, n, k, a_dtype, t, np.argwhere(got != want)[:3])


@pytest.mark.parametrize("isa", TABLES)
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_qgemm_extreme_products(isa: str, a_dtype: str) -> None:
    """Every activation at an end of its range times every weight at an end of s8: the largest dot products
    vpdpbusd sums (4 x 255 x -128 per lane), K long enough to need many of them."""
    for a_value in (0, 255) if a_dtype == "uint8" else (-128, 127):
        for w_value in (-128, 127):
            c = case(9, 40, 771, a_dtype, "int8", a_zp=0 if a_dtype == "int8" else 128, out_scale=50.0)
            c["A"][:] = a_value
            c["B"][:] = w_value
            c["B"][5, ::3] = -128
            np.testing.assert_array_equal(Q.qgemm(**c, isa=isa, threads=2), Q.qgemm(**c, isa="scalar"))


def _conv_case(
    rng: np.random.Generator, c: int, oc: int, k: tuple[int, int], a_dtype: str, groups: int
) -> dict:
    lo, hi = (0, 255) if a_dtype == "uint8" else (-128, 127)
    return dict(
        x=rng.integers(lo, hi + 1, (2, 9, 11, c * groups)).astype(a_dtype),
        filter=rng.integers(-128, 128, (oc * groups, *k, c)).astype(np.int8),
        bias=rng.integers(-3000, 3000, oc * groups).astype(np.int32),
        w_scales=rng.uniform(0.002, 0.02, oc * groups).astype(np.float32),
        a_scale=0.05,
        a_zero_point=int(rng.integers(lo, hi + 1)),
        out_scale=0.05 * 0.01 * 40 * np.sqrt(k[0] * k[1] * c) / 60,
        out_zero_point=int(rng.integers(-128, 128)),
        out_dtype="int8",
        groups=groups,
    )


@pytest.mark.parametrize("isa", TABLES)
@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
@pytest.mark.parametrize(
    "c,oc,k,pads,strides,dil,groups",
    [
        (3, 32, (3, 3), (1, 1, 1, 1), (2, 2), (1, 1), 1),  # an image stem: merged filter rows
        (3, 17, (7, 7), (3, 3, 3, 3), (2, 2), (1, 1), 1),
        (16, 33, (1, 1), (0, 0, 0, 0), (1, 1), (1, 1), 1),  # pointwise: the plain GEMM
        (17, 15, (3, 3), (0, 2, 1, 1), (1, 2), (2, 1), 1),
        (64, 40, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1),
        (5, 7, (2, 3), (1, 0, 0, 1), (1, 1), (1, 1), 3),  # grouped
    ],
)
def test_qconv2d_equals_scalar(isa, a_dtype, c, oc, k, pads, strides, dil, groups) -> None:  # noqa: ANN001
    rng = np.random.default_rng(c * 100 + oc)
    args = _conv_case(rng, c, oc, k, a_dtype, groups)
    geo = dict(pads=pads, strides=strides, dilations=dil)
    want = Q.qconv2d(**args, **geo, isa="scalar")
    for t in (1, 2):
        np.testing.assert_array_equal(Q.qconv2d(**args, **geo, isa=isa, threads=t), want)


@pytest.mark.parametrize("isa", TABLES)
@pytest.mark.parametrize(
    "n,h,w,c,k,pads,strides,dil",
    [
        (3, 23, 19, 16, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),  # chunks of 192 pixels end mid-image
        (2, 40, 9, 8, (3, 3), (0, 2, 1, 0), (2, 1), (2, 1)),  # padding on one side, dilated rows
        (1, 30, 30, 3, (7, 7), (3, 3, 3, 3), (2, 2), (1, 1)),  # a stem: merged filter rows
        (2, 17, 17, 24, (1, 1), (0, 0, 0, 0), (2, 2), (1, 1)),  # a strided 1x1: one tap, not a GEMM
        (1, 9, 11, 17, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),  # C % 4 != 0: a tap per filter column
        (1, 12, 20, 4, (9, 9), (4, 4, 4, 4), (1, 1), (1, 2)),  # 81 taps: the tiles flip, reading the input
    ],
)
def test_qconv2d_s8_activations_across_chunks(isa, n, h, w, c, k, pads, strides, dil) -> None:  # noqa: ANN001
    """s8 activations, which the 512-bit tiles flip to u8 per unit of work, in a copy of the input rows that
    unit's output pixels read with the padding written out (filter rows merged into one tap where C allows):
    images and M chunks that split mid-image, one-sided padding, dilation, 1 and 2 threads."""
    rng = np.random.default_rng(h * w)
    args = _conv_case(rng, c, 40, k, "int8", 1)
    args["x"] = rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)
    geo = dict(pads=pads, strides=strides, dilations=dil)
    want = Q.qconv2d(**args, **geo, isa="scalar")
    for t in (1, 2):
        np.testing.assert_array_equal(Q.qconv2d(**args, **geo, isa=isa, threads=t), want)


@pytest.mark.parametrize("isa", TABLES)
@pytest.mark.parametrize("k", [1, 3, 4, 5, 17, 65, 769, 2049])
def test_qd8_gemm_equals_scalar(isa: str, k: int) -> None:
    rng = np.random.default_rng(k)
    for m in MS:
        for n in NS:
            a = rng.integers(-128, 128, (m, k)).astype(np.int8)
            zp = rng.integers(-128, 128, m).astype(np.int32)
            zp[0] = -128
            zp[-1] = 127
            sa = rng.uniform(1e-3, 1e-1, m).astype(np.float32)
            w = rng.integers(-128, 128, (n, k)).astype(np.int8)
            w[0, :] = -128
            ws = rng.uniform(1e-3, 2e-2, n).astype(np.float32)
            bias = rng.standard_normal(n).astype(np.float32)
            want = Q.qd8_gemm(a, zp, sa, w, bias, ws, isa="scalar")
            for t in (1, 2):
                np.testing.assert_array_equal(Q.qd8_gemm(a, zp, sa, w, bias, ws, isa=isa, threads=t), want)


# ------------------------------------------------------------------------------------------ dispatch


def test_dispatch_never_picks_a_table_the_cpu_lacks() -> None:
    info = Q.cpu_info()
    tables = set(Q.tables())
    avx2 = info["avx2"] and info["fma"] and info["f16c"]
    runs = {
        "scalar": True,
        "avx2": avx2,
        "avxvnni": avx2 and info["avxvnni"],
        "avx512vnni": avx2 and info["avx512vnni"] and info["avx512vl"] and info["avx512bw"],
    }
    for name, ok in runs.items():
        assert (name in tables) == ok, (name, info)
    best = next(n for n in ("avx512vnni", "avxvnni", "avx2", "scalar") if runs[n])
    assert info["isa"] == best
    assert info["int8"].split()[0] == best
    if "vnni-emu" in tables:
        assert avx2  # the emulation is AVX2 code
    assert not info["avx512vnni"] or info["avx512f"]  # the EVEX flags only with the OS saving the ZMM state


@pytest.mark.parametrize("forced", ["scalar", "avx2", "vnni-emu", "avxvnni", "avx512vnni"])
def test_webxnn_isa_forces_a_table_the_cpu_runs(forced: str) -> None:
    """WEBXNN_ISA names the table to use (a VNNI machine's user compares with WEBXNN_ISA=avx2); one this build
    or CPU lacks leaves the best one."""
    code = "import webxnn; i = webxnn.cpu_info(); print(i['isa'], '|', i['int8'])"
    env = dict(os.environ, WEBXNN_ISA=forced)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    isa, int8 = (s.strip() for s in out.stdout.split("|"))
    want = forced if forced in Q.tables() else Q.cpu_info()["isa"]
    assert isa == want and int8.split()[0] == want, out.stdout
    if want in VNNI_TABLES:
        assert "vpdpbusd" in int8


# ------------------------------------------------------------------------------------------ whole models


def _models(tmp_path: Path) -> list[tuple[bytes, np.ndarray]]:
    """int8 blobs with their inputs: onnxruntime QDQ nets (u8 and s8 activations, one of them with a Gemm)
    and single int8 conv nodes (stems, grouped, strided), as the lowering tests build them."""
    import webxnn
    from test_q8_conv_nodes import QConv, blob

    rng = np.random.default_rng(0)
    items = []
    for c in (
        QConv(7, 9, groups=1, gic=17, goc=40, stride=(2, 2)),
        QConv(12, 12, groups=1, gic=3, goc=32, k=(3, 3), stride=(2, 2)),
        QConv(9, 9, groups=1, gic=24, goc=33, k=(1, 1), pads=(0, 0, 0, 0), in_q=(0.05, -128)),
        QConv(6, 5, groups=2, gic=3, goc=5, dil=(2, 1), pads=(2, 1, 2, 1), in_q=(0.05, 127)),
    ):
        c.make()
        items.append((blob(c), c.arrays["x"]))
    pytest.importorskip("onnxruntime")
    from qdq_models import IN, pools_gemm, qdq, residual

    for i, (model, act) in enumerate([(pools_gemm, "QUInt8"), (residual, "QInt8"), (pools_gemm, "QInt8")]):
        path = qdq(model(), tmp_path / f"m{i}.onnx", IN, activation=act)
        items.append((webxnn.compile(str(path)), rng.standard_normal(IN).astype(np.float32)))
    return items


def test_int8_models_on_vnni_emu_equal_avx2(tmp_path: Path) -> None:
    """Whole int8 models, loaded by a process forced onto vnni-emu (WEBXNN_ISA), give the AVX2 table's bytes
    (this process: the best table, AVX2 here), 1 and 2 threads."""
    if "vnni-emu" not in Q.tables():
        pytest.skip("this build has no vnni-emu table (x86-64 testing builds on an AVX2 CPU have it)")
    import webxnn

    items = _models(tmp_path)
    outs = outputs_with_isa("vnni-emu", items, tmp_path)
    for i, (b, x) in enumerate(items):
        want = webxnn.load(b, threads=1).run([x])
        for t in range(2):
            got = outs[2 * i + t]
            assert got.keys() == want.keys()
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"model {i}, {t + 1} threads")


# ------------------------------------------------------------------------------------------ ODR


CHECK = REPO / "cmake" / "check_no_weak_symbols.cmake"


def _check_weak(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    cxx, cmake = shutil.which("c++") or shutil.which("g++"), shutil.which("cmake")
    if not cxx or not cmake or not shutil.which("nm"):
        pytest.skip("needs a C++ compiler, cmake and nm")
    obj = tmp_path / "kernels" / "vnni" / "t.cc.o"
    obj.parent.mkdir(parents=True)
    src = tmp_path / "t.cc"
    src.write_text(source)
    subprocess.run([cxx, "-O2", "-c", str(src), "-o", str(obj)], check=True)
    cmd = [cmake, "-DNM=nm", "-DPATTERN=kernels/vnni/", f"-DOBJECTS=other.o|{obj}", "-P", str(CHECK)]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_build_refuses_isa_objects_with_inline_code(tmp_path: Path) -> None:
    """An inline function or template instance emitted by both an AVX2 and a VNNI object is one copy after
    linking: an AVX2-only CPU could then run EVEX code. Every Release build of webxnn_core runs
    cmake/check_no_weak_symbols.cmake on the VNNI objects and AVX2's qgemm (csrc/CMakeLists.txt), so a build
    with such a symbol fails; here the check itself, on an object with one and one without."""
    shared = (
        "template <int K> __attribute__((noinline)) int mul(int x) { return K * x; }\n"
        "int f(int x) { return mul<3>(x); }\n"
    )
    r = _check_weak(tmp_path / "a", shared)
    assert r.returncode != 0 and "weak symbols" in r.stderr and "mul" in r.stderr, r.stderr
    r = _check_weak(tmp_path / "b", "namespace {\n" + shared.replace("int f(", "}\nint f("))
    assert r.returncode == 0, r.stderr
