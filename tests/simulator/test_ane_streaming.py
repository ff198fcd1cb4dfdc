"""A unit that fetches weights ahead of the task using them (`weights_exposed_share`) and one that chains a kind's
activations on chip (`kind_bandwidth_bytes_per_s`): simulator.roofline, the profile's keys and the device fit's
parameters for them."""

from __future__ import annotations

import pytest

from benchmarks import device_fit as df
from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.costs import work_of
from simulator.profiles import ProfileError, load_profile, parse_profile
from simulator.roofline import Counts, Residency, dram_bytes, rates, stack, task_cost
from tests.simulator.helpers import act, graph, weight

A17 = get_target("coreml/apple-a17")
HW = load_profile("apple-a17", "coreml")
FP16 = Combo("fp16", "fp16", "fp16", 0)


def _cost(node: Node, values: list, hw=HW, resident: bool = False):  # noqa: ANN001, ANN202
    g = graph([node], values, [node.inputs[0]], node.outputs)
    w = work_of(g.nodes[0], g)
    has_k = w.kernel_elements > 0
    p = plan(A17, hw, node.op_type, w.kind, FP16, has_k, False)
    r = stack([rates(hw, p, w.kind, epilogue_pass=False)])
    c = Counts.of([w])
    cost = task_cost(c, r, Residency(resident, 4.0 * w.kernel_elements))
    return w, r, c, cost


def _gemv() -> tuple[Node, list]:
    return (Node("fc", "fc", "Gemm", inputs=["x", "w"], outputs=["y"]),
            [act("x", [1, 2048]), weight("w", [2048, 2048]), act("y", [1, 2048])])


def test_a_share_of_the_weights_time_shows_and_their_traffic_stays() -> None:
    """A batch-1 GEMV is bound by its weights: with all of them exposed (the default: a roofline per task) it takes
    their time from memory; with a share exposed, that share of it; its DRAM bytes are the same either way."""
    assert 0.0 < HW.units[0].weights_exposed_share < 1.0  # fitted (benchmarks/device_fit.py): some weights hide
    exposed = HW.with_overrides({"units": {"ane": {"weights_exposed_share": 1.0}}})
    node, values = _gemv()
    w, r, c, full = _cost(node, values, exposed)
    bw = HW.dram_bandwidth_bytes_per_s * HW.units[0].bandwidth_efficiency
    weight_s = w.kernel_elements * 2 / bw  # fp16 weights from memory
    assert float(full.latency_s[0, 0]) == pytest.approx(weight_s, rel=0.05)
    hidden_hw = HW.with_overrides({"units": {"ane": {"weights_exposed_share": 0.25}}})
    _, r2, _, part = _cost(node, values, hidden_hw)
    assert float(full.latency_s[0, 0] - part.latency_s[0, 0]) == pytest.approx(0.75 * weight_s, rel=1e-6)
    streamed = Residency(False, 4.0 * w.kernel_elements)
    assert float(dram_bytes(c, r2, part, streamed)[0, 0]) == float(dram_bytes(c, r, full, streamed)[0, 0]) > 0
    # Weights the unit keeps on chip are read from there, whatever the share.
    _, _, _, kept = _cost(node, values, hidden_hw, resident=True)
    _, _, _, kept_full = _cost(node, values, exposed, resident=True)
    assert float(kept.latency_s[0, 0]) == float(kept_full.latency_s[0, 0])


def test_a_kind_with_its_own_rate_moves_its_activations_at_it_whatever_their_size() -> None:
    """An Add too large for the on-chip memory moves its activations at the memory rate; with an element-wise rate
    in `kind_bandwidth_bytes_per_s` (the ANE chains element-wise ops to their producer), at that rate; other kinds
    keep theirs."""
    plain = HW.with_overrides({"units": {"ane": {"kind_bandwidth_bytes_per_s": {}}}})  # rates by size only
    add = Node("add", "add", "Add", inputs=["a", "b"], outputs=["y"])
    values = [act("a", [1, 64, 256, 256]), act("b", [1, 64, 256, 256]), act("y", [1, 64, 256, 256])]
    w, r, _, slow = _cost(add, values, plain)
    assert w.kind == "elementwise" and float(r.kind_bw[0]) == 0.0
    moved = float(slow.activation_bytes[0, 0])
    assert moved > HW.units[0].onchip_memory_bytes
    chained = HW.with_overrides({"units": {"ane": {"kind_bandwidth_bytes_per_s": {"elementwise": 1e12}}}})
    _, _, _, fast = _cost(add, values, chained)
    assert float(fast.latency_s[0, 0]) == pytest.approx(moved / 1e12 + HW.units[0].dispatch_overhead_s, rel=1e-6)
    node, gv = _gemv()
    assert float(_cost(node, gv, chained)[3].latency_s[0, 0]) == float(_cost(node, gv, plain)[3].latency_s[0, 0])
    # "default": the rate of every kind without its own (the A17's ANE: every task's activations through memory).
    both = HW.with_overrides({"units": {"ane": {"kind_bandwidth_bytes_per_s": {"elementwise": 1e12, "default": 5e10}}}})
    conv = Node("conv", "conv", "Conv", inputs=["x", "k"], outputs=["c"], attributes={"kernel_shape": [1, 1]})
    cv = [act("x", [1, 8, 16, 16]), weight("k", [8, 8, 1, 1]), act("c", [1, 8, 16, 16])]
    assert float(_cost(conv, cv, both)[1].kind_bw[0]) == 5e10 and float(_cost(add, values, both)[1].kind_bw[0]) == 1e12


def test_the_profile_keys_need_a_source() -> None:
    import yaml

    from simulator.profiles import HARDWARE_DIR

    data = yaml.safe_load((HARDWARE_DIR / "apple-a17.yaml").read_text())
    data["units"][0]["weights_exposed_share"] = {"value": 0.2, "source": "test"}
    data["units"][0]["kind_bandwidth_bytes_per_s"] = {"elementwise": {"value": 1e12, "source": "test"}}
    u = parse_profile(data).units[0]
    assert (u.weights_exposed_share, u.kind_bandwidth_bytes_per_s) == (0.2, {"elementwise": 1e12})
    data["units"][0]["kind_bandwidth_bytes_per_s"] = {"elementwise": {"value": 1e12}}
    with pytest.raises(ProfileError, match="source"):
        parse_profile(data)


def test_the_fit_sets_one_kinds_rate_and_keeps_the_others() -> None:
    base = HW.with_overrides({"units": {"ane": {"kind_bandwidth_bytes_per_s": {"pool": 5e11}}}})
    params = [df.Param("ane", "kind_bandwidth_bytes_per_s", "elementwise", 1e10, 1e13, 2e11),
              df.Param("ane", "weights_exposed_share", "", 1e-3, 1.0, 1.0)]
    ov = df.overrides(params, [3e11, 0.1], base)
    assert ov == {"units": {"ane": {"kind_bandwidth_bytes_per_s": {"pool": 5e11, "elementwise": 3e11},
                                    "weights_exposed_share": 0.1}}}
    plain = HW.with_overrides({"units": {"ane": {"kind_bandwidth_bytes_per_s": {}}}})
    assert df._value(plain, params[0]) == HW.units[0].cache_bandwidth_bytes_per_s  # no rate of its own: a small task's
    # The A17's fit frees the weights' share, the memory-rate share, its two activation rates, a GEMM efficiency and the
    # per-run cost; the LiteRT QNN fits the element-wise rate.
    a17 = df.TARGETS["coreml/apple-a17"].params
    assert {p.field for p in a17} == {"weights_exposed_share", "bandwidth_efficiency", "kind_bandwidth_bytes_per_s",
                                      "efficiency", "run_overhead_s"}
    assert {p.key for p in a17 if p.field == "kind_bandwidth_bytes_per_s"} == {"default", "elementwise"}
    assert "kind_bandwidth_bytes_per_s" in {p.field for p in df.TARGETS["litert-qnn/snapdragon-8g3"].params}


def test_a_fitted_kind_rate_is_written_under_a_new_map_with_its_source(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """--write adds a map the unit lacks (kind_bandwidth_bytes_per_s) with the fitted figure and its source, and the
    file still parses to that figure; the other units are untouched."""
    from simulator.profiles import HARDWARE_DIR

    (tmp_path / "apple-a17.yaml").write_text((HARDWARE_DIR / "apple-a17.yaml").read_text())
    monkeypatch.setattr(df, "HARDWARE_DIR", tmp_path)
    monkeypatch.setattr("simulator.profiles.HARDWARE_DIR", tmp_path)
    load_profile.cache_clear()
    try:
        text = (tmp_path / "apple-a17.yaml").read_text()
        start = text.index("    kind_bandwidth_bytes_per_s:\n")  # the fitted map, taken out: a unit without one
        end = text.index("    bandwidth_efficiency:", start)
        (tmp_path / "apple-a17.yaml").write_text(text[:start] + text[end:])
        df.write_yaml("apple-a17", {"ane.kind_bandwidth_bytes_per_s.elementwise": 7.4e11}, "fitted (test)")
        hw = load_profile("apple-a17")
        assert hw.units[0].kind_bandwidth_bytes_per_s == {"elementwise": 7.4e11}
        assert [u.kind_bandwidth_bytes_per_s for u in hw.units[1:]] == [{}, {}]
        assert 'elementwise: {value: 7.4000e+11, source: "fitted (test)"}' in (tmp_path / "apple-a17.yaml").read_text()
    finally:
        load_profile.cache_clear()
