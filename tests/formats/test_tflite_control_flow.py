"""TFLite IF bodies: read, measured and costed as ONNX If bodies are (README "Control flow").

openWakeWord's hey_jarvis model ends in an IF whose then-branch (26 operators, a second classifier on 0.4 MB of
weights the IF passes in) runs when the first score passes a threshold; it showed as one IF task of unknown work.
Now the frontend reads both branches as nodes under the IF, LiteRT's profiler events of a body (their subgraph in
metadata2) time its operators with their executions per run (0: not taken), and the simulator costs a branch once
per execution: the branch observed in the run, else (no run) the heavier one, saying so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from compiler.graph import Graph
from simulator.sweep import sweep

N = 512  # the branch's FULLY_CONNECTED takes ~10 us: the profiler counts whole microseconds


def _if_model(path: Path) -> Path:
    """y = IF(p > 0) then FULLY_CONNECTED(x, W) + b (W, b constants of the branch) else x."""
    rng = np.random.default_rng(0)
    w = TfliteWriter()
    x, p = w.tensor("x", [1, N]), w.tensor("p", [1])
    zero = w.const("zero", np.zeros(1, np.float32))
    c = w.tensor("cond", [1], "bool")
    w.op("GREATER", [p, zero], [c])

    def then(b: TfliteWriter) -> tuple[list[int], list[int]]:
        xi = b.tensor("then/x", [1, N])
        h = b.tensor("then/fc", [1, N])
        b.op("FULLY_CONNECTED", [xi, b.const("then/W", (rng.standard_normal((N, N)) * 0.1).astype(np.float32)), -1],
             [h], b.options("FullyConnectedOptions"))
        y = b.tensor("then/y", [1, N])
        b.op("ADD", [h, b.const("then/b", np.ones(N, np.float32))], [y], b.options("AddOptions"))
        return [xi], [y]

    def other(b: TfliteWriter) -> tuple[list[int], list[int]]:
        xi = b.tensor("else/x", [1, N])
        return [xi], [xi]

    t, e = w.subgraph("then", then), w.subgraph("else", other)
    y = w.tensor("y", [1, N])
    w.op("IF", [c, x], [y], w.options("IfOptions", thenSubgraphIndex=t, elseSubgraphIndex=e))
    return w.save(path, [x, p], [y])


def _loaded(path: Path) -> Graph:
    g = tflite.load(path)
    g.metadata.update(file_size_bytes=str(path.stat().st_size), source_weight_bytes=str(g.weight_bytes))
    return g


def test_if_bodies_are_nodes_under_their_parent(tmp_path: Path) -> None:
    g = _loaded(_if_model(tmp_path / "if.tflite"))
    ids = [n.id for n in g.nodes]
    assert ids == ["GREATER_0", "IF_1", "IF_1/then_branch/FULLY_CONNECTED_0", "IF_1/then_branch/ADD_1"]
    body = g.nodes[2]
    assert (body.parent, body.branch) == ("IF_1", "then_branch") and body.namespace.startswith("IF_1/then_branch")
    assert [n.id for n in tflite.top_nodes(g)] == ["GREATER_0", "IF_1"]
    assert body.inputs[0] == "x"  # the branch's input is the IF's operand: an edge from its producer, if any
    assert ("IF_1/then_branch/FULLY_CONNECTED_0", "IF_1/then_branch/ADD_1", "IF_1/then_branch/then/fc") in g.edges()
    assert ("IF_1/then_branch/ADD_1", "IF_1", "IF_1/then_branch/then/y") in g.body_results()
    assert g.values["IF_1/then_branch/then/W"].weight is not None  # the branch's constants are the model's weights
    assert g.nodes[1].attributes["else_branch"]["outputs"] == ["x"]  # the else branch hands its input back
    assert tflite.body_subgraphs(g) == {(1, 0): "IF_1/then_branch/FULLY_CONNECTED_0", (1, 1): "IF_1/then_branch/ADD_1"}


@pytest.mark.parametrize("p,runs", [(1.0, 1.0), (-1.0, 0.0)])
def test_litert_times_the_branch_taken(tmp_path: Path, p: float, runs: float) -> None:
    from compiler.backends.litert_profiler import per_op_child

    path = _if_model(tmp_path / "if.tflite")
    r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 5, "input_values": {"p": p}})
    fc = r["tasks"]["IF_1/then_branch/FULLY_CONNECTED_0"]
    assert fc[4] == runs and (fc[0] > 0) == (runs > 0)
    assert r["tasks"]["GREATER_0"][4] == 1.0 and r["tasks"]["IF_1"][0] >= 0


def test_bodies_are_costed_per_execution_and_counted_in_size(tmp_path: Path) -> None:
    from compiler.profile import Profile, TaskTiming

    path = _if_model(tmp_path / "if.tflite")
    g = _loaded(path)
    blind = sweep(g, "litert-cpu/host")
    j = [q["name"] for q in blind.bulk["presets"]].index("fp32")
    fc = 2
    assert blind.executions[fc] == 1.0 and blind.bulk["metrics"]["latency_ms"][fc][j] > 0
    assert any("heavier branch" in n for n in blind.per_op.cells(fc)[1])
    assert blind.bulk["base"]["size_bytes"] == path.stat().st_size  # the branch's W and b counted once
    # A run that did not take the branch: its tasks cost nothing per inference.
    tasks = {n.id: TaskTiming(0.01, 0.01, 0.01, 5, 0.0 if n.parent else 1.0) for n in g.nodes}
    prof = Profile(target="litert-cpu/host", runtime="LiteRT", device="cpu", threads=1, runs=5, warmup=1,
                   latency_ms=0.05, latency_p90_ms=0.06, peak_memory_bytes=0, input_shapes={}, tasks=tasks)
    seen = sweep(g, "litert-cpu/host", prof)
    assert seen.executions[fc] == 0.0 and seen.bulk["metrics"]["latency_ms"][fc][j] == 0.0
