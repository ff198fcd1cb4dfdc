"""ORT profiling: every compiled task timed, whole-model figures sane, input errors explained."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from compiler.backends import ort
from compiler.errors import ModelRunError
from testkit.live import QUICK_ROUNDS

SETTINGS = ort.ProfileSettings(warmup=2, runs=20, **QUICK_ROUNDS)


@pytest.fixture(scope="module")
def mobilenet(zoo, tmp_path_factory):
    out = tmp_path_factory.mktemp("mb") / "mobilenet.ort.onnx"
    compiled = ort.compile(zoo.path("mobilenet_v2_like"), out, zoo.graph("mobilenet_v2_like"))
    return compiled, ort.profile(out, SETTINGS)


def test_every_task_timed(mobilenet) -> None:
    compiled, prof = mobilenet
    assert set(prof.tasks) == {n.id for n in compiled.nodes}
    for node in compiled.nodes:
        t = prof.tasks[node.id]
        assert t.runs == SETTINGS.runs
        assert t.p25_ms <= t.median_ms <= t.p75_ms
        if node.op_type == "Conv":
            assert t.median_ms > 0


def test_whole_model_figures(mobilenet) -> None:
    _, prof = mobilenet
    assert (prof.target, prof.threads, prof.runs, prof.warmup) == ("ort-cpu/host", 1, 20, 2)
    assert prof.runtime == f"onnxruntime {onnxruntime.__version__} CPUExecutionProvider"
    assert prof.measured and prof.device
    assert 0 < prof.latency_ms <= prof.latency_p90_ms
    # Kernel times exclude session overhead but the profiler adds its own; same order of magnitude.
    total = sum(t.median_ms for t in prof.tasks.values())
    assert 0.3 < total / prof.latency_ms < 3
    assert 0 < prof.peak_memory_bytes < 512 * 2**20
    assert prof.input_shapes == {"input": [1, 3, 96, 96]}


def test_profile_json_round_trip(mobilenet) -> None:
    from compiler.profile import Profile

    _, prof = mobilenet
    assert Profile.from_json(prof.to_json()) == prof


def test_the_profile_probes_the_cpu_speed_and_says_when_it_drifted(mobilenet, zoo, tmp_path) -> None:
    """Every profile records the speed probe around its round; held against a calibration figure far off (1 GFLOP/s:
    no CPU of today runs the probe that slowly) it is timed again and marked noisy with the ratio in its reason."""
    from compiler.speed_probe import SpeedCheck

    _, prof = mobilenet
    check = SpeedCheck.from_json(prof.noise["speed"])
    assert check.before > 1 and check.after > 1 and check.reference is None
    compiled = tmp_path / "tiny.onnx"
    ort.compile(zoo.path("tiny_cnn"), compiled, zoo.graph("tiny_cnn"))
    slow = ort.profile(compiled, ort.ProfileSettings(warmup=1, runs=5, speed_reference_gflops=1.0, **QUICK_ROUNDS))
    assert slow.noise["noisy"] and slow.noise["rounds"] > 1 and slow.noise["speed"]["ratio"] > 10
    assert "faster than when this machine's rates were measured" in slow.noise["reason"]


def test_symbolic_inputs_with_overrides(zoo, tmp_path) -> None:
    out = tmp_path / "dyn.onnx"
    ort.compile(zoo.path("dynamic_dims"), out, zoo.graph("dynamic_dims"))
    prof = ort.profile(out, ort.ProfileSettings(warmup=1, runs=20, input_shapes={"input_ids": [2, 5]}, **QUICK_ROUNDS))
    assert prof.input_shapes == {"input_ids": [2, 5], "mask": [2, 5]}
    assert prof.tasks


def _reshape_model(path) -> None:
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], "needs_value",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)


def test_run_error_names_the_input_to_set(tmp_path) -> None:
    path = tmp_path / "needs_value.onnx"
    _reshape_model(path)
    with pytest.raises(ModelRunError, match="running Reshape node") as failed:
        ort.profile(path, ort.ProfileSettings(warmup=0, runs=1))
    assert "onnxruntime_src" not in str(failed.value)  # ORT's source locations are cut from the message
    # The pipeline adds which input to set, from the compiled graph and the input plan.
    from compiler import frontends
    from compiler.input_hints import explain
    from compiler.input_plan import plan_inputs

    g = frontends.load(path)
    msg = explain(str(failed.value), g, plan_inputs(g))
    assert "Most likely input: 'shape'" in msg and "--input-value shape=<integer>" in msg
    prof = ort.profile(path, ort.ProfileSettings(warmup=0, runs=2, input_values={"shape": 6}, **QUICK_ROUNDS))
    assert set(prof.tasks) == {"reshape"}


def test_task_timings_parser_keeps_last_runs() -> None:
    trace = []
    for run in range(4):
        t0 = run * 1000
        trace.append({"cat": "Session", "name": "model_run", "ts": t0, "dur": 500})
        trace.append({"cat": "Node", "name": "conv_kernel_time", "ts": t0 + 10, "dur": 100 * (run + 1),
                      "args": {"op_name": "Conv"}})
        trace.append({"cat": "Node", "name": "conv_fence_before", "ts": t0 + 5, "dur": 0})
    timings = ort.task_timings(trace, runs=2)
    assert set(timings) == {"conv"}
    assert timings["conv"].runs == 2 and timings["conv"].median_ms == pytest.approx(0.35)
    assert np.isclose(timings["conv"].p25_ms, 0.325)


def test_fast_trace_reader_matches_json(zoo, tmp_path) -> None:
    import json

    import onnxruntime as rt

    so = rt.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "trace")
    sess = rt.InferenceSession(str(zoo.path("tiny_cnn")), so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        sess.run(None, {"input": np.zeros((1, 3, 16, 16), np.float32)})
    path = tmp_path / sess.end_profiling()
    wanted = [e for e in json.loads(path.read_text())
              if (e.get("cat") == "Node" and e["name"].endswith("_kernel_time")) or e.get("name") == "model_run"]
    fast, shapes = ort.read_trace(path)
    assert shapes and all(isinstance(v, list) for v in shapes.values())
    assert len(fast) == len(wanted) == 3 + 3 * 5
    assert ort.task_timings(fast, 3) == ort.task_timings(wanted, 3)


def test_if_branches_are_tasks_and_the_taken_one_is_timed(tmp_path) -> None:
    from compiler import frontends

    def branch(name: str, op: str) -> onnx.GraphProto:
        n = helper.make_node(op, ["x"], [f"{name}_out"], name=f"{name}_{op}")
        return helper.make_graph([n], name, [], [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 4])])

    g = helper.make_graph(
        [helper.make_node("Relu", ["x0"], ["x"], name="pre"),
         helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
         helper.make_node("Greater", ["s", "zero"], ["cond"], name="gt"),
         helper.make_node("If", ["cond"], ["y"], then_branch=branch("then", "Sigmoid"),
                          else_branch=branch("else", "Tanh"), name="if")],
        "with_if", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [onnx.numpy_helper.from_array(np.array(0, np.float32), "zero")])
    src_path, out = tmp_path / "if.onnx", tmp_path / "if.ort.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), src_path)
    compiled = ort.compile(src_path, out, frontends.load(src_path))
    assert compiled.node("if").source_nodes == ["if"]
    assert [(n.id, n.parent, n.branch) for n in compiled.nodes[-2:]] == [
        ("then_Sigmoid", "if", "then_branch"), ("else_Tanh", "if", "else_branch")]
    prof = ort.profile(out, ort.ProfileSettings(warmup=1, runs=20, **QUICK_ROUNDS))
    taken = set(prof.tasks) - {"pre", "sum", "gt", "if"}
    assert taken in ({"then_Sigmoid"}, {"else_Tanh"})  # one branch ran, once per run
    assert prof.tasks[taken.pop()].calls == 1.0


def test_profiled_runs_within_event_budget() -> None:
    # Small graphs: every run profiled. Large ones: their events fit the budget, with a floor of runs.
    assert ort.profiled_runs(30, 5, 1_000) == (30, 5)
    runs, warm = ort.profiled_runs(30, 5, 33_334)
    assert 3 <= runs < 30 and warm >= 1 and (runs + warm) * 33_334 <= ort.PROFILE_EVENT_BUDGET
    assert ort.profiled_runs(30, 5, 500_000) == (ort.MIN_PROFILED_RUNS, 1)
