"""An analysis holds its profile's speed probe against the host calibration's (compiler/speed_probe.py): a model
profiled while the CPU ran at another speed than when the rates were measured is summarised as noisy, with the ratio
in its reason, as the page, the CLI and `--json` show it. The calibration's figure is set far off (1 GFLOP/s), so the
test does not depend on how fast this machine runs today."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator import calibration
from testkit.live import QUICK_ROUNDS
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
    opts = AnalysisOptions(runs=5, warmup=1, check_exports=False, calibration_path=cal, **QUICK_ROUNDS)
    (r,) = analyze(zoo.path("tiny_cnn"), tmp_path / "work", opts).targets
    assert r.profile is not None
    s = target_summary(r, ops_table(r))
    assert s["noise"]["noisy"] and s["noise"]["speed"]["reference_gflops"] == 1.0
    assert "faster than when this machine's rates were measured" in s["noise"]["reason"]


def test_without_a_probe_in_the_calibration_nothing_is_compared(tmp_path: Path, zoo: Any) -> None:
    """A calibration made before calibrations recorded a probe: the profile keeps its own probes, with no ratio."""
    cal = _calibration(tmp_path / "host-cpu.json", None)
    opts = AnalysisOptions(runs=5, warmup=1, check_exports=False, calibration_path=cal, **QUICK_ROUNDS)
    (r,) = analyze(zoo.path("tiny_cnn"), tmp_path / "work", opts).targets
    assert r.profile is not None
    speed = r.profile.noise["speed"]
    assert speed["reference_gflops"] is None and speed["ratio"] is None and speed["before_gflops"] > 1


def _litert_calibration(host: Path, gflops: float | None) -> Path:
    """A current LiteRT half beside `host` (this code's version, LiteRT and machine), no overrides, with a probe record."""
    from simulator import litert_calibration
    from simulator.calibration_timing import machine

    cache: dict[str, Any] = {"version": litert_calibration.CACHE_VERSION, "litert": litert_calibration._litert_version(),
                             "machine": machine(), "platform": "test", "overrides": {}}
    if gflops is not None:
        cache["speed_probe"] = calibration.speed_record(gflops, gflops)
    p = litert_calibration.cache_path(host)
    p.write_text(json.dumps(cache))
    return p


def test_a_litert_profile_is_held_against_litert_s_own_calibration(tmp_path: Path, zoo: Any) -> None:
    """LiteRT's rates were timed at another moment than ORT's: its profile takes the LiteRT half's probe (1 GFLOP/s
    here, the ORT half's 1000), so it reads as faster than when LiteRT's rates were measured, with its own probes."""
    cal = _calibration(tmp_path / "host-cpu.json", 1000.0)
    _litert_calibration(cal, 1.0)
    assert host_speed_reference("litert-cpu/host", cal) == 1.0
    assert host_speed_reference("ort-cpu/host", cal) == 1000.0
    from simulator.calibrated import hardware_for

    # LiteRT's rates stand for the speed of their own timing, which a prediction is scaled from (typical_factor)
    assert hardware_for("litert-cpu/host", cal).speed_gflops == 1.0
    assert hardware_for("ort-cpu/host", cal).speed_gflops == 1000.0
    opts = AnalysisOptions(targets=("litert-cpu/host",), runs=5, warmup=1, check_exports=False, calibration_path=cal,
                           **QUICK_ROUNDS)
    (r,) = analyze(zoo.path("tflite_cnn"), tmp_path / "work", opts).targets
    assert r.target == "litert-cpu/host" and r.profile is not None and r.profile.measured
    speed = r.profile.noise["speed"]
    assert speed["reference_gflops"] == 1.0 and speed["before_gflops"] > 1 and speed["ratio"] > 1.1
    assert r.profile.noise["rounds"] >= 2  # a drifted round is timed again while cheap
    s = target_summary(r, ops_table(r))
    assert s["noise"]["noisy"] and "faster than when this machine's rates were measured" in s["noise"]["reason"]


def test_a_litert_half_without_a_probe_compares_nothing(tmp_path: Path, zoo: Any) -> None:
    """A LiteRT calibration made before it recorded a probe: the ORT half's figure does not stand in for it."""
    cal = _calibration(tmp_path / "host-cpu.json", 1.0)
    _litert_calibration(cal, None)
    assert host_speed_reference("litert-cpu/host", cal) is None
    opts = AnalysisOptions(targets=("litert-cpu/host",), runs=5, warmup=1, check_exports=False, calibration_path=cal,
                           **QUICK_ROUNDS)
    (r,) = analyze(zoo.path("tflite_cnn"), tmp_path / "work", opts).targets
    assert r.profile is not None
    speed = r.profile.noise["speed"]
    assert speed["reference_gflops"] is None and speed["ratio"] is None and speed["before_gflops"] > 1


def test_a_host_profile_adds_its_probes_to_the_machines_speed_history(tmp_path: Path, zoo: Any) -> None:
    """The probes every host profile takes are kept beside the calibration (simulator.speed_history); with enough
    of them, a prediction made without a profile is made at their median, the machine's typical speed."""
    from simulator import speed_history
    from simulator.calibrated import hardware_for
    from simulator.sweep import sweep

    cal = _calibration(tmp_path / "host-cpu.json", 1000.0)
    opts = AnalysisOptions(runs=5, warmup=1, check_exports=False, calibration_path=cal, keep_speed_probes=False,
                           **QUICK_ROUNDS)
    analyze(zoo.path("tiny_cnn"), tmp_path / "work0", opts)
    assert speed_history.probes(cal) == []  # a benchmark predicting kept measurements again keeps none
    opts = AnalysisOptions(runs=5, warmup=1, check_exports=False, calibration_path=cal, **QUICK_ROUNDS)
    (r,) = analyze(zoo.path("tiny_cnn"), tmp_path / "work", opts).targets
    speed = r.profile.noise["speed"]
    assert speed_history.probes(cal) == [speed["before_gflops"], speed["after_gflops"]]
    assert hardware_for("ort-cpu/host", cal).typical_gflops is None  # two probes: no typical speed yet
    at_rates = sweep(r.compiled, r.target, None, hardware=hardware_for("ort-cpu/host", cal)).bulk
    speed_history.record(cal, (800.0,) * speed_history.MIN_PROBES, "profile")
    hw = hardware_for("ort-cpu/host", cal)
    assert hw.typical_gflops == 800.0 and hw.speed_gflops == 1000.0
    typical = sweep(r.compiled, r.target, None, hardware=hw).bulk
    f32 = [p["name"] for p in at_rates["presets"]].index("fp32")
    a = sum(row[f32] for row in at_rates["metrics"]["latency_ms"])
    b = sum(row[f32] for row in typical["metrics"]["latency_ms"])
    assert a > 0 and b == pytest.approx(1.25 * a)
