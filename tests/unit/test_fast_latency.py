"""The device fit's planned latency (simulator/published/latency.py) is the sweep's total, for any figures."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.profiles import load_profile
from simulator.published.latency import check_against_sweep, latency_ms, plan_latency
from tests.simulator.helpers import act, conv_chain, graph, weight


def _with_fallback():
    """conv -> GroupNormalization (no HTP / ANE kernel: CPU) -> conv: crossings both ways, and format changes on the
    edges under int8 (the CPU task falls back to float)."""
    values = [act("x", [1, 8, 16, 16]), weight("w1", [8, 8, 3, 3]), act("a", [1, 8, 16, 16]), act("b", [1, 8, 16, 16]),
              weight("w2", [4, 8, 1, 1]), act("y", [1, 4, 16, 16])]
    nodes = [Node("c1", "c1", "Conv", inputs=["x", "w1"], outputs=["a"],
                  attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
             Node("n", "n", "GroupNormalization", inputs=["a"], outputs=["b"], attributes={"num_groups": 2}),
             Node("c2", "c2", "Conv", inputs=["b", "w2"], outputs=["y"], attributes={"kernel_shape": [1, 1]})]
    return graph(nodes, values, ["x"], ["y"])


@pytest.mark.parametrize("target,profile,backend", [("ort-qnn/snapdragon-8g3", "snapdragon-8g3", "ort-qnn"),
                                                    ("coreml/apple-a17", "apple-a17", "coreml")])
@pytest.mark.parametrize("preset", ["fp32", "fp16", "int8-static", "int8-dynamic"])
def test_planned_latency_is_the_sweeps_total_under_other_figures(target: str, profile: str, backend: str,
                                                                   preset: str) -> None:
    base = load_profile(profile, backend)
    npu = base.units[0].name
    # Other figures than the plan's profile, as the fit tries them (paths stay: plan_base is kept).
    moved = base.with_overrides({"units": {npu: {"efficiency": {"default": 0.01, "conv.fp16": 0.7},
                                                 "run_overhead_s": 1e-3, "onchip_memory_bytes": 1024.0,
                                                 # the totals rule's float-graph term, paid where a task runs float
                                                 "float_graph_run_s": 2e-4}}})
    assert moved.plan_base is not None
    for g in (conv_chain(), _with_fallback()):
        lp = plan_latency(g, target, base, preset)
        for hw in (base, moved):
            assert check_against_sweep(lp, g, hw) < 1e-9
        assert latency_ms(lp, moved) != pytest.approx(latency_ms(lp, base), rel=1e-3)  # the figures matter


def test_the_plan_says_where_tasks_run() -> None:
    lp = plan_latency(_with_fallback(), "ort-qnn/snapdragon-8g3", load_profile("snapdragon-8g3", "ort-qnn"), "fp16")
    assert lp.tasks_on(1) == 1 and lp.tasks_on(0) == 2  # GroupNormalization on the CPU EP, the convs on the HTP
