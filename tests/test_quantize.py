"""webxnn quantize: observers against numpy, calibration data checks, the QDQ graph and its int8 blob,
determinism, --keep-fp32 / --target-snr, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

import webxnn
from webxnn.quantize import CalibrationError
from webxnn.quantize.emit import ActParams
from webxnn.quantize.observers import BINS, TensorStats, choose_range
from webxnn.quantize.plan import fake_quant, quantize_weight

# ------------------------------------------------------------------------------------------ observers


def _stats(batches: list[np.ndarray], hist: bool = True) -> TensorStats:
    st = TensorStats()
    for b in batches:
        st.observe_range(b)
    if hist:
        for b in batches:
            st.observe_histogram(b)
    return st


def _batches(seed: int = 0, n: int = 6) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(5000) * (1 + i / 3) + 0.5).astype(np.float32) for i in range(n)]


def test_minmax_and_ema_match_numpy() -> None:
    bs = _batches()
    st = _stats(bs, hist=False)
    assert choose_range(st, "minmax") == (float(min(b.min() for b in bs)), float(max(b.max() for b in bs)))
    lo, hi = float(bs[0].min()), float(bs[0].max())
    for b in bs[1:]:
        lo += 0.01 * (float(b.min()) - lo)
        hi += 0.01 * (float(b.max()) - hi)
    got = choose_range(st, "ema")
    assert got == pytest.approx((lo, hi), rel=1e-12)


def test_histogram_counts_every_value_in_its_bin() -> None:
    bs = _batches(1)
    st = _stats(bs)
    want, _ = np.histogram(np.concatenate(bs), bins=BINS, range=(st.lo, st.hi))
    assert st.hist is not None and st.hist.sum() == sum(b.size for b in bs)
    # float32 index arithmetic may move a value sitting on an edge to the next bin, nothing more
    assert np.abs(np.cumsum(st.hist) - np.cumsum(want)).max() <= 2


def test_percentile_matches_numpy_within_a_bin() -> None:
    bs = _batches(2)
    st = _stats(bs)
    allv = np.concatenate(bs).astype(np.float64)
    width = (st.hi - st.lo) / BINS
    lo, hi = choose_range(st, "percentile", 99.9)
    assert lo == pytest.approx(np.percentile(allv, 0.1, method="inverted_cdf"), abs=2 * width)
    assert hi == pytest.approx(np.percentile(allv, 99.9, method="inverted_cdf"), abs=2 * width)


def _mse_direct(x: np.ndarray, lo: float, hi: float) -> float:
    p = ActParams.from_range(lo, hi)
    q = np.clip(np.rint(x / p.scale) + p.zero_point, -128, 127)
    return float(np.mean((x - (q - p.zero_point) * p.scale) ** 2))


def test_mse_range_is_near_the_best_by_brute_force() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.laplace(0, 1, 40000), [40.0, -25.0]]).astype(np.float32)
    st = _stats([x])
    lo, hi = choose_range(st, "mse")
    grid = [(x.min() * f, x.max() * f) for f in np.geomspace(1, 1 / 64, 400)]
    best = min(_mse_direct(x, a, b) for a, b in grid)
    assert _mse_direct(x, lo, hi) <= best * 1.05
    assert _mse_direct(x, lo, hi) <= _mse_direct(x, *choose_range(st, "minmax"))


def test_entropy_clips_outliers_and_keeps_a_uniform_range() -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.standard_normal(50000), [60.0]]).astype(np.float32)
    lo, hi = choose_range(_stats([x]), "entropy")
    assert 3 < hi < 30
    u = rng.uniform(-1, 3, 50000).astype(np.float32)
    lo, hi = choose_range(_stats([u]), "entropy")
    assert hi > 2.7 and lo < -0.85


def test_ranges_include_zero_and_params_hold_them() -> None:
    st = _stats([np.linspace(2, 5, 100, dtype=np.float32)])
    lo, hi = choose_range(st, "minmax")
    assert (lo, hi) == (0.0, 5.0)
    p = ActParams.from_range(-1.0, 3.0)
    assert p.scale == pytest.approx(4 / 255) and -128 <= p.zero_point <= 127
    assert (127 - p.zero_point) * p.scale == pytest.approx(3.0, abs=p.scale)
    assert (-128 - p.zero_point) * p.scale == pytest.approx(-1.0, abs=p.scale)
    assert ActParams.from_range(0.0, 0.0) == ActParams(1.0, 0)


def test_weights_symmetric_per_channel() -> None:
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    w[2] = 0
    q, s = quantize_weight(w, 0)
    assert q.dtype == np.int8 and np.abs(q).max() == 127 and q.min() >= -127
    want = np.abs(w).reshape(4, -1).max(1) / 127
    want[2] = 1
    np.testing.assert_allclose(s, want.astype(np.float32), rtol=1e-7)
    np.testing.assert_allclose(fake_quant(w, 0), q * s[:, None, None, None], rtol=1e-7)
    assert np.abs(fake_quant(w, 0) - w).max() <= s.max() / 2 + 1e-7


# ------------------------------------------------------------------------------------- whole pipeline

onnx = pytest.importorskip("onnx")
from qdq_models import IN, pools_gemm, residual  # noqa: E402


@pytest.fixture(scope="module")
def cnn(tmp_path_factory) -> tuple[str, list[dict[str, np.ndarray]]]:
    path = tmp_path_factory.mktemp("q") / "cnn.onnx"
    onnx.save(pools_gemm(), path)
    rng = np.random.default_rng(0)
    return str(path), [{"x": rng.standard_normal(IN).astype(np.float32)} for _ in range(8)]


def _kinds(blob: bytes) -> list[str]:
    from webxnn.xnn.describe import node_precisions
    from webxnn.xnn.reader import read

    return node_precisions(read(blob))


def test_cnn_compiles_to_int8_and_stays_close(cnn) -> None:
    path, samples = cnn
    q = webxnn.quantize(path, samples, equalize=False, bias_correction=False)
    rep = q.report
    assert rep["quantized_layers"] == {"static": 4, "dynamic": 0}  # conv, conv, avg pool, gemm
    kinds = _kinds(q.xnn())
    assert kinds.count("int8") >= 5 and kinds.count("fp32") == 0, kinds
    assert rep["output_snr_db"]["y"] > 25
    assert [r["snr_db"] for r in rep["layers"]] == sorted(r["snr_db"] for r in rep["layers"])
    # the QDQ graph itself (any WebNN runtime's view) runs and agrees with the int8 blob
    got = webxnn.load(q.xnn()).run(samples[0])["y"]
    ref = webxnn.load(webxnn.compile(path)).run(samples[0])["y"]
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()


def test_bias_corrected_report_is_against_the_original_model(cnn) -> None:
    """With bias correction on, the output SNR is measured against the original fp32 model, not the
    corrected one (regression: the corrected graph was the reference)."""
    path, samples = cnn
    q = webxnn.quantize(path, samples, equalize=False, bias_correction=True)
    ref, got = webxnn.load(webxnn.compile(path)), webxnn.load(q.xnn())
    signal = noise = 0.0
    for s in samples:
        r, g = ref.run(s)["y"].astype(np.float64), got.run(s)["y"].astype(np.float64)
        signal, noise = signal + float(np.sum(r * r)), noise + float(np.sum((r - g) ** 2))
    assert q.report["output_snr_db"]["y"] == pytest.approx(10 * np.log10(signal / noise), abs=0.05)


def test_same_bytes_twice(cnn) -> None:
    path, samples = cnn
    a = webxnn.quantize(path, samples, method="entropy", layer_report=False).xnn()
    b = webxnn.quantize(path, [dict(s) for s in samples], method="entropy", layer_report=False).xnn()
    assert a == b


@pytest.mark.parametrize("method", ["minmax", "ema", "percentile", "mse", "entropy"])
def test_every_method_runs(cnn, method: str) -> None:
    path, samples = cnn
    q = webxnn.quantize(path, samples[:3], method=method)
    assert q.report["output_snr_db"]["y"] > 15


def test_keep_fp32_and_target_snr(tmp_path) -> None:
    path = tmp_path / "res.onnx"
    onnx.save(residual(), path)
    rng = np.random.default_rng(1)
    samples = [{"x": rng.standard_normal(IN).astype(np.float32)} for _ in range(4)]
    full = webxnn.quantize(path, samples)
    names = [r["node"] for r in full.report["layers"]]
    kept = webxnn.quantize(path, samples, keep_fp32=[names[0]])
    assert names[0] not in [r["node"] for r in kept.report["layers"]]
    assert kept.report["kept_fp32"] == [names[0]]
    goal = full.report["output_snr_db"]["y"] + 3
    t = webxnn.quantize(path, samples, target_snr=goal)
    assert t.report["kept_fp32_for_target"] and t.report["output_snr_db"]["y"] >= goal
    assert t.report["kept_fp32_for_target"] == names[: len(t.report["kept_fp32_for_target"])]
    with pytest.raises(webxnn.OptionError, match="nope"):
        webxnn.quantize(path, samples, keep_fp32=["nope"])


# ---------------------------------------------------------------------------------- bad calibration data


@pytest.mark.parametrize(
    "data, match",
    [
        ([], "no samples"),
        ([{"y": np.zeros(IN, np.float32)}], "missing x; unknown y"),
        ([{"x": np.zeros((1, 8, 10, 9), np.float32)}], r"shape \[1, 8, 10, 9\]"),
        ([{"x": np.zeros(IN, np.float64)}], "dtype float64"),
        ([{"x": np.full(IN, np.nan, np.float32)}], "800 value.*NaN"),
        ([{"x": np.zeros(IN, np.float32)}, 3], "sample 1: expected a dict"),
        (42, "expected a path"),
    ],
)
def test_bad_data_is_refused_before_any_work(cnn, monkeypatch, data, match: str) -> None:
    import webxnn.quantize.api as api

    monkeypatch.setattr(api, "calibrate", lambda *a, **k: pytest.fail("calibration started"))
    with pytest.raises(CalibrationError, match=match):
        webxnn.quantize(cnn[0], data)


def test_data_from_files(cnn, tmp_path) -> None:
    path, samples = cnn
    batch = np.concatenate([s["x"] for s in samples[:4]])
    np.savez(tmp_path / "batch.npz", x=batch)
    folder = tmp_path / "folder"
    folder.mkdir()
    for i, s in enumerate(samples[:4]):
        np.save(folder / f"{i}.npy", s["x"])
    np.savez(folder / "9.npz", x=samples[4]["x"])
    a = webxnn.quantize(path, str(tmp_path / "batch.npz"), layer_report=False)
    b = webxnn.quantize(path, samples[:4], layer_report=False)
    assert a.report["samples"] == 4 and a.xnn() == b.xnn()
    assert webxnn.quantize(path, folder, layer_report=False).report["samples"] == 5
    with pytest.raises(CalibrationError, match="no such file"):
        webxnn.quantize(path, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CalibrationError, match="no .npz or .npy"):
        webxnn.quantize(path, tmp_path / "empty")


# -------------------------------------------------------------------------------------------- the CLI


def _cli(*args: str) -> int:
    from webxnn.cli import main

    return main(["quantize", *args])


def test_cli_writes_xnn_webnn_and_report(cnn, tmp_path, capsys) -> None:
    path, samples = cnn
    cal = str(tmp_path / "cal.npz")
    np.savez(cal, x=np.concatenate([s["x"] for s in samples]))
    out = tmp_path / "m.xnn"
    assert _cli(path, "--calibration", cal, "-o", str(out), "--report", str(tmp_path / "r.json")) == 0
    text = capsys.readouterr().out
    assert "SNR" in text and "wrote" in text
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["layers"] and rep["samples"] == 8
    assert _cli(path, "--calibration", cal, "-o", str(tmp_path / "m.webnn"), "--to", "webnn", "-q") == 0
    g = webxnn.load_graph(tmp_path / "m.webnn")
    assert webxnn.compile(g) == out.read_bytes()  # the QDQ .webnn compiles to the same int8 blob
    assert _cli(path, "--calibration", cal, "-o", str(tmp_path / "m.pte"), "-q") == 0  # an ExecuTorch program
    assert webxnn.load(tmp_path / "m.pte").run(samples[0])["y"].shape == (1, 10)


def _renamed(name: str, batch: str | None = None) -> onnx.ModelProto:
    """pools_gemm with its input called `name` (not an identifier) and, optionally, a symbolic batch dim."""
    m = pools_gemm()
    old = m.graph.input[0].name
    m.graph.input[0].name = name
    if batch:
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = batch
    for node in m.graph.node:
        for i, v in enumerate(node.input):
            if v == old:
                node.input[i] = name
    return m


def test_onnx_names_key_the_data_and_stay_in_the_blob(cnn, tmp_path) -> None:
    """Calibration data is keyed by the ONNX model's own input names, as with onnxruntime; the quantized
    Program keeps them. A symbolic dim takes --dim-max / dyn_max like every other command."""
    _, samples = cnn
    path = tmp_path / "named.onnx"
    onnx.save(_renamed("input.1"), path)
    q = webxnn.quantize(path, [{"input.1": s["x"]} for s in samples], layer_report=False)
    prog = webxnn.load(q.xnn())
    assert [i.name for i in prog.inputs] == ["input.1"]
    assert prog.run({"input.1": samples[0]["x"]})
    sym = tmp_path / "sym.onnx"
    onnx.save(_renamed("input.1", batch="N"), sym)
    cal = tmp_path / "cal.npz"
    np.savez(cal, **{"input.1": np.concatenate([s["x"] for s in samples])})
    out = tmp_path / "sym.xnn"
    assert _cli(str(sym), "--calibration", str(cal), "-o", str(out), "--override-dim", "N=1", "-q") == 0
    assert webxnn.load(out).inputs[0].shape == IN


def test_report_json_is_strict() -> None:
    """An SNR of inf (a layer without noise) is written as the string "inf", not as JSON's non-standard
    Infinity that strict readers refuse."""
    from webxnn.quantize.cli import strict_json

    rep = {"output_snr_db": {"y": float("inf")}, "layers": [{"snr_db": np.float32(-np.inf)}, {"snr_db": 3.5}]}
    text = json.dumps(strict_json(rep), allow_nan=False)
    want = {"output_snr_db": {"y": "inf"}, "layers": [{"snr_db": "-inf"}, {"snr_db": 3.5}]}
    assert json.loads(text) == want


def test_progress_bar_only_on_a_terminal() -> None:
    import io

    from webxnn.quantize.progress import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, quiet, shown in ((Tty(), False, True), (Tty(), True, False), (io.StringIO(), False, False)):
        bar = Progress(4, "calibrating", quiet=quiet, stream=stream)
        for _ in range(4):
            bar.step()
        bar.close()
        assert ("4/4" in stream.getvalue() and "ETA" in stream.getvalue()) == shown


def test_cli_errors(cnn, tmp_path, capsys) -> None:
    path, _ = cnn
    np.savez(tmp_path / "bad.npz", x=np.zeros((2, 3), np.float32))
    assert _cli(path, "--calibration", str(tmp_path / "bad.npz"), "-o", str(tmp_path / "o.xnn")) == 2
    assert "webxnn: error: calibration sample 0, input 'x': shape [2, 3]" in capsys.readouterr().err
    assert _cli(path, "--random", "2", "-o", str(tmp_path / "o.xnn"), "-q") == 0
    assert "webxnn: warning: calibrating on 2 random samples" in capsys.readouterr().err


def test_webxnn_quantize_is_callable_and_the_package(cnn) -> None:
    import webxnn.quantize as pkg

    assert webxnn.quantize is pkg and callable(webxnn.quantize)
    assert isinstance(pkg.quantize(cnn[0], cnn[1][:1], layer_report=False), pkg.Quantized)
    with pytest.raises(webxnn.OptionError, match="method"):
        webxnn.quantize(cnn[0], cnn[1], method="kl")
