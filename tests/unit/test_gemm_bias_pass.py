"""ORT's CPU Gemm with a bias C fills its output with C before the SGEMM accumulates into it: one more pass over the
output (costs.Work.bias_pass, roofline.Rates.bias_b), which a Gemm of few input features and many outputs feels most
(PVT's stage-1 MLP: [3136, 32] x [32, 256], 1.8x the bias-free time on an Emerald Rapids Xeon)."""

from __future__ import annotations

from compiler.graph import Node
from simulator.costs import work_of
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms, weight


def _gemm(m: int, k: int, n: int, bias: bool):  # type: ignore[no-untyped-def]
    ins = ["x", "w", "b"] if bias else ["x", "w"]
    values = [act("x", [m, k]), weight("w", [k, n]), act("y", [m, n])] + ([weight("b", [n])] if bias else [])
    return graph([Node("g", "g", "Gemm", inputs=ins, outputs=["y"])], values, ["x"], ["y"])


def test_a_gemm_with_a_bias_counts_a_pass_over_its_output() -> None:
    with_b, without = _gemm(3136, 32, 256, True), _gemm(3136, 32, 256, False)
    assert work_of(with_b.nodes[0], with_b).bias_pass == 3136 * 256
    assert work_of(without.nodes[0], without).bias_pass == 0.0


def test_the_bias_pass_costs_most_where_the_gemm_does_least_per_output() -> None:
    hw = load_profile("host-cpu")
    skinny = host_fp32_ms(_gemm(3136, 32, 256, True), hw) / host_fp32_ms(_gemm(3136, 32, 256, False), hw)
    deep = host_fp32_ms(_gemm(128, 1024, 256, True), hw) / host_fp32_ms(_gemm(128, 1024, 256, False), hw)
    assert skinny > 1.1  # a 3.2 MB output written and read once more, beyond the L2
    assert 1.0 < deep < 1.05


def test_device_targets_add_no_bias_pass() -> None:
    from simulator.sweep import sweep

    def ms(g):  # type: ignore[no-untyped-def]
        r = sweep(g, "litert/pixel-8", presets_only=("fp32",))
        return float(r.bulk["metrics"]["latency_ms"][0][0])

    assert ms(_gemm(3136, 32, 256, True)) < 1.05 * ms(_gemm(3136, 32, 256, False))
