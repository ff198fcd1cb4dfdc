"""XNNPACK runs an fp32 depthwise conv of 10 to 25 taps (5x5: BlazeFace's blocks) on its 25-tap tile, at a figure of
its own (`dwconv.tile25`, fitted by LiteRT's calibration on 5x5 cases) where calibrated; 3x3 convs keep the 9-tap
tile's figure, 7x7 ones the grouped IGEMM's, int8 forms theirs."""

from __future__ import annotations

from pathlib import Path

from compiler.frontends import tflite
from simulator.litert_calibration import CASES, _tag
from simulator.litert_paths import DW_GROUPED, DW_TILE25, DW_TILE25_TAG, litert_task_facts
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
    cases = [c for c in CASES if c.op == "DEPTHWISE_CONV_2D" and c.shape[2] == 5]
    assert cases and all(c.forms == ("fp32",) and _tag(c, "fp32", "dwconv") == DW_TILE25_TAG for c in cases)
    three = next(c for c in CASES if c.name == "dw3x3-32-56")
    assert _tag(three, "fp32", "dwconv") == "fp32"
