"""fp16 on ONNX Runtime's CPU: a depthwise Conv behind a shared Cast runs MLAS's NCHW grouped Conv between Casts, at
figures of its own where calibration fitted them (`dwconvnchw.cast16nchw`, with a cost per im2col row: 5x5 kernels
on small maps copy many short rows; and one per element of a stride-2 conv's buffer, which MLAS gathers element by
element). Dynamic int8's depthwise ConvIntegers fit their row cost too. Integration tier: the fit's graphs are
compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
FP16 = Combo("fp16", "fp16", "fp16", 0)


def test_the_fp16_depthwise_nchw_path_takes_its_own_figures_once_calibrated() -> None:
    before = plan(HOST, HW, "Conv", "dwconv", FP16, True, True, shared_cast=True)
    assert before.tag == "nchw" and before.rate_kind == "dwconvnchw"  # the fp32 NCHW figures until fitted
    hw = HW.with_overrides({"units": {"cpu": {"efficiency": {"dwconvnchw.cast16nchw": 0.5}, "kind_overhead_s": {
        "dwconvnchw.cast16nchw.im2col.row": 2e-9}}}})
    after = plan(HOST, hw, "Conv", "dwconv", FP16, True, True, shared_cast=True)
    assert after.tag == "cast16nchw" and after.im2col and after.setup_per_channel and not after.fp32_equivalent
    from simulator.roofline import rates

    assert rates(hw, after, "dwconv", True).im2col_row_s == 2e-9
    # fp32, and fp16 without the shared Cast, are untouched by the figure.
    f32 = Combo("fp32", "fp32", "fp32", 0)
    assert plan(HOST, hw, "Conv", "dwconv", f32, True, True) == plan(HOST, HW, "Conv", "dwconv", f32, True, True)
    assert plan(HOST, hw, "Conv", "dwconv", FP16, True, True).tag == "cast16"


def test_calibration_fits_the_fp16_depthwise_path_with_its_row_cost(tmp_path: Path) -> None:
    from simulator import calibration_bench, calibration_fit

    cases = [c for c in calibration_bench.CASES if ("fp16", "cast16nchw") in c.variants and c.kind == "dwconvnchw"]
    assert len(cases) >= 4 and {c.name.split("-")[3] for c in cases} == {"3x3", "5x5"}
    assert any(c.name.endswith("-s2") for c in cases) and any(not c.name.endswith("-s2") for c in cases)
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases]
    key = "dwconvnchw.cast16nchw"
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {key: 0.6}, "kind_overhead_s": {
        key: 5e-8, key + ".im2col": 1e-10, key + ".im2col.row": 2e-9, key + ".im2col.strided": 3e-10}}}})
    measured = [(g, "fp16", calibration_fit._predict_ms(g, truth, "fp16")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(measured, HW, key)
    assert s[key + ".im2col.row"] == pytest.approx(2e-9, rel=0.2)
    assert s[key + ".im2col"] == pytest.approx(1e-10, rel=0.2)
    assert s[key + ".im2col.strided"] == pytest.approx(3e-10, rel=0.2)
    # The strided figure prices the stride-2 convs only.
    flat = truth.with_overrides({"units": {"cpu": {"kind_overhead_s": {key + ".im2col.strided": 0.0}}}})
    for c, g in zip(cases, graphs):
        with_it, without = (calibration_fit._predict_ms(g, h, "fp16") for h in (truth, flat))
        assert (with_it > 1.05 * without) if c.name.endswith("-s2") else with_it == pytest.approx(without)


def test_calibration_fits_the_row_cost_of_dynamic_int8_depthwise_convs(tmp_path: Path) -> None:
    from simulator import calibration_bench, calibration_fit

    cases = [c for c in calibration_bench.CASES if ("int8-dynamic", "int8dyn") in c.variants and c.kind == "dwconv"]
    assert {"3x3", "5x5"} <= {"5x5" if c.name.endswith("5x5") else "3x3" for c in cases}
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases]
    key = "dwconv.int8dyn"
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {key: 0.5}, "kind_overhead_s": {
        key: 2e-7, key + ".im2col.row": 6e-9}}}})
    measured = [(g, "int8-dynamic", calibration_fit._predict_ms(g, truth, "int8-dynamic")) for g in graphs]
    _, s = calibration_fit._fit_eff_setup(measured, HW, key)
    assert s[key + ".im2col.row"] == pytest.approx(6e-9, rel=0.25)


def test_calibration_fits_the_strided_cost_of_fp32_nchw_depthwise_convs(tmp_path: Path) -> None:
    """fp32 depthwise Convs ORT leaves in NCHW (channels not a multiple of 4: ShuffleNet v2 x1.0's 58-channel stage)
    gather a stride-2 conv's im2col element by element as fp16's do: the stride-2 cases fit their own figure, which
    prices those convs only."""
    from simulator import calibration_bench, calibration_fit

    cases = [c for c in calibration_bench.CASES if ("fp32", "nchw") in c.variants and c.kind == "dwconvnchw"]
    assert sum(c.name.endswith("-s2") for c in cases) >= 3 and sum(not c.name.endswith("-s2") for c in cases) >= 4
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases]
    assert all(n.op_type != "ReorderInput" for g in graphs for n in g.nodes)  # NCHW, not NCHWc
    key = "dwconvnchw.nchw"
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {key: 0.7}, "kind_overhead_s": {
        key: 1e-6, key + ".im2col": 1e-10, key + ".im2col.row": 2e-9, key + ".im2col.strided": 5e-10}}}})
    measured = [(g, "fp32", calibration_fit._predict_ms(g, truth, "fp32")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(measured, HW, key)
    assert s[key + ".im2col.strided"] == pytest.approx(5e-10, rel=0.25)
    flat = truth.with_overrides({"units": {"cpu": {"kind_overhead_s": {key + ".im2col.strided": 0.0}}}})
    for c, g in zip(cases, graphs):
        with_it, without = (calibration_fit._predict_ms(g, h, "fp32") for h in (truth, flat))
        assert (with_it > 1.05 * without) if c.name.endswith("-s2") else with_it == pytest.approx(without)
