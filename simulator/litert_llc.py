"""LiteRT's own last-level cache ladder: how many bytes of weights this host's last-level cache keeps from one
XNNPACK run to the next (Unit.llc_keep_bytes, llc_gone_bytes of the litert-cpu/host profile; roofline.outgrown).

ORT's ladder (simulator.calibration_llc) is timed with ORT's batch-1 MatMul chains, their prefetching and memory rate,
and does not stand for XNNPACK's fully connected layers: on a Zen 4 (session 36) XNNPACK read BirdNET MData's 29.5 MB
in 0.68 ms (~43 GB/s) where ORT's chain of that footprint came ~31 GB/s, so LiteRT kept a step at the whole listed
cache. On a Zen 3 (AMD EPYC family 25 model 1, 2 vCPUs, 32 MiB L3 listed; 2026-12-07, session 57) the same model's
6522 x 1024 layer ran 1.5 ms of thread CPU time, 17.8 GB/s, the memory rate: the step priced it at the weight-
streaming rate (0.66 ms) and the model at -53%. Neither host's figure is the other's: LiteRT gets a ladder of its
own, the same footprints as ORT's (fractions of the listed cache), timed as XNNPACK's fully connected chains
by LiteRT's profiler, between a chain that stays in the cache (the stream chain: half this core's share) and one at
4x the whole cache (memory), and fitted with ORT's ramp (calibration_llc.fit_llc).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simulator.calibration_llc import PREFIX, fit_llc, ladder_ks, memory_k, stream_k
from simulator.calibration_models import R
from simulator.litert_cases import profile_cases
from simulator.profiles import HardwareProfile

KEYS = ("llc_keep_bytes", "llc_gone_bytes")  # the unit's figures this calibration sets
RUNS = 12  # runs per chain after warm-up: the memory chain reads ~130 MB a run


def chain(k: int, path: Path) -> Path:
    """R batch-1 fp32 FULLY_CONNECTED layers of k x k weights, each reading the last one's output, to `path`."""
    from compiler.frontends.tflite_writer import TfliteWriter

    rng = np.random.default_rng(k)
    w = TfliteWriter(description="edgescope calibration: last-level cache ladder")
    x = first = w.tensor("x", [1, k])
    for i in range(R):
        y = w.tensor(f"fc{i}/out", [1, k])
        weights = w.const(f"fc{i}/w", (rng.standard_normal([k, k]) * 0.02).astype(np.float32))
        bias = w.const(f"fc{i}/b", np.zeros(k, np.float32))
        w.op("FULLY_CONNECTED", [x, weights, bias], [y], w.options("FullyConnectedOptions"))
        x = y
    return w.save(path, [first], [x])


def chain_ms(tasks: dict[str, Any]) -> float:
    """A chain's time per run: R layers at its median layer's time (LiteRT's profiler: central ms first)."""
    return R * float(np.median([v[0] for v in tasks.values()]))


def calibrate(tmp: Path, hw: HardwareProfile, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The LiteRT profile's {llc_keep_bytes, llc_gone_bytes} overrides ({} where the host lists no last-level
    cache), from the chains timed in one sandboxed child; `hw`: the ORT-calibrated host profile, whose time ramp
    (llc_hold_s, llc_evict_s) evicts what a run's length alone would."""
    from simulator.host_machine import llc_bytes

    llc, llc_all = llc_bytes()
    if not llc_all:
        return {"units": {"cpu": {}}}
    u = hw.units[0]
    ks = tuple(ladder_ks(llc_all))
    k_stream, k_memory = stream_k(llc), memory_k(llc_all)
    keys = [("stream", k_stream), ("memory", k_memory), *((f"{PREFIX}{k}", k) for k in ks)]
    timed = profile_cases(keys, lambda c, p: chain(c[1], p), lambda c: f"litert-{c[0]}", tmp,
                          "LiteRT cache ladder chains", RUNS, warmup=3, progress=progress)
    wall = {key: chain_ms(res["tasks"]) for (key, _), _, res in timed}
    cpu = {"run_overhead_s": 0.0, "dispatch_overhead_s": 0.0, "llc_hold_s": u.llc_hold_s, "llc_evict_s": u.llc_evict_s}
    kept, line = fit_llc(ks, wall, k_stream, k_memory, cpu)
    if line:
        progress("LiteRT " + line)
    return {"units": {"cpu": kept}}
