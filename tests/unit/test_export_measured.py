"""An export's measured latency, read as the analysis reads its own measurement (worker/exports.py): on a busy machine
its CPU time, which the prediction beside it is set against too (simulator.measured.own_whole_ms), not its wall time
(2-3x at load 3-4 per CPU on this host)."""

from __future__ import annotations

from compiler.profile import Profile
from worker.exports import measured_latency


def _profile(wall: float, cpu: float, share: float, fast: float | None = None) -> Profile:
    return Profile(target="ort-cpu/host", runtime="onnxruntime", device="cpu", threads=1, runs=5, warmup=1,
                   latency_ms=wall, latency_p90_ms=wall * 1.2, peak_memory_bytes=0, input_shapes={},
                   noise={"cpu_latency_ms": cpu, "cpu_share": share, **({"fast_cpu_ms": fast} if fast else {})})


def test_a_busy_measurement_reports_the_cpu_time() -> None:
    m = measured_latency(_profile(9.0, 4.0, 0.45))
    assert m["latency_ms"] == 4.0 and m["wall_latency_ms"] == 9.0 and "CPU time" in m["label"]
    assert abs(m["latency_p90_ms"] - 4.8) < 1e-9


def test_a_quiet_measurement_reports_the_wall_time() -> None:
    m = measured_latency(_profile(4.2, 4.0, 0.95))
    assert m["latency_ms"] == 4.2 and "CPU time" not in m["label"]


def test_a_profile_with_its_fast_cpu_time_reports_that_state() -> None:
    # the state the sweep scales the measured baseline to (simulator.measured.fast_scale): the prediction beside an
    # export's measured figure and the model page's header read it too
    m = measured_latency(_profile(4.2, 4.0, 0.95, fast=3.6))
    assert m["latency_ms"] == 3.6 and m["wall_latency_ms"] == 4.2 and "fast CPU time" in m["label"]
    assert abs(m["latency_p90_ms"] - 4.2 * 1.2 * 3.6 / 4.2) < 1e-9
    busy = measured_latency(_profile(9.0, 4.0, 0.45, fast=3.6))
    assert busy["latency_ms"] == 3.6 and "busy" not in busy["label"]
