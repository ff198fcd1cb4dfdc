"""LiteRT's data-movement operators at figures of their own (simulator.litert_layout): RESIZE_BILINEAR per output
element at `layout.fp32.RESIZE_BILINEAR`, TFLite's nearest resize a memcpy per output pixel, a CONCATENATION on the
channels a copy per pixel and input (`layout.interleave.*`), one on another axis a block per input; TRANSPOSE's own
figures: tests/unit/test_litert_transpose.py. Before, all took the ORT calibration's layout rate: a DBNet-like
detector's channel concatenation of two 736x736x1 maps 0.12 ms predicted, 2.25 profiled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from compiler.graph import Graph
from simulator import litert_layout
from simulator.litert_cases import predicted_ms
from simulator.litert_paths import CONCAT_CHANNELS, litert_task_facts
from simulator.profiles import CONCAT_INTERLEAVE, HardwareProfile, load_profile
from simulator.roofline import efficiency
from tests.simulator.helpers import task_ms

HOST = "litert-cpu/host"


def _head(path: Path) -> Path:
    """x [1, 32, 32, 8] -> RESIZE_NEAREST_NEIGHBOR x2 -> CONCATENATION with itself on the channels -> ADD ->
    TRANSPOSE to NCHW; and a CONCATENATION of two [1, 100, 4] on axis 1 (an SSD head's anchors)."""
    w = TfliteWriter(description="head")
    x = w.tensor("x", [1, 32, 32, 8])
    up = w.tensor("up", [1, 64, 64, 8])
    w.op("RESIZE_NEAREST_NEIGHBOR", [x, w.const("size", np.array([64, 64], np.int32))], [up],
         w.options("ResizeNearestNeighborOptions", alignCorners=False, halfPixelCenters=True))
    cat = w.tensor("cat", [1, 64, 64, 16])
    w.op("CONCATENATION", [up, up], [cat], w.options("ConcatenationOptions", axis=3))
    s = w.tensor("sum", [1, 64, 64, 16])
    w.op("ADD", [cat, cat], [s], w.options("AddOptions"))
    t = w.tensor("nchw", [1, 16, 64, 64])
    w.op("TRANSPOSE", [s, w.const("perm", np.array([0, 3, 1, 2], np.int32))], [t], w.options("TransposeOptions"))
    a = w.tensor("a", [1, 100, 4])
    anchors = w.tensor("anchors", [1, 200, 4])
    w.op("CONCATENATION", [a, a], [anchors], w.options("ConcatenationOptions", axis=1))
    return w.save(path, [x, a], [t, anchors])


def _ms(g: Graph, hw: HardwareProfile, preset: str) -> list[float]:
    return task_ms(g, HOST, hw, preset)


def test_each_op_takes_its_own_rate_where_calibrated(tmp_path: Path) -> None:
    g = tflite.load(_head(tmp_path / "head.tflite"))
    assert [n.op_type for n in g.nodes] == ["RESIZE_NEAREST_NEIGHBOR", "CONCATENATION", "ADD", "TRANSPOSE",
                                            "CONCATENATION"]
    # only the channel concatenation of a map is a copy per pixel and input
    assert [CONCAT_CHANNELS in f for f in litert_task_facts(g)] == [False, True, False, False, False]
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"kind_overhead_s": {
        "layout.fp32.run": 0.0}}}})
    eff = {litert_layout.KEYS["RESIZE_BILINEAR"]: 0.001, CONCAT_INTERLEAVE: efficiency(base.units[0], "layout", "fp32")}
    runs = {litert_layout.RUN_KEYS["CONCATENATION"]: 5e-9, litert_layout.RUN_KEYS["RESIZE_NEAREST_NEIGHBOR"]: 10e-9}
    cal = base.with_overrides({"units": {"cpu": {"efficiency": eff, "kind_overhead_s": runs}}})
    for preset in ("fp32", "fp16"):  # fp16 weights run fp32's kernels
        before, after = _ms(g, base, preset), _ms(g, cal, preset)
        assert after[0] - before[0] == pytest.approx(64 * 64 * 10e-6, rel=0.01)  # a memcpy per output pixel
        assert after[1] - before[1] == pytest.approx(64 * 64 * 2 * 5e-6, rel=0.01)  # per pixel and input
        assert after[2] == before[2]  # the ADD
        # the TRANSPOSE (its own figures not calibrated here): its 8 x 8 tiles' calls at the layout path's cost per run
        assert after[3] - before[3] == pytest.approx(64 * 64 * 16 / 64 * 10e-6, rel=0.01)
        assert after[4] - before[4] == pytest.approx(2 * 10e-6, abs=1e-9)  # the anchors: one block per input
    # Not calibrated (no `layout.interleave.CONCATENATION`): the channel concat's runs at the layout path's cost
    uncal = base.with_overrides({"units": {"cpu": {"kind_overhead_s": runs}}})
    assert _ms(g, uncal, "fp32")[1] - _ms(g, base, "fp32")[1] == pytest.approx(64 * 64 * 2 * 10e-6, rel=0.01)


def test_the_fit_recovers_a_rate_from_its_cases(tmp_path: Path) -> None:
    """Cases 'measured' at a known rate (their predictions at efficiency 0.004, one read 3x off): the median fit
    finds 0.004 again, where the layout rate predicted them 10x or more under."""
    base = load_profile("host-cpu", "litert-cpu")
    op = "RESIZE_BILINEAR"
    key = litert_layout.KEYS[op]
    true = base.with_overrides({"units": {"cpu": {"efficiency": {key: 0.004}}}})
    measured = {}
    for case in (c for c in litert_layout.CASES if c.op == op):
        g = tflite.load(litert_layout.build(case, tmp_path / f"{case.name}.tflite"))
        ms = predicted_ms(g, true, "fp32")
        measured[case.name] = (g, [ms[0] * 3, *ms[1:]])
    for g, ms in measured.values():
        assert float(np.median(predicted_ms(g, base, "fp32"))) < float(np.median(ms)) / 10
    eff = litert_layout.fit(measured, base)["units"]["cpu"]["efficiency"][key]
    assert eff == pytest.approx(0.004, rel=0.05)


@pytest.mark.parametrize("op", ["CONCATENATION", "RESIZE_NEAREST_NEIGHBOR"])
def test_the_fit_recovers_a_cost_per_run(tmp_path: Path, op: str) -> None:
    """Cases 'measured' at 3 ns per run copied (one case read 3x off): the fit finds 3 ns again."""
    base = load_profile("host-cpu", "litert-cpu")
    key = litert_layout.RUN_KEYS[op]
    cases = [c for c in litert_layout.CASES if c.op == op]
    graphs = {c.name: tflite.load(litert_layout.build(c, tmp_path / f"{c.name}.tflite")) for c in cases}
    zero = {key: 0.0} if op == "CONCATENATION" else {key: 0.0, litert_layout.RUN_KEYS["CONCATENATION"]: 0.0}
    eff = {litert_layout.KEYS[op]: efficiency(base.units[0], "layout", "fp32")}
    true = base.with_overrides({"units": {"cpu": {"efficiency": eff, "kind_overhead_s": {**zero, key: 3e-9}}}})
    measured = {name: (g, [m * (3 if name == cases[0].name else 1) for m in predicted_ms(g, true, "fp32")])
                for name, g in graphs.items()}
    o = litert_layout.fit(measured, base.with_overrides({"units": {"cpu": {"kind_overhead_s": zero}}}))
    assert o["units"]["cpu"]["kind_overhead_s"][key] == pytest.approx(3e-9, rel=0.02)


def test_litert_calibration_keeps_the_layout_figures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """with_litert keeps both halves of simulator.litert_layout's fit: its rate and its costs per run (LiteRT cache
    version 23 kept the rates only, and priced every channel concatenation at no cost per run)."""
    from compiler import speed_probe
    from simulator import litert_calibration, litert_control, litert_elementwise, litert_llc, litert_lut, litert_signal

    def none(*args: object, **kwargs: object) -> dict:
        return {"units": {"cpu": {"efficiency": {}, "kind_overhead_s": {}}}}

    layout = {"units": {"cpu": {"efficiency": {CONCAT_INTERLEAVE: 6.0, litert_layout.KEYS["RESIZE_BILINEAR"]: 0.2},
                                "kind_overhead_s": {k: 3e-9 for k in litert_layout.RUN_KEYS.values()}}}}
    monkeypatch.setattr(speed_probe, "probe", lambda: 100.0)
    monkeypatch.setattr(litert_calibration.platform, "platform", lambda: "test")  # uname: no process in this tier
    monkeypatch.setattr(litert_calibration, "measure", lambda tmp, progress: {})
    monkeypatch.setattr(litert_calibration, "fit", none)
    for mod in (litert_signal, litert_control, litert_lut, litert_llc):
        monkeypatch.setattr(mod, "calibrate", none)
    # the bandwidths of XNNPACK's transposes and fp32 element-wise ops are kept too (LiteRT cache version 25)
    bw = {"units": {"cpu": {"efficiency": {}, "kind_overhead_s": {},
                            "kind_bandwidth_bytes_per_s": {litert_elementwise.BW_KEY: 2e11}}}}
    monkeypatch.setattr(litert_elementwise, "calibrate", lambda *args, **kwargs: bw)
    layout["units"]["cpu"]["kind_bandwidth_bytes_per_s"] = {litert_layout.TRANSPOSE_BW: 1.5e11}
    monkeypatch.setattr(litert_layout, "calibrate", lambda *args, **kwargs: layout)
    u = litert_calibration.with_litert(load_profile("host-cpu"), tmp_path / "host-cpu.json").units[0]
    assert u.efficiency[CONCAT_INTERLEAVE] == 6.0 and u.efficiency[litert_layout.KEYS["RESIZE_BILINEAR"]] == 0.2
    assert all(u.kind_overhead_s[k] == 3e-9 for k in litert_layout.RUN_KEYS.values())
    assert u.kind_bandwidth_bytes_per_s == {litert_elementwise.BW_KEY: 2e11, litert_layout.TRANSPOSE_BW: 1.5e11}
