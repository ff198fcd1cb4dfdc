"""The last-level cache's calibrated capacity (simulator.calibration_llc): the ladder's chains, the ramp fitted to
their shares, and roofline.outgrown reading it."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_llc import LADDER, R, capacity_ramp, fit_llc, footprint, gone_share, ladder_ks
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.roofline import Counts, Residency, outgrown, rates, stack, task_cost
from tests.simulator.helpers import act, graph, weight

MB = 1e6


def test_the_ladder_spans_from_under_a_share_to_past_the_whole_cache() -> None:
    ks = ladder_ks(32 * 2**20)  # a Zen 4's L3 as sysfs lists it
    sizes = [footprint(k) for k in ks]
    assert len(ks) == len(LADDER) and sizes == sorted(sizes)
    assert sizes[0] < 16 * 2**20 * 0.7 and sizes[-1] > 32 * 2**20 * 1.2  # under a 2-vCPU share, past the whole
    assert all(k % 32 == 0 for k in ks)
    assert ladder_ks(0.0) == []  # no cache listed: no ladder


def test_a_chains_share_sits_between_the_stream_and_memory_rates() -> None:
    hot, cold, k = 1e-11, 5e-11, 1024
    at = {s: ((s * cold + (1 - s) * hot) * k * k * R) * 1e3 for s in (0.0, 0.25, 1.0)}  # ms, no fixed costs
    assert [gone_share(at[s], k, 0.0, 0.0, hot, cold)[0] for s in at] == pytest.approx([0.0, 0.25, 1.0])
    assert gone_share(at[1.0] * 2, k, 0.0, 0.0, hot, cold)[0] == 1.0  # slower than memory: clipped


def test_the_ramp_fitted_to_a_zen4s_ladder_starts_under_the_share_and_ends_before_the_whole() -> None:
    # The shape a Zen 4's ladder gave (benchmarks/llc_ladder.py, 2026-12-06): kept to ~13 MB, gone by ~26 MB.
    fps = [10e6, 15e6, 20e6, 25e6, 30e6, 37e6, 47e6]
    truth = np.clip((np.array(fps) - 13e6) / (26e6 - 13e6), 0, 1)
    keep, gone = capacity_ramp(fps, list(truth), [0.02] * 7, [0.0] * 7)
    assert keep == pytest.approx(13e6, rel=0.15) and gone == pytest.approx(26e6, rel=0.15)
    # What the time ramp already evicts is not put on the capacity: a floor of 0.3 everywhere fits the same ramp.
    floor = np.maximum(truth, 0.3)
    assert capacity_ramp(fps, list(floor), [0.02] * 7, [0.3] * 7) == pytest.approx((keep, gone), rel=0.15)


def test_fit_reads_the_ladder_against_the_stream_and_memory_chains() -> None:
    k_s, k_m, hot, cold = 512, 4096, 1.2e-11, 4.2e-11
    ms = {"stream": hot * k_s * k_s * R * 1e3, "memory": cold * k_m * k_m * R * 1e3}
    ks = ladder_ks(32 * 2**20)
    for k in ks:  # kept below 13 MB, gone from 26 MB, linear between
        s = float(np.clip((footprint(k) - 13e6) / 13e6, 0, 1))
        ms[f"llc-{k}"] = (s * cold + (1 - s) * hot) * k * k * R * 1e3
    cpu = {"run_overhead_s": 0.0, "dispatch_overhead_s": 0.0, "llc_hold_s": 1.0, "llc_evict_s": 2.0}
    got, line = fit_llc(ks, ms, k_s, k_m, cpu)
    assert got["llc_keep_bytes"] == pytest.approx(13e6, rel=0.2)
    assert got["llc_gone_bytes"] == pytest.approx(26e6, rel=0.2)
    assert "keeps" in line
    assert fit_llc(ks, {k: v for k, v in ms.items() if k != "memory"}, k_s, k_m, cpu) == ({}, "")  # no memory rate


HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def _gemv_rates(over: dict):
    hw = HW.with_overrides({"units": {"cpu": {"llc_bytes": 33.5e6, "llc_share_bytes": 16.8e6, "llc_evict_s": 0.0,
                                              **over}}})
    g = graph([Node("fc", "fc", "Gemm", inputs=["x", "w"], outputs=["y"])],
              [act("x", [1, 1024]), weight("w", [1024, 1000]), act("y", [1, 1000])], ["x"], ["y"])
    w = work_of(g.nodes[0], g)
    p = plan(HOST, hw, "Gemm", w.kind, Combo("fp32", "fp32", "fp32", 0), True, False)
    return w, stack([rates(hw, p, w.kind, epilogue_pass=True)])


def test_outgrown_ramps_between_the_calibrated_bytes_and_steps_at_the_whole_cache_without_them() -> None:
    _, step = _gemv_rates({})
    assert [float(outgrown(step, b)[0]) for b in (20 * MB, 30 * MB, 40 * MB)] == [0.0, 0.0, 1.0]
    _, ramp = _gemv_rates({"llc_keep_bytes": 13e6, "llc_gone_bytes": 26e6})
    assert [float(outgrown(ramp, b)[0]) for b in (10 * MB, 19.5 * MB, 30 * MB)] == pytest.approx([0.0, 0.5, 1.0])


def test_a_model_between_keep_and_gone_reads_part_of_its_weights_from_memory() -> None:
    w, step = _gemv_rates({})
    _, ramp = _gemv_rates({"llc_keep_bytes": 13e6, "llc_gone_bytes": 26e6})
    c = Counts.of([w])

    def ms(r, total: float) -> float:
        return float(task_cost(c, r, Residency(False, total, run_s=1e-4)).latency_s[0, 0]) * 1e3

    assert ms(ramp, 10 * MB) == pytest.approx(ms(step, 10 * MB))  # kept either way
    half, whole = ms(ramp, 19.5 * MB), ms(ramp, 30 * MB)
    assert ms(step, 19.5 * MB) < half < whole  # the step kept all 19.5 MB; the ramp takes half from memory


def _litert_with(monkeypatch, tmp_path, ladder: dict) -> tuple:
    """(ORT's profile, LiteRT's made from it) with every LiteRT calibration stubbed but the cache ladder's result."""
    from compiler import speed_probe
    from simulator import (litert_calibration, litert_control, litert_elementwise, litert_layout, litert_llc,
                           litert_lut, litert_signal)

    def none(*args, **kwargs) -> dict:
        return {"units": {"cpu": {"efficiency": {}, "kind_overhead_s": {}}}}

    monkeypatch.setattr(speed_probe, "probe", lambda: 100.0)
    monkeypatch.setattr(litert_calibration.platform, "platform", lambda: "test")  # uname: no process in this tier
    monkeypatch.setattr(litert_calibration, "measure", lambda tmp, progress: {})
    monkeypatch.setattr(litert_calibration, "fit", none)
    for mod in (litert_signal, litert_control, litert_lut, litert_layout, litert_elementwise):
        monkeypatch.setattr(mod, "calibrate", none)
    monkeypatch.setattr(litert_llc, "calibrate", lambda tmp, hw, progress: {"units": {"cpu": dict(ladder)}})
    ort = HW.with_overrides({"units": {"cpu": {"llc_keep_bytes": 12e6, "llc_gone_bytes": 42e6}}})
    assert ort.units[0].llc_gone_bytes == 42e6
    return ort, litert_calibration.with_litert(ort, tmp_path / "host-cpu.json")


def test_litert_without_a_ladder_of_its_own_keeps_the_step_at_the_listed_size(monkeypatch, tmp_path) -> None:
    # ORT's ladder is timed with ORT's GEMV chains; XNNPACK's layers read memory at another rate (BirdNET MData).
    ort, lite = _litert_with(monkeypatch, tmp_path, {})
    assert (lite.units[0].llc_keep_bytes, lite.units[0].llc_gone_bytes) == (0.0, 0.0)
    assert lite.units[0].llc_bytes == ort.units[0].llc_bytes  # the step at the listed size stays


def test_litert_takes_its_own_ladder_not_orts(monkeypatch, tmp_path) -> None:
    _, lite = _litert_with(monkeypatch, tmp_path, {"llc_keep_bytes": 7e6, "llc_gone_bytes": 20e6})
    assert (lite.units[0].llc_keep_bytes, lite.units[0].llc_gone_bytes) == (7e6, 20e6)
