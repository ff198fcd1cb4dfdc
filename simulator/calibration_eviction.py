"""Calibration's fit of weight eviction from the shared last-level cache (roofline.evicted_share): the reuse cases'
shares of weights read from memory (calibration_models.reuse_model, timed against their runs without the MatMuls),
the ramp in the run's length they fit and the ramp in the run's own traffic beyond the L2 (the reuse-spill cases)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simulator.calibration_bench import R, SPILL_CONVS, Bench
from simulator.ramp_fit import REPEAT, SHARE_SIGMA_MAX, best_ramp, weights


def eviction_fit(bench: Bench, wall: dict[str, float], dispatch_s: float, hot_cold: tuple[float, float],
              peak: float, cache_bw: float, l2: float, progress: Callable[[str], None]) -> dict[str, float]:
    """The unit's eviction figures (roofline.evicted_share): the time ramp on the reuse cases whose own traffic stays
    in the L2, then the ramp in the run's own traffic beyond the L2 on those whose maps spill (given the time ramp)."""
    reuse = reuse_shares(bench, wall, dispatch_s, *hot_cold, peak, cache_bw)
    hold, evict = eviction_ramp(*([r[k] for r in reuse] for k in ("run_estimate_s", "evicted_share", "sigma")))
    progress("weights evicted between runs: " + ", ".join(
        f"{r['evicted_share']:.2f} after {r['run_estimate_s'] * 1e3:.2f} ms" for r in reuse)
        + f": held up to {hold * 1e3:.2f} ms, " + (f"all gone after {evict * 1e3:.2f} ms" if evict else "none gone"))
    out = {"llc_hold_s": hold, "llc_evict_s": evict}
    spill = reuse_shares(bench, wall, dispatch_s, *hot_cold, peak, cache_bw, l2=l2, spill=True)
    if spill:
        by_time = [float(np.clip((r["run_estimate_s"] - hold) / max(evict - hold, 1e-12), 0.0, 1.0)) if evict else 0.0
                   for r in spill]
        lo, hi = spill_ramp(by_time, *([r[k] for r in spill] for k in ("spill_bytes", "evicted_share", "sigma")))
        out.update({"llc_spill_hold_bytes": lo, "llc_spill_evict_bytes": hi})
        progress("... after runs moving beyond the L2: " + ", ".join(
            f"{r['evicted_share']:.2f} after {r['spill_bytes'] / 1e6:.1f} MB ({r['run_estimate_s'] * 1e3:.2f} ms)"
            for r in spill) + (f": held up to {lo / 1e6:.1f} MB, all gone after {hi / 1e6:.1f} MB" if hi else
                               ": none gone"))
    return out


def reuse_shares(bench: Bench, wall: dict[str, float], dispatch_s: float, hot_s_per_w: float,
                 cold_s_per_w: float, peak_ops_per_s: float, cache_bw: float, l2: float = 0.0,
                 spill: bool = False) -> list[dict[str, float]]:
    """Per reuse case (calibration_models.reuse_model; `spill`: those whose maps outgrow the L2, `l2` bytes): the run's
    length and its own traffic beyond the L2 as the sweep estimates them (roofline.run_estimate_s,
    spill_estimate_bytes: the figures evicted_share reads) and the share of the MatMuls' weights read from memory:
    their time per weight (the run with them less the run without) between the stream chain's (weights in the
    last-level cache, runs back to back) and the memory chain's (weights beyond the whole cache), clipped to [0, 1]."""
    from simulator.costs import FOLDED, work_of
    from simulator.folding import fold_constants
    from simulator.roofline import run_estimate_s, spill_estimate_bytes

    out = []
    for n in [n for n in SPILL_CONVS if f"reuse-spill-{n}" in bench.graphs] if spill else bench.reuse:
        key = f"reuse-spill-{n}" if spill else f"reuse-{n}"
        g = bench.graphs[key]
        view, folded = fold_constants(g)
        works = [w for w in (work_of(nd, view) for nd in g.nodes if nd.id not in folded) if w is not FOLDED]
        per_w = ((wall[key] - wall[f"{key}-base"]) * 1e-3 / R - dispatch_s) / bench.k_stream ** 2
        span = max(cold_s_per_w - hot_s_per_w, 1e-15) * R * bench.k_stream ** 2  # all evicted less none, s per run
        out.append({"convs": n, "run_estimate_s": run_estimate_s(works, peak_ops_per_s, cache_bw),
                    "spill_bytes": spill_estimate_bytes(works, l2), "ns_per_weight": per_w * 1e9,
                    "evicted_share": float(np.clip((per_w - hot_s_per_w) * R * bench.k_stream ** 2 / span, 0.0, 1.0)),
                    "sigma": min(REPEAT * wall[key] * 1e-3 / span, SHARE_SIGMA_MAX)})
    return out


def eviction_ramp(run_s: list[float], shares: list[float], sigmas: list[float]) -> tuple[float, float]:
    """(llc_hold_s, llc_evict_s) of roofline.evicted_share's ramp (none evicted up to hold, all after evict, linear
    between) that fits the measured shares best in least squares weighted by their uncertainty (`sigmas`), where it
    fits better than keeping every weight by more than its two figures explain (Akaike: chi-square down by more than
    4); else (the longest run, 0): the rule evicts none."""
    x, y, wt = np.asarray(run_s, dtype=np.float64), np.asarray(shares, dtype=np.float64), weights(sigmas)
    none = float((wt * y ** 2).sum())
    grid = np.geomspace(x.min() / 4, x.max() * 4, 64) if len(x) else np.array([])
    err, hold, evict = best_ramp(x, grid, lambda ramp: float((wt * (ramp - y) ** 2).sum()))
    return (hold, evict) if none - err > 4.0 else (float(x.max()) if len(x) else 0.0, 0.0)


def spill_ramp(by_time: list[float], spill_bytes: list[float], shares: list[float], sigmas: list[float]
               ) -> tuple[float, float]:
    """(llc_spill_hold_bytes, llc_spill_evict_bytes) of roofline.evicted_share's ramp in the run's own traffic beyond
    the L2 (none evicted up to hold, all after evict, linear between; a weight stays if neither the time ramp,
    `by_time` per case, nor this one evicts it), fitted as eviction_ramp fits the time ramp; (0, 0): none by traffic."""
    x, y, wt = np.asarray(spill_bytes, dtype=np.float64), np.asarray(shares, dtype=np.float64), weights(sigmas)
    t = np.asarray(by_time, dtype=np.float64)
    none = float((wt * (t - y) ** 2).sum())
    grid = np.geomspace(max(x.min(), 1.0) / 4, x.max() * 4, 64) if len(x) and x.max() > 0 else np.array([])
    err, hold, evict = best_ramp(x, grid, lambda ramp: float((wt * (1 - (1 - t) * (1 - ramp) - y) ** 2).sum()))
    return (hold, evict) if none - err > 4.0 else (0.0, 0.0)
