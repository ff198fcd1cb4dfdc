"""The sweep carries the conditions the measured fp32 tasks ran in to the other kernels of those tasks
(simulator.measured.option_factor): the CPU's speed by the speed probe where the profile and the calibration both
recorded one, else how the measured tasks ran against their prediction (in_model_factor)."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.profile import Profile, TaskTiming
from compiler.speed_probe import fastest_of
from simulator.calibration import profile_from_cache
from simulator.measured import IN_MODEL_BOUNDS, speed_factor
from simulator.profiles import HardwareProfile, load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import conv_chain

HOST = "ort-cpu/host"


def _col(r, preset: str) -> int:
    return [p["name"] for p in r.bulk["presets"]].index(preset)


def _measured_at(k: float, only: set[int] | None = None, probe: float | None = None,
                 hw: HardwareProfile | None = None):
    """conv_chain swept as predicted, and again with a profile that measured its tasks (`only`: those indices) at
    k times their fp32 prediction, the CPU's speed probe reading `probe` GFLOP/s before and after (None: no probe)."""
    g = conv_chain()
    r0 = sweep(g, HOST, hardware=hw)
    f32 = _col(r0, "fp32")
    lat = r0.bulk["metrics"]["latency_ms"]
    tasks = {nd.id: TaskTiming(k * lat[i][f32], k * lat[i][f32], k * lat[i][f32], 10)
             for i, nd in enumerate(g.nodes) if lat[i][f32] > 0 and (only is None or i in only)}
    # The whole run: the tasks plus the runtime's fixed cost per run, which the measured tasks are set against.
    run_ms = load_profile("host-cpu").units[0].run_overhead_s * 1e3
    prof = Profile(target=HOST, runtime="onnxruntime test", device="cpu", threads=1, runs=10, warmup=1,
                   latency_ms=sum(t.median_ms for t in tasks.values()) + run_ms, latency_p90_ms=0.0,
                   peak_memory_bytes=0, input_shapes={}, tasks=tasks,
                   noise={} if probe is None else {"speed": {"before_gflops": probe, "after_gflops": probe}})
    return g, r0, sweep(g, HOST, prof, hardware=hw)


@pytest.mark.parametrize("k", [0.8, 1.5])
def test_other_kernels_of_measured_tasks_take_the_measured_factor(k: float) -> None:
    g, r0, r1 = _measured_at(k)
    before, after = r0.bulk["metrics"]["latency_ms"], r1.bulk["metrics"]["latency_ms"]
    i = next(i for i, nd in enumerate(g.nodes) if nd.op_type == "Conv")
    f32, q8, dyn = _col(r0, "fp32"), _col(r0, "int8-static"), _col(r0, "int8-dynamic")
    assert after[i][f32] == pytest.approx(k * before[i][f32])  # fp32: the measurement itself
    assert before[i][q8] != pytest.approx(before[i][f32])  # another kernel, predicted
    assert after[i][q8] == pytest.approx(k * before[i][q8])
    assert after[i][dyn] == pytest.approx(k * before[i][dyn])


def test_the_factor_is_bounded_and_only_measured_tasks_take_it() -> None:
    hi = IN_MODEL_BOUNDS[1]
    g, r0, r1 = _measured_at(3 * hi, only={0})
    before, after = r0.bulk["metrics"]["latency_ms"], r1.bulk["metrics"]["latency_ms"]
    q8 = _col(r0, "int8-static")
    assert after[0][q8] == pytest.approx(hi * before[0][q8])
    rest = [i for i in range(1, len(g.nodes)) if before[i][q8] > 0]
    assert rest and all(after[i][q8] == pytest.approx(before[i][q8]) for i in rest)


def test_without_a_profile_nothing_moves() -> None:
    g = conv_chain()
    assert sweep(g, HOST).bulk["metrics"]["latency_ms"] == sweep(g, HOST, None).bulk["metrics"]["latency_ms"]


def _host(speed_gflops: float | None) -> HardwareProfile:
    return dataclasses.replace(load_profile("host-cpu", "ort-cpu"), speed_gflops=speed_gflops)


@pytest.mark.parametrize(("k", "probe", "factor"), [(1.5, 100.0, 1.0), (1.0, 50.0, 2.0), (0.8, 125.0, 0.8)])
def test_with_the_cpu_speed_known_the_other_kernels_take_its_ratio(k: float, probe: float, factor: float) -> None:
    """The fp32 tasks keep their measured times; the int8 kernels take the rates' speed over the probe's, not the
    fp32 tasks' measured / predicted (which carries the fp32 rules' own error)."""
    g, r0, r1 = _measured_at(k, probe=probe, hw=_host(100.0))
    before, after = r0.bulk["metrics"]["latency_ms"], r1.bulk["metrics"]["latency_ms"]
    i = next(i for i, nd in enumerate(g.nodes) if nd.op_type == "Conv")
    f32 = _col(r0, "fp32")
    assert after[i][f32] == pytest.approx(k * before[i][f32])
    for option in ("int8-static", "int8-dynamic"):
        c = _col(r0, option)
        assert before[i][c] != pytest.approx(before[i][f32])
        assert after[i][c] == pytest.approx(factor * before[i][c])


def test_without_a_probe_or_the_rates_speed_the_measured_factor_stays() -> None:
    for probe, speed in ((None, 100.0), (50.0, None)):
        g, r0, r1 = _measured_at(1.5, probe=probe, hw=_host(speed))
        q8 = _col(r0, "int8-static")
        i = next(i for i, nd in enumerate(g.nodes) if nd.op_type == "Conv")
        assert r1.bulk["metrics"]["latency_ms"][i][q8] == pytest.approx(1.5 * r0.bulk["metrics"]["latency_ms"][i][q8])


def test_speed_factor_is_bounded_and_needs_both_figures() -> None:
    def prof(before: float, after: float) -> Profile:
        return Profile(target=HOST, runtime="onnxruntime test", device="cpu", threads=1, runs=1, warmup=0,
                       latency_ms=1.0, latency_p90_ms=0.0, peak_memory_bytes=0, input_shapes={},
                       noise={"speed": {"before_gflops": before, "after_gflops": after}})

    assert speed_factor(prof(80.0, 120.0), 150.0) == pytest.approx(1.5)  # against the mean of the profile's probes
    assert speed_factor(prof(10.0, 10.0), 150.0) == IN_MODEL_BOUNDS[1]
    assert speed_factor(prof(900.0, 900.0), 150.0) == IN_MODEL_BOUNDS[0]
    assert speed_factor(prof(0.0, 0.0), 150.0) is None
    assert speed_factor(prof(100.0, 100.0), None) is None
    assert speed_factor(None, 150.0) is None


def test_the_rates_stand_for_the_calibrations_faster_probe() -> None:
    """Cases are timed at the fastest of their rounds: a calibration whose probe drifted 90 -> 145 stands for 145."""
    assert fastest_of({"before_gflops": 90.4, "after_gflops": 144.7, "drifted": True}) == 144.7
    assert fastest_of({"before_gflops": 150.0, "after_gflops": 140.0}) == 150.0
    assert fastest_of(None) is None and fastest_of({"before_gflops": 0, "after_gflops": 140.0}) is None
    hw = profile_from_cache({"overrides": {}, "speed_probe": {"before_gflops": 90.4, "after_gflops": 144.7}})
    assert hw.speed_gflops == 144.7
    assert profile_from_cache({"overrides": {}}).speed_gflops is None
