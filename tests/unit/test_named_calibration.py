"""A calibration file a benchmark is told to use (`--calibration`) is never timed again and replaced behind the
caller's back when it is stale: the benchmarks refuse it and name the refit that keeps its timings."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import onnxruntime as ort
import pytest

from benchmarks import exports, realworld
from simulator.calibration import CACHE_VERSION, load_or_calibrate, named_file_refusal
from simulator.calibration_timing import machine


def _cache(path: Path, version: int) -> Path:
    path.write_text(json.dumps({"version": version, "onnxruntime": ort.__version__, "machine": machine(),
                                "timings": {"case": 1.0}}))
    return path


def test_a_stale_named_file_is_refused_with_the_refit_named(tmp_path: Path) -> None:
    stale = _cache(tmp_path / "old.json", CACHE_VERSION - 1)
    why = named_file_refusal(stale)
    assert why is not None and f"version {CACHE_VERSION - 1}" in why and "calibration_refit.py" in why


def test_a_current_or_missing_file_or_none_is_used(tmp_path: Path) -> None:
    assert named_file_refusal(_cache(tmp_path / "now.json", CACHE_VERSION)) is None
    assert named_file_refusal(tmp_path / "none-yet.json") is None  # calibrated there, as before
    assert named_file_refusal(None) is None


@pytest.mark.parametrize("bench", [realworld, exports])
def test_the_benchmarks_stop_before_touching_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], bench: object) -> None:
    stale = _cache(tmp_path / "old.json", CACHE_VERSION - 1)
    before = stale.read_bytes()
    monkeypatch.setattr(sys, "argv", [bench.__name__, "--cache", str(tmp_path), "--calibration", str(stale)])
    with pytest.raises(SystemExit) as stop:
        bench.main()  # type: ignore[attr-defined]
    assert stop.value.code == 2 and "calibration_refit.py" in capsys.readouterr().err
    assert stale.read_bytes() == before


def test_a_row_whose_calibration_went_stale_mid_run_is_an_error_not_a_calibration(tmp_path: Path) -> None:
    """realworld.py's parent made the file current; a landing mid-run makes it stale for the next row's child, which
    says so in the row instead of timing the machine again and replacing the file (session 52: a repredict's child
    took the calibration lock to do so before it was stopped)."""
    stale = _cache(tmp_path / "old.json", CACHE_VERSION - 1)
    before, out = stale.read_bytes(), tmp_path / "row.json"
    spec = {"path": str(tmp_path / "model.onnx"), "inputs": {}, "calibration": str(stale), "runs": 1, "warmup": 0}
    assert realworld._child(spec, out) == 0
    row = json.loads(out.read_text())
    assert row["status"] == "error" and "went stale during the run" in row["error"]
    assert f"version {CACHE_VERSION - 1}" in row["error"] and stale.read_bytes() == before


def test_a_directory_is_refused_before_any_timing(tmp_path: Path) -> None:
    """A calibration directory given where its file belongs was timed for minutes, then the save failed."""
    with pytest.raises(ValueError, match="is a directory"):
        load_or_calibrate(tmp_path)
