"""Static int8 on ONNX Runtime's CPU: a dense 1x1 Conv on a one-pixel map (a squeeze-excite's reduce and expand convs)
takes its own figures (`conv.int8px`, simulator/ort_int8.py ORT_INT8_ONE_PIXEL), fitted by calibration on one-pixel
chains (simulator/calibration_se.py); convs on larger maps keep `conv.int8`. Integration tier: graphs are compiled by
ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import ONE_PIXEL_TAG, ORT_INT8_ONE_PIXEL, ORT_INT8_QGEMM_DENSE, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def test_one_pixel_convs_are_a_task_fact(tmp_path: Path) -> None:
    from simulator.calibration_bench import compile_for_host, conv_chain
    from simulator.calibration_models import save_model
    from simulator.calibration_se import pixel_chain

    g = compile_for_host(save_model(*pixel_chain(48, 8), tmp_path / "px.onnx"), tmp_path / "px.opt.onnx")
    facts = [f for nd, f in zip(g.nodes, ort_task_facts(g)) if nd.op_type in ("Conv", "FusedConv")]
    # every conv of the chain, the narrow reduce ones (8 outputs, off the symmetric kernel) too
    assert len(facts) == 8 and all(ORT_INT8_ONE_PIXEL in f and ORT_INT8_QGEMM_DENSE not in f for f in facts), facts
    g = compile_for_host(conv_chain(32, 56, 1)(tmp_path / "c.onnx"), tmp_path / "c.opt.onnx")
    facts = [f for nd, f in zip(g.nodes, ort_task_facts(g)) if nd.op_type in ("Conv", "FusedConv")]
    assert facts and not any(ORT_INT8_ONE_PIXEL in f for f in facts)


def test_the_one_pixel_figures_under_static_int8_only() -> None:
    from simulator.backends import plan
    from simulator.roofline import rates

    fact = frozenset({ORT_INT8_ONE_PIXEL})
    static, dyn = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0)
    p = plan(HOST, HW, "Conv", "convnchw", static, True, False, facts=fact)
    assert (p.tag, p.rate_kind, p.out_cost) == (ONE_PIXEL_TAG, "conv", True)
    assert plan(HOST, HW, "Conv", "conv", static, True, False).tag == "int8"
    assert plan(HOST, HW, "Conv", "conv", dyn, True, False, facts=fact) == plan(HOST, HW, "Conv", "conv", dyn, True,
                                                                               False)
    slower = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {f"conv.{ONE_PIXEL_TAG}": 2e-5,
                                                                      f"conv.{ONE_PIXEL_TAG}.out": 1e-9}}}})
    assert rates(slower, p, "convnchw", False).setup_s == 2e-5 and rates(slower, p, "convnchw", False).out_s == 1e-9


def test_calibration_times_one_pixel_chains_at_several_widths() -> None:
    from simulator import calibration_bench

    cases = [c for c in calibration_bench.CASES if ("int8-static", f"conv.{ONE_PIXEL_TAG}") in c.variants]
    # three or more shapes: the path's rate, setup and cost per output channel are fitted jointly
    assert len(cases) >= 3 and all(c.kind == "conv" for c in cases)
