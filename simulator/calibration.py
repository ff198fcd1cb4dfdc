"""Calibrate the host-cpu profile: time kernels with ONNX Runtime (1 intra-op thread) and fit; the cache of the result.

Each case is a chain of R identical ops (so the per-inference fixed cost and the layout changes at
the ends are amortised), compiled by ORT at its default level like `ort-cpu/host`. fp32 cases fix
the fixed costs and bandwidths directly; every efficiency factor is then fitted so that the sweep's
own prediction for the case equals the measured time: the fit goes through the same code as every
prediction. Quantized and fp16 variants are written by compiler/optimize/onnx_export.py, so
`int8-dynamic` on a Conv + bias + activation chain is fitted against ORT running the real
DynamicQuantizeLinear + ConvInteger + Cast/Mul/Add model; paths measured at 3+ shapes fit an
efficiency and a fixed setup per task (`<kind>.<path>` in kind_overhead_s) jointly. Runs are timed in
the calling thread's CPU time (calibration_timing.clock).

By job: the models (simulator/calibration_bench.py), their timing (calibration_timing.py), the fit
(calibration_fit.py), and here the cache (`<data dir>/calibration/host-cpu.json`), refitted when its version,
ORT or the machine changes.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from simulator import speed_history
from simulator.calibration_bench import build_bench
from simulator.calibration_fit import CACHE_VERSION, fit_bench
from simulator.calibration_timing import machine, time_interleaved
from simulator.profiles import HardwareProfile, load_profile


def calibrate(progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Measure and fit; returns the JSON-able cache (overrides for HardwareProfile.with_overrides)."""
    from compiler.speed_probe import probe
    from compiler.timing_lock import timing_alone

    with tempfile.TemporaryDirectory() as td:
        bench = build_bench(Path(td), progress)
        progress("timing")
        with timing_alone():  # no other Edgescope timing beside the cases (compiler.timing_lock)
            before = probe()
            # A probe after every round too: the cases' fast figures stand for the fastest state of the whole timing,
            # which two probes at its ends can both miss (session 58, a Zen 4: 61.6 and 102.5 GFLOP/s at the ends
            # of a timing whose rates matched profiles probed at 110).
            during: list[float] = []
            wall = time_interleaved(bench.timings, progress=progress, after_round=lambda: during.append(probe()))
            after = probe()
        progress(f"speed probe {before:.0f} GFLOP/s before the timing, {after:.0f} after, "
                 f"{min(during, default=0):.0f}-{max(during, default=0):.0f} between its rounds")
        # The raw timings stay in the cache: another checkout's fit can be made on the same measurements
        # (benchmarks/calibration_refit.py), so a rule's before / after is read without timing the machine twice.
        return {**fit_bench(bench, wall, progress), "timings": wall,
                "speed_probe": speed_record(before, after, during)}


def speed_record(before: float, after: float, during: Sequence[float] = ()) -> dict[str, Any]:
    """The cache's `speed_probe`: the CPU's speed (compiler.speed_probe) before and after the case timings and
    between their rounds (`during_gflops`, where taken), which every profile is held against (`speed_reference`), and
    whether it drifted during them (the slowest and fastest probe beyond the drift limit)."""
    from compiler.speed_probe import drifted

    record: dict[str, Any] = {"before_gflops": round(before, 1), "after_gflops": round(after, 1)}
    if during:
        record["during_gflops"] = [round(g, 1) for g in during]
    figures = [g for g in (before, after, *during) if g > 0]
    return {**record, "drifted": len(figures) >= 2 and drifted(max(figures) / min(figures))}


def speed_reference(path: str | os.PathLike[str] | None) -> float | None:
    """The speed probe figure (GFLOP/s) of the current calibration at `path`, or None: no path, no current cache
    (nothing is timed here), or one made before calibrations recorded a probe."""
    from compiler.speed_probe import reference_of

    cache = _current_cache(Path(path)) if path is not None else None
    return reference_of(cache.get("speed_probe")) if cache else None


def profile_from_cache(cache: dict[str, Any]) -> HardwareProfile:
    over = dict(cache["overrides"])
    if cache.get("fidelity"):
        over["error_pct_median"] = cache["fidelity"]["error_pct_median"]
        over["error_models"] = cache["fidelity"]["models"]
        over["error_target"] = cache["fidelity"].get("target", "ort-cpu/host")
    hw = load_profile("host-cpu").with_overrides(over)
    from compiler.speed_probe import fastest_of

    return dataclasses.replace(hw, speed_gflops=fastest_of(cache.get("speed_probe")))


def load_or_calibrate(path: str | os.PathLike[str], progress: Callable[[str], None] = lambda s: None,
                      force: bool = False) -> HardwareProfile:
    """The calibrated host-cpu profile, from the JSON cache at `path` (calibrating and writing it first
    if it is missing, of another version, or made on another machine / ORT version)."""
    p = Path(path)
    if p.is_dir():
        # Refused before timing: a directory was calibrated for minutes, then the save failed (session 62)
        raise ValueError(f"{p} is a directory: name the calibration file (for example {p / 'host-cpu.json'})")
    if not force and (cache := _current_cache(p)) is not None:
        return _at_typical_speed(profile_from_cache(cache), p)
    p.parent.mkdir(parents=True, exist_ok=True)
    # One calibration per machine at a time: workers (and the warm-up at start) that find no cache wait
    # for the first one's result instead of each timing kernels on the same cores.
    with open(p.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and (cache := _current_cache(p)) is not None:
            return _at_typical_speed(profile_from_cache(cache), p)
        cache = calibrate(progress)
        save_cache(p, cache)
        from compiler.speed_probe import probe_figures

        speed_history.record(p, probe_figures(cache.get("speed_probe")), "calibration")
    return _at_typical_speed(profile_from_cache(cache), p)


def _at_typical_speed(hw: HardwareProfile, path: Path) -> HardwareProfile:
    """`hw` with the typical speed of the machine's probe history beside its cache (simulator.speed_history)."""
    return dataclasses.replace(hw, typical_gflops=speed_history.typical(path))


def is_cached(path: str | os.PathLike[str]) -> bool:
    """True when `load_or_calibrate(path)` would return at once (a current cache exists)."""
    return _current_cache(Path(path)) is not None


def save_cache(path: str | os.PathLike[str], cache: dict[str, Any]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(p)  # atomic: a concurrent reader never sees half a file


def _current_cache(p: Path) -> dict[str, Any] | None:
    """The cache at p if it was made by this calibration version, ORT version and machine."""
    try:
        cache = json.loads(p.read_text())
    except (OSError, ValueError):
        return None  # missing or unreadable: calibrate
    return cache if isinstance(cache, dict) and _stale(cache) is None else None


def _stale(cache: dict[str, Any]) -> str | None:
    import onnxruntime as ort

    if cache.get("version") != CACHE_VERSION:
        return f"made by calibration version {cache.get('version')}, this code's is {CACHE_VERSION}"
    if cache.get("onnxruntime") != ort.__version__:
        return f"made with onnxruntime {cache.get('onnxruntime')}, this is {ort.__version__}"
    if cache.get("machine") != machine():
        return f"made on another CPU ({cache.get('machine')})"
    return None


def stale_reason(path: str | os.PathLike[str]) -> str | None:
    """Why `load_or_calibrate(path)` would time this machine again (and replace the file), or None if it would not:
    a file a user names is rewritten when it is of another calibration version, ORT version or machine, so the
    commands say so before the minutes of timing rather than silently."""
    p = Path(path)
    try:
        cache = json.loads(p.read_text())
    except FileNotFoundError:
        return "there is none yet"
    except (OSError, ValueError):
        return "the file could not be read"
    if not isinstance(cache, dict):
        return "the file is not a calibration"
    reason = _stale(cache)
    return f"the file was {reason}" if reason else None


def named_file_refusal(path: str | os.PathLike[str] | None) -> str | None:
    """Why a benchmark must not use the calibration file a user named (`--calibration`), or None: one of another
    calibration version, ORT version or machine would be timed again and replaced in place, minutes of timing outside
    whatever lock the caller holds, and the file's earlier timings gone (session 51: five copies of one calibration
    rewritten so by scripts running newer code). A missing file is calibrated as before."""
    if path is None or (why := stale_reason(path)) is None or why == "there is none yet":
        return None
    return (f"{path}: {why}; it would be timed again and replaced. Refit its timings with this code instead "
            f"(benchmarks/calibration_refit.py {path} --out NEW --time-missing), or pass --recalibrate")


def record_fidelity(path: str | os.PathLike[str], error_pct_median: float, models: int,
                    target: str = "ort-cpu/host", **extra: Any) -> None:
    """Store the held-out error (benchmarks/fidelity.py) in the cache so predictions on `target` cite it."""
    p = Path(path)
    cache = json.loads(p.read_text())
    cache["fidelity"] = {"error_pct_median": error_pct_median, "models": models, "target": target, **extra}
    save_cache(p, cache)
