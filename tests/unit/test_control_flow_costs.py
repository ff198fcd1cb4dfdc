"""Control flow in the simulator: body tasks cost once per execution (trip counts, the branch taken), from the
profile, the host run's observations, the model itself or a stated default."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler import frontends
from compiler.backends import as_tasks
from compiler.graph import Graph
from compiler.profile import Profile, TaskTiming
from simulator.control_flow import discount_parents, executions, observed_executions
from simulator.costs import work_of
from simulator.sweep import sweep
from testkit import controlflow_models as cm

RPI = "ort-xnnpack/rpi5"


def _tasks(path: Path) -> Graph:
    return as_tasks(frontends.load(path))


def _execs(g: Graph, **kw) -> dict[str, tuple[float, str]]:  # type: ignore[no-untyped-def]
    count, notes = executions(g, [work_of(n, g) for n in g.nodes], **kw)
    return {n.id: (float(c), note) for n, c, note in zip(g.nodes, count, notes)}


def _latency(r, op: str) -> float:  # type: ignore[no-untyped-def]
    return r.bulk["metrics"]["latency_ms"][r.bulk["ops"].index(op)][0]


def test_static_trip_counts_and_branches(tmp_path: Path) -> None:
    e = _execs(_tasks(cm.loop_model(tmp_path / "l.onnx", trips=3)))
    assert e["loop"] == (1.0, "") and e["body_mm"][0] == 3.0 and "known before the run (3" in e["body_mm"][1]
    e = _execs(_tasks(cm.scan_model(tmp_path / "s.onnx", steps=5)))
    assert e["scan_mm"][0] == 5.0 and "sequence length (5)" in e["scan_mm"][1]
    e = _execs(_tasks(cm.if_model(tmp_path / "i.onnx", cond=False)))
    assert (e["then_mm"][0], e["else_mm"][0]) == (0.0, 1.0) and "known before the run (else_branch taken)" in e["else_mm"][1]
    e = _execs(_tasks(cm.nested_model(tmp_path / "n.onnx", trips=4)))
    assert (e["inner"][0], e["body_mm"][0], e["pass"][0]) == (1.0, 4.0, 0.0)  # 1 x 4 trips; else not taken


def test_conditions_and_trip_counts_from_shapes_and_input_values(tmp_path: Path) -> None:
    g = _tasks(cm.rate_model(tmp_path / "r.onnx"))
    e = _execs(g, input_values={"sr": 16000})
    assert (e["front_a"][0], e["front_b"][0]) == (1.0, 0.0)  # sr == 16000: the then branch
    assert e["body_mm"][0] == 32.0  # Shape(the then branch's [1,4,32])[2] trips
    e = _execs(g, input_values={"sr": 8000})
    assert (e["front_a"][0], e["front_b"][0], e["body_mm"][0]) == (0.0, 1.0, 64.0)
    e = _execs(g)  # sr unknown: the heavier branch, and the trip count its result gives
    assert (e["front_b"][0], e["body_mm"][0]) == (1.0, 64.0) and "(default)" in e["front_b"][1]


def test_unknown_trip_counts_take_a_stated_default(tmp_path: Path) -> None:
    e = _execs(_tasks(cm.loop_model(tmp_path / "l.onnx", trips=None)))
    assert e["body_mm"][0] == 1.0 and "depends on the data and was not observed" in e["body_mm"][1]
    assert "(default)" in e["body_mm"][1]
    e = _execs(_tasks(cm.if_model(tmp_path / "i.onnx")))
    # sum(x) > 0 is unknown before the run: the heavier branch (the 8->32->8 MLP) is costed, and said so.
    assert (e["then_mm"][0], e["else_mm2"][0]) == (0.0, 1.0) and "heavier branch (else_branch)" in e["else_mm2"][1]


def test_a_while_loops_trip_count_is_worked_out_from_its_bodys_condition(tmp_path: Path) -> None:
    """dynamo's while_loop: M empty, the bound read in the body; its trips follow from constants."""
    import onnxruntime as ort

    path = cm.while_model(tmp_path / "w.onnx", steps=4)
    k, _ = ort.InferenceSession(str(path)).run(None, {"h": np.ones((2, 16), np.float32)})
    e = _execs(_tasks(path))
    assert e["body_mm"][0] == float(k) == 4.0 and "follows from constants (4" in e["body_mm"][1]
    e = _execs(_tasks(cm.while_model(tmp_path / "n.onnx", steps=None)))  # the bound is an input: the data's
    assert e["body_mm"][0] == 1.0 and "depends on the data" in e["body_mm"][1]
    e = _execs(_tasks(cm.while_model(tmp_path / "n.onnx", steps=None)), input_values={"n": 7})
    assert e["body_mm"][0] == 7.0


def test_observations_win_over_the_model(tmp_path: Path) -> None:
    g = _tasks(cm.loop_model(tmp_path / "l.onnx", trips=3))
    e = _execs(g, observed={"body_mm": 7.0, "body_tanh": 7.0})
    assert e["body_mm"][0] == 7.0 and "observed in the profiled host run" in e["body_mm"][1]
    # This target's own profile: a body task without events did not run.
    prof = Profile("ort-cpu/host", "ort", "cpu", 1, 20, 1, 1.0, 1.0, 0, {},
                   tasks={"loop": TaskTiming(0.1, 0.1, 0.1, 20), "body_mm": TaskTiming(0.2, 0.2, 0.2, 20, calls=5.0)})
    e = _execs(g, profile=prof, target="ort-cpu/host")
    assert (e["body_mm"][0], e["body_tanh"][0]) == (5.0, 0.0) and "did not run" in e["body_tanh"][1]
    assert observed_executions(g, prof) == {"body_mm": 5.0, "body_tanh": 0.0, "body_cond": 0.0}


def test_body_tasks_cost_once_per_trip(tmp_path: Path) -> None:
    one = sweep(_tasks(cm.loop_model(tmp_path / "a.onnx", trips=1)), RPI)
    many = sweep(_tasks(cm.loop_model(tmp_path / "b.onnx", trips=6)), RPI)
    assert _latency(one, "body_mm") > 0
    assert _latency(many, "body_mm") == pytest.approx(6 * _latency(one, "body_mm"))
    assert many.executions[many.bulk["ops"].index("body_tanh")] == 6.0
    grown = many.bulk["base"]["latency_ms"] - one.bulk["base"]["latency_ms"]
    per_trip = sum(_latency(one, op) for op in ("body_mm", "body_tanh", "body_cond"))
    loop_grown = _latency(many, "loop") - _latency(one, "loop")  # each trip costs the loop half a dispatch
    assert 0 < loop_grown < per_trip
    assert grown == pytest.approx(5 * per_trip + loop_grown, rel=1e-6)
    # The weights are stored once, however many trips.
    assert many.bulk["base"]["size_bytes"] == one.bulk["base"]["size_bytes"]


def test_a_branch_not_taken_costs_no_time_but_its_weights_count(tmp_path: Path) -> None:
    then = sweep(_tasks(cm.if_model(tmp_path / "t.onnx", cond=True)), RPI)
    other = sweep(_tasks(cm.if_model(tmp_path / "e.onnx", cond=False)), RPI)
    assert _latency(then, "else_mm") == 0 and _latency(then, "then_mm") > 0
    assert _latency(other, "then_mm") == 0 and _latency(other, "else_mm") > 0
    assert then.bulk["base"]["latency_ms"] < other.bulk["base"]["latency_ms"]  # the MLP branch is heavier
    assert then.bulk["base"]["size_bytes"] == pytest.approx(other.bulk["base"]["size_bytes"], abs=16)
    assert then.bulk["base"]["size_bytes"] > 4 * (8 * 8 + 8 * 32 + 32 * 8)  # both branches' weights
    notes = then.per_op[then.bulk["ops"].index("else_mm")]["notes"]
    assert any("else_branch" in n or "then_branch" in n for n in notes)


def test_profiler_cost_is_taken_from_the_parents_first() -> None:
    from compiler.graph import Node

    g = Graph("t", "onnx", [Node("pre", "pre", "Relu"), Node("loop", "loop", "Loop"),
                            Node("mm", "mm", "MatMul", parent="loop", branch="body")], {}, [], [])
    per_run = np.array([0.1, 0.5, 0.4])  # ms; the whole model ran in 0.6 ms without the profiler
    out = discount_parents(g, per_run, np.array([1.0, 1.0, 10.0]), 0.6)
    assert out[0] == 0.1 and out[2] == 0.4 and out[1] == pytest.approx(0.125)  # 0.4 ms excess, floor 0.25x
    assert (discount_parents(g, per_run, np.ones(3), 2.0) == per_run).all()  # no excess: unchanged


def test_recurrent_ops_count_their_gate_gemms() -> None:
    from compiler.graph import Node
    from tests.simulator.helpers import act, graph, weight

    def lstm(x_shape: list) -> Graph:  # type: ignore[type-arg]
        return graph([Node("lstm", "lstm", "LSTM", inputs=["x", "W", "R", "B", "", "h0", "c0"], outputs=["y", "yh", "yc"],
                           attributes={"hidden_size": 128})],
                     [act("x", x_shape), weight("W", [1, 512, 64]), weight("R", [1, 512, 128]), weight("B", [1, 1024]),
                      act("h0", [1, 2, 128]), act("c0", [1, 2, 128])], ["x", "h0", "c0"], ["y"])

    g = lstm([5, 2, 64])  # 5 steps, batch 2
    w = work_of(g.nodes[0], g)
    assert w.kind == "matmul" and w.macs == 5 * 2 * 4 * 128 * (64 + 128) and w.flops > 0
    # Every step reads R [1, 512, 128] again (a GEMM of `batch` rows per step); x and the states are read once.
    assert w.in_elements == 5 * 2 * 64 + 2 * 2 * 128 + 5 * 512 * 128
    g = lstm([1, "b", "f"])  # one step inside a Loop body: batch from the state, input width from W
    assert work_of(g.nodes[0], g).macs == 1 * 2 * 4 * 128 * (64 + 128)


def test_recurrent_weights_read_again_from_the_core_cache_where_they_fit() -> None:
    """Each step's re-read of R is one traffic figure of all steps, far beyond any cache, but the set read again is one
    direction's R: where the core's cache (onchip) holds it, those reads come at the cache rate; where it does not, at
    the weight-streaming rate as before. A bidirectional GRU of 200 steps (hidden 256, 786 KB of R a direction) on a
    Sapphire Rapids (2 MiB L2) was predicted +152% of its CPU time with every re-read at the streaming rate, +4.9% so."""
    from compiler.graph import Node
    from simulator.profiles import load_profile
    from tests.simulator.helpers import act, graph, weight

    g = graph([Node("gru", "gru", "GRU", inputs=["x", "W", "R", "B"], outputs=["y"],
                    attributes={"hidden_size": 256, "direction": "bidirectional"})],
              [act("x", [200, 1, 80]), weight("W", [2, 768, 80]), weight("R", [2, 768, 256]), weight("B", [2, 1536])],
              ["x"], ["y"])
    w = work_of(g.nodes[0], g)
    assert w.reread_elements == 200 * 2 * 768 * 256 and w.reread_set == 768 * 256
    hw = load_profile("host-cpu").with_overrides({"dram_bandwidth_bytes_per_s": 2.5e10, "units": {"cpu": {
        "cache_bandwidth_bytes_per_s": 8e10, "bandwidth_efficiency": 1.0}}})  # a Sapphire Rapids' calibrated rates

    def gru_ms(onchip: float) -> float:
        h = hw.with_overrides({"units": {"cpu": {"onchip_memory_bytes": onchip}}})
        return _latency(sweep(g, "ort-cpu/host", hardware=h, presets_only=("fp32",)), "gru")

    in_l2, beyond = gru_ms(2 * 2 ** 20), gru_ms(512 * 2 ** 10)
    reads = w.reread_elements * 4  # bytes: at the streaming rate beyond the cache, at the cache's in it
    assert beyond - in_l2 == pytest.approx(reads * (1 / 2.5e10 - 1 / 8e10) * 1e3, rel=0.25)


def test_a_recurrent_steps_macs_run_at_the_rate_its_weights_stream() -> None:
    """At batch 1 each step's h x R^T does one MAC per element of R it reads: those MACs are priced by the reads, not
    again at the GEMM rate. A GRU whose input projection is negligible (1 input) costs the same at 1x and 100x the
    compute peak; with its recurrent MACs also counted as compute (single-op GRUs on a Zen 4 predicted +14..+33%) the
    slower peak would show half its compute time on top. A batch of 4 still computes the three other rows' MACs."""
    from compiler.graph import Node
    from simulator.profiles import load_profile
    from tests.simulator.helpers import act, graph, weight

    def gru(batch: int) -> Graph:
        return graph([Node("gru", "gru", "GRU", inputs=["x", "W", "R", "B"], outputs=["y"],
                           attributes={"hidden_size": 256})],
                     [act("x", [200, batch, 1]), weight("W", [1, 768, 1]), weight("R", [1, 768, 256]),
                      weight("B", [1, 1536])], ["x"], ["y"])

    hw = load_profile("host-cpu")

    def ms(g: Graph, peak_scale: float) -> float:
        peaks = {k: v * peak_scale for k, v in hw.units[0].peak_ops_per_s.items()}
        h = hw.with_overrides({"units": {"cpu": {"peak_ops_per_s": peaks}}})
        return _latency(sweep(g, "ort-cpu/host", hardware=h, presets_only=("fp32",)), "gru")

    one, four = gru(1), gru(4)
    assert ms(one, 1.0) == pytest.approx(ms(one, 100.0), rel=0.02)
    assert ms(four, 1.0) > 1.1 * ms(four, 100.0)
