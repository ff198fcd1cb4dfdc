"""LiteRT's per-operator events mapped back to TFLite operators (compiler/backends/litert_profiler.py)."""

from __future__ import annotations

import pytest

from compiler.backends.litert_profiler import (
    Event,
    attribute,
    execution_subsets,
    folded_at_prepare,
    split_runs,
    timings,
)
from compiler.graph import Graph, Node, Value, WeightStats

W = WeightStats(elements=4, bytes=8, min=-1.0, max=1.0, sparsity=0.0)


def _graph() -> Graph:
    """DEQUANTIZE(fp16 w) ; PAD -> CONV_2D -> ADD(+RELU) -> DEPTHWISE_CONV_2D (run by TFLite) -> FULLY_CONNECTED,
    and a MUL on a second input that depends on nothing TFLite runs (so the first partition takes it)."""
    def n(i: int, op: str, ins: list[str], out: str, **attrs: object) -> Node:
        return Node(f"{op}_{i}", "", op, inputs=ins, outputs=[out], attributes=dict(attrs))
    nodes = [n(0, "DEQUANTIZE", ["w16"], "w"), n(1, "PAD", ["x", "pads"], "p"), n(2, "CONV_2D", ["p", "w"], "c"),
             n(3, "ADD", ["c", "c"], "a", fused_activation_function="RELU"), n(4, "DEPTHWISE_CONV_2D", ["a", "w"], "d"),
             n(5, "FULLY_CONNECTED", ["d", "wf"], "f"), n(6, "MUL", ["x2", "x2"], "m")]
    values = {v: Value(v, [1, 4], "float32") for v in ("x", "x2", "p", "c", "a", "d", "f", "m", "w")}
    values.update({"w16": Value("w16", [1, 4], "float16", weight=W), "pads": Value("pads", [2, 2], "int32", weight=W),
                   "wf": Value("wf", [4, 4], "float32", weight=W)})
    return Graph("g", "tflite", nodes, values, ["x", "x2"], ["f", "m"])


def _run() -> list[Event]:
    xnn = lambda tag, i, us: Event(8, tag, i, 0, us)  # noqa: E731
    return [xnn("Convolution (NHWC, F32) IGEMM", 0, 40), xnn("Add (ND)", 1, 3), xnn("Clamp (NC)", 2, 2),
            xnn("Multiply (ND)", 3, 5), Event(2, "DEPTHWISE_CONV_2D", 4, 0, 70), Event(2, "WHILE_BODY_OP", 0, 1, 9),
            xnn("Convert (NC, F32, QDU8)", 0, 1), xnn("Fully Connected (NC, QDU8, F32, QC8W) GEMM", 1, 20)]


def test_partitions_follow_tflites_partitioner() -> None:
    # The MUL is ready from the start, so the first delegate partition runs it before the TFLite-run op.
    assert execution_subsets(_graph(), {4}) == [(True, [0, 1, 2, 3, 6]), (False, [4]), (True, [5])]
    assert execution_subsets(_graph(), set()) == [(True, [0, 1, 2, 3, 4, 5, 6])]


def test_xnnpack_operators_charged_to_tflite_operators() -> None:
    g = _graph()
    kernels: dict[str, list[str]] = {}
    got = attribute(g, _run(), folded_at_prepare(g), kernels)
    assert got == {"PAD_1": 0.0,  # folded into the conv by XNNPACK: measured, no time of its own
                   "CONV_2D_2": 40.0, "ADD_3": 5.0,  # + the Clamp of its fused RELU
                   # an event of a subgraph this graph does not read as nodes lies inside its caller's span (an
                   # IF's 89 us spanned its body's events): not added again (it was: 79)
                   "MUL_6": 5.0, "DEPTHWISE_CONV_2D_4": 70.0,
                   "FULLY_CONNECTED_5": 21.0}  # + the Convert that quantizes its input
    assert "DEQUANTIZE_0" not in got  # constant input: run once at prepare
    assert kernels["ADD_3"] == ["Add (ND)", "Clamp (NC)"]
    assert kernels["FULLY_CONNECTED_5"] == ["Convert (NC, F32, QDU8)", "Fully Connected (NC, QDU8, F32, QC8W) GEMM"]
    assert kernels["DEPTHWISE_CONV_2D_4"] == ["TFLite DEPTHWISE_CONV_2D"]


def test_runs_and_robust_central_value() -> None:
    events = [Event(1, "LiteRT::Run[buffer registration]", 0, 0, 9), Event(1, "Invoke", 0, 0, 50), *_run(),
              Event(32, "Invoke", 0, 0, 1), Event(1, "Invoke", 0, 0, 50), *_run()]
    runs = split_runs(events)
    assert [len(r) for r in runs] == [8, 8]
    # An IF's body is invoked inside the run (its Invoke names its subgraph): it opened a run of its own, so
    # hey_jarvis's runs alternated with empty ones; it stays in its run, to count the body's executions.
    body = [Event(1, "Invoke", 0, 0, 50), Event(2, "IF", 3, 0, 20), Event(1, "Invoke", 0, 2, 9), Event(2, "ADD", 0, 2, 4)]
    assert [len(r) for r in split_runs(body + body)] == [3, 3]
    per_run = [{"a": float(v)} for v in (1, 1, 2, 2, 1, 2, 1, 2, 40, 0)]  # µs; one preempted run, one truncated
    central, p25, p75, n = timings(per_run)["a"]
    assert n == 10 and p25 == pytest.approx(0.001) and p75 == pytest.approx(0.002)
    assert central == pytest.approx(0.0015)  # the mean of the runs between the quartiles, in ms


def test_mul_of_a_tensor_by_itself_runs_as_square() -> None:
    """XNNPACK runs MUL(x, x) as `Square (NC)`: a chain MUL(x, x) -> MUL(., x) -> MUL(., x) reads each MUL's own
    event (it read its successor's, the last 0)."""
    def n(i: int, ins: list[str]) -> Node:
        return Node(f"MUL_{i}", "", "MUL", inputs=ins, outputs=[f"m{i}"], attributes={})
    nodes = [n(0, ["x", "x"]), n(1, ["m0", "x"]), n(2, ["m1", "x"])]
    values = {v: Value(v, [1, 4], "float32") for v in ("x", "m0", "m1", "m2")}
    g = Graph("g", "tflite", nodes, values, ["x"], ["m2"])
    run = [Event(8, "Square (NC)", 0, 0, 6), Event(8, "Multiply (ND)", 1, 0, 3), Event(8, "Multiply (ND)", 2, 0, 8)]
    assert attribute(g, run, folded_at_prepare(g)) == {"MUL_0": 6.0, "MUL_1": 3.0, "MUL_2": 8.0}
