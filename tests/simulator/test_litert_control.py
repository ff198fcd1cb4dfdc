"""A TFLite IF's own cost per execution on LiteRT's CPU (simulator.litert_control): timed un-profiled (LiteRT's
profiler reads 72-80 us per IF, the whole un-profiled run ~0.5 us per IF), fitted through the sweep, charged per
execution of a TFLite IF / WHILE in place of ORT's six dispatches (1.3 us per IF here, 2x the case's time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from simulator.control_flow import control_dispatches
from simulator.litert_control import KEY, R, build, fit, measure, predicted_s
from simulator.profiles import load_profile


def test_the_if_case_fits_its_own_cost(tmp_path: Path, calibration_dir: Path) -> None:
    from simulator.calibration import load_or_calibrate

    a, b, ta, tb = measure(tmp_path, runs=1000, rounds=3)
    assert {n.op_type for n in a.nodes} == {"IF", "ADD"} and {n.op_type for n in b.nodes} == {"ADD"}
    per_if = (ta - tb) / R
    # LiteRT's IF is cheap when nobody profiles it: well under the 72-80 us its profiler reads per IF
    assert 0.05e-6 < per_if < 5e-6
    hw = load_or_calibrate(calibration_dir / "host-cpu.json")  # what with_litert fits it on: ORT's calibration
    before = predicted_s(a, hw) - predicted_s(b, hw)  # six dispatches of ORT's (0.22 us) and its own per IF
    o = fit(a, b, ta, tb, hw)
    s = o["units"]["cpu"]["kind_overhead_s"][KEY]
    assert 0.0 < s < 5e-6
    after = predicted_s(a, hw.with_overrides(o)) - predicted_s(b, hw)
    # the fitted cost brings the IFs' predicted share of the case to the measured one
    assert after == pytest.approx(ta - tb, rel=0.05)
    assert before > 1.3 * (ta - tb)  # measured 11.8 us for 16 IFs at load ~4, 24.5 us predicted before


def test_the_rule_charges_a_tflite_if_per_execution(tmp_path: Path) -> None:
    from simulator.sweep import sweep

    g = tflite.load(build(tmp_path / "ifs.tflite", True))
    ifs = [i for i, n in enumerate(g.nodes) if n.op_type == "IF"]
    execs = np.ones(len(g.nodes))
    execs[ifs[0]] = 3.0
    d, s = control_dispatches(g, execs, 1e-6)
    assert s[ifs[0]] == pytest.approx(3e-6) and s[ifs[1]] == pytest.approx(1e-6) and not d[ifs].any()
    d, s = control_dispatches(g, execs)  # uncalibrated: ORT's If's dispatches, per execution
    assert d[ifs[0]] == 3 * d[ifs[1]] > 0 and not s.any()
    hw = load_profile("host-cpu", "litert-cpu")

    def ms(h):  # type: ignore[no-untyped-def]
        r = sweep(g, "litert-cpu/host", hardware=h, presets_only=("fp32",))
        return np.array([row[0] for row in r.bulk["metrics"]["latency_ms"]])

    lo, hi = (ms(hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: v}}}})) for v in (0.0, 50e-6))
    assert hi[ifs] - lo[ifs] == pytest.approx(np.full(len(ifs), 0.05))  # 50 us per execution, on the IFs only
    others = [i for i in range(len(g.nodes)) if i not in ifs]
    assert hi[others] == pytest.approx(lo[others])


def _if_handing(tmp_path: Path, k: int) -> Path:
    """One IF on a true constant condition handing x and (k > 0) a constant of k floats to both branches."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter()
    x, c = w.tensor("x", [1, 16]), w.const("cond", np.ones(1, np.bool_))
    big = [w.const("W", np.ones(k, np.float32))] if k else []

    def branch(name: str, add: bool) -> int:
        def body(b: TfliteWriter) -> tuple[list[int], list[int]]:
            xi = b.tensor(f"{name}/x", [1, 16])
            ins = [xi, *([b.tensor(f"{name}/W", [k])] if k else [])]
            if not add:
                return ins, [xi]
            y = b.tensor(f"{name}/y", [1, 16])
            b.op("ADD", [xi, xi], [y], b.options("AddOptions"))
            return ins, [y]
        return w.subgraph(name, body)

    t, e = branch("then", True), branch("else", False)
    y = w.tensor("y", [1, 16])
    w.op("IF", [c, x, *big], [y], w.options("IfOptions", thenSubgraphIndex=t, elseSubgraphIndex=e))
    return w.save(tmp_path / f"if-{k}.tflite", [x], [y])


def test_an_if_hands_its_constants_on_without_reading_them(tmp_path: Path) -> None:
    """TFLite's IF hands a constant operand to its branch as it is: measured un-profiled, a 0.4 MB constant handed
    to both branches added 0.004-0.01 us per IF; read at the weights' rate, hey_jarvis's IF was charged ~6 us."""
    from simulator.sweep import sweep
    from simulator.tflite_ops import tflite_works

    hw = load_profile("host-cpu", "litert-cpu")
    got = {}
    for k in (0, 100_000):
        g = tflite.load(_if_handing(tmp_path, k))
        works, _, _ = tflite_works(g)
        w = works[[n.op_type for n in g.nodes].index("IF")]
        assert w.aux_weight_elements == 0.0 and sum(e for _, e in w.aux_weights) == k  # stored, not read
        r = sweep(g, "litert-cpu/host", hardware=hw, presets_only=("fp32",))
        got[k] = r.bulk["metrics"]["latency_ms"][[n.op_type for n in g.nodes].index("IF")][0]
    assert got[100_000] == pytest.approx(got[0], rel=0.01)
