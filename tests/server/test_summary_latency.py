"""A model's summary (the model list, `GET /api/models/<id>`, `edgescope analyze --json`) gives the latency the
model page's header shows for the unoptimized model: on a busy machine the model's own CPU time per run, which the
measured tasks are set against (simulator.measured.own_whole_ms), not the wall time that waited for the CPU. Seen on
a torchvision ShuffleNetV2 at load 6 per CPU: the list said 12.90 ms (measured) and the page's header 3.866 ms."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from simulator.measured import fast_scale, own_whole_ms
from worker.pipeline import AnalysisOptions, analyze
from worker.results import ops_table, target_summary


def _busy(profile: Any, wall_factor: float = 3.0) -> Any:
    """The same measurement as a busy machine records it: the wall time 3x the CPU time, a low CPU share."""
    cpu = float(profile.latency_ms)
    kept = {k: v for k, v in (profile.noise or {}).items() if k != "fast_cpu_ms"}  # a profile without its fast time
    return dataclasses.replace(profile, latency_ms=cpu * wall_factor, latency_p90_ms=cpu * wall_factor * 1.5,
                               noise={**kept, "noisy": True, "cpu_latency_ms": cpu, "cpu_share": 0.3})


def test_a_busy_measurement_is_summarised_by_its_own_cpu_time(tmp_path: Path, zoo: Any, calibration_dir: Path) -> None:
    opts = AnalysisOptions(runs=20, warmup=2, check_exports=False, calibration_path=calibration_dir / "host-cpu.json")
    (r,) = analyze(zoo.path("tiny_cnn"), tmp_path, opts).targets
    assert r.profile is not None
    busy = dataclasses.replace(r, profile=_busy(r.profile))
    s = target_summary(busy, ops_table(busy))
    cpu = r.profile.latency_ms
    assert s["measured"] and s["latency_ms"] == cpu, s
    assert s["wall_latency_ms"] == cpu * 3.0
    assert abs(s["latency_p90_ms"] - cpu * 1.5) < 1e-9  # the p90 scaled the same way
    # the measurement as taken (quiet or not) reads as the analysis reads it, its wall time kept beside it
    q = target_summary(r, ops_table(r))
    assert q["latency_ms"] == own_whole_ms(r.profile) * (fast_scale(r.profile) or 1.0)
    assert q["wall_latency_ms"] == r.profile.latency_ms
    # ORT's 1-thread profile timed the fast CPU time too: the list reads the state the page's baseline is scaled to
    assert fast_scale(r.profile) is not None and "fast CPU time" in q["label"]
