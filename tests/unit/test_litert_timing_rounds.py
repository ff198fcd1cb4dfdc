"""LiteRT's calibration times its cases in rounds (simulator.litert_cases.profile_cases, `rounds`): every case once a
round, each round a child of its own, and a case's figure is its fastest round, so a burst of other load on a shared
machine lands in one round of a case, not in its figure. The sandbox is stubbed here: no process is started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator import litert_calibration
from simulator.litert_cases import fastest_round, profile_cases


def _res(*ms: float) -> dict[str, Any]:
    return {"tasks": {f"op{i}": [m, m, m, 10, 1.0] for i, m in enumerate(ms)}}


def test_the_fastest_round_is_taken_whole() -> None:
    """The round whose operators sum least, all its operators (not each operator's least of the rounds)."""
    rounds = [_res(1.0, 2.0, 2.0), _res(0.8, 2.6, 2.1), _res(1.1, 1.9, 1.9)]
    assert fastest_round(rounds) is rounds[2]
    assert fastest_round(rounds[:1]) is rounds[0]


def _stub(monkeypatch: pytest.MonkeyPatch, per_call: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """compiler.sandbox.run replaced: the n-th call returns per_call[n]; returns the payloads it was given."""
    import compiler.sandbox

    payloads: list[dict[str, Any]] = []

    def run(target: str, payload: dict[str, Any], limits: Any = None, python: Any = None) -> Any:
        payloads.append(payload)
        return per_call[len(payloads) - 1]

    monkeypatch.setattr(compiler.sandbox, "run", run)
    return payloads


def _build(case: str, path: Path) -> Path:
    path.write_bytes(b"")
    return path


def test_rounds_split_the_runs_and_keep_each_cases_fastest_round(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # case a: a burst in round 1; case b: in round 2; each case's figure is the round it was not hit in
    payloads = _stub(monkeypatch, [[_res(3.0, 3.0), _res(1.0, 1.0)], [_res(1.0, 1.1), _res(2.0, 2.5)],
                                   [_res(1.05, 1.05), _res(1.02, 1.0)]])
    out = profile_cases(["a", "b"], _build, str, tmp_path, "cases", runs=30, warmup=5, rounds=3)
    assert [p["runs"] for p in payloads] == [10, 10, 10] and all(p["warmup"] == 5 for p in payloads)
    assert [c for c, _, _ in out] == ["a", "b"] and [p.name for _, p, _ in out] == ["a.tflite", "b.tflite"]
    assert out[0][2]["tasks"]["op0"][0] == 1.0 and out[1][2]["tasks"]["op0"][0] == 1.0


def test_one_round_is_one_child_with_every_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other LiteRT calibrations (RFFT2D, layout, ...) keep one timing of `runs` runs per case."""
    payloads = _stub(monkeypatch, [[_res(1.0)]])
    out = profile_cases(["a"], _build, str, tmp_path, "cases", runs=20)
    assert [p["runs"] for p in payloads] == [20] and out[0][2]["tasks"]["op0"][0] == 1.0


def test_the_chains_are_timed_in_rounds() -> None:
    import inspect

    assert litert_calibration.ROUNDS >= 2
    assert inspect.signature(litert_calibration.measure).parameters["rounds"].default == litert_calibration.ROUNDS
