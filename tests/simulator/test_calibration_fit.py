"""The joint calibration fit (simulator.calibration) on graphs ONNX Runtime compiles: synthetic measurements made
by the cost model with known figures, which the fit must find again. Integration tier: each graph is compiled by
ONNX Runtime first (seconds each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def test_joint_fit_recovers_efficiency_and_setup(tmp_path: Path) -> None:
    """Synthetic measurements made by the model itself with known figures: the fit finds them again."""
    from simulator import calibration_bench, calibration_fit

    graphs = [calibration_bench.compile_for_host(calibration_bench.conv_act(c, s, 1)(tmp_path / f"{c}x{s}.onnx"),
                                           tmp_path / f"{c}x{s}.opt.onnx") for c, s in ((16, 8), (64, 28), (128, 14))]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"conv.int8dyn": 0.07},
                                                 "kind_overhead_s": {"conv.int8dyn": 6e-6}}}})
    cases = [(g, "int8-dynamic", calibration_fit._predict_ms(g, truth, "int8-dynamic")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(cases, HW, "conv.int8dyn")
    assert eff == pytest.approx(0.07, rel=0.05) and s["conv.int8dyn"] == pytest.approx(6e-6, rel=0.1)
    assert s["conv.int8dyn.pixel"] == 0.0  # this path pays no per-pixel cost
    assert s["conv.int8dyn.im2col"] == 0.0  # 1x1 kernels: no im2col buffer to pay for


def test_joint_fit_recovers_a_per_pixel_setup(tmp_path: Path) -> None:
    """Static int8 depthwise pays a fixed cost per task and per output pixel: the fit separates the two."""
    from simulator import calibration_bench, calibration_fit

    graphs = [calibration_bench.compile_for_host(calibration_bench.conv_act(c, s, 3, group=c)(tmp_path / f"{c}x{s}.onnx"),
                                           tmp_path / f"{c}x{s}.opt.onnx") for c, s in ((32, 48), (256, 12), (64, 24))]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.int8": 0.1},
                                                 "kind_overhead_s": {"dwconv.int8": 2e-6, "dwconv.int8.pixel": 5e-9}}}})
    cases = [(g, "int8-static", calibration_fit._predict_ms(g, truth, "int8-static")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(cases, HW, "dwconv.int8")
    assert eff == pytest.approx(0.1, rel=0.05) and s["dwconv.int8"] == pytest.approx(2e-6, rel=0.15)
    assert s["dwconv.int8.pixel"] == pytest.approx(5e-9, rel=0.1)


def test_joint_fit_recovers_im2col_and_weight_packing_costs(tmp_path: Path) -> None:
    """ConvInteger expands the input of a 3x3 kernel (9 rows per input element) but reads a 1x1 kernel's
    input as it is, and packs its weights on every run: with shapes that vary these apart, the fit separates
    the expansion and the packing from the GEMM rate."""
    from simulator import calibration_bench, calibration_fit

    graphs = [calibration_bench.compile_for_host(calibration_bench.conv_act(c, s, k)(tmp_path / f"{c}x{s}x{k}.onnx"),
                                           tmp_path / f"{c}x{s}x{k}.opt.onnx")
              for c, s, k in ((16, 32, 3), (64, 28, 3), (128, 8, 3), (32, 56, 1), (256, 14, 1))]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"conv.int8dyn": 0.2}, "kind_overhead_s": {
        "conv.int8dyn": 3e-6, "conv.int8dyn.im2col": 2e-10, "conv.int8dyn.weights": 3e-10}}}})
    cases = [(g, "int8-dynamic", calibration_fit._predict_ms(g, truth, "int8-dynamic")) for g in graphs]
    no_im2col = HW.with_overrides({"units": {"cpu": {"efficiency": {"conv.int8dyn": 0.2}, "kind_overhead_s": {
        "conv.int8dyn": 3e-6, "conv.int8dyn.weights": 3e-10}}}})
    # The term is there for 3x3 only.
    assert cases[0][2] > calibration_fit._predict_ms(graphs[0], no_im2col, "int8-dynamic")
    assert cases[3][2] == calibration_fit._predict_ms(graphs[3], no_im2col, "int8-dynamic")
    eff, s = calibration_fit._fit_eff_setup(cases, HW, "conv.int8dyn")
    assert eff == pytest.approx(0.2, rel=0.05) and s["conv.int8dyn.im2col"] == pytest.approx(2e-10, rel=0.15)
    assert s["conv.int8dyn.weights"] == pytest.approx(3e-10, rel=0.15)
    # Static int8 Conv pre-packs its weights: no such cost on its path.
    assert not plan(HOST, HW, "Conv", "conv", Combo("int8", "int8", "int8", 0), True, False).repack


def test_few_channel_cases_include_stems_whose_time_is_their_macs(tmp_path: Path) -> None:
    """convsmall's quantized rates were fitted on 8-channel convs over 24-48 px maps, all fixed and per-element
    cost: convsmall.int8dyn came out at the 3.0 bound and a ResNet-18 stem (3->64, 7x7) under int8-dynamic was
    predicted at a third of its time. Stems now take their own figures under int8-dynamic (stemgemm.int8dyn), fitted
    on stem cases (few-channel convs, ORT's convsmall) in which ConvInteger's MACs are a large share of the time (at
    an efficiency of 0.4), so the rate is pinned."""
    from simulator import calibration_bench, calibration_fit
    from simulator.costs import kind_of

    key = "stemgemm.int8dyn"
    stems = [c for c in calibration_bench.CASES if ("int8-dynamic", key) in c.variants]
    assert stems and all(c.kind == "convsmall" for c in stems)
    shares = []
    for case in stems:
        g = calibration_bench.compile_for_host(case.build(tmp_path / f"{case.name}.onnx"), tmp_path / f"{case.name}.opt.onnx")
        convs = [n for n in g.nodes if "Conv" in n.op_type]
        assert convs and all(kind_of(n, g) == "convsmall" for n in convs)
        at = {e: HW.with_overrides({"units": {"cpu": {"efficiency": {key: e}}}}) for e in (0.4, 1e4)}
        total, no_macs = (calibration_fit._predict_ms(g, at[e], "int8-dynamic") for e in (0.4, 1e4))
        shares.append(1 - no_macs / total)
    assert max(shares) >= 0.4, shares


def test_joint_fit_recovers_the_nchw_grouped_conv_costs(tmp_path: Path) -> None:
    """Calibration's grouped (group width 8) Convs, which ORT leaves in NCHW: the fp32 path `gconvnchw.nchw` is
    fitted jointly (efficiency, cost per group, per im2col element), its cases are in the bench, and the fit finds
    known figures again."""
    from simulator import calibration_bench, calibration_fit

    cases_g = [c for c in calibration_bench.CASES if c.kind == "gconvnchw"]
    assert len(cases_g) >= 3 and all(("fp32", "nchw") in c.variants for c in cases_g)
    assert len([c for c in calibration_bench.CASES if c.kind == "dwconvnchw"]) >= 3
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases_g]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"gconvnchw.nchw": 0.9}, "kind_overhead_s": {
        "gconvnchw.nchw": 3e-7, "gconvnchw.nchw.im2col": 2.5e-10}}}})
    cases = [(g, "fp32", calibration_fit._predict_ms(g, truth, "fp32")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(cases, HW, "gconvnchw.nchw")
    assert eff == pytest.approx(0.9, rel=0.1) and s["gconvnchw.nchw"] == pytest.approx(3e-7, rel=0.15)
    assert s["gconvnchw.nchw.im2col"] == pytest.approx(2.5e-10, rel=0.15)


def test_grouped_nchw_cases_include_wide_1x1_groups_whose_time_is_their_macs(tmp_path: Path) -> None:
    """gconvnchw.nchw was fitted on group width 8 (and one 24), where im2col and the cost per group are most of the
    time: the MAC rate came out at 1.67 on a Zen 4, and ShuffleNet v1's 1x1 convs of 4 wide groups (MLAS: one SGEMM
    per group straight on the input) measured 1.23-1.45x their prediction. The wide 1x1 cases spend most of their
    time in the GEMMs' MACs at the figures the fit gives, so the rate is pinned."""
    from simulator import calibration_bench, calibration_fit
    from simulator.costs import work_of

    fitted = {"efficiency": {"gconvnchw.nchw": 1.2}, "kind_overhead_s": {"gconvnchw.nchw": 1e-6,
                                                                        "gconvnchw.nchw.im2col": 2.9e-10}}
    shares = {}
    for case in (c for c in calibration_bench.CASES if c.kind == "gconvnchw"):
        g = calibration_bench.compile_for_host(case.build(tmp_path / f"{case.name}.onnx"), tmp_path / f"{case.name}.opt.onnx")
        if calibration_fit.off_path(case, "fp32", "nchw", g):
            continue  # ORT runs it NCHWc on this ISA (width 8, 24, 136 with AVX2): not fitted here
        convs = [n for n in g.nodes if "Conv" in n.op_type]
        assert len(convs) == calibration_bench.R and all(work_of(n, g).kind == "gconvnchw" for n in convs)
        total, no_macs = (calibration_fit._predict_ms(g, HW.with_overrides({"units": {"cpu": {
            **fitted, "efficiency": {"gconvnchw.nchw": e}}}}), "fp32") for e in (1.2, 1e4))
        shares[case.name] = 1 - no_macs / total
    wide = {k: v for k, v in shares.items() if k.endswith(("-1x1-g34", "-1x1-g68", "-1x1-g136", "-1x1-g132"))}
    assert len(wide) >= 3 and min(wide.values()) >= 0.6, shares  # g34, g68, g132 stay NCHW with AVX2 and AVX-512
    assert {"gconvact-96x28-3x3-g12", "gconvact-192x14-3x3-g12"} <= shares.keys()
    assert max(v for k, v in shares.items() if k not in wide) < 0.6, shares  # the width-8 / 24 cases alone do not


def test_fp32_depthwise_cases_include_5x5_on_small_maps_run_nchwc(tmp_path: Path) -> None:
    """dwconv.fp32 was fitted on 3x3 cases at 56 and 14 px only, and MobileNetV3-Small's 5x5 depthwise convs (14 and
    7 px) profiled 1.25-1.44x their prediction on a Zen 3. The bench has 5x5 fp32 depthwise cases down to 7 px that
    ORT runs NCHWc (kind `dwconv`), so they feed the same key's median."""
    from simulator import calibration_bench
    from simulator.costs import work_of

    five = [c for c in calibration_bench.CASES if c.kind == "dwconv" and ("fp32", "fp32") in c.variants
            and c.name.endswith("-5x5")]
    assert len(five) >= 3
    sizes = set()
    for case in five:
        g = calibration_bench.compile_for_host(case.build(tmp_path / f"{case.name}.onnx"), tmp_path / f"{case.name}.opt.onnx")
        convs = [n for n in g.nodes if "Conv" in n.op_type]
        assert len(convs) == calibration_bench.R and all(work_of(n, g).kind == "dwconv" for n in convs)
        sizes.add(int(case.name.split("-")[1].split("x")[1]))
    assert min(sizes) <= 7 and len(sizes) >= 3


def test_fp32_stems_pin_the_few_channel_rate(tmp_path: Path) -> None:
    """convsmall.fp32 was the median of two 8-channel cases (mostly fixed cost), which priced real stems at 1.5-2.3x
    their ORT profile on a Sapphire Rapids. The stems now carry an fp32 variant and the key is fitted jointly
    (efficiency and a setup per task): synthetic measurements made with known figures are found again, and the median
    of per-case efficiencies, which a setup per task skews on the small cases, does not find them."""
    from simulator import calibration_bench, calibration_fit

    cases_s = [c for c in calibration_bench.CASES if c.kind == "convsmall" and ("fp32", "fp32") in c.variants]
    assert {c.name for c in cases_s} >= {"convsmall-8x48-1x1", "stemact-3x64-224-7x7", "stemact-3x32-224-3x3"}
    assert "convsmall.fp32" in calibration_fit.JOINT_FP32
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases_s]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"convsmall.fp32": 1.1},
                                                 "kind_overhead_s": {"convsmall.fp32": 8e-6}}}})
    cases = [(g, "fp32", calibration_fit._predict_ms(g, truth, "fp32")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(cases, HW, "convsmall.fp32")
    assert eff == pytest.approx(1.1, rel=0.05) and s["convsmall.fp32"] == pytest.approx(8e-6, rel=0.1)
    medians = [calibration_fit._fit_eff(g, HW, "fp32", "convsmall.fp32", ms) for g, _, ms in cases]
    assert min(medians) < 0.8 * 1.1  # the small cases alone read the setup as a low rate


def test_joint_fit_recovers_the_softmax_row_figures(tmp_path: Path) -> None:
    """ORT's Softmax (simulator/softmax_rows.py): the bench's four fp32 chains (rows of 128, 49, 196, 16) separate the
    rate, the cost per row and the cost per row off a cache line."""
    from simulator import calibration_bench, calibration_fit

    names = ("softmax-12x128x128", "softmax-3136x49", "softmax-784x196", "softmax-2048x16")
    cases = {c.name: c for c in calibration_bench.CASES if c.name in names}
    assert set(cases) == set(names) and "softmax.fp32" in calibration_fit.JOINT_FP32
    graphs = [calibration_bench.compile_for_host(cases[n].build(tmp_path / f"{n}.onnx"), tmp_path / f"{n}.opt.onnx")
              for n in names]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"softmax.fp32": 0.15}, "kind_overhead_s": {
        "softmax.fp32": 1e-6, "softmax.fp32.row": 1e-8, "softmax.fp32.tap": 2e-8}}}})
    measured = [(g, "fp32", calibration_fit._predict_ms(g, truth, "fp32")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(measured, HW, "softmax.fp32")
    assert eff == pytest.approx(0.15, rel=0.05)
    assert s["softmax.fp32.row"] == pytest.approx(1e-8, rel=0.1)
    assert s["softmax.fp32.tap"] == pytest.approx(2e-8, rel=0.1)
