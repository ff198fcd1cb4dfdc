"""The sweep carries how the measured fp32 tasks ran against their prediction to the other kernels of those tasks
(simulator.measured.in_model_factor): an option's kernels run under the conditions the analysis measured."""

from __future__ import annotations

import pytest

from compiler.profile import Profile, TaskTiming
from simulator.measured import IN_MODEL_BOUNDS
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import conv_chain

HOST = "ort-cpu/host"


def _col(r, preset: str) -> int:
    return [p["name"] for p in r.bulk["presets"]].index(preset)


def _measured_at(k: float, only: set[int] | None = None):
    """conv_chain swept as predicted, and again with a profile that measured its tasks (`only`: those indices) at
    k times their fp32 prediction."""
    g = conv_chain()
    r0 = sweep(g, HOST)
    f32 = _col(r0, "fp32")
    lat = r0.bulk["metrics"]["latency_ms"]
    tasks = {nd.id: TaskTiming(k * lat[i][f32], k * lat[i][f32], k * lat[i][f32], 10)
             for i, nd in enumerate(g.nodes) if lat[i][f32] > 0 and (only is None or i in only)}
    # The whole run: the tasks plus the runtime's fixed cost per run, which the measured tasks are set against.
    run_ms = load_profile("host-cpu").units[0].run_overhead_s * 1e3
    prof = Profile(target=HOST, runtime="onnxruntime test", device="cpu", threads=1, runs=10, warmup=1,
                   latency_ms=sum(t.median_ms for t in tasks.values()) + run_ms, latency_p90_ms=0.0,
                   peak_memory_bytes=0, input_shapes={}, tasks=tasks)
    return g, r0, sweep(g, HOST, prof)


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
