"""LiteRT's fp32 PADV2 runs TFLite's own pad kernel (simulator.litert_paths.BUILTIN_PAD), which copies each output
pixel's channels with one memcpy: a cost per output pixel (`layout.builtin.call`, Path.call_elements = the channels)
beside its rate per element, fitted together by LiteRT's calibration (simulator.litert_signal.pad_fit). With a rate
alone, fp32's 112x112x24 map was priced 0.043 ms against 0.068 measured (Zen 4, 2026-12-07)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.graph import Graph
from simulator.litert_cases import predicted_ms
from simulator.litert_paths import BUILTIN_PAD, PAD_CALL_KEYS, PAD_ROW, litert_task_facts
from simulator.litert_signal import PAD_CASES, PAD_KEYS, PadCase, build_pad, fit, pad_fit
from simulator.profiles import HardwareProfile, load_profile

CALL = PAD_CALL_KEYS["float32"]


def _pads(tmp: Path, h: int, c: int, dtype: str = "float32") -> Graph:
    case = PadCase(f"padv2-{h}x{c}-{dtype}", (1, h, h, c), dtype)
    return tflite.load(build_pad(case, tmp / f"{case.name}.tflite"))


def _hw(call_s: float | None = None) -> HardwareProfile:
    hw = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"efficiency": {
        PAD_KEYS["float32"]: 0.5, PAD_KEYS["int8"]: 0.2}}}})
    return hw if call_s is None else hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {CALL: call_s}}}})


def test_a_padv2_carries_its_output_channels(tmp_path: Path) -> None:
    facts = litert_task_facts(_pads(tmp_path, 28, 96))
    assert all(BUILTIN_PAD in f and f"{PAD_ROW}96" in f for f in facts)


def test_fp32_padv2_pays_its_calls_per_output_pixel_where_calibrated(tmp_path: Path) -> None:
    g = _pads(tmp_path, 56, 48)
    before, after = predicted_ms(g, _hw(), "fp32"), predicted_ms(g, _hw(3e-9), "fp32")
    for b, a in zip(before, after):  # 58 x 58 output pixels, 3 ns each
        assert a - b == pytest.approx(58 * 58 * 3e-6, rel=0.01)
    # int8 data (its own rate, no cost per call fitted) and a profile without the key: as before
    g8 = _pads(tmp_path, 56, 48, "int8")
    assert predicted_ms(g8, _hw(3e-9), "int8-static") == predicted_ms(g8, _hw(), "int8-static")
    assert predicted_ms(g, _hw(), "fp32") == before


def test_pad_fit_recovers_a_cost_per_pixel_apart_from_the_rate(tmp_path: Path) -> None:
    """Cases priced at a known cost per call (few channels: mostly calls; many: mostly elements) are fitted back."""
    truth = _hw(3.2e-9)
    cases = [(g, predicted_ms(g, truth, "fp32")) for g in (_pads(tmp_path, 112, 24), _pads(tmp_path, 56, 96),
                                                         _pads(tmp_path, 28, 96), _pads(tmp_path, 56, 48))]
    eff, call = pad_fit(cases, _hw(), PAD_KEYS["float32"], CALL, "fp32")
    assert call == pytest.approx(3.2e-9, rel=0.05)
    got = _hw(call).with_overrides({"units": {"cpu": {"efficiency": {PAD_KEYS["float32"]: eff}}}})
    for g, ms in cases:
        assert np.median(predicted_ms(g, got, "fp32")) == pytest.approx(np.median(ms), rel=0.03)


def test_the_calibration_fits_fp32_padv2_per_pixel_on_several_shapes(tmp_path: Path) -> None:
    fp32 = [c for c in PAD_CASES if c.dtype == "float32"]
    assert len({c.shape for c in fp32}) >= 3 and len({c.shape[-1] for c in fp32}) >= 2
    truth = _hw(3e-9)
    measured = {}
    for c in PAD_CASES:
        g = tflite.load(build_pad(c, tmp_path / f"{c.name}.tflite"))
        measured[c.name] = (g, predicted_ms(g, truth, "fp32" if c.dtype == "float32" else "int8-static"))
    cpu = fit(measured, _hw())["units"]["cpu"]
    assert set(PAD_KEYS.values()) <= set(cpu["efficiency"]) and set(cpu["kind_overhead_s"]) == {CALL}
    assert cpu["kind_overhead_s"][CALL] == pytest.approx(3e-9, rel=0.05)
    # one fp32 shape alone cannot tell the calls from the elements: the rate alone, as before
    one = fit({c.name: measured[c.name] for c in PAD_CASES if c.dtype == "int8" or c == fp32[0]}, _hw())
    assert one["units"]["cpu"]["kind_overhead_s"] == {}
