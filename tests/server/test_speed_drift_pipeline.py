"""An analysis holds its profile's speed probe against the host calibration's (compiler/speed_probe.py): a model
profiled while the CPU ran at another speed than when the rates were measured is summarised as noisy, with the ratio
in its reason, as the page, the CLI and `--json` show it. The calibration's figure is set far off (1 GFLOP/s), so the
test does not depend on how fast this machine runs today."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simulator import calibration
from worker.pipeline import AnalysisOptions, analyze, host_speed_reference
from worker.results import ops_table, target_summary


def _calibration(path: Path, gflops: float | None) -> Path:
    """A current host calibration (this code's version, ORT and machine) with the YAML's rates and a probe record."""
    import onnxruntime as ort

    from simulator.calibration_timing import machine

    cache: dict[str, Any] = {"version": calibration.CACHE_VERSION, "profile": "host-cpu", "machine": machine(),
                             "onnxruntime": ort.__version__, "overrides": {}}
    if gflops is not None:
        cache["speed_probe"] = calibration.speed_record(gflops, gflops)
    path.write_text(json.dumps(cache))
    return path


def test_a_profile_at_another_speed_than_the_calibration_is_summarised_noisy(tmp_path: Path, zoo: Any) -> None:
    cal = _calibration(tmp_path / "host-cpu.json", 1.0)
    assert host_speed_reference("ort-cpu/host", cal) == 1.0
    assert host_speed_reference("coreml/apple-a17", cal) is None  # not priced by the host calibration
    opts = AnalysisOptions(runs=5, warmup=1, check_exports=False, calibration_path=cal)
    (r,) = analyze(zoo.path("tiny_cnn"), tmp_path / "work", opts).targets
    assert r.profile is not None
    s = target_summary(r, ops_table(r))
    assert s["noise"]["noisy"] and s["noise"]["speed"]["reference_gflops"] == 1.0
    assert "faster than when this machine's rates were measured" in s["noise"]["reason"]


def test_without_a_probe_in_the_calibration_nothing_is_compared(tmp_path: Path, zoo: Any) -> None:
    """A calibration made before calibrations recorded a probe: the profile keeps its own probes, with no ratio."""
    cal = _calibration(tmp_path / "host-cpu.json", None)
    opts = AnalysisOptions(runs=5, warmup=1, check_exports=False, calibration_path=cal)
    (r,) = analyze(zoo.path("tiny_cnn"), tmp_path / "work", opts).targets
    assert r.profile is not None
    speed = r.profile.noise["speed"]
    assert speed["reference_gflops"] is None and speed["ratio"] is None and speed["before_gflops"] > 1
