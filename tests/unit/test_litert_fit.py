"""LiteRT's calibration fit (simulator.litert_calibration._fit): through the sweep's own prediction, it recovers the
figures that produced the operators' times, including QD8's cost per output pixel."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.frontends import tflite
from simulator.litert_calibration import CASES, _fit, build
from simulator.litert_cases import predicted_ms
from simulator.profiles import load_profile


def test_fit_recovers_the_qd8_rate_and_its_cost_per_pixel(tmp_path: Path) -> None:
    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"conv.qd8": 0.15},
                                                 "kind_overhead_s": {"conv.qd8": 2e-6, "conv.qd8.pixel": 3e-8}}}})
    # Few channels over many pixels and many channels over few: the two costs apart (and the stems' few channels
    # per tap: a 3x3 conv's cost per tap apart from its MACs). 1x1 stride-1 convs have figures of their own
    # (`conv.qd8gemm`, test_qd8_pointwise_and_indirect_convs_are_fitted_apart).
    names = ("conv3x3-16-56", "conv3x3-256-14", "conv3x3-32-28", "stem3x3s2-32", "stem7x7s2-64")
    cases = []
    for case in (c for c in CASES if c.name in names):
        g = tflite.load(build(case, "dyn8", tmp_path / f"{case.name}.tflite"))
        cases.append((g, "int8-dynamic", predicted_ms(g, truth, "int8-dynamic")))
    assert len(cases) == len(names)
    eff, setups = _fit(cases, hw, "conv.qd8")
    assert eff == pytest.approx(0.15, rel=0.03)
    assert setups["conv.qd8.pixel"] == pytest.approx(3e-8, rel=0.05)
    assert setups["conv.qd8"] == pytest.approx(2e-6, abs=1e-6)



def test_conv_cases_include_ones_whose_time_is_their_macs(tmp_path: Path) -> None:
    """QD8's rate is only pinned by cases whose time is mostly MACs: on cases where the per-pixel cost is most of it,
    the real timings of this machine (2026-12-03) were fitted with the rate at its 3.0 bound, all in the per-pixel
    cost (ResNet-18's int8-dynamic file predicted 0.13x its fp32 file, measured 0.31x). At this machine's figures
    (conv.qd8 0.9, 12 us per operator, 17.5 ns per pixel) at least two conv cases spend 80% of their time on MACs."""
    hw = load_profile("host-cpu", "litert-cpu")

    def at(eff: float) -> object:
        return hw.with_overrides({"units": {"cpu": {"efficiency": {"conv.qd8": eff}, "kind_overhead_s": {
            "conv.qd8": 1.2e-5, "conv.qd8.pixel": 1.75e-8}}}})

    shares = []
    for case in (c for c in CASES if c.op == "CONV_2D"):
        g = tflite.load(build(case, "dyn8", tmp_path / f"{case.name}.tflite"))
        total, no_macs = (sum(predicted_ms(g, at(e), "int8-dynamic")) for e in (0.9, 1e4))
        shares.append(1 - no_macs / total)
    assert sum(s >= 0.8 for s in shares) >= 2, shares


def test_fit_recovers_the_hybrid_depthwise_cost_beyond_the_l2(tmp_path: Path) -> None:
    """The MobileNet-shaped depthwise cases on both sides of the L2 pin `dwconv.hybrid.spill` apart from the rate."""
    l2 = {"l2_share_bytes": float(512 * 1024)}
    hw = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": l2}})
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.hybrid": 0.01},
                                                 "kind_overhead_s": {"dwconv.hybrid": 5e-6,
                                                                     "dwconv.hybrid.spill": 1.2e-9}}}})
    names = ("dw3x3-32-112", "dw3x3-144-56", "dw3x3-192-28", "dw3x3-384-14", "dw3x3-128-14", "dw3x3-32-56")
    cases = []
    for case in (c for c in CASES if c.name in names):
        g = tflite.load(build(case, "dyn8", tmp_path / f"{case.name}.tflite"))
        cases.append((g, "int8-dynamic", predicted_ms(g, truth, "int8-dynamic")))
    assert len(cases) == len(names)
    eff, setups = _fit(cases, hw, "dwconv.hybrid")
    assert eff == pytest.approx(0.01, rel=0.03)
    assert setups["dwconv.hybrid.spill"] == pytest.approx(1.2e-9, rel=0.05)
    assert "dwconv.hybrid.pixel" not in setups  # the hybrid path has no cost per pixel
    assert setups["dwconv.hybrid"] == pytest.approx(5e-6, abs=2e-6)


def test_l2_share_read_from_sysfs(tmp_path: Path) -> None:
    """One core's share of its level-2 data or unified cache; instruction caches and other levels do not count."""
    from simulator.host_machine import l2_bytes, llc_bytes

    def index(n: int, level: int, kind: str, size: str, cpus: str) -> None:
        d = tmp_path / f"index{n}"
        d.mkdir()
        for name, text in (("level", str(level)), ("type", kind), ("size", size), ("shared_cpu_list", cpus)):
            (d / name).write_text(text + "\n")

    index(0, 1, "Data", "48K", "0")
    index(1, 2, "Instruction", "64K", "0")
    assert l2_bytes(tmp_path) == 0  # no data cache at level 2
    index(2, 2, "Unified", "2M", "0-1")
    index(3, 3, "Unified", "32768K", "0-1")
    assert l2_bytes(tmp_path) == 1024 * 1024 and llc_bytes(tmp_path) == (16 << 20, 32 << 20)
    (tmp_path / "index2" / "size").write_text("512K\n")
    (tmp_path / "index2" / "shared_cpu_list").write_text("0\n")
    assert l2_bytes(tmp_path) == 512 * 1024
    assert l2_bytes(tmp_path / "missing") == 0


def test_fp32_hard_swish_gets_a_figure_of_its_own(tmp_path: Path) -> None:
    """XNNPACK's fp32 HARD_SWISH ran 4x faster than the element-wise rate (MobileNetV3-Small: 0.077 ms for 19,
    predicted 0.34): its fp32 cases fit `elementwise.fp32.HARD_SWISH`, recovered from times made with it, and the
    other fp32 element-wise ops keep the kind's figure."""
    from simulator.litert_calibration import fit
    from simulator.sweep import sweep

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.fp32.HARD_SWISH": 2.0}}}})
    measured = {}
    for case in (c for c in CASES if c.op == "HARD_SWISH"):
        assert "fp32" in case.forms
        g = tflite.load(build(case, "fp32", tmp_path / f"{case.name}.tflite"))
        measured[(case.name, "fp32")] = (g, predicted_ms(g, truth, "fp32"))
    eff = fit(measured, hw)["units"]["cpu"]["efficiency"]
    assert set(eff) == {"elementwise.fp32.HARD_SWISH"} and eff["elementwise.fp32.HARD_SWISH"] == pytest.approx(2.0, rel=0.05)
    g = next(iter(measured.values()))[0]
    h = hw.with_overrides({"units": {"cpu": {"efficiency": eff}}})
    r = sweep(g, "litert-cpu/host", hardware=h, presets_only=("fp32",))
    from simulator.roofline import efficiency

    assert efficiency(h.units[0], "elementwise", "fp32", "ADD") == efficiency(hw.units[0], "elementwise", "fp32", "ADD")
    assert r.bulk["metrics"]["latency_ms"][1][0] < predicted_ms(g, hw, "fp32")[0]


def test_fit_recovers_qs8s_cost_per_output_element(tmp_path: Path) -> None:
    """XNNPACK's QS8 GEMM requantizes every output in its epilogue: MobileNetV2's int8 1x1 expand convs (few inputs,
    many outputs) ran up to 2.4x a prediction without that cost. The calibration's static int8 conv cases, from a
    few channels over many pixels to many channels over few, recover it apart from the rate and the fixed cost;
    the other options of the same chains do not pay it."""
    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"conv.int8": 1.2},
                                                 "kind_overhead_s": {"conv.int8": 3e-6, "conv.int8.out": 1.2e-10}}}})
    cases = []
    for case in (c for c in CASES if c.op == "CONV_2D"):
        g = tflite.load(build(case, "static8", tmp_path / f"{case.name}.tflite"))
        cases.append((g, "int8-static", predicted_ms(g, truth, "int8-static")))
        if case.name == "conv1x1-8-112":  # 8 MACs per output: the cost is a large share of the time
            without = predicted_ms(g, hw.with_overrides({"units": {"cpu": {"efficiency": {"conv.int8": 1.2},
                                                                           "kind_overhead_s": {"conv.int8": 3e-6}}}}),
                                   "int8-static")
            assert sum(cases[-1][2]) > 1.5 * sum(without)
            f32 = tflite.load(build(case, "fp32", tmp_path / f"{case.name}-fp32.tflite"))
            assert predicted_ms(f32, truth, "fp32") == predicted_ms(f32, hw, "fp32")
    eff, setups = _fit(cases, hw, "conv.int8")
    assert eff == pytest.approx(1.2, rel=0.03)
    assert setups["conv.int8.out"] == pytest.approx(1.2e-10, rel=0.05)
    assert "conv.int8.pixel" not in setups  # a QS8 conv has no cost per pixel of its own


def test_fit_recovers_the_indirect_gemms_cost_per_tap(tmp_path: Path) -> None:
    """XNNPACK's integer indirect GEMM walks a row pointer per output pixel and tap and runs a reduction block per
    tap: an image stem (3 channels per tap) pays it on every MAC, a 3x3 conv of many channels hardly. The image-stem
    cases beside the other conv cases recover it apart from the rate, the fixed cost and the cost per output element,
    under static and dynamic int8; fp32 and 1x1 stride-1 convs (a plain GEMM) do not pay it."""
    hw = load_profile("host-cpu", "litert-cpu")
    for form, preset, key in (("static8", "int8-static", "conv.int8"), ("dyn8", "int8-dynamic", "conv.qd8")):
        truth = hw.with_overrides({"units": {"cpu": {"efficiency": {key: 1.2}, "kind_overhead_s": {
            key: 3e-6, f"{key}.out": 1e-10, f"{key}.pixel": 1e-8, f"{key}.igemm": 4e-11}}}})
        cases = []
        for case in (c for c in CASES if c.op == "CONV_2D" and form in c.forms):
            g = tflite.load(build(case, form, tmp_path / f"{case.name}-{form}.tflite"))
            cases.append((g, preset, predicted_ms(g, truth, preset)))
            no_tap = hw.with_overrides({"units": {"cpu": {"efficiency": {key: 1.2}, "kind_overhead_s": {
                key: 3e-6, f"{key}.out": 1e-10, f"{key}.pixel": 1e-8}}}})
            if case.name == "stem7x7s2-64":  # 3 channels per tap: the cost per tap is a large share of the time
                assert sum(cases[-1][2]) > 1.3 * sum(predicted_ms(g, no_tap, preset))
            if case.name.startswith("conv1x1"):  # a plain GEMM: no taps
                assert cases[-1][2] == predicted_ms(g, no_tap, preset)
        assert sum(c.name.startswith("stem") for c in CASES if form in c.forms) >= 2
        eff, setups = _fit(cases, hw, key)
        assert eff == pytest.approx(1.2, rel=0.05)
        assert setups[f"{key}.igemm"] == pytest.approx(4e-11, rel=0.1)
    stem = next(c for c in CASES if c.name == "stem7x7s2-64")
    f32 = tflite.load(build(stem, "fp32", tmp_path / "stem-fp32.tflite"))
    taps = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {"conv.int8.igemm": 1e-9}}}})
    assert predicted_ms(f32, taps, "fp32") == predicted_ms(f32, hw, "fp32")  # an integer figure: not fp32's


def test_fp32_stems_fit_the_f32_igemms_cost_per_tap(tmp_path: Path) -> None:
    """XNNPACK's F32 IGEMM walks each tap's row pointers before reducing over that tap's channels one at a time: an
    image stem (3 channels per tap) pays it on every third MAC. Where calibrated (`conv.fp32.igemm`) every fp32 conv
    but a 1x1 stride-1 one (the F32 GEMM) pays it per output element and tap; the fp32 stem cases beside the 3x3 ones
    recover it apart from `conv.fp32`'s rate and fixed cost. Without the figure (an older cache) nothing changes."""
    from simulator.litert_calibration import fit

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {
        "f32_n_block": 16.0, "efficiency": {"conv.fp32": 1.2, "conv.fp32gemm": 1.4},
        "kind_overhead_s": {"conv.fp32": 2e-6, "conv.fp32gemm": 1e-6, "conv.fp32.igemm": 1.5e-11}}}})
    no_tap = truth.with_overrides({"units": {"cpu": {"kind_overhead_s": {"conv.fp32.igemm": 0.0}}}})
    measured = {}
    for case in (c for c in CASES if c.op == "CONV_2D" and "fp32" in c.forms):
        g = tflite.load(build(case, "fp32", tmp_path / f"{case.name}.tflite"))
        measured[(case.name, "fp32")] = (g, predicted_ms(g, truth, "fp32"))
        if case.name == "stem7x7s2-64":  # 3 channels per tap: the walk is a large share of the time
            assert sum(measured[(case.name, "fp32")][1]) > 1.1 * sum(predicted_ms(g, no_tap, "fp32"))
        if case.name.startswith("conv1x1"):  # the F32 GEMM: no taps
            assert measured[(case.name, "fp32")][1] == predicted_ms(g, no_tap, "fp32")
    assert {"stem7x7s2-64", "stem3x3s2-32"} <= {name for name, _ in measured}
    cpu = fit(measured, hw, f32_n_block=16)["units"]["cpu"]
    assert cpu["efficiency"]["conv.fp32"] == pytest.approx(1.2, rel=0.05)
    assert cpu["kind_overhead_s"]["conv.fp32.igemm"] == pytest.approx(1.5e-11, rel=0.1)
    assert cpu["efficiency"]["conv.fp32gemm"] == pytest.approx(1.4, rel=0.03)
    stem = tflite.load(build(next(c for c in CASES if c.name == "stem7x7s2-64"), "fp32", tmp_path / "s.tflite"))
    assert predicted_ms(stem, hw, "fp32") == predicted_ms(
        stem, hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {"conv.int8.igemm": 1e-9}}}}), "fp32")


def test_qd8_pointwise_and_indirect_convs_are_fitted_apart(tmp_path: Path) -> None:
    """Under dynamic int8 a 1x1 stride-1 conv is XNNPACK's fully connected GEMM (each input row quantized inline)
    and a 3x3 conv or a stem its indirect GEMM (a Convert before it): on a Zen 4 (2026-12-03) the 1x1 chains paid
    ~27 ns per pixel and the 3x3 ones ~1 ns, and one figure for both was 26-54% under the 1x1 cases. `fit` puts the
    1x1 cases in a group of their own (`conv.qd8gemm`) and recovers each path's figures."""
    from simulator.litert_calibration import fit

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {
        "efficiency": {"conv.qd8": 1.3, "conv.qd8gemm": 1.1},
        "kind_overhead_s": {"conv.qd8": 1e-6, "conv.qd8.pixel": 1e-9, "conv.qd8.igemm": 2e-11,
                            "conv.qd8gemm": 1e-6, "conv.qd8gemm.pixel": 2.7e-8}}}})
    measured = {}
    for case in (c for c in CASES if c.op == "CONV_2D" and "dyn8" in c.forms):
        g = tflite.load(build(case, "dyn8", tmp_path / f"{case.name}.tflite"))
        measured[(case.name, "dyn8")] = (g, predicted_ms(g, truth, "int8-dynamic"))
    cpu = fit(measured, hw)["units"]["cpu"]
    assert cpu["efficiency"]["conv.qd8gemm"] == pytest.approx(1.1, rel=0.05)
    assert cpu["kind_overhead_s"]["conv.qd8gemm.pixel"] == pytest.approx(2.7e-8, rel=0.05)
    assert cpu["efficiency"]["conv.qd8"] == pytest.approx(1.3, rel=0.05)
    assert cpu["kind_overhead_s"]["conv.qd8.igemm"] == pytest.approx(2e-11, rel=0.1)


def test_the_7x7_depthwise_cases_fit_the_grouped_igemm_apart_from_the_depthwise_kernels(tmp_path: Path) -> None:
    """fp32 7x7 depthwise chains (more taps than XNNPACK's depthwise kernels: a grouped IGEMM) are grouped under
    `dwconv.grouped` by the calibration's fit (static int8 ones under `dwconv.grouped8`), and through the sweep's prediction it recovers that rate; the 3x3
    cases stay `dwconv.fp32`."""
    from simulator.litert_calibration import fit

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.grouped": 0.004, "dwconv.fp32": 0.3},
                                                 "kind_overhead_s": {"dwconv.grouped": 3e-6, "dwconv.fp32": 1e-6}}}})
    measured = {}
    for case in (c for c in CASES if c.name.startswith(("dw7x7-", "dw3x3-64-28"))):
        g = tflite.load(build(case, "fp32", tmp_path / f"{case.name}.tflite"))
        measured[(case.name, "fp32")] = (g, predicted_ms(g, truth, "fp32"))
    assert len(measured) == 4
    out = fit(measured, hw)["units"]["cpu"]
    assert set(out["efficiency"]) == {"dwconv.grouped", "dwconv.fp32"}
    assert out["efficiency"]["dwconv.grouped"] == pytest.approx(0.004, rel=0.05)


def test_qs8_pointwise_convs_are_fitted_apart_with_their_cost_per_pixel(tmp_path: Path) -> None:
    """Under static int8 a 1x1 stride-1 conv is XNNPACK's fully connected QS8 GEMM, which on AMX paid ~9 ns per
    pixel beside its MACs (MobileNetV2's 112x112 convs 1.6-3.0x a prediction without it). `fit` puts the 1x1 cases,
    with the expand / project chains (CONV_PAIR: output channels unlike the inputs, which tell the cost per pixel from
    the cost per output element), in a group of their own (`conv.int8gemm`) and recovers its figures; a chain's last
    operator, which writes the model's output, is not fitted (here it reads 3x its prediction: the fit is unmoved)."""
    from simulator.litert_calibration import fit

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {
        "efficiency": {"conv.int8": 1.3, "conv.int8gemm": 2.0},
        "kind_overhead_s": {"conv.int8": 1e-6, "conv.int8.out": 5e-11, "conv.int8.igemm": 2e-12,
                            "conv.int8gemm": 1e-6, "conv.int8gemm.pixel": 9e-9, "conv.int8gemm.out": 1e-10}}}})
    measured = {}
    for case in (c for c in CASES if c.op in ("CONV_2D", "CONV_PAIR") and "static8" in c.forms):
        g = tflite.load(build(case, "static8", tmp_path / f"{case.name}.tflite"))
        ms = predicted_ms(g, truth, "int8-static")
        measured[(case.name, "static8")] = (g, ms if case.name.startswith("stem") else [*ms[:-1], 3 * ms[-1]])
    assert sum(c.op == "CONV_PAIR" for c in CASES) >= 2
    cpu = fit(measured, hw)["units"]["cpu"]
    assert cpu["efficiency"]["conv.int8gemm"] == pytest.approx(2.0, rel=0.05)
    assert cpu["kind_overhead_s"]["conv.int8gemm.pixel"] == pytest.approx(9e-9, rel=0.05)
    assert cpu["kind_overhead_s"]["conv.int8gemm.out"] == pytest.approx(1e-10, rel=0.1)
    assert cpu["efficiency"]["conv.int8"] == pytest.approx(1.3, rel=0.05)


def test_a_conv_pair_chain_alternates_its_channels(tmp_path: Path) -> None:
    """CONV_PAIR (C, H, C2): 1x1 stride-1 convs C -> C2 -> C -> C2, each reading the one before."""
    case = next(c for c in CASES if c.op == "CONV_PAIR")
    c, h, c2 = case.shape
    g = tflite.load(build(case, "static8", tmp_path / "pair.tflite"))
    convs = [n for n in g.nodes if n.op_type == "CONV_2D"]
    assert [g.values[n.inputs[1]].shape for n in convs] == [[c2, 1, 1, c], [c, 1, 1, c2]] * 2
    assert all(g.values[n.outputs[0]].shape[1:3] == [h, h] for n in convs)
    assert all(b.inputs[0] == a.outputs[0] for a, b in zip(convs, convs[1:]))


def test_operators_timed_under_the_profilers_resolution_are_left_out(tmp_path: Path) -> None:
    """LiteRT's profiler counts whole microseconds: XNNPACK's fp32 HARD_SWISH on 576 x 7 x 7 read 0.000 ms on a Zen 5
    (2026-12-06), and the relative fit, dividing by it, priced every HARD_SWISH at 6,300x its time. Such operators
    say nothing in relative terms: the figure comes from the cases timed above MIN_TIMED_MS."""
    from simulator.litert_calibration import MIN_TIMED_MS

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.fp32.HARD_SWISH": 0.5}}}})
    cases = []
    for case in (c for c in CASES if c.op == "HARD_SWISH"):
        g = tflite.load(build(case, "fp32", tmp_path / f"{case.name}.tflite"))
        ms = predicted_ms(g, truth, "fp32")
        cases.append((g, "fp32", [0.0] * len(ms) if case.shape == (576, 7) else ms))
    assert any(m > MIN_TIMED_MS for _, _, ms in cases for m in ms)
    eff, _ = _fit(cases, hw, "elementwise.fp32.HARD_SWISH")
    assert eff == pytest.approx(0.5, rel=0.05)


def test_fp32_pointwise_and_indirect_convs_are_fitted_apart_with_the_output_block(tmp_path: Path) -> None:
    """fp32 1x1 stride-1 convs (XNNPACK's F32 GEMM) and 3x3 ones (its F32 IGEMM) ran 110-117 and 99-108 GFLOP/s on a
    Zen 4 (2026-12-06), and 24 output channels 0.75x either (a block of 16 and a half): `fit` puts the 1x1 cases in a
    group of their own (`conv.fp32gemm`), records the block, and recovers each kernel's rate with the 24-channel cases
    in the fit."""
    from simulator.litert_calibration import fit

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {
        "f32_n_block": 16.0, "efficiency": {"conv.fp32": 0.8, "conv.fp32gemm": 0.9},
        "kind_overhead_s": {"conv.fp32": 3e-6, "conv.fp32gemm": 1e-6}}}})
    measured = {}
    for case in (c for c in CASES if c.op == "CONV_2D" and "fp32" in c.forms and len(c.shape) < 5):
        g = tflite.load(build(case, "fp32", tmp_path / f"{case.name}.tflite"))
        measured[(case.name, "fp32")] = (g, predicted_ms(g, truth, "fp32"))
    assert {"conv1x1-24-56", "conv3x3-24-56"} <= {name for name, _ in measured}
    cpu = fit(measured, hw, f32_n_block=16)["units"]["cpu"]
    assert cpu["f32_n_block"] == 16.0
    assert cpu["efficiency"]["conv.fp32gemm"] == pytest.approx(0.9, rel=0.03)
    assert cpu["efficiency"]["conv.fp32"] == pytest.approx(0.8, rel=0.03)
    assert cpu["kind_overhead_s"]["conv.fp32"] == pytest.approx(3e-6, abs=1e-6)
