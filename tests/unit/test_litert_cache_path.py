"""Where LiteRT's calibration is kept beside the host (ORT) one."""

from __future__ import annotations

from pathlib import Path

from simulator.litert_calibration import cache_path


def test_the_default_host_calibration_keeps_litert_cpu_json_beside_it() -> None:
    assert cache_path(Path("/d/calibration/host-cpu.json")) == Path("/d/calibration/litert-cpu.json")


def test_two_named_calibrations_in_one_folder_keep_separate_litert_halves() -> None:
    a, b = cache_path("/notes/calib/a.json"), cache_path("/notes/calib/b.json")
    assert a == Path("/notes/calib/a.litert-cpu.json")
    assert a != b and a.parent == b.parent
