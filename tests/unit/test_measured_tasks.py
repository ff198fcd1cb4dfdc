"""The measured task times the sweep takes as its fp32 baseline (simulator.measured.measured_ms) add up to no more
than the whole-model time they were measured against: on a busy machine the wait inside long kernels' events is
taken off in proportion, where the same excess per event stops at its floor for the small tasks."""

from __future__ import annotations

from compiler.graph import Graph, Node
from compiler.profile import Profile, TaskTiming
from compiler.vocabulary.targets import get_target
from simulator.measured import measured_ms

T = get_target("ort-cpu/host")


def _graph(n: int) -> Graph:
    return Graph(name="g", format="onnx", values={}, inputs=["v0"], outputs=[f"v{n}"],
                 nodes=[Node(id=f"t{i}", name=f"t{i}", op_type="Relu", inputs=[f"v{i}"], outputs=[f"v{i + 1}"])
                        for i in range(n)])


def _profile(medians: list[float], wall: float, cpu: float, share: float) -> Profile:
    return Profile(target=T.name, runtime="onnxruntime", device="cpu", threads=1, runs=5, warmup=1, latency_ms=wall,
                   latency_p90_ms=wall, peak_memory_bytes=0, input_shapes={},
                   tasks={f"t{i}": TaskTiming(m, m, m, 5) for i, m in enumerate(medians)},
                   noise={"cpu_latency_ms": cpu, "cpu_share": share})


def test_a_wait_inside_long_kernels_is_scaled_off_to_the_whole() -> None:
    # Two long kernels preempted (6 ms each, 3 of them their own) and 40 small ones: 13.6 ms of events against
    # 7.6 ms of CPU time per run. The same excess per event (0.14 ms) stops at the small ones' floor.
    med = [6.0, 6.0] + [0.04] * 40
    m = measured_ms(_graph(42), T, _profile(med, 30.0, 7.6, 0.25), 0.0)
    assert abs(m.sum() - 7.6) < 1e-9
    assert m[0] / m[2] > 50  # the long kernels keep most of it


def test_a_quiet_profile_keeps_its_tasks() -> None:
    med = [1.0, 2.0, 0.5]
    m = measured_ms(_graph(3), T, _profile(med, 3.6, 3.5, 0.97), 0.0)
    assert list(m) == med
