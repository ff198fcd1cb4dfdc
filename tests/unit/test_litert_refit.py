"""benchmarks/litert_refit.py: a LiteRT half brought to this CACHE_VERSION by fitting only the TRANSPOSE cases anew
(LiteRT's cache stores no timings to refit the rest on): the other figures stay as they were, the version and the
cases' timings are recorded, and the fit finds the figures the cases were 'timed' at."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.litert_refit import refit
from compiler.frontends import tflite
from simulator import litert_layout
from simulator.litert_calibration import CACHE_VERSION
from simulator.litert_cases import predicted_ms
from simulator.profiles import XNN_TRANSPOSE_KEY, load_profile
from simulator.roofline import efficiency


def test_a_refit_fits_the_transposes_anew_and_keeps_every_other_figure(tmp_path: Path) -> None:
    host = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": 1048576.0}}})
    keep = 12e6
    old = {"version": CACHE_VERSION - 1, "litert": "2.3.0", "machine": "m", "speed_probe": {"before_gflops": 100.0},
           "overrides": {"units": {"cpu": {
               "efficiency": {"conv.fp32": 1.25}, "kind_overhead_s": {"conv.builtin": 4e-5,
                                                                     litert_layout.TRANSPOSE_RUN: 9e-9},
               "llc_keep_bytes": keep, "llc_gone_bytes": 4 * keep}}}}
    figures = {litert_layout.TRANSPOSE_RUN: 1.3e-9, litert_layout.TRANSPOSE_FAR: 2.8e-11,
               litert_layout.TRANSPOSE_FARMEM: 3.5e-10}
    true = host.with_overrides({"units": {"cpu": {
        "llc_keep_bytes": keep, "llc_gone_bytes": 4 * keep,
        "efficiency": {XNN_TRANSPOSE_KEY: efficiency(host.units[0], "layout", "fp32")}, "kind_overhead_s": figures,
        "kind_bandwidth_bytes_per_s": {litert_layout.TRANSPOSE_BW: 1e11}}}})
    timed = {}
    for c in (c for c in litert_layout.CASES if c.op == "TRANSPOSE"):
        timed[c.name] = predicted_ms(tflite.load(litert_layout.build(c, tmp_path / f"{c.name}.tflite")), true, "fp32")
    new = refit(old, host, None, None, {"timed_now": timed,
                                        "timed_now_probe": {"before_gflops": 109.9, "after_gflops": 107.5}})
    cpu = new["overrides"]["units"]["cpu"]
    assert new["version"] == CACHE_VERSION and new["speed_probe"] == old["speed_probe"]  # the other rates' moment
    assert new["timed_now"] == timed and new["timed_now_probe"]["before_gflops"] == 109.9
    assert cpu["efficiency"]["conv.fp32"] == 1.25 and cpu["kind_overhead_s"]["conv.builtin"] == 4e-5
    assert cpu["llc_keep_bytes"] == keep
    for key, value in figures.items():
        assert cpu["kind_overhead_s"][key] == pytest.approx(value, rel=0.05), key
    assert cpu["kind_bandwidth_bytes_per_s"][litert_layout.TRANSPOSE_BW] == pytest.approx(1e11, rel=0.05)
    assert old["overrides"]["units"]["cpu"]["kind_overhead_s"][litert_layout.TRANSPOSE_RUN] == 9e-9  # not mutated
