"""Static int8 on ONNX Runtime's CPU: the first Conv on a 4-D graph input pays ORT's uint8 NCHW -> NHWC Transpose of
that input (`layout.int8.nhwc` s per input element, simulator/ort_int8.py ORT_INT8_INPUT_NHWC), once per image input
(fewer than 4 channels) and under static int8 only. Integration tier: graphs are compiled by ONNX Runtime."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import ORT_INT8_INPUT_NHWC, ort_task_facts
from simulator.profiles import load_profile
from simulator.profiles import NHWC_INPUT_KEY

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def test_the_first_conv_on_an_image_input_transposes_it(tmp_path: Path) -> None:
    from simulator.calibration_bench import compile_for_host, conv_chain, stem_act

    # 8 stems side by side on one input: one Transpose, charged to the first
    g = compile_for_host(stem_act(16, 64, 3)(tmp_path / "s.onnx"), tmp_path / "s.opt.onnx")
    facts = [f for nd, f in zip(g.nodes, ort_task_facts(g)) if nd.op_type in ("Conv", "FusedConv")]
    assert len(facts) == 8 and [ORT_INT8_INPUT_NHWC in f for f in facts] == [True] + [False] * 7
    # a wide input (a calibration chain's 64 channels): not an image, no figure measured for it
    g = compile_for_host(conv_chain(64, 28, 3)(tmp_path / "c.onnx"), tmp_path / "c.opt.onnx")
    assert not any(ORT_INT8_INPUT_NHWC in f for f in ort_task_facts(g))


def test_the_transpose_is_priced_per_input_element_under_static_int8_only(tmp_path: Path) -> None:
    from simulator.backends import plan
    from simulator.calibration_bench import compile_for_host, stem_act
    from simulator.costs import work_of
    from simulator.roofline import Counts, Residency, rates, stack, task_cost

    g = compile_for_host(stem_act(16, 64, 3)(tmp_path / "s.onnx"), tmp_path / "s.opt.onnx")

    fact = frozenset({ORT_INT8_INPUT_NHWC})
    static, fp32 = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "fp32", 0)
    p = plan(HOST, HW, "Conv", "convsmall", static, True, False, facts=fact)
    q = plan(HOST, HW, "Conv", "convsmall", static, True, False)
    assert p.nhwc_input and not q.nhwc_input and p.extra_dispatches == q.extra_dispatches + 1
    assert plan(HOST, HW, "Conv", "convsmall", fp32, True, False, facts=fact) == plan(HOST, HW, "Conv", "convsmall",
                                                                                     fp32, True, False)
    hw = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {NHWC_INPUT_KEY: 1e-9}}}})
    assert rates(hw, p, "convsmall", True).in_move_s == 1e-9 and rates(hw, q, "convsmall", True).in_move_s == 0.0
    w = Counts.of([dataclasses.replace(work_of(g.nodes[0], g), in_elements=150528.0)])
    extra = [task_cost(w, stack([rates(hw, x, "convsmall", True)]), Residency(True, 1e3)).latency_s for x in (p, q)]
    assert float(extra[0][0, 0] - extra[1][0, 0]) == pytest.approx(150528 * 1e-9 + HW.units[0].dispatch_overhead_s)
