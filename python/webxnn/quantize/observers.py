"""Per-tensor statistics gathered over the calibration batches, and the range each method chooses from them.

Two passes: the first keeps the min / max of every tensor and the moving average of the per-batch min / max;
the second (only for the histogram methods) fills a histogram of `BINS` bins over that fixed [min, max]. The
ranges are chosen afterwards, from the same histogram, by any method:

    minmax      [min, max] over all batches
    ema         moving average of each batch's min and max (first batch as is, then c = 0.01)
    percentile  the `percentile`-th and (100 - percentile)-th percentiles of the values
    mse         the range [a*min, b*max] (1/64 <= a, b <= 1) minimizing the expected squared error of 8-bit
                rounding + clipping
    entropy     the range [a*min, b*max] minimizing KL(P || Q): P the clipped histogram, Q P at 256 levels
Every range then includes 0 (so zero padding is exact)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

METHODS = ("minmax", "ema", "percentile", "mse", "entropy")
HISTOGRAM_METHODS = frozenset({"percentile", "mse", "entropy"})
BINS = 2048
EMA_C = 0.01
LEVELS = 256
MIN_ENTROPY_VALUES = 16 * LEVELS  # fewer observed values (a classifier's logits): entropy uses mse instead
# the candidate factors f of mse / entropy, 1 down to 1/64 in equal ratios (entropy needs >= 256 bins, so
# it skips those below 1/8)
_SHRINK = np.geomspace(1.0, 1 / 64, 160)


@dataclass
class TensorStats:
    lo: float = np.inf
    hi: float = -np.inf
    ema_lo: float | None = None
    ema_hi: float | None = None
    hist: np.ndarray | None = field(default=None, repr=False)

    def observe_range(self, x: np.ndarray) -> None:
        lo, hi = float(x.min()), float(x.max())
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        if self.ema_lo is None or self.ema_hi is None:
            self.ema_lo, self.ema_hi = lo, hi
        else:
            self.ema_lo += EMA_C * (lo - self.ema_lo)
            self.ema_hi += EMA_C * (hi - self.ema_hi)

    def observe_histogram(self, x: np.ndarray) -> None:
        if self.hist is None:
            self.hist = np.zeros(BINS, np.int64)
        width = self.hi - self.lo
        if width <= 0:
            self.hist[0] += x.size
            return
        idx = ((x.reshape(-1) - np.float32(self.lo)) * np.float32(BINS / width)).astype(np.int32)
        np.clip(idx, 0, BINS - 1, out=idx)
        self.hist += np.bincount(idx, minlength=BINS)

    def edges(self) -> np.ndarray:
        return np.linspace(self.lo, self.hi, BINS + 1)


def choose_range(stats: TensorStats, method: str, percentile: float = 99.999) -> tuple[float, float]:
    """The real range [lo, hi] (0 included) that `method` picks for a tensor."""
    if method == "minmax":
        lo, hi = stats.lo, stats.hi
    elif method == "ema":
        lo, hi = stats.ema_lo, stats.ema_hi  # type: ignore[assignment]
    elif stats.hist is None or stats.hi <= stats.lo:
        lo, hi = stats.lo, stats.hi
    elif method == "percentile":
        lo, hi = _percentile(stats, percentile)
    elif method == "mse":
        lo, hi = _best_shrink(stats, _mse)
    elif method == "entropy" and stats.hist.sum() >= MIN_ENTROPY_VALUES:
        lo, hi = _best_shrink(stats, _kl)
    elif method == "entropy":  # too few values for a meaningful KL: the histogram is mostly noise
        lo, hi = _best_shrink(stats, _mse)
    else:
        raise ValueError(f"unknown method {method!r}")
    return min(float(lo), 0.0), max(float(hi), 0.0)


def _percentile(stats: TensorStats, p: float) -> tuple[float, float]:
    assert stats.hist is not None
    cdf = np.cumsum(stats.hist) / stats.hist.sum()
    edges = stats.edges()
    lo_i = int(np.searchsorted(cdf, (100 - p) / 100, side="left"))
    hi_i = int(np.searchsorted(cdf, p / 100, side="left"))
    return float(edges[lo_i]), float(edges[min(hi_i + 1, BINS)])


def _best_shrink(stats: TensorStats, cost) -> tuple[float, float]:
    """The range minimizing `cost`, each end searched in turn (twice) over f * its extreme: an outlier on one
    side does not decide the other side's range."""
    lo, hi = stats.lo, stats.hi
    edges = stats.edges()  # once per tensor, not per candidate
    centres = (edges[:-1] + edges[1:]) / 2
    for _ in range(2):
        if stats.hi > 0:
            his = [stats.hi * f for f in _SHRINK]
            costs = [cost(stats, edges, centres, lo, h) for h in his]
            hi = his[int(np.argmin(costs))]  # the first (widest) of equal costs
        if stats.lo < 0:
            los = [stats.lo * f for f in _SHRINK]
            lo = los[int(np.argmin([cost(stats, edges, centres, v, hi) for v in los]))]
    return lo, hi


def _mse(stats: TensorStats, edges: np.ndarray, centres: np.ndarray, lo: float, hi: float) -> float:
    """Expected squared error of quantize-dequantize at 256 levels over [lo, hi] (0 included), the values
    taken at their bins' centres (`edges`, `centres`: the histogram's)."""
    assert stats.hist is not None
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / (LEVELS - 1)
    if scale <= 0:
        return float("inf")
    zp = np.round(-lo / scale)
    q = np.clip(np.round(centres / scale) + zp, 0, LEVELS - 1)
    return float(np.dot(stats.hist, (centres - (q - zp) * scale) ** 2))


def _kl(stats: TensorStats, edges: np.ndarray, centres: np.ndarray, lo: float, hi: float) -> float:
    """KL(P || Q) of the histogram clipped to [lo, hi] (outliers into the end bins) against the same mass
    spread evenly over the non-empty bins of each of 256 level-wide chunks, made from the values inside
    only, so that clipping costs (TensorRT's calibration); the bin holding 0 left out. `centres` unused
    (the signature `_best_shrink` calls every cost with)."""
    assert stats.hist is not None
    i0 = int(np.clip(np.searchsorted(edges, lo, side="right") - 1, 0, BINS - 1))
    i1 = int(np.clip(np.searchsorted(edges, hi, side="left"), i0 + 1, BINS))
    inside = stats.hist[i0:i1].astype(np.float64)
    # 0 is exact on every grid: the spike of exact zeros (after relu, padding) says nothing about the range
    z = int(np.clip(np.searchsorted(edges, 0.0, side="right") - 1, 0, BINS - 1)) - i0
    if 0 <= z < inside.size:
        inside[z] = 0.0
    p = inside.copy()  # P: the clipped values go to the end bins; Q is made from the values inside only
    p[0] += stats.hist[:i0].sum()
    p[-1] += stats.hist[i1:].sum()
    if p.size < LEVELS:
        return float("inf")
    chunk = np.repeat(np.arange(LEVELS), np.diff(np.linspace(0, p.size, LEVELS + 1).astype(int)))
    nonzero = p > 0
    mass = np.bincount(chunk, weights=inside, minlength=LEVELS)
    filled = np.bincount(chunk, weights=nonzero, minlength=LEVELS)
    q = np.where(nonzero, mass[chunk] / np.maximum(filled[chunk], 1), 0.0)
    ps, qs = p.sum(), q.sum()
    if ps == 0 or qs == 0:
        return float("inf")
    p, q = p / ps, q / qs
    m = nonzero & (q > 0)
    return float(np.sum(p[m] * np.log(p[m] / q[m])))
