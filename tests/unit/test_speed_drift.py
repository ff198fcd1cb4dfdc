"""The speed-drift guard (compiler/speed_probe.py): a profile timed while the CPU ran at another speed than when the
host's rates were calibrated says so. Probe figures are injected: nothing here depends on this machine's speed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.realworld import (at_calibration_speed, drift_summary, drifted, first_pass, keep_faster, keep_steadier,
                                  speed_ratio, within_share)
from compiler import profile as profile_mod
from compiler.profile import Profile, Round, measure_rounds
from compiler.speed_probe import DRIFT_LIMIT, SpeedCheck, against, mark, reference_of
from simulator import calibration


def test_a_profile_faster_than_the_calibration_is_marked_with_its_ratio() -> None:
    check = SpeedCheck(150.0, 150.0, reference=105.0)
    assert check.ratio == pytest.approx(150 / 105) and check.drifted
    assert check.reasons() == ["the CPU ran 1.43x faster than when this machine's rates were measured "
                               "(speed probe 150 vs 105 GFLOP/s)"]
    slower = SpeedCheck(80.0, 80.0, reference=100.0)
    assert slower.drifted and "1.25x slower" in slower.reasons()[0]


def test_the_limit_is_ten_percent_either_way() -> None:
    assert DRIFT_LIMIT == 1.10
    for ratio, out in ((1.09, False), (1.11, True), (1 / 1.09, False), (1 / 1.11, True), (1.0, False)):
        assert SpeedCheck(100 * ratio, 100 * ratio, reference=100.0).drifted is out, ratio
    # Without a calibration figure only the probes around the timing are compared.
    assert not SpeedCheck(100.0, 500.0 / 5.2).drifted
    assert SpeedCheck(100.0, 120.0).reasons() == [
        "the CPU's speed changed during the timing (speed probe 100 GFLOP/s before, 120 after)"]


def _noise(**extra: Any) -> dict[str, Any]:
    return {"noisy": False, "spread": 1.05, "cpu_share": 0.99, "load_per_cpu": 0.2, "cpu_latency_ms": 4.0,
            "rounds": 1, "reason": "", **extra}


def test_marking_keeps_other_reasons_and_is_idempotent() -> None:
    busy = _noise(noisy=True, reason="runs spread wide (p90/median 1.50)")
    once = mark(busy, SpeedCheck(140.0, 140.0, reference=100.0))
    assert once["noisy"] and once["reason"].startswith("runs spread wide (p90/median 1.50); the CPU ran 1.40x faster")
    assert mark(once, SpeedCheck(140.0, 140.0, reference=100.0)) == once
    steady = mark(_noise(), SpeedCheck(100.0, 101.0, reference=99.0))
    assert not steady["noisy"] and steady["reason"] == "" and steady["speed"]["ratio"] == pytest.approx(1.015, abs=1e-3)


def test_a_profile_is_held_against_the_calibration_after_it_was_measured() -> None:
    """The child records its probes without a reference (no calibration yet); the pipeline adds it afterwards."""
    measured = mark(_noise(), SpeedCheck(150.0, 152.0))
    assert not measured["noisy"] and measured["speed"]["reference_gflops"] is None
    held = against(measured, 105.0)
    assert held["noisy"] and held["speed"]["ratio"] == pytest.approx(151 / 105, abs=1e-3)
    assert "speed probe 151 vs 105 GFLOP/s" in held["reason"]
    assert against(measured, None) is measured  # no calibration figure: as it was


def test_profile_json_round_trip_and_an_old_profile_without_the_field() -> None:
    base = {"target": "ort-cpu/host", "runtime": "onnxruntime", "device": "cpu", "threads": 1, "runs": 30, "warmup": 5,
            "latency_ms": 4.2, "latency_p90_ms": 4.5, "peak_memory_bytes": 1 << 20, "input_shapes": {"x": [1, 3]}}
    p = Profile.from_json({**base, "noise": mark(_noise(), SpeedCheck(150.0, 150.0, reference=105.0))})
    again = Profile.from_json(json.loads(json.dumps(p.to_json())))
    assert again.noise == p.noise and again.noise["speed"]["drifted"] is True
    assert SpeedCheck.from_json(again.noise["speed"]) == SpeedCheck(150.0, 150.0, 105.0)
    old = Profile.from_json({**base, "noise": _noise()})  # stored before profiles recorded a probe
    assert against(old.noise, 105.0) == _noise()
    older = Profile.from_json(base)  # before the noise record itself
    assert older.noise == {} and against(older.noise, 105.0) == {}


def _round(median_ms: float, spread: float = 1.05) -> Round:
    return Round(median_ms=median_ms, p90_ms=median_ms * spread, cpu_median_ms=median_ms, cpu_share=0.99,
                 load_per_cpu=0.1, wall_s=0.2)


def _probes(*values: float) -> Iterator[float]:
    yield from values


def test_a_round_at_another_speed_is_timed_again_and_a_steady_one_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_mod, "REMEASURE_PAUSE_S", 0.0)
    probes = _probes(150.0, 150.0, 104.0, 106.0)
    again = iter([_round(6.0)])
    best, noise = measure_rounds(lambda: _round(4.0), lambda: next(again), reference=105.0, probe=lambda: next(probes))
    # The first round ran 1.43x fast (4 ms); the second at the calibration's speed counts, though slower.
    assert best.median_ms == 6.0 and noise["rounds"] == 2
    assert not noise["noisy"] and noise["speed"]["before_gflops"] == 104.0 and noise["speed"]["after_gflops"] == 106.0


def test_a_drift_that_lasts_is_reported_after_the_last_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_mod, "REMEASURE_PAUSE_S", 0.0)
    probes = _probes(150.0, 150.0, 151.0, 149.0, 150.0, 150.0)
    again = iter([_round(4.2), _round(4.1)])
    best, noise = measure_rounds(lambda: _round(4.0), lambda: next(again), reference=105.0, probe=lambda: next(probes))
    assert best.median_ms == 4.0 and noise["rounds"] == 3  # REMEASURE_ROUNDS, then the fastest
    assert noise["noisy"] and "1.43x faster" in noise["reason"]


def test_the_pause_before_a_round_is_timed_again_is_the_profiles_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """ProfileSettings.remeasure_pause_s (EDGESCOPE_PROFILE_REMEASURE_PAUSE_MS; the test suite's servers set 0)
    is the pause measure_rounds takes before each further round; without it, REMEASURE_PAUSE_S."""
    pauses: list[float] = []
    monkeypatch.setattr(profile_mod.time, "sleep", pauses.append)
    for pause_s in (0.0, 0.25, None):
        probes = _probes(150.0, 150.0, 151.0, 149.0, 150.0, 150.0)
        again = iter([_round(4.2), _round(4.1)])
        _, noise = measure_rounds(lambda: _round(4.0), lambda: next(again), reference=105.0,
                                  probe=lambda: next(probes), pause_s=pause_s)
        assert noise["rounds"] == 3
    assert pauses == [0.0, 0.0, 0.25, 0.25, profile_mod.REMEASURE_PAUSE_S, profile_mod.REMEASURE_PAUSE_S]
    assert profile_mod.ProfileSettings().remeasure_pause_s == profile_mod.REMEASURE_PAUSE_S == 1.0


def test_a_steady_round_is_not_timed_again() -> None:
    probes = _probes(100.0, 102.0)
    best, noise = measure_rounds(lambda: _round(4.0), lambda: pytest.fail("timed again"), reference=101.0,
                                 probe=lambda: next(probes))
    assert best.median_ms == 4.0 and noise["rounds"] == 1 and not noise["noisy"]


def test_calibration_records_the_probe_around_its_timings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`calibrate` probes before and after the case timings; the cache keeps both, and `speed_reference` reads their
    mean back from a current cache (none from a cache made before the field)."""
    import compiler.speed_probe as speed_probe

    order: list[str] = []
    probes = _probes(100.0, 110.0)

    def probe() -> float:
        order.append("probe")
        return next(probes)

    def timed(*args: Any, **kwargs: Any) -> dict[str, float]:
        order.append("timing")
        return {"case": 1.0}

    monkeypatch.setattr(speed_probe, "probe", probe)
    monkeypatch.setattr(calibration, "build_bench", lambda td, progress: SimpleNamespace(timings={}))
    monkeypatch.setattr(calibration, "time_interleaved", timed)
    monkeypatch.setattr(calibration, "fit_bench", lambda bench, wall, progress: _current_fields())
    cache = calibration.calibrate()
    assert order == ["probe", "timing", "probe"]
    assert cache["speed_probe"] == {"before_gflops": 100.0, "after_gflops": 110.0, "drifted": False}
    path = tmp_path / "host-cpu.json"
    calibration.save_cache(path, cache)
    assert calibration.speed_reference(path) == 105.0
    del cache["speed_probe"]
    calibration.save_cache(path, cache)
    assert calibration.speed_reference(path) is None and calibration.speed_reference(None) is None
    assert reference_of({"before_gflops": 90.0, "after_gflops": 130.0}) == 110.0
    assert calibration.speed_record(100.0, 120.0)["drifted"] is True



def test_calibration_probes_between_its_rounds_and_one_slow_end_does_not_set_its_speed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 58 (a Zen 4): a calibration's probes read 61.6 GFLOP/s before its timing and 102.5 after, while its
    rates matched profiles probed at 110; the rates' speed (`fastest_of`) was 102.5 and the drift reference (`reference_of`)
    82, so every later profile read "1.34x faster". A probe after each round: the rates' speed is the fastest probe
    of the whole timing, the reference their median, and the history beside the cache keeps every figure."""
    import compiler.speed_probe as speed_probe
    from compiler.speed_probe import fastest_of, probe_figures
    from simulator import speed_history

    probes = _probes(61.6, 108.0, 110.0, 109.0, 102.5)
    monkeypatch.setattr(speed_probe, "probe", lambda: next(probes))

    def timed(*args: Any, after_round: Any = None, **kwargs: Any) -> dict[str, float]:
        for _ in range(3):
            after_round()
        return {"case": 1.0}

    monkeypatch.setattr(calibration, "build_bench", lambda td, progress: SimpleNamespace(timings={}))
    monkeypatch.setattr(calibration, "time_interleaved", timed)
    monkeypatch.setattr(calibration, "fit_bench", lambda bench, wall, progress: _current_fields())
    monkeypatch.setattr(calibration, "profile_from_cache", lambda cache: calibration.load_profile("host-cpu"))
    path = tmp_path / "host-cpu.json"
    calibration.load_or_calibrate(path)
    record = json.loads(path.read_text())["speed_probe"]
    assert record == {"before_gflops": 61.6, "after_gflops": 102.5, "during_gflops": [108.0, 110.0, 109.0],
                      "drifted": True}
    assert probe_figures(record) == [61.6, 108.0, 110.0, 109.0, 102.5]
    assert fastest_of(record) == 110.0 and reference_of(record) == 108.0
    assert calibration.speed_reference(path) == 108.0
    assert [json.loads(line)["gflops"] for line in speed_history.history_path(path).read_text().splitlines()] == \
        [61.6, 108.0, 110.0, 109.0, 102.5]
    # a record from before the field: its two probes, their mean and the faster, as before
    old = {"before_gflops": 61.6, "after_gflops": 102.5}
    assert fastest_of(old) == 102.5 and reference_of(old) == pytest.approx(82.05)
    assert probe_figures({"before_gflops": 0, "after_gflops": 102.5}) == []


def test_litert_calibration_records_the_probe_around_its_timings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LiteRT's half of a calibration probes before its first chain and after its last, and keeps the record, which
    `litert_calibration.speed_reference` reads back (none from a LiteRT cache made before the field)."""
    import compiler.speed_probe as speed_probe
    from simulator import (litert_calibration, litert_control, litert_elementwise, litert_layout, litert_llc,
                           litert_lut, litert_signal)
    from simulator.profiles import load_profile

    order: list[str] = []
    probes = _probes(80.0, 90.0)

    def probe() -> float:
        order.append("probe")
        return next(probes)

    def timed(name: str) -> Any:
        def run(*args: Any, **kwargs: Any) -> dict[str, Any]:
            order.append(name)
            return {"units": {"cpu": {"efficiency": {}, "kind_overhead_s": {}}}}
        return run

    monkeypatch.setattr(speed_probe, "probe", probe)
    monkeypatch.setattr(litert_calibration.platform, "platform", lambda: "test")  # uname: no process in this tier
    monkeypatch.setattr(litert_calibration, "measure", lambda tmp, progress: order.append("chains") or {})
    monkeypatch.setattr(litert_calibration, "fit", timed("fit"))
    for mod in (litert_signal, litert_control, litert_lut, litert_layout, litert_elementwise, litert_llc):
        monkeypatch.setattr(mod, "calibrate", timed(mod.__name__.rsplit(".", 1)[-1]))
    host = tmp_path / "host-cpu.json"
    litert_calibration.with_litert(load_profile("host-cpu"), host)
    assert order == ["probe", "chains", "litert_signal", "litert_control", "litert_lut", "litert_llc",
                     "litert_layout", "litert_elementwise", "probe",  # (the layout fit prices with the ladder)
                     "fit"]
    cache = json.loads(litert_calibration.cache_path(host).read_text())
    assert cache["speed_probe"] == {"before_gflops": 80.0, "after_gflops": 90.0, "drifted": True}
    assert litert_calibration.speed_reference(host) == 85.0 and litert_calibration.speed_reference(None) is None
    del cache["speed_probe"]
    litert_calibration.cache_path(host).write_text(json.dumps(cache))
    assert litert_calibration.speed_reference(host) is None

def _current_fields() -> dict[str, Any]:
    import onnxruntime as ort

    from simulator.calibration_timing import machine

    return {"version": calibration.CACHE_VERSION, "onnxruntime": ort.__version__, "machine": machine(),
            "overrides": {}}


def _row(err_pct: float, ratio: float | None, ms: float = 10.0) -> dict[str, Any]:
    """A realworld row measured at `ratio` times the calibration's speed (its CPU timing; its profile at 1.0)."""
    speed = None if ratio is None else SpeedCheck(100 * ratio, 100 * ratio, 100.0).to_json()
    return {"status": "analysed", "cpu_ms": ms, "measured_ms": ms, "predicted_ms": ms * (1 + err_pct / 100),
            "cpu_speed": speed, "speed": SpeedCheck(100.0, 100.0, 100.0).to_json()}


def test_realworld_counts_drifted_rows_and_the_share_without_them() -> None:
    rows = [_row(2, 1.0), _row(-5, 1.05), _row(30, 1.4), _row(-25, 0.8), _row(4, None), _row(50, 1.0, ms=0.5)]
    assert [drifted(r, "cpu_ms") for r in rows] == [False, False, True, True, None, False]
    assert not any(drifted(r, "measured_ms") for r in rows)  # each measure has its own probes
    assert speed_ratio(rows[2], "cpu_ms") == pytest.approx(1.4) and speed_ratio(rows[4], "cpu_ms") is None
    assert within_share(rows, "cpu_ms") == (3, 5)  # the 0.5 ms row is under MIN_MS
    text = drift_summary(rows, "cpu_ms")
    assert "drifted (beyond 1.10x) in 2/5 rows with a probe (1 without)" in text
    assert "all 3/5 (60%)" in text and "rows without drift 2/2 (100%)" in text
    assert "in 0/6 rows" in drift_summary(rows, "measured_ms")
    assert "rows without drift -" in drift_summary([_row(2, None)], "cpu_ms")


def test_rows_timed_slower_than_the_calibration_are_scaled_back_to_its_speed() -> None:
    # Predicted 8 ms at the calibration's speed, timed at 0.8x that speed: 10 ms of CPU, -20% against the raw time.
    slow = {**_row(-20, 0.8), "id": "slow"}
    scaled = at_calibration_speed([slow, _row(0, None)])
    assert [r["id"] for r in scaled] == ["slow"]  # a row with no probe has no speed to scale by
    assert scaled[0]["cpu_ms"] == pytest.approx(8.0) and slow["cpu_ms"] == 10.0  # the row itself is kept as timed
    assert within_share(scaled, "cpu_ms") == (1, 1) and within_share([slow], "cpu_ms") == (0, 1)


def test_a_drifted_row_measured_again_keeps_the_steadier_of_the_two() -> None:
    def tagged(ratio: float | None, tag: str, status: str = "analysed") -> dict[str, Any]:
        return {**_row(0, ratio), "id": "tv/m", "exporter": "ts", "tag": tag, "status": status}

    other = {**_row(0, 1.0), "id": "tv/other", "exporter": "ts"}
    rows = [other, tagged(0.5, "first")]
    assert [r.get("tag") for r in keep_steadier(rows, tagged(0.95, "again"))] == [None, "again"]
    assert [r.get("tag") for r in keep_steadier(rows, tagged(0.4, "again"))] == [None, "first"]  # slower still
    assert keep_steadier(rows, tagged(1.0, "again", status="crashed"))[1]["tag"] == "first"  # a failed retry
    assert len(keep_steadier(rows, {**tagged(1.0, "new"), "id": "tv/new"})) == 3  # a model not there yet


def test_a_row_timed_again_keeps_the_faster_pass_and_every_passs_figure() -> None:
    def timed(ms: float, tag: str, status: str = "analysed") -> dict[str, Any]:
        return {**_row(0, 1.0, ms=ms), "predicted_ms": 10.0, "id": "tv/m", "exporter": "ts", "tag": tag,
                "status": status}

    other = {**_row(0, 1.0), "id": "tv/other", "exporter": "ts"}
    rows = keep_faster([other, timed(12.0, "first")], timed(10.5, "second"))
    assert [r.get("tag") for r in rows] == [None, "second"] and rows[1]["cpu_ms_passes"] == [12.0, 10.5]
    rows = keep_faster(rows, timed(11.0, "third"))  # slower than the kept pass: the kept one stays, the figure is added
    assert rows[1]["tag"] == "second" and rows[1]["cpu_ms"] == 10.5 and rows[1]["cpu_ms_passes"] == [12.0, 10.5, 11.0]
    assert keep_faster(rows, timed(1.0, "failed", status="crashed")) == rows  # a failed pass keeps the others
    assert len(keep_faster(rows, {**timed(9.0, "new"), "id": "tv/new"})) == 3  # a model not there yet
    # the report's first-pass figure: 12 ms against 10 predicted is -16.7% (out), the faster pass -4.8% (in)
    assert within_share(rows, "cpu_ms") == (2, 2) and within_share(first_pass(rows), "cpu_ms") == (1, 2)
    assert rows[1]["cpu_ms"] == 10.5  # first_pass copies, the rows stay as kept


def test_interleaved_timing_calls_its_hook_after_every_round(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    from simulator.calibration_timing import time_interleaved

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "relu.onnx")
    calls: list[int] = []
    out = time_interleaved({"relu": (tmp_path / "relu.onnx", "all", 2)}, rounds=4, budget_s=0.0,
                           after_round=lambda: calls.append(1))
    assert len(calls) == 4 and out["relu"] > 0
