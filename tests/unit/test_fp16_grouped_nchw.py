"""Under fp16 on ORT's x86 CPU EP, a Conv whose bias other Convs read too keeps a run-time Cast and leaves NCHWc
(ort_fp16.fp16_shared_casts). A grouped one (ort_fp16.FP16_GROUPED: RegNet's group width 8, which AVX2's 8-wide
NCHWc blocks run as one NCHWc kernel in fp32) then runs MLAS's grouped NCHW Conv, group by group, as the grouped
convs ORT leaves NCHW in fp32 do (`gconvnchw`), not the dense NCHW Conv's figures (README "Exporting the optimized
model", Round 30: RegNetY-400MF's fp16 export 1.42x its fp32 one, predicted 1.07x)."""

from __future__ import annotations

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan, task_facts
from simulator.ort_fp16 import FP16_GROUPED, fp16_nchw_kind, fp16_shared_casts
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
FP16 = Combo("fp16", "fp16", "fp16", 0)


def _convs(group: int, shared_bias: bool) -> Graph:
    """Two 3x3 NCHWc Convs of 48 channels at 56 px in a row, `group` groups each, reading one bias or one each."""
    nodes, values = [], [act("x0", [1, 48, 56, 56])]
    for i in range(2):
        b = "b" if shared_bias else f"b{i}"
        nodes.append(Node(f"c{i}", f"c{i}", "Conv", inputs=[f"x{i}", f"w{i}", b], outputs=[f"x{i + 1}"],
                          domain="com.microsoft.nchwc",
                          attributes={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": group}))
        values += [weight(f"w{i}", [48, 48 // group, 3, 3]), act(f"x{i + 1}", [1, 48, 56, 56])]
        if not shared_bias or i == 0:
            values.append(weight(b, [48]))
    return graph(nodes, values, ["x0"], ["x2"])


def _fp16_over_fp32(g: Graph) -> list[float]:
    r = sweep(g, HOST, hardware=HW, presets_only=("fp16", "fp32"))
    names = [p["name"] for p in r.bulk["presets"]]
    return [float(row[names.index("fp16")] / row[names.index("fp32")]) for row in r.bulk["metrics"]["latency_ms"]]


def test_a_grouped_conv_is_a_task_fact_and_a_dense_one_is_not() -> None:
    assert all(FP16_GROUPED in f for f in task_facts(HOST, _convs(6, True)))
    assert not any(FP16_GROUPED in f for f in task_facts(HOST, _convs(1, True)))


def test_behind_a_shared_cast_a_grouped_conv_runs_the_grouped_nchw_path() -> None:
    g = plan(HOST, HW, "Conv", "convsmall", FP16, True, False, shared_cast=True, facts=frozenset({FP16_GROUPED}))
    assert g.rate_kind == "gconvnchw" and g.tag == "nchw" and g.setup_per_channel and g.im2col
    assert not g.fp32_equivalent  # its fp32 time was the NCHWc kernel's
    # a dense Conv behind a shared Cast keeps the fp16 NCHW Conv's own figures; no shared Cast, no NCHW
    dense = plan(HOST, HW, "Conv", "conv", FP16, True, False, shared_cast=True)
    assert dense.tag == "cast16nchw" and dense.rate_kind != "gconvnchw"
    own = plan(HOST, HW, "Conv", "convsmall", FP16, True, False, facts=frozenset({FP16_GROUPED}))
    assert own.tag != "nchw" and own.rate_kind != "gconvnchw"
    assert fp16_nchw_kind("dwconv", "Conv", True, True, True) == "dwconvnchw"
    assert fp16_nchw_kind("gconvnchw", "Conv", True, True, True) == "gconvnchw"


def test_grouped_convs_sharing_a_bias_price_fp16_as_mlas_grouped_nchw_conv() -> None:
    shared, own = _convs(6, True), _convs(6, False)
    assert fp16_shared_casts(HOST, shared) == [True, True] and fp16_shared_casts(HOST, own) == [False, False]
    # group by group (6 im2col + SGEMMs of 8 output channels) against one NCHWc kernel: well over fp32's time
    assert all(x > 1.3 for x in _fp16_over_fp32(shared))  # 1.0 when priced as a dense NCHW Conv
    assert all(x < 1.2 for x in _fp16_over_fp32(own))
