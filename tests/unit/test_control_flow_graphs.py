"""Control flow in the ONNX frontend and ORT's trace: If / Loop / Scan bodies become nodes nested under their
parent, Constant nodes become values, body tasks are timed per execution (compiled and profiled through ONNX
Runtime: tests/compiler/test_control_flow_ort.py)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from compiler import frontends
from compiler.backends import as_tasks, ort
from compiler.frontends.onnx_scopes import name_by_id
from compiler.graph import Graph
from testkit import controlflow_models as cm


def test_if_branches_are_nodes_nested_under_their_parent(tmp_path: Path) -> None:
    g = frontends.load(cm.if_model(tmp_path / "if.onnx"))
    assert [n.id for n in g.nodes] == ["sum", "gt", "if", "then_mm", "then_id", "else_mm", "else_relu", "else_mul",
                                       "else_mm2"]
    by = {n.id: n for n in g.nodes}
    assert {(by[i].parent, by[i].branch) for i in ("then_mm", "then_id")} == {("if", "then_branch")}
    assert by["else_mm2"].parent == "if" and by["else_mm2"].branch == "else_branch"
    # The If heads a group of its own with its branches inside, and the branches' results lead to it.
    assert by["if"].namespace == "if"
    assert by["then_mm"].namespace == "if/then_branch" and by["else_relu"].namespace == "if/else_branch"
    assert sorted(g.body_results()) == [("else_mm2", "if", "else_out"), ("then_id", "if", "then_out")]
    # The then branch's own initializer counts in the model's weights, beside the outer ones.
    assert g.values["Wt"].weight is not None and g.values["Wt"].shape == [8, 8]
    assert g.weight_bytes == 4 * (8 * 8 + 8 * 32 + 32 * 8) + 4 + 4  # + the two Constant scalars
    # An outer value a body reads is an edge from its producer (the graph input x has none; We is a weight).
    assert ("else_mm", "else_relu", "t") not in g.edges()  # renamed: the then branch also defines "t"
    assert (by["else_mm"].outputs[0], by["else_relu"].inputs[0]) == ("if/else_branch/t", "if/else_branch/t")
    assert ("then_mm", "then_id", "t") in g.edges()


def test_constant_nodes_are_values_not_nodes(tmp_path: Path) -> None:
    g = frontends.load(cm.if_model(tmp_path / "if.onnx"))
    assert not [n for n in g.nodes if n.op_type == "Constant"]
    zero, scale = g.values["zero"], g.values["scale"]
    assert zero.weight is not None and zero.weight.elements == 1 and zero.weight.max == 0.0
    assert scale.weight is not None and scale.weight.min == 0.5
    # ... so a target without its own compiler (one task per source node) has no Constant task either.
    assert "Constant" not in {n.op_type for n in as_tasks(g).nodes}


def test_loop_and_scan_body_inputs_take_what_their_parent_feeds(tmp_path: Path) -> None:
    loop = frontends.load(cm.loop_model(tmp_path / "loop.onnx", width=32))
    assert loop.values["h_in"].shape == [4, 32]  # declared without a shape: the Loop's carried input's
    assert [(n.id, n.parent, n.branch) for n in loop.nodes] == [
        ("loop", "", ""), ("body_mm", "loop", "body"), ("body_tanh", "loop", "body"), ("body_cond", "loop", "body")]
    scan = frontends.load(cm.scan_model(tmp_path / "scan.onnx", steps=5, width=16))
    assert scan.values["s_in"].shape == [1, 16] and scan.values["x_t"].shape == [1, 16]  # one slice of xs


def test_nested_bodies_nest_their_namespaces(tmp_path: Path) -> None:
    g = frontends.load(cm.nested_model(tmp_path / "nested.onnx"))
    by = {n.id: n for n in g.nodes}
    assert by["inner"].parent == "outer" and by["body_mm"].parent == "inner"
    assert by["body_mm"].namespace == "outer/then_branch/inner/body"
    assert [n.id for n in g.nodes].index("body_tanh") < [n.id for n in g.nodes].index("pass")


def test_graph_json_keeps_parents(tmp_path: Path) -> None:
    g = frontends.load(cm.nested_model(tmp_path / "nested.onnx"))
    back = Graph.from_json(g.to_json())
    assert [(n.parent, n.branch) for n in back.nodes] == [(n.parent, n.branch) for n in g.nodes]


def test_repeated_body_node_names_get_ids_under_their_parent(tmp_path: Path) -> None:
    m = onnx.load(cm.if_model(tmp_path / "if.onnx"))
    then = next(a.g for a in m.graph.node[-1].attribute if a.name == "then_branch")
    then.node[0].name = "gt"  # the name of a top-level node
    then.node[1].name = ""
    onnx.save(m, tmp_path / "dup.onnx")
    g = frontends.load(tmp_path / "dup.onnx")
    ids = [n.id for n in g.nodes]
    assert len(set(ids)) == len(ids)
    assert ids[3:5] == ["if/then_branch/gt", "if/then_branch/Identity_1"]  # a taken name; no name
    assert name_by_id(m) and [n.name for n in then.node] == ids[3:5]


def test_task_timings_keep_parents_exclusive_and_count_calls() -> None:
    trace = []
    for run in range(2):  # a Loop of 3 trips, each running a MatMul, then an Add after the Loop
        t0 = run * 1000
        trace.append({"cat": "Session", "name": "model_run", "ts": t0, "dur": 500})
        trace.append({"cat": "Node", "name": "loop_kernel_time", "ts": t0 + 10, "dur": 100})
        for k in range(3):
            trace.append({"cat": "Node", "name": "mm_kernel_time", "ts": t0 + 20 + 25 * k, "dur": 20})
        trace.append({"cat": "Node", "name": "add_kernel_time", "ts": t0 + 110, "dur": 5})
    t = ort.task_timings(trace, runs=2, parents={"loop"})
    assert t["mm"].calls == 3 and t["mm"].median_ms == pytest.approx(0.060)  # all of a run's calls
    assert t["loop"].calls == 1 and t["loop"].median_ms == pytest.approx(0.040)  # 100 us less its body's 60
    assert t["add"].median_ms == pytest.approx(0.005) and t["add"].runs == 2
    # ORT's event limit cut a third run short (its Add and last trip unrecorded): that run is left out.
    cut = trace + [{"cat": "Session", "name": "model_run", "ts": 2000, "dur": 500},
                   {"cat": "Node", "name": "loop_kernel_time", "ts": 2010, "dur": 100},
                   {"cat": "Node", "name": "mm_kernel_time", "ts": 2020, "dur": 20}]
    assert ort.task_timings(cut, runs=3, parents={"loop"}) == t
