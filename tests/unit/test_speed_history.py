"""A prediction made without a profile stands for the CPU's typical speed: the median of the speed probes this
machine's profiles and calibrations took (simulator.speed_history), held against the speed the calibrated rates
stand for (simulator.measured.typical_factor)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from simulator import calibration, speed_history
from simulator.calibration_timing import machine
from simulator.measured import IN_MODEL_BOUNDS, typical_factor
from simulator.profiles import HardwareProfile, load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import conv_chain

HOST = "ort-cpu/host"


def _host(speed: float | None, typical: float | None) -> HardwareProfile:
    return dataclasses.replace(load_profile("host-cpu", "ort-cpu"), speed_gflops=speed, typical_gflops=typical)


def test_the_history_keeps_this_machines_probes_and_their_median(tmp_path: Path) -> None:
    cal = tmp_path / "a.json"
    assert speed_history.history_path(cal) == tmp_path / "a.speeds.jsonl"
    speed_history.record(cal, (100.0, 0.0, None, 120.0), "profile")  # type: ignore[arg-type]
    assert speed_history.probes(cal) == [100.0, 120.0]  # zeros and non-figures are not probes
    assert speed_history.typical(cal) is None  # too few to say more than the calibration's own probes
    with speed_history.history_path(cal).open("a") as f:
        f.write("not json\n")
        f.write(json.dumps({"t": 0, "gflops": 999.0, "machine": "another CPU", "source": "profile"}) + "\n")
    speed_history.record(cal, (90.0, 110.0, 130.0, 140.0), "profile")
    assert speed_history.probes(cal) == [100.0, 120.0, 90.0, 110.0, 130.0, 140.0]
    assert speed_history.typical(cal) == pytest.approx(115.0)
    assert speed_history.probes(cal, keep=2) == [130.0, 140.0]
    line = json.loads(speed_history.history_path(cal).read_text().splitlines()[0])
    assert line["machine"] == machine() and line["source"] == "profile" and line["t"] > 0


def test_no_calibration_or_no_history_means_no_typical_speed(tmp_path: Path) -> None:
    speed_history.record(None, (100.0,), "profile")
    assert speed_history.probes(None) == [] and speed_history.typical(tmp_path / "none.json") is None


def test_an_unwritable_history_loses_the_probes_not_the_work(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    speed_history.record(blocked / "host-cpu.json", (100.0,), "profile")  # its folder is a file: no error
    assert speed_history.probes(blocked / "host-cpu.json") == []


def test_typical_factor_is_the_rates_speed_over_the_typical_bounded() -> None:
    assert typical_factor(_host(250.0, 200.0)) == pytest.approx(1.25)
    assert typical_factor(_host(250.0, 25.0)) == IN_MODEL_BOUNDS[1]
    assert typical_factor(_host(250.0, None)) is None and typical_factor(_host(None, 200.0)) is None


def test_a_prediction_without_a_profile_is_scaled_to_the_typical_speed() -> None:
    g = conv_chain()
    at_rates = sweep(g, HOST, None, hardware=_host(250.0, 250.0)).bulk["metrics"]["latency_ms"]
    slower = sweep(g, HOST, None, hardware=_host(250.0, 200.0)).bulk["metrics"]["latency_ms"]
    unknown = sweep(g, HOST, None, hardware=_host(250.0, None)).bulk["metrics"]["latency_ms"]
    assert unknown == at_rates  # no history: as the rates were timed
    cells = [(i, j) for i, row in enumerate(at_rates) for j, v in enumerate(row) if v > 0]
    assert cells and all(slower[i][j] == pytest.approx(1.25 * at_rates[i][j]) for i, j in cells)


def _current_cache(path: Path, before: float, after: float) -> Path:
    import onnxruntime as ort

    cache: dict[str, Any] = {"version": calibration.CACHE_VERSION, "profile": "host-cpu", "machine": machine(),
                             "onnxruntime": ort.__version__, "overrides": {},
                             "speed_probe": calibration.speed_record(before, after)}
    path.write_text(json.dumps(cache))
    return path


def test_the_calibrated_profile_reads_the_history_beside_its_cache(tmp_path: Path) -> None:
    cal = _current_cache(tmp_path / "host-cpu.json", 240.0, 250.0)
    hw = calibration.load_or_calibrate(cal)
    assert hw.speed_gflops == 250.0 and hw.typical_gflops is None  # the rates' speed: the faster probe
    speed_history.record(cal, (200.0,) * speed_history.MIN_PROBES, "profile")
    hw = calibration.load_or_calibrate(cal)
    assert hw.typical_gflops == 200.0 and typical_factor(hw) == pytest.approx(1.25)


def test_the_history_reads_and_keeps_only_its_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service that profiles for months reads the newest probes and keeps a bounded file."""
    monkeypatch.setattr(speed_history, "TAIL_BYTES", 2000)
    monkeypatch.setattr(speed_history, "MAX_BYTES", 6000)
    cal = tmp_path / "host-cpu.json"
    for i in range(120):
        speed_history.record(cal, (float(100 + i),), "profile")
    assert speed_history.history_path(cal).stat().st_size <= 6000 + 200  # cut back to its tail past MAX_BYTES
    got = speed_history.probes(cal)
    assert got[-1] == 219.0 and 5 < len(got) < 2000 // 60  # whole lines of the last 2000 bytes, newest last
    assert got == sorted(got)  # no partial or shuffled line


def test_the_label_says_the_prediction_is_at_the_typical_speed() -> None:
    g = conv_chain()
    label = sweep(g, HOST, None, hardware=_host(250.0, 200.0)).bulk["label"]
    assert label["typical_speed"] == {"gflops": 200.0, "rates_gflops": 250.0, "factor": pytest.approx(1.25)}
    assert "at this machine's typical speed (200 GFLOP/s; its rates were timed at 250: times x1.250)" in label["text"]
    assert "typical_speed" not in sweep(g, HOST, None, hardware=_host(250.0, None)).bulk["label"]
