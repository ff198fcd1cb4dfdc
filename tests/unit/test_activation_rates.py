"""Ops with kernels of their own (activations, LRN): an op's calibrated rate (`elementwise.fp32.<op>`) before the
kind's; and every calibration case of such a rate (an op's or a kind's: resize, walk) fits a figure its tasks read."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.graph import Node
from simulator.calibration_bench import CASES, compile_for_host
from simulator.calibration_fit import _fit_eff, _predict_ms
from simulator.costs import kind_of
from simulator.profiles import load_profile
from simulator.roofline import efficiency
from simulator.sweep import sweep
from tests.simulator.helpers import act, graph

N = 1 << 20  # elements: compute-bound at either rate, well past the dispatch cost


def _two_activations():
    g = graph([Node("sw", "sw", "QuickGelu", inputs=["x"], outputs=["a"]),
               Node("sg", "sg", "Sigmoid", inputs=["a"], outputs=["y"])],
              [act("x", [1, N]), act("a", [1, N]), act("y", [1, N])], ["x"], ["y"])
    return g


def _fp32_ms(g, hw) -> dict[str, float]:  # type: ignore[no-untyped-def]
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32",))
    j = [p["name"] for p in r.bulk["presets"]].index("fp32")
    return {op: float(r.bulk["metrics"]["latency_ms"][i][j]) for i, op in enumerate(r.bulk["ops"])}


def test_an_ops_own_rate_comes_before_its_kinds() -> None:
    base = load_profile("host-cpu")
    hw = base.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.fp32": 0.1,
                                                               "elementwise.fp32.QuickGelu": 0.4}}}})
    u = hw.units[0]
    assert efficiency(u, "elementwise", "fp32", "QuickGelu") == 0.4
    assert efficiency(u, "elementwise", "fp32", "Sigmoid") == efficiency(u, "elementwise", "fp32") == 0.1
    assert efficiency(u, "elementwise", "cast16", "QuickGelu") == 0.4  # fp16 through casts: the fp32 kernel
    g = _two_activations()
    kind_only = _fp32_ms(g, base.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.fp32": 0.1}}}}))
    own = _fp32_ms(g, hw)
    # The fused x * Sigmoid(x) at its own rate (4x the kind's here); Sigmoid keeps the kind's.
    assert own["sg"] == pytest.approx(kind_only["sg"])
    assert own["sw"] < 0.5 * kind_only["sw"]


@pytest.mark.parametrize("name", ["quickgelu-1x262144", "gelu-1x262144", "hardsigmoid-1x262144", "tanh-1x262144",
                                  "softplus-1x65536",
                                  "lrn-64x28", "reducel2-40x56", "resize-linear-1024x7", "nearest-32x40-by3",
                                  "transpose-walk-196x128"])
def test_each_own_rate_case_fits_a_figure_its_tasks_read(name: str, tmp_path: Path) -> None:
    # A case whose key its compiled tasks do not read (an op ORT renamed, a kind other than the key's) would fit
    # nothing: the bisection would run to a bound while the prediction stayed put.
    case = next(c for c in CASES if c.name == name)
    g = compile_for_host(case.build(tmp_path / "c.onnx"), tmp_path / "c.opt.onnx")
    key = case.variants[0][1]
    kind, _, op = (key.split(".", 2) + [""])[:3]  # kind.fp32 (a kind's own rate) or kind.fp32.Op (an op's)
    assert {kind_of(n, g) for n in g.nodes} == {kind}
    if op:
        assert {n.op_type for n in g.nodes} == {op}
    hw = load_profile("host-cpu")
    pred = _predict_ms(g, hw, "fp32")
    eff = _fit_eff(g, hw, "fp32", key, 3 * pred)
    assert _predict_ms(g, hw.with_overrides({"units": {"cpu": {"efficiency": {key: eff}}}}), "fp32") == \
        pytest.approx(3 * pred, rel=0.02)
