"""RFFT2D's own rate on LiteRT's CPU (simulator.litert_signal): the calibration's cases run TFLite's own kernel, and
the fitted `other.fp32.RFFT2D` brings their predictions to the measurements. Costed at the element-wise rate of
its FFT FLOPs before, BirdNET's spectrogram was predicted at about a tenth of its time (the model -55%)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from simulator.calibration_fit import EFF_MAX
from simulator.litert_cases import predicted_ms
from simulator.litert_paths import PAD_CALL_KEYS
from simulator.litert_signal import (CASES, GATHER_CASES, GATHER_KEY, KEY, PAD_CASES, PAD_KEYS, R, SLICE_CASES,
                                    SLICE_KEY, fit, measure)
from simulator.profiles import load_profile
from tests.simulator.helpers import fastest_of_rounds


def test_rfft2d_cases_fit_their_own_rate(tmp_path: Path) -> None:
    everything = fastest_of_rounds(lambda: measure(tmp_path, runs=10))
    assert set(everything) == {c.name for c in (*CASES, *GATHER_CASES, *SLICE_CASES, *PAD_CASES)}
    measured = {k: v for k, v in everything.items() if k.startswith("rfft")}
    hw = load_profile("host-cpu", "litert-cpu")
    for g, ms in measured.values():
        assert {n.op_type for n in g.nodes} == {"RFFT2D"} and len(ms) == R - 1 and min(ms) > 0
    def each(h):  # type: ignore[no-untyped-def]  # per case: the median operator, predicted
        return np.array([float(np.median(predicted_ms(g, h, "fp32"))) for g, _ in measured.values()])

    before = each(hw)
    meas = np.array([float(np.median(ms)) for _, ms in measured.values()])
    # the element-wise rate: far too fast for TFLite's kernel, more than 2x (the former bound, 0.3x, failed a clean
    # clone's run on a quiet Sapphire Rapids at 0.32x; the fitted rate below is what the test is about)
    assert np.median(before / meas) < 0.5
    o = fit(everything, hw)
    eff = o["units"]["cpu"]["efficiency"][KEY]
    after = each(hw.with_overrides(o))
    assert 0.0 < eff < 1.0
    # one rate across 64x256 .. 128x2048: its cases' median within 30% (a loaded host makes single ones noisy)
    assert np.median(np.abs(after / meas - 1)) < 0.3
    # GATHER: a call per index (TFLite's kernel copies one slice each), at its own rate; costed per element moved
    # before, its 1-2 float slices read 10-20x faster than they ran.
    gathers = {k: v for k, v in everything.items() if k.startswith("gather")}
    g_meas = np.array([float(np.median(ms)) for _, ms in gathers.values()])
    g_before = np.array([float(np.median(predicted_ms(g, hw, "fp32"))) for g, _ in gathers.values()])
    g_after = np.array([float(np.median(predicted_ms(g, hw.with_overrides(o), "fp32"))) for g, _ in gathers.values()])
    assert 0.0 < o["units"]["cpu"]["efficiency"][GATHER_KEY] < 1.0
    # before, its cases were 10-20x under; after, their median error (in log) at most a third of that. These ops
    # run 0.1-0.7 ms: at load 12-16 one case's median moved 0.41 -> 0.72 ms between two runs of this test, and a
    # fixed 2x bound after the fit failed a clean clone's run at load 12-13, so the bound follows the miss before
    log_err = lambda pred: float(np.median(np.abs(np.log(pred / g_meas))))  # noqa: E731
    assert log_err(g_before) > np.log(4.0)
    assert log_err(g_after) < log_err(g_before) / 3
    # STRIDED_SLICE with a computed `end`: TFLite's reference kernel (an element per call), every case timed and at
    # its own rate, its cases' median within 2x after the fit (profiled 2.6-9 ns per element at load 10-13)
    slices = {k: v for k, v in everything.items() if k.startswith("slice")}
    for g, ms in slices.values():
        assert len(ms) == R - 1 and min(ms) > 0 and sum(n.op_type == "STRIDED_SLICE" for n in g.nodes) == R
    s_meas = np.array([float(np.median(ms)) for _, ms in slices.values()])
    s_after = np.array([float(np.median(predicted_ms(g, hw.with_overrides(o), "fp32")[1:])) for g, _ in slices.values()])
    assert 0.0 < o["units"]["cpu"]["efficiency"][SLICE_KEY] < 1.0
    assert float(np.median(np.abs(np.log(s_after / s_meas)))) < np.log(2.0)
    # PADV2: TFLite's own pad kernel, fp32 and int8 at one rate per output element, every case timed; fp32's with a
    # cost per output pixel fitted beside it (litert_signal.pad_fit), where its rate may reach the bound (on a Zen 4
    # the bytes priced its elements: 6.0, 2.3-2.7 ns per pixel)
    assert 0.0 < o["units"]["cpu"]["efficiency"][PAD_KEYS["int8"]] < 1.0
    assert 0.0 < o["units"]["cpu"]["efficiency"][PAD_KEYS["float32"]] <= EFF_MAX
    assert 0.0 <= o["units"]["cpu"]["kind_overhead_s"][PAD_CALL_KEYS["float32"]] < 1e-7
    assert all(len(everything[c.name][1]) == R - 1 and min(everything[c.name][1]) > 0 for c in PAD_CASES)


def test_the_rate_is_rfft2ds_only(tmp_path: Path) -> None:
    """The key names the op: an element-wise op beside it keeps its kind's rate."""
    w = TfliteWriter()
    x = w.tensor("x", [1, 64, 1, 256])
    y = w.tensor("y", [1, 64, 1, 129], "complex64")
    w.op("RFFT2D", [x, w.const("fft_length", np.array([1, 256], np.int32))], [y])
    z = w.tensor("z", [1, 64, 1, 256])
    w.op("ADD", [x, x], [z], w.options("AddOptions"))
    g = tflite.load(w.save(tmp_path / "two.tflite", [x], [y, z]))
    hw = load_profile("host-cpu", "litert-cpu")
    from simulator.sweep import sweep

    def ms(h):  # type: ignore[no-untyped-def]
        r = sweep(g, "litert-cpu/host", hardware=h, presets_only=("fp32",))
        j = [p["name"] for p in r.bulk["presets"]].index("fp32")
        return [row[j] for row in r.bulk["metrics"]["latency_ms"]]

    base, slow = ms(hw), ms(hw.with_overrides({"units": {"cpu": {"efficiency": {KEY: 1e-3}}}}))
    assert slow[0] > 10 * base[0] and slow[1] == pytest.approx(base[1])
