"""`edgescope solve` as a user runs it: proposals within the budget, and a clear refusal of an impossible one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.cli.test_cli import _cli


def test_solve_json_proposals_meet_the_budget(zoo, calibration_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = str(zoo.path("mobilenet_v2_like"))
    # Its own copy of the calibration: predictions scale by the speed history beside it (simulator.speed_history),
    # which other tests' profiles append to meanwhile, and `start` must be the very state `predict` printed.
    calibration_dir = Path(shutil.copytree(calibration_dir, tmp_path / "calibration",
                                           ignore=shutil.ignore_patterns("*.lock", "*.log")))
    base = json.loads(_cli("predict", model, "--json", calibration_dir=calibration_dir, cwd=tmp_path).stdout)
    # How far the option table reaches depends on the host's calibration (a fixed 15% cut was out of reach on an
    # AVX2-only machine): ask for an impossible budget first, then for one halfway to the closest state it found.
    closest = json.loads(_cli("solve", model, "--target", "ort-cpu/host", "--latency-ms", "0.000001", "--json",
                              calibration_dir=calibration_dir, cwd=tmp_path).stdout)["closest"]["totals"]["latency_ms"]
    assert closest < base["totals"]["latency_ms"]
    limit = (closest + base["totals"]["latency_ms"]) / 2
    p = _cli("solve", model, "--target", "ort-cpu/host", "--latency-ms", repr(limit), "--json",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["feasible"] is True and doc["budget"] == {"latency_ms": limit}
    assert doc["start"] == base["totals"]
    fewest = next(x for x in doc["proposals"] if "fewest_changes" in x["objectives"])
    assert fewest["changes"] and fewest["totals"]["latency_ms"] <= limit
    assert all(c["before"] != c["after"] for c in fewest["changes"])
    assert {c["op"]: c["after"] for c in fewest["changes"]} == fewest["overrides"]

def test_solve_impossible_budget_says_what_is_missed(zoo, calibration_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    p = _cli("solve", str(zoo.path("tiny_cnn")), "--latency-ms", "0.000001", "--size-mb", "100",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 1
    assert "no state in the option table meets the budget" in p.stdout and "latency_ms" in p.stdout
    bad = _cli("solve", str(zoo.path("tiny_cnn")), calibration_dir=calibration_dir, cwd=tmp_path)
    assert bad.returncode == 1 and "give at least one limit" in bad.stderr
