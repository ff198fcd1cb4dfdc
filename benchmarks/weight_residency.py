"""Do a model's weights stay in the last-level cache between back-to-back runs? Each model's thread CPU time run after
run, against runs that each follow a flush of the caches (a buffer several times the last-level cache touched once per
line), and the eviction penalty the host rules predict for it (its fp32 prediction with every weight read from
memory, less the one with none: `roofline.evicted_share` forced to 1 and to 0).

A measured penalty near the predicted one says the back-to-back runs keep the weights (the flush is what costs it);
near 0 says they lose them anyway. Beside it, the share of weights the calibration's rule evicts (its time ramp,
read at the run's estimate, `roofline.run_estimate_s`, and its spill ramp) for the same model.

    PYTHONPATH=. .venv/bin/python benchmarks/weight_residency.py --calibration C --lock /work/notes/measure.lock \\
        --cache /work/corpus-cache --only tv/mnasnet1_0 timm/vit_tiny_patch16_224 ...

`--lock` is held (flock) while the models are timed, and only then; the predictions (a profiled run per model, for
the shapes) come after it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))


def timings(path: Path, rounds: int, runs: int, flush_bytes: int) -> tuple[float, float]:
    """(back to back, after a flush): the 5th percentile of thread CPU time per run in ms (calibration's figure),
    pooled over `rounds` fresh sessions of `runs` runs each way."""
    from simulator.calibration_timing import default_feeds, fast_ms, session

    buf = np.ones(flush_bytes // 4, np.float32)
    hot: list[float] = []
    cold: list[float] = []
    for _ in range(rounds):
        s = session(path)
        feeds = default_feeds(s)
        for _ in range(5):
            s.run(None, feeds)
        for _ in range(runs):
            t = time.thread_time()
            s.run(None, feeds)
            hot.append(time.thread_time() - t)
        for _ in range(runs):
            buf[::16] += 1.0  # one write per 64-byte line: every line of the caches replaced
            t = time.thread_time()
            s.run(None, feeds)
            cold.append(time.thread_time() - t)
    return fast_ms(hot), fast_ms(cold)


def predicted(path: Path, calibration: Path) -> dict[str, float]:
    """fp32 prediction (ms) with the calibration's rule, with no weight evicted, with all of them; the rule's share."""
    import simulator.sweep as sw
    from simulator import roofline
    from simulator.calibrated import hardware_for
    from simulator.totals import totals
    from worker.pipeline import AnalysisOptions, analyze

    seen: dict[str, Any] = {}
    orig = sw.residency

    def spy(works: Any, w: float, u: Any) -> Any:
        seen["res"] = r = orig(works, w, u)
        return r

    sw.residency = spy  # the Residency the sweep reads: its run estimate and traffic
    try:
        with tempfile.TemporaryDirectory() as d:
            res = analyze(path, Path(d), AnalysisOptions(targets=("ort-cpu/host",), runs=1, warmup=0,
                                                         calibration_path=calibration, check_exports=False))
            r = res.targets[0]
            hw = hardware_for(r.target, calibration)
            out = {}
            for name, (hold, evict) in (("rule", (None, None)), ("none", (0.0, 0.0)), ("all", (1e-9, 2e-9))):
                h = hw if hold is None else hw.with_overrides({"units": {"cpu": {"llc_hold_s": hold,
                                                                                 "llc_evict_s": evict}}})
                pred = sw.sweep(r.compiled, r.target, None, hardware=h, source=res.source)
                out[name] = totals(pred.bulk, pred.per_op, "fp32", {})["latency_ms"]
                if name == "rule":  # evicted_share reads the unit's four ramp figures only
                    u = hw.units[0]
                    ramps = SimpleNamespace(llc_hold_s=u.llc_hold_s, llc_evict_s=u.llc_evict_s,
                                            spill_hold=u.llc_spill_hold_bytes, spill_evict=u.llc_spill_evict_bytes)
                    res_ = seen["res"]
                    out["share"] = float(roofline.evicted_share(ramps, res_.run_s, res_.spill_bytes))  # type: ignore[arg-type]
                    out["estimate_ms"] = res_.run_s * 1e3
                    out["weights_mb"] = res_.weights_fp32_bytes / 1e6
    finally:
        sw.residency = orig
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", type=Path, required=True, help="host calibration of this code's CACHE_VERSION")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("EDGESCOPE_CORPUS_CACHE", "/work/corpus-cache")))
    ap.add_argument("--only", nargs="+", required=True, help="corpus ids (their TorchScript export) or .onnx paths")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--flush-mb", type=int, default=1024, help="flush buffer (several times the last-level cache)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--lock", type=Path, default=None, help="hold this lock file (flock) while timing, and only then")
    a = ap.parse_args()
    files = {i: (Path(i) if i.endswith(".onnx") else a.cache / i.replace("/", "__") / "ts.onnx") for i in a.only}
    with open(a.lock or os.devnull, "a") as f:
        if a.lock:
            fcntl.flock(f, fcntl.LOCK_EX)
        measured = {i: timings(p, a.rounds, a.runs, a.flush_mb * 2 ** 20) for i, p in files.items()}
    rows = []
    print(f"{'model':40s} {'b2b':>7s} {'flushed':>7s} {'penalty':>8s} | {'pred none':>9s} {'all':>7s} {'penalty':>8s} "
          f"| rule's share (estimate, weights)")
    for i, p in files.items():
        hot, cold = measured[i]
        pr = predicted(p, a.calibration)
        rows.append({"id": i, "b2b_ms": hot, "flushed_ms": cold, **pr})
        print(f"{i:40s} {hot:7.2f} {cold:7.2f} {cold - hot:+8.2f} | {pr['none']:9.2f} {pr['all']:7.2f} "
              f"{pr['all'] - pr['none']:+8.2f} | {pr['share']:.2f} ({pr['estimate_ms']:.1f} ms, {pr['weights_mb']:.1f} MB)",
              flush=True)
    if a.json:
        a.json.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
