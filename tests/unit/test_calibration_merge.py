"""benchmarks/calibration_refit.py --merge: each case's fastest timing over calibrations of one machine, the speed
record of the one that ran fastest, and a clear refusal for another machine's or ORT's calibration."""

from __future__ import annotations

from typing import Any

from tests import benchmark_module


def _refit():  # type: ignore[no-untyped-def]
    return benchmark_module.load("calibration_refit")


def _cal(timings: dict[str, float], fastest: float, machine: str = "m", ort: str = "1.0") -> dict[str, Any]:
    return {"machine": machine, "onnxruntime": ort, "timings": timings,
            "speed_probe": {"before_gflops": fastest - 10, "after_gflops": fastest, "during_gflops": [fastest - 5]}}


def test_each_case_keeps_its_fastest_timing() -> None:
    r = _refit()
    a, b = _cal({"conv": 2.0, "gemm": 1.0, "old": 5.0}, 200.0), _cal({"conv": 1.5, "gemm": 1.2, "new": 3.0}, 220.0)
    assert r.fastest_timings([a, b]) == {"conv": 1.5, "gemm": 1.0, "old": 5.0, "new": 3.0}


def test_the_merged_rates_take_the_fastest_calibrations_probe() -> None:
    r = _refit()
    a, b = _cal({}, 200.0), _cal({}, 220.0)
    assert r.fastest_probe([a, b]) == b["speed_probe"] and r.fastest_probe([b, a]) == b["speed_probe"]
    assert r.fastest_probe([{"timings": {}}]) is None


def test_another_machine_or_ort_or_no_timings_is_refused() -> None:
    r = _refit()
    a = _cal({"conv": 1.0}, 200.0)
    assert r.merge_refusal(a, [_cal({"conv": 1.0}, 210.0)]) is None
    assert "machine" in r.merge_refusal(a, [_cal({"conv": 1.0}, 210.0, machine="other")])
    assert "onnxruntime" in r.merge_refusal(a, [_cal({"conv": 1.0}, 210.0, ort="2.0")])
    assert "no timings" in r.merge_refusal(a, [_cal({}, 210.0)])
