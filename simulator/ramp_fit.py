"""A linear ramp (0 up to `lo`, 1 beyond `hi`, linear between) fitted in weighted least squares on a geometric grid:
calibration's shares of weights read from memory against a run's length, its own traffic beyond the L2
(calibration_eviction.eviction_ramp, spill_ramp) and a model's footprint (calibration_llc.capacity_ramp)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# How far a timing's low percentile repeats between rounds (calibration_timing.FAST_PERCENTILE: "within about 2%"):
# the uncertainty of a measured share, which in a long run is most of the share's range (its weights' time is a
# few percent of the run).
REPEAT = 0.02
# ... at most 0.5: a share is clipped to [0, 1], and no quantity within [0, 1] spreads more than half that range
# (Popoviciu's inequality). Uncapped, the longest reuse case (a 16.5 ms run, its weights' time 3% of it) weighed
# almost nothing against "none evicted": a Zen 4's quiet calibration (2026-12-05, load 1.1) measured 0.04, 0.09,
# 0.36 and 1.00 evicted after 0.5, 1.9, 5.5 and 16.5 ms, sigmas 0.04 / 0.13 / 0.36 / 1.07, and kept no ramp
# (chi-square 3.2 -> 0.1, under the bar of 4); its classifiers then read their weights at the L3's rate, 2.1-3.3x
# under their profile (ShuffleNet v2, LeViT-128S, MobileNetV4-Conv-S, MobileOne-S0, EfficientViT-B0).
SHARE_SIGMA_MAX = 0.5


def weights(sigmas: Sequence[float]) -> np.ndarray:
    """Least-squares weights of shares measured with these uncertainties (1 / sigma^2, sigma at least 0.001)."""
    return 1 / np.maximum(np.asarray(sigmas, dtype=np.float64), 1e-3) ** 2


def best_ramp(x: np.ndarray, grid: np.ndarray, error: Callable[[np.ndarray], float]) -> tuple[float, float, float]:
    """(error, lo, hi) of the pair lo < hi of `grid` whose ramp over `x` has the least `error` (the first of equals);
    (inf, 0, 0) for a grid of fewer than two points."""
    best = (float("inf"), 0.0, 0.0)
    for i, lo in enumerate(grid):
        for hi in grid[i + 1:]:
            err = error(np.clip((x - lo) / (hi - lo), 0.0, 1.0))
            if err < best[0]:
                best = (err, float(lo), float(hi))
    return best
