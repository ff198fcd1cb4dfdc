"""A LiteRT calibration (`litert-cpu.json`) brought to this code's CACHE_VERSION by re-timing only the cases of the
rule that changed, its other figures kept: LiteRT's half stores no timings, so there is nothing to refit the rest on,
and timing it whole anew (a few minutes) would also move every other figure with the machine's speed of the moment.

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/litert_refit.py CAL/host-cpu.json --out NEW/host-cpu.json \\
        --lock /work/notes/measure.lock --timing-nice -10

Re-timed: XNNPACK's TRANSPOSE cases (simulator.litert_layout, cache version 40: `layout.transpose.farmem`), fitted on
the old half's figures (its cache ladder among them). The ORT half is copied beside the new LiteRT half unchanged; the
new half records what it re-timed, the probes around that timing and the cache it was refitted from.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("host", type=Path, help="a host calibration (host-cpu.json) with its LiteRT half beside it")
    ap.add_argument("--out", type=Path, required=True, help="the new host calibration's path (its halves beside)")
    ap.add_argument("--lock", type=Path, help="hold this lock file (flock) while timing, and only then")
    ap.add_argument("--timing-nice", type=int, default=None, metavar="N", help="time at this niceness")
    ap.add_argument("--reuse", type=Path, metavar="REFIT", help="fit on the timings a refit stored, timing nothing")
    a = ap.parse_args()
    sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))
    from simulator import calibration, litert_calibration

    if not calibration.is_cached(a.host):
        ap.error(f"{a.host} is not a current ORT calibration of this machine (refit it first: calibration_refit.py)")
    old = json.loads(litert_calibration.cache_path(a.host).read_text())
    reused = json.loads(litert_calibration.cache_path(a.reuse).read_text()) if a.reuse else None
    cache = refit(old, calibration.load_or_calibrate(a.host), a.lock, a.timing_nice, reused)
    cache["refit_of"] = os.fspath(litert_calibration.cache_path(a.host))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    if a.out.resolve() != a.host.resolve():
        shutil.copyfile(a.host, a.out)
    calibration.save_cache(litert_calibration.cache_path(a.out), cache)
    print(f"{litert_calibration.cache_path(a.out)}: LiteRT version {old.get('version')} -> {cache['version']}")
    return 0


def refit(old: dict[str, Any], host: Any, lock: Path | None, niceness: int | None,
          reused: dict[str, Any] | None = None) -> dict[str, Any]:
    """`old` with the TRANSPOSE figures fitted anew on cases timed now (three rounds, each case's fastest: a shared
    host's bursts of memory traffic moved the large ones 1.4x between two timings), or on those `reused` stored, at
    this code's CACHE_VERSION."""
    from compiler.frontends import tflite
    from simulator import litert_layout
    from simulator.litert_calibration import CACHE_VERSION, applied

    hw = applied(host, old)
    cases = tuple(c for c in litert_layout.CASES if c.op == "TRANSPOSE")
    with tempfile.TemporaryDirectory(prefix="litert-refit-") as td:
        if reused:
            ms = reused["timed_now"]
            measured = {c.name: (tflite.load(litert_layout.build(c, Path(td) / f"{c.name}.tflite")), ms[c.name])
                        for c in cases}
            before, after = reused["timed_now_probe"]["before_gflops"], reused["timed_now_probe"]["after_gflops"]
        else:
            (before, after), measured = _timed(
                lambda: litert_layout.measure(Path(td), print, cases=cases, rounds=3), lock, niceness)
    fitted = litert_layout.transpose_fit([measured[c.name] for c in cases], hw)["units"]["cpu"]
    cpu = json.loads(json.dumps(old["overrides"]["units"]["cpu"]))
    for key in ("efficiency", "kind_overhead_s", "kind_bandwidth_bytes_per_s"):
        cpu.setdefault(key, {}).update(fitted[key])
    figures = {**fitted["kind_overhead_s"], **fitted["kind_bandwidth_bytes_per_s"]}
    print("fitted: " + ", ".join(f"{k} {v:.4g}" for k, v in figures.items()), flush=True)
    return {**old, "version": CACHE_VERSION, "overrides": {**old["overrides"], "units": {"cpu": cpu}},
            "timed_now": {c.name: measured[c.name][1] for c in cases},
            "timed_now_probe": {"before_gflops": before, "after_gflops": after}}


def _timed(fn: Any, lock: Path | None, niceness: int | None) -> tuple[tuple[float, float], Any]:
    """fn() holding `lock` (flock) where named, at `niceness` where given, the speed probe before and after it."""
    from benchmarks.calibration_refit import held
    from compiler.speed_probe import probe

    with held(lock, niceness):
        before = probe()
        print(f"timing (probe {before:.1f} GFLOP/s, load {os.getloadavg()[0]:.2f})", flush=True)
        out = fn()
        after = probe()
        print(f"timed: probe {before:.1f} -> {after:.1f} GFLOP/s", flush=True)
        return (before, after), out


if __name__ == "__main__":
    sys.exit(main())
