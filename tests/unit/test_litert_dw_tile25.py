"""XNNPACK runs an fp32 depthwise conv of 10 to 25 taps (5x5: BlazeFace's blocks) on its 25-tap tile, at a figure of
its own (`dwconv.tile25`, fitted by LiteRT's calibration on 5x5 cases) where calibrated; 3x3 convs keep the 9-tap
tile's figure, 7x7 ones the grouped IGEMM's, int8 forms theirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.frontends import tflite
from simulator.litert_calibration import CASES, _tag
from simulator.litert_paths import DW_GROUPED, DW_TILE25, DW_TILE25_TAG, HYBRID25_TAG, litert_task_facts
from simulator.profiles import load_profile
from simulator.sweep import sweep
from testkit.tflite_builder import depthwise_trio

HOST = "litert-cpu/host"


def _dw(tmp_path: Path):  # type: ignore[no-untyped-def]
    return tflite.load(depthwise_trio(tmp_path / "dw.tflite"))


def _ms(g, hw, preset: str) -> list[float]:  # type: ignore[no-untyped-def]
    r = sweep(g, HOST, hardware=hw, presets_only=(preset,))
    j = [p["name"] for p in r.bulk["presets"]].index(preset)
    return [float(row[j]) for row in r.bulk["metrics"]["latency_ms"]]


def test_a_5x5_depthwise_conv_runs_at_the_25_tap_tiles_figure_where_calibrated(tmp_path: Path) -> None:
    g = _dw(tmp_path)
    facts = litert_task_facts(g)
    assert [(DW_GROUPED in f, DW_TILE25 in f) for f in facts] == [(True, False), (False, True), (False, False)]
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"efficiency": {
        "dwconv.fp32": 0.2, "dwconv.grouped": 0.2}}}})
    tiled = base.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.tile25": 0.05}}}})
    for preset in ("fp32", "fp16"):  # fp16 weights run fp32's kernels
        before, after = _ms(g, base, preset), _ms(g, tiled, preset)
        assert after[1] > 2 * before[1]
        assert after[0] == before[0] and after[2] == before[2]
    for preset in ("int8-dynamic", "int8-static"):
        assert _ms(g, tiled, preset) == _ms(g, base, preset)


def test_the_5x5_cases_fit_the_tiles_figure() -> None:
    cases = [c for c in CASES if c.op == "DEPTHWISE_CONV_2D" and c.shape[2] == 5 and "fp32" in c.forms]
    assert cases and all(c.forms == ("fp32",) and _tag(c, "fp32", "dwconv") == DW_TILE25_TAG for c in cases)
    hybrid = [c for c in CASES if c.op in ("DEPTHWISE_CONV_2D", "CONV_DW") and c.shape[2] == 5 and "dyn8" in c.forms]
    assert len(hybrid) >= 4 and all(_tag(c, "dyn8", "dwconv") == HYBRID25_TAG for c in hybrid)
    three = next(c for c in CASES if c.name == "dw3x3-32-56")
    assert _tag(three, "fp32", "dwconv") == "fp32"


def test_a_5x5_depthwise_conv_under_dynamic_int8_takes_the_hybrid_kernels_own_figures_where_calibrated(
        tmp_path: Path) -> None:
    """TFLite's hybrid depthwise kernel (int8 weights, float activations) at 5x5: `dwconv.hybrid25` where LiteRT's
    calibration fitted it (its 3x3 cases priced 25 taps at 2.8x 9, where the models' 5x5 convs read 1.45-1.6x their
    price); the 3x3 and 7x7 convs and the other presets keep their figures."""
    g = _dw(tmp_path)
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"efficiency": {
        "dwconv.hybrid": 0.03}}}})
    own = base.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.hybrid25": 0.3}}}})
    before, after = _ms(g, base, "int8-dynamic"), _ms(g, own, "int8-dynamic")
    assert after[1] < 0.5 * before[1]
    assert after[0] == before[0] and after[2] == before[2]
    for preset in ("fp32", "int8-static"):
        assert _ms(g, own, preset) == _ms(g, base, preset)


def test_the_5x5_dynamic_int8_cases_fit_the_hybrid_kernels_own_figures(tmp_path: Path) -> None:
    """LiteRT's calibration groups the 5x5 dynamic int8 cases (chains, and each after a QD8 1x1 conv) under
    `dwconv.hybrid25` and recovers its rate and its cost per output element after the GEMM; the 3x3 hybrid cases stay
    `dwconv.hybrid`."""
    from simulator.litert_calibration import build, fit
    from simulator.litert_cases import predicted_ms

    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {
        "efficiency": {"dwconv.hybrid25": 0.08, "dwconv.hybrid": 0.03, "conv.qd8gemm": 0.5},
        "kind_overhead_s": {"dwconv.hybrid25": 2e-6, "dwconv.hybrid25.out": 2e-9, "dwconv.hybrid": 1e-6}}}})
    measured = {}
    for case in (c for c in CASES if c.name.startswith(("dw5x5h-", "pwdw5x5-", "dw3x3-64-28"))):
        g = tflite.load(build(case, "dyn8", tmp_path / f"{case.name}.tflite"))
        ms = predicted_ms(g, truth, "int8-dynamic")
        if case.op == "CONV_DW":  # the depthwise convs only, as `measure` keeps them
            ms = [m if n.op_type == "DEPTHWISE_CONV_2D" else float("nan") for n, m in zip(g.nodes[1:], ms)]
        measured[(case.name, "dyn8")] = (g, ms)
    assert len(measured) == 7
    out = fit(measured, hw)["units"]["cpu"]
    assert {"dwconv.hybrid25", "dwconv.hybrid"} <= set(out["efficiency"])
    assert out["efficiency"]["dwconv.hybrid25"] == pytest.approx(0.08, rel=0.05)
    assert out["kind_overhead_s"]["dwconv.hybrid25.out"] == pytest.approx(2e-9, rel=0.1)
