"""Calibration's last-level cache ladder: how many bytes of weights this host's last-level cache really keeps from
one run to the next (Unit.llc_keep_bytes, llc_gone_bytes: the ramp of roofline.outgrown).

The size sysfs lists says little of that on a VM. Batch-1 MatMul chains (benchmarks/llc_ladder.py, thread CPU time
at the 5th percentile) read their weights at the cache's rate up to some footprint and at memory's beyond another:
a Zen 4 (2 vCPUs, 32 MiB L3 listed, a 16 MiB share; 2026-12-06 07:09 UTC) 66-71 GB/s at 4.7-8.4 MB, 63 at 13.1,
49 at 18.9, 28 at 25.7, 22-30 from 33.6 MB on: most gone before the whole 32 MiB. An Emerald Rapids (300 MiB listed,
a 150 MiB share; session 49) 32.5 GB/s at 134 MB, 29.6 at 170, 22.7 at 189, 18.4 at 254, 16.8 at 537: gone past
the share, long before the whole. A Zen 5 kept BirdNET's 27 MB metadata model whole in its 32 MiB (read at 80 GB/s).
A step at the listed size (the rule before) priced a Zen 4's 19-30 MB models' weights at the cache's rate and
Emerald Rapids' AlexNet (244 MB) at it too. The ladder's chains sit at fractions of the listed size, each read as the
share of its weights that came from memory between the stream chain's rate (all kept) and the memory chain's (none);
a ramp in footprint (none gone up to keep, all after gone, linear between) is fitted to those shares above what
the time ramp (roofline.evicted_share) already evicts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from simulator.calibration_models import R, matmul_chain
from simulator.ramp_fit import REPEAT, SHARE_SIGMA_MAX, best_ramp, weights

# Footprints of the ladder's chains as fractions of the whole last-level cache sysfs lists: from under a 2-vCPU
# share to past the whole (the Zen 4 above: 10-47 MB; the Emerald Rapids: 94-440 MB).
LADDER = (0.3, 0.45, 0.6, 0.75, 0.9, 1.1, 1.4)
K_MIN, K_MAX = 128, 4096
PREFIX = "llc-"


def ladder_ks(llc_all: float) -> list[int]:
    """The chains' k (8 k x k fp32 weights each, multiples of 32) for a last-level cache of `llc_all` bytes."""
    ks = {min(K_MAX, max(K_MIN, round(math.sqrt(f * llc_all / R / 4) / 32) * 32)) for f in LADDER}
    return sorted(ks) if llc_all > 0 else []


def stream_k(llc: float) -> int:
    """k of the stream chain: R k x k fp32 weights filling half this core's share (`llc`) of the last-level cache,
    read from it on every run (ORT's in calibration_bench, XNNPACK's in litert_llc)."""
    return max(K_MIN, min(768, int(math.sqrt(llc / 2 / R / 4)) // 64 * 64)) if llc else 768


def memory_k(llc_all: float) -> int:
    """k of the memory chain: weights 4x the whole last-level cache (`llc_all`), read from memory on every run."""
    return max(256, min(K_MAX, int(math.sqrt(4 * llc_all / R / 4)) // 64 * 64)) if llc_all else 2048


def footprint(k: int) -> float:
    """Bytes of fp32 weights a chain of `k` reads per run."""
    return float(R * k * k * 4)


def build_llc_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], llc_all: float) -> tuple[int, ...]:
    """Save the ladder's chains into `tmp`, adding them to calibration's `timings` (min 6 runs a round, as the
    memory chain); their k."""
    ks = ladder_ks(llc_all)
    for k in ks:
        timings[f"{PREFIX}{k}"] = (matmul_chain(1, k)(tmp / f"{PREFIX}{k}.onnx"), "all", 6)
    return tuple(ks)


def gone_share(wall_ms: float, k: int, run_s: float, dispatch_s: float, hot_s_per_w: float,
               cold_s_per_w: float) -> tuple[float, float]:
    """(share of a chain's weights read from memory, its uncertainty): its time per weight between the stream
    chain's (`hot`) and the memory chain's (`cold`), clipped to [0, 1]."""
    span = max(cold_s_per_w - hot_s_per_w, 1e-15)
    share = float(np.clip((per_weight_s(wall_ms, k, run_s, dispatch_s) - hot_s_per_w) / span, 0.0, 1.0))
    return share, min(REPEAT * wall_ms * 1e-3 / (span * R * k * k), SHARE_SIGMA_MAX)


def per_weight_s(wall_ms: float, k: int, run_s: float, dispatch_s: float) -> float:
    """Seconds per weight of a chain of `k` (its R layers' time less the per-run and per-kernel costs)."""
    return ((wall_ms * 1e-3 - run_s) / R - dispatch_s) / (k * k)


def capacity_ramp(footprints: Sequence[float], shares: Sequence[float], sigmas: Sequence[float],
                  by_time: Sequence[float]) -> tuple[float, float]:
    """(keep, gone) bytes of roofline.outgrown's ramp that fits the ladder's shares best (weighted least squares),
    a weight coming from memory if the time ramp (`by_time`, per chain) or this one takes it; (0, 0) without a
    ladder."""
    x, y, t = (np.asarray(v, dtype=np.float64) for v in (footprints, shares, by_time))
    if not len(x):
        return 0.0, 0.0
    wt = weights(sigmas)
    _, keep, gone = best_ramp(x, np.geomspace(x.min() / 2, x.max() * 2, 64),
                              lambda ramp: float((wt * (np.maximum(t, ramp) - y) ** 2).sum()))
    return keep, gone


def fit_llc(ks: Sequence[int], wall: dict[str, float], k_stream: int, k_memory: int, cpu: dict[str, float]
            ) -> tuple[dict[str, float], str]:
    """({llc_keep_bytes, llc_gone_bytes}, a progress line) from the ladder's timings (ms, `wall`), the stream and
    memory chains' and the unit's fixed costs and time ramp already fitted (`cpu`: calibration's overrides); ({}, "")
    without the ladder or the memory chain."""
    from simulator.roofline import evicted_by_time

    timed = [k for k in ks if f"{PREFIX}{k}" in wall]
    if not timed or not k_memory or "memory" not in wall:
        return {}, ""
    run_s, dispatch_s = cpu["run_overhead_s"], cpu["dispatch_overhead_s"]
    hot, cold = (per_weight_s(wall[key], k, run_s, dispatch_s)
                 for key, k in (("stream", k_stream), ("memory", k_memory)))
    shares = [gone_share(wall[f"{PREFIX}{k}"], k, run_s, dispatch_s, hot, cold) for k in timed]
    hold, evict = cpu.get("llc_hold_s", 0.0), cpu.get("llc_evict_s", 0.0)
    by_time = [float(evicted_by_time(wall[f"{PREFIX}{k}"] * 1e-3, hold, evict)) for k in timed]
    keep, gone = capacity_ramp([footprint(k) for k in timed], [s for s, _ in shares], [s for _, s in shares], by_time)
    line = ("last-level cache ladder: " + ", ".join(f"{s:.2f} from memory at {footprint(k) / 1e6:.1f} MB"
                                                   for k, (s, _) in zip(timed, shares))
            + f": keeps {keep / 1e6:.1f} MB, none after {gone / 1e6:.1f} MB")
    return {"llc_keep_bytes": keep, "llc_gone_bytes": gone}, line
