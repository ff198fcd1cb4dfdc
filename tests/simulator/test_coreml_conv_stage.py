"""The A17 Pro's ANE as fitted to the published rows (apple-a17.yaml, benchmarks/device_fit.py): every task's
activations move through memory at one rate (`kind_bandwidth_bytes_per_s` "default"), an element-wise op that reads a
conv's or linear's output only it reads at that rate too (simulator/coreml_rules.py "conv_stage"), other element-wise
ops at the faster chained rate; and a per-run cost fitted inside its bounds, so a small model no longer prices near
zero (session 37: a 1-D waveform CNN at 0.007-0.012 ms)."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks import device_fit as df
from compiler.backends.base import as_tasks
from compiler.graph import Graph, Node
from compiler.vocabulary.targets import get_target
from simulator.coreml_rules import CONV_STAGE_RATE, coreml_facts
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.published.latency import LatencyPlan, _task_rates, latency_ms, plan_latency
from simulator.roofline import Residency, task_cost
from tests.simulator.helpers import act, graph, weight

SHAPE = [1, 64, 56, 56]
A17 = get_target("coreml/apple-a17")
HW = load_profile(A17.profile, A17.backend)


def _conv_add(conv_read_twice: bool = False) -> Graph:
    """x -> Conv -> c; Add(c, r) -> y (a residual Add after a block's last conv); optionally c read by a Tanh too."""
    values = [act("x", SHAPE), act("r", SHAPE), weight("w", [64, 64, 1, 1]), act("c", SHAPE), act("y", SHAPE)]
    nodes = [Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["c"], attributes={"kernel_shape": [1, 1]}),
             Node("add", "add", "Add", inputs=["c", "r"], outputs=["y"])]
    outputs = ["y"]
    if conv_read_twice:
        values.append(act("z", SHAPE))
        nodes.append(Node("tanh", "tanh", "Tanh", inputs=["c"], outputs=["z"]))
        outputs.append("z")
    return graph(nodes, values, ["x", "r"], outputs)


def _task_ms(g: Graph, lp: LatencyPlan, hw=HW) -> dict[str, float]:  # noqa: ANN001
    """Each task's own time (ms) on the plan's paths, weights streamed."""
    cost = task_cost(lp.counts, _task_rates(lp, hw), Residency(False, lp.weights_fp32_bytes))
    return {nd.id: float(cost.latency_s[i, 0]) * 1e3 for i, nd in enumerate(g.nodes)}


def _rate_kinds(g: Graph, target: str = "coreml/apple-a17") -> dict[str, str]:
    t = get_target(target)
    lp = plan_latency(g, t, load_profile(t.profile, t.backend), "fp16")
    return {nd.id: lp.paths[k][0].rate_kind for nd, k in zip(g.nodes, lp.index)}


def test_an_add_after_its_conv_moves_at_the_activation_rate_others_at_the_chained_rate() -> None:
    ane = HW.units[0]
    rates = ane.kind_bandwidth_bytes_per_s
    assert {"default", "elementwise"} <= rates.keys() and CONV_STAGE_RATE not in rates
    assert rates["elementwise"] > rates["default"]  # fitted: chains of element-wise ops stay on chip
    g = _conv_add()
    assert "conv_stage" in coreml_facts(g)[1] and "conv_stage" not in coreml_facts(g)[0]
    assert _rate_kinds(g)["add"] == CONV_STAGE_RATE
    # The conv's output read by another op too, or an Add of two inputs of the model: the element-wise rate.
    assert _rate_kinds(_conv_add(conv_read_twice=True))["add"] == ""
    two = graph([Node("add", "add", "Add", inputs=["x", "r"], outputs=["y"])],
                [act("x", SHAPE), act("r", SHAPE), act("y", SHAPE)], ["x", "r"], ["y"])
    assert "conv_stage" not in coreml_facts(two)[0]
    # An activation function is not one (its ONNX export and ML Program write different ops; a HardSwish as one op or
    # three, tests/formats/test_coreml_as_shipped.py); a Linear's bias Add is.
    hs = graph([_conv_add().nodes[0], Node("hs", "hs", "HardSwish", inputs=["c"], outputs=["y"])],
               [act("x", SHAPE), weight("w", [64, 64, 1, 1]), act("c", SHAPE), act("y", SHAPE)], ["x"], ["y"])
    assert "conv_stage" not in coreml_facts(hs)[1]
    linear = graph([Node("mm", "mm", "MatMul", inputs=["t", "k"], outputs=["m"]),
                    Node("bias", "bias", "Add", inputs=["m", "b"], outputs=["y"])],
                   [act("t", [1, 196, 384]), weight("k", [384, 384]), weight("b", [384]), act("m", [1, 196, 384]),
                    act("y", [1, 196, 384])], ["t"], ["y"])
    assert "conv_stage" in coreml_facts(linear)[1]
    # Priced: the residual Add's three tensors at the activation rate, against the chained rate on its own.
    moved = 3 * 2.0 * 64 * 56 * 56  # fp16
    ms = _task_ms(two, plan_latency(two, A17, HW, "fp16"))["add"]
    assert ms == pytest.approx(1e3 * (moved / rates["elementwise"] + ane.dispatch_overhead_s), rel=1e-6)
    ms = _task_ms(g, plan_latency(g, A17, HW, "fp16"))["add"]
    assert ms == pytest.approx(1e3 * (moved / rates["default"] + ane.dispatch_overhead_s), rel=1e-6)


def test_the_a14_prices_the_rule_as_before() -> None:
    """The A14's ANE has no rates by kind: the rule's rate kind changes nothing there (its efficiency and setup are
    the element-wise op's)."""
    t = get_target("coreml/apple-a14")
    hw = load_profile(t.profile, t.backend)
    assert not hw.units[0].kind_bandwidth_bytes_per_s
    g = _conv_add()
    lp = plan_latency(g, t, hw, "fp16")
    assert lp.paths[lp.index[1]][0].rate_kind == CONV_STAGE_RATE
    plain = dataclasses.replace(lp, paths=tuple((dataclasses.replace(p, rate_kind=""), k) for p, k in lp.paths))
    assert _task_ms(g, lp, hw) == _task_ms(g, plain, hw)
    assert latency_ms(lp, hw) == latency_ms(plain, hw)


def _waveform_cnn() -> Graph:
    """Four Conv1d + ReLU over a 1 s, 16 kHz waveform (the session-37 small model's shape: ~94 M MACs)."""
    values, nodes, length = [act("x0", [1, 1, 16000])], [], 16000
    for i, (ci, co, k, s) in enumerate([(1, 64, 80, 4), (64, 64, 3, 2), (64, 128, 3, 2), (128, 128, 3, 2)]):
        length = (length - k) // s + 1
        values += [weight(f"w{i}", [co, ci, k]), act(f"c{i}", [1, co, length]), act(f"x{i + 1}", [1, co, length])]
        nodes += [Node(f"conv{i}", f"conv{i}", "Conv", inputs=[f"x{i}", f"w{i}"], outputs=[f"c{i}"],
                       attributes={"kernel_shape": [k], "strides": [s], "pads": [0, 0]}),
                  Node(f"relu{i}", f"relu{i}", "Relu", inputs=[f"c{i}"], outputs=[f"x{i + 1}"])]
    return as_tasks(graph(nodes, values, ["x0"], ["x4"]))


def test_a_small_model_no_longer_prices_near_zero() -> None:
    """The fitted per-run cost sits inside the fit's bounds (it was at the lower one, 1 us), and a small conv net costs
    at least that plus its convs' activations through memory at the fitted rate."""
    ane = HW.units[0]
    run = next(p for p in df.TARGETS["coreml/apple-a17"].params if p.field == "run_overhead_s")
    assert 1.5 * run.lo < ane.run_overhead_s < run.hi / 1.5
    g = _waveform_cnn()
    convs = [work_of(nd, g) for nd in g.nodes if nd.op_type == "Conv"]
    moved = sum(w.in_elements + w.out_elements for w in convs) * 2.0  # fp16
    floor_ms = 1e3 * (ane.run_overhead_s + moved / ane.kind_bandwidth_bytes_per_s["default"])
    got = latency_ms(plan_latency(g, A17, HW, "fp16"), HW)
    assert got >= floor_ms > 0.02  # session 37: 0.007-0.012 ms
