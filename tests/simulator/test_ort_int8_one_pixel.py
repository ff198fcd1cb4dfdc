"""Static int8 on ONNX Runtime's CPU: a dense 1x1 Conv on a one-pixel map (a squeeze-excite's reduce and expand convs)
takes its own figures (`conv.int8px`, simulator/ort_int8_dense.py ORT_INT8_ONE_PIXEL), fitted by calibration on squeeze-excite
blocks (simulator/calibration_se.py); convs on larger maps keep `conv.int8`. Integration tier: graphs are compiled by
ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.graph import Graph
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import ORT_INT8_QGEMM_DENSE, ort_task_facts
from simulator.ort_int8_dense import ONE_PIXEL_TAG, ORT_INT8_ONE_PIXEL
from simulator.profiles import HardwareProfile, load_profile

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


def test_calibration_times_one_pixel_convs_in_squeeze_excite_blocks_at_several_widths(tmp_path: Path) -> None:
    import onnx

    from simulator import calibration_bench

    cases = [c for c in calibration_bench.CASES if ("int8-static", f"conv.{ONE_PIXEL_TAG}") in c.variants]
    # three or more shapes: the path's rate, setup and cost per output channel are fitted jointly
    assert len(cases) >= 3 and all(c.kind == "conv" for c in cases)
    # each inside the blocks it serves in a model (pool, the two convs, gate), not chained alone
    ops = [n.op_type for n in onnx.load(str(cases[0].build(tmp_path / "se.onnx"))).graph.node]
    assert ops.count("Conv") == 2 * ops.count("GlobalAveragePool") == 2 * ops.count("Mul") > 0, ops


def host_ms(g: Graph, hw: HardwareProfile, preset: str) -> float:
    """`preset`'s latency on `g` with profile `hw`, less the per-run cost (as calibration sets cases against it)."""
    from simulator.sweep import sweep
    from simulator.totals import totals

    r = sweep(g, HOST.name, hardware=hw, presets_only=(preset,))
    return float(totals(r.bulk, r.per_op, preset, {})["latency_ms"]) - hw.units[0].run_overhead_s * 1e3


def test_the_blocks_fit_reads_the_profile_as_the_later_stages_left_it(tmp_path: Path) -> None:
    """calibration_fit.fit_in_blocks: conv.int8px's figures fitted again on the squeeze-excite blocks with the other
    kernels' figures as given; on timings the profile itself predicts, the fit reproduces them."""
    from simulator.calibration_bench import compile_for_host
    from simulator.calibration_fit import ONE_PIXEL_KEY, fit_in_blocks
    from simulator.calibration_models import save_model
    from simulator.calibration_se import se_blocks

    setups_truth = {ONE_PIXEL_KEY: 4e-6, f"{ONE_PIXEL_KEY}.out": 2e-8}
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {ONE_PIXEL_KEY: 0.3}, "kind_overhead_s": setups_truth}}})
    graphs, cases = {}, []
    for c, m, hw in ((48, 12, 14), (208, 52, 7), (960, 240, 7)):
        name = f"se-{c}x{m}-{hw}"
        graphs[name] = compile_for_host(save_model(*se_blocks(c, m, hw, 2), tmp_path / f"{name}.onnx"),
                                        tmp_path / f"{name}.opt.onnx")
        cases.append({"case": name, "preset": "int8-static", "key": ONE_PIXEL_KEY,
                      "measured_ms": host_ms(graphs[name], truth, "int8-static")})
    effs: dict[str, float] = {}
    setups = fit_in_blocks(graphs, cases, HW, effs)
    fitted = HW.with_overrides({"units": {"cpu": {"efficiency": effs, "kind_overhead_s": setups}}})
    for c in cases:
        assert host_ms(graphs[c["case"]], fitted, "int8-static") == pytest.approx(c["measured_ms"], rel=0.03), c
    assert fit_in_blocks(graphs, [], HW, {}) == {}
