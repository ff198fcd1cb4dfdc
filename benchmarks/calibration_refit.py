"""Fit a host calibration again on the timings an earlier calibration stored (`timings` in its cache), with the code
of this checkout or of another (`--tree`), without timing anything: two checkouts' calibrations of one machine are
then fitted on the same measurements, and their predictions compared side by side (benchmarks/exports.py
--repredict) tell the rules apart from the machine's drift between two timings.

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/calibration_refit.py CACHE.json --out NEW.json [--tree DIR]

The bench is built and compiled by the tree's code (its cases; a timing it has no case for is ignored, a case with
no timing is an error unless `--time-missing` times it now: a new rule's cases, a minute of timing where the whole
calibration takes ten; run that under the measurement lock). The fixed costs, bandwidths and every efficiency come
from the stored timings, so the new cache is what that code's `edgescope calibrate` would have written at that
moment (with `--time-missing`, the new cases' timings are of this one, which the cache records).

`--merge OTHER.json ...` fits each case's fastest timing over this cache and the others (calibrations of the same
machine and ORT, timed at other moments): a shared VM's speed moves for minutes at a time, and one calibration can
time a whole kind of case in a slow spell (a Zen 5, session 61: R3D-18's seven 3-D conv cases 1.13-1.29x apart in two
calibrations 30 minutes apart, MobileNetV3-Large predicted +23% and +13% of one row's thread CPU time). The merged
rates stand for the fastest of the calibrations' speed probes, whose record the cache takes. Measured there, it did
not help: on 48 dynamo rows the merge of the two read as the faster one, 38/48 within ±10% like either (README, "The
corpus on a Zen 5, session 61"); a tool for comparing calibrations, not a fix.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", type=Path, help="a calibration cache holding `timings`")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the checkout whose code fits (default: this one)")
    ap.add_argument("--time-missing", action="store_true",
                    help="time the cases the stored timings lack (a new rule's) instead of refusing")
    ap.add_argument("--lock", type=Path, help="hold this lock file (flock) while timing them, and only then")
    ap.add_argument("--timing-nice", type=int, default=None, metavar="N",
                    help="time them at this niceness (e.g. -10 beside niced builds; the build and fit keep this one's)")
    ap.add_argument("--merge", type=Path, nargs="+", default=[], metavar="OTHER",
                    help="other calibrations of this machine: fit each case's fastest timing of them all")
    a = ap.parse_args()
    sys.path.insert(0, os.fspath(a.tree.resolve()))
    from simulator.calibration import save_cache
    from simulator.calibration_bench import build_bench
    from simulator.calibration_fit import fit_bench

    src = json.loads(a.cache.read_text())
    wall = src.get("timings")
    if not wall:
        ap.error(f"{a.cache} holds no timings (made before calibrations kept them)")
    if a.merge:
        others = [json.loads(p.read_text()) for p in a.merge]
        if (why := merge_refusal(src, others)) is not None:
            ap.error(why)
        wall, src = fastest_timings([src, *others]), {**src, "speed_probe": fastest_probe([src, *others])}
    with tempfile.TemporaryDirectory(prefix="refit-") as td:
        bench = build_bench(Path(td), progress=lambda s: print(s, flush=True))
        missing = sorted(set(bench.timings) - set(wall))
        if missing and not a.time_missing:
            ap.error(f"no timing for {len(missing)} of this code's cases: {', '.join(missing[:6])}")
        if missing:
            wall = {**wall, **_time_now({k: bench.timings[k] for k in missing}, a.lock, a.timing_nice)}
        cache = fit_bench(bench, wall, progress=lambda s: print(s, flush=True))
    # The same machine, moment and ORT as the timings: the cache reads as current where they match.
    # (and its speed probe: the speed its timings ran at, which every profile and row is held against)
    cache.update({"machine": src["machine"], "onnxruntime": src["onnxruntime"], "timings": wall,
                  **({"speed_probe": src["speed_probe"]} if src.get("speed_probe") else {}),
                  "refit_of": os.fspath(a.cache), "refit_tree": os.fspath(a.tree.resolve()),
                  **({"merged_with": [os.fspath(p) for p in a.merge]} if a.merge else {}),
                  **({"timed_now": missing} if missing else {})})
    save_cache(a.out, cache)
    print(f"{a.out}: version {cache['version']}, fitted by {a.tree} on {a.cache}'s timings")
    return 0


def merge_refusal(src: dict[str, Any], others: list[dict[str, Any]]) -> str | None:
    """Why these calibrations cannot be merged (another machine or ORT version, or no stored timings), or None."""
    for o in others:
        for key in ("machine", "onnxruntime"):
            if o.get(key) != src.get(key):
                return f"cannot merge a calibration of another {key} ({o.get(key)!r}, not {src.get(key)!r})"
        if not o.get("timings"):
            return "cannot merge a calibration that holds no timings"
    return None


def fastest_timings(caches: list[dict[str, Any]]) -> dict[str, float]:
    """Each case's fastest stored timing over `caches` (a case some lack keeps the others' figure)."""
    out: dict[str, float] = {}
    for c in caches:
        for k, t in c["timings"].items():
            out[k] = min(out.get(k, t), t)
    return out


def fastest_probe(caches: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The speed probe record of the calibration that ran fastest (compiler.speed_probe.fastest_of): the merged
    figures are each case's fastest, which that calibration's fast state stands for."""
    from compiler.speed_probe import fastest_of

    records = [c.get("speed_probe") for c in caches if c.get("speed_probe")]
    return max(records, key=lambda r: fastest_of(r) or 0.0) if records else None


def _time_now(models: dict[str, Any], lock: Path | None, niceness: int | None = None) -> dict[str, float]:
    """Time `models` as calibration does, holding `lock` (flock) meanwhile where one is named, at `niceness` where
    given; the CPU's speed probe (compiler.speed_probe) before and after, inside the same hold."""
    import subprocess

    from compiler.speed_probe import probe
    from simulator.calibration_timing import time_interleaved

    with held(lock, niceness):
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        before = probe()
        print(f"timing {len(models)} cases the stored timings lack ({load}; probe {before:.1f} GFLOP/s): "
              f"{', '.join(models)}", flush=True)
        out = time_interleaved(models)
        print(f"timed: probe {before:.1f} -> {probe():.1f} GFLOP/s", flush=True)
        return out


@contextlib.contextmanager
def held(lock: Path | None, niceness: int | None) -> Iterator[None]:
    """Inside: `lock` held (flock) where one is named, this process at `niceness` where given (its children too)."""
    import fcntl

    with open(lock or os.devnull, "a") as f:
        if lock:
            fcntl.flock(f, fcntl.LOCK_EX)
        was = os.getpriority(os.PRIO_PROCESS, 0)
        if niceness is not None:
            os.setpriority(os.PRIO_PROCESS, 0, niceness)
        try:
            yield
        finally:
            os.setpriority(os.PRIO_PROCESS, 0, was)


if __name__ == "__main__":
    sys.exit(main())
