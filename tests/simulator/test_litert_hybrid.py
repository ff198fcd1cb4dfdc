"""TFLite's hybrid depthwise kernel right after XNNPACK's QD8 conv (simulator.litert_paths.DW_AFTER_GEMM): in a model
(MobileNetV2's expand -> depthwise) it ran ~3x its time in a chain of depthwise convs, so under dynamic int8 it pays a cost
per output element beside the chain's figures (`dwconv.hybrid.out`), fitted on the calibration's 1x1 conv + depthwise
conv cases with the chains."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from compiler.backends.litert_profiler import per_op_child
from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from simulator.litert_calibration import CASES, build, fit
from simulator.litert_cases import predicted_ms
from simulator.litert_paths import DW_AFTER_GEMM, litert_task_facts
from simulator.profiles import load_profile

HOST = "litert-cpu/host"


def _model(path: Path) -> Path:
    """x -> 1x1 conv -> dw -> dw; x -> 3x3 conv -> dw; x -> PAD -> dw, in that order."""
    w = TfliteWriter(description="dw after")
    c, h = 32, 14
    x = w.tensor("x", [1, h, h, c])

    def dw(name: str, src: int, shape: list[int]) -> int:
        y = w.tensor(name, [1, shape[1] - 2 * (shape[1] != h), shape[2] - 2 * (shape[2] != h), c])
        w.op("DEPTHWISE_CONV_2D", [src, w.const(name + "/w", np.full([1, 3, 3, c], 0.01, np.float32)),
                                   w.const(name + "/b", np.zeros(c, np.float32))], [y],
             w.options("DepthwiseConv2DOptions", padding=0 if shape[1] == h else 1, strideW=1, strideH=1,
                       depthMultiplier=1))
        return y

    pw = w.tensor("pw", [1, h, h, c])
    w.op("CONV_2D", [x, w.const("pw/w", np.full([c, 1, 1, c], 0.01, np.float32)), w.const("pw/b", np.zeros(c, np.float32))],
         [pw], w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    a = dw("dw_after_conv", pw, [1, h, h, c])
    b = dw("dw_after_dw", a, [1, h, h, c])
    c3 = w.tensor("c3", [1, h, h, c])
    w.op("CONV_2D", [x, w.const("c3/w", np.full([c, 3, 3, c], 0.01, np.float32)), w.const("c3/b", np.zeros(c, np.float32))],
         [c3], w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    d = dw("dw_after_3x3", c3, [1, h, h, c])
    padded = w.tensor("padded", [1, h + 2, h + 2, c])
    w.op("PAD", [x, w.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))], [padded])
    p = dw("dw_after_pad", padded, [1, h + 2, h + 2, c])
    return w.save(path, [x], [b, d, p])


def test_the_depthwise_convs_run_after_the_fully_connected_gemm_are_known(tmp_path: Path) -> None:
    """After a 1x1 stride-1 conv (XNNPACK's fully connected QD8 GEMM), with only depthwise convs (TFLite's) between:
    profiled, a second depthwise conv after the first was as slow; after a 3x3 conv (the indirect GEMM) or a PAD
    (XNNPACK's) they were not."""
    g = tflite.load(_model(tmp_path / "m.tflite"))
    after = {n.outputs[0]: DW_AFTER_GEMM in f for n, f in zip(g.nodes, litert_task_facts(g)) if n.op_type == "DEPTHWISE_CONV_2D"}
    assert after == {"dw_after_conv": True, "dw_after_dw": True, "dw_after_3x3": False, "dw_after_pad": False}


def test_only_dynamic_int8_and_only_where_calibrated(tmp_path: Path) -> None:
    """`dwconv.hybrid.out` prices the depthwise conv after the conv under dynamic int8 (TFLite's hybrid kernel); the
    other depthwise convs and the other options are left as they were, and a profile without the figure predicts
    the chain's time."""
    g = tflite.load(_model(tmp_path / "m.tflite"))
    ids = [n.outputs[0] for n in g.nodes][1:]
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"efficiency": {"dwconv.hybrid": 0.03}}}})
    slow = base.with_overrides({"units": {"cpu": {"kind_overhead_s": {"dwconv.hybrid.out": 3e-9}}}})
    for preset in ("fp32", "int8-static", "int4-weights"):
        assert predicted_ms(g, slow, preset) == predicted_ms(g, base, preset)
    before, after = predicted_ms(g, base, "int8-dynamic"), predicted_ms(g, slow, "int8-dynamic")
    changed = {i for i, b, a in zip(ids, before, after) if a != b}
    assert changed == {"dw_after_conv", "dw_after_dw"}
    # 14x14x32 outputs at 3 ns each: 0.019 ms more
    assert after[ids.index("dw_after_conv")] - before[ids.index("dw_after_conv")] == pytest.approx(14 * 14 * 32 * 3e-6)


def test_fit_recovers_the_figures_of_the_depthwise_conv_after_a_qd8_conv(tmp_path: Path) -> None:
    """The pairs' depthwise convs are fitted with the chains' (their 1x1 convs are another path's, NaN): together they
    pin the cost per output element after a QD8 conv apart from the chain's rate, setup and cost beyond the L2."""
    hw = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": float(1 << 20)}}})
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.hybrid": 0.03}, "kind_overhead_s": {
        "dwconv.hybrid": 4e-6, "dwconv.hybrid.spill": 1e-9, "dwconv.hybrid.out": 3e-9}}}})
    measured = {}
    # (the 3x3 ones: 5x5 cases fit the hybrid kernel's own 25-tap figures, tests/unit/test_litert_dw_tile25.py)
    for case in (c for c in CASES if c.op in ("CONV_DW", "DEPTHWISE_CONV_2D") and "dyn8" in c.forms and c.shape[2] == 3):
        g = tflite.load(build(case, "dyn8", tmp_path / f"{case.name}.tflite"))
        ms = [m if n.op_type == "DEPTHWISE_CONV_2D" else float("nan")
              for m, n in zip(predicted_ms(g, truth, "int8-dynamic"), g.nodes[1:])]
        measured[(case.name, "dyn8")] = (g, ms)
    assert sum(name.startswith("pwdw") for name, _ in measured) >= 3
    cpu = fit(measured, hw, 1 << 20)["units"]["cpu"]
    assert set(cpu["efficiency"]) == {"dwconv.hybrid"}
    assert cpu["efficiency"]["dwconv.hybrid"] == pytest.approx(0.03, rel=0.03)
    assert cpu["kind_overhead_s"]["dwconv.hybrid.out"] == pytest.approx(3e-9, rel=0.05)
    assert cpu["kind_overhead_s"]["dwconv.hybrid.spill"] == pytest.approx(1e-9, rel=0.05)
    assert cpu["kind_overhead_s"]["dwconv.hybrid"] == pytest.approx(4e-6, abs=1e-6)


def test_the_calibration_pairs_run_tflites_hybrid_kernel_after_xnnpacks_qd8_gemm(tmp_path: Path) -> None:
    """What the pairs time is what MobileNetV2's int8-dynamic file runs: XNNPACK's QD8 fully connected GEMM for the
    1x1 conv, TFLite's own DEPTHWISE_CONV_2D right after it."""
    case = next(c for c in CASES if c.op == "CONV_DW")
    path = build(case, "dyn8", tmp_path / f"{case.name}.tflite")
    g = tflite.load(path)
    r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 2})
    kernels = [r["kernels"][n.id][-1] for n in g.nodes]
    assert kernels[1::2] == ["TFLite DEPTHWISE_CONV_2D"] * 4
    assert all(re.fullmatch(r"Fully Connected \(NC, QDU?8, F32, QC8W\)( GEMM)?", k) for k in kernels[0::2]), kernels


@pytest.mark.parametrize("op", ["SQUARED_DIFFERENCE", "RSQRT"])
def test_int8_layernorm_ops_run_tflites_own_kernels_at_their_own_rates(tmp_path: Path, op: str) -> None:
    """Under static int8 XNNPACK takes neither op (convnext_atto's LayerNorms: `TFLite SQUARED_DIFFERENCE`, `TFLite
    RSQRT`); the calibration's chains run those kernels, and their fit recovers each op's own rate
    (`elementwise.builtin8.<op>`), which the other options and the other int8 element-wise ops do not use."""
    from simulator.roofline import efficiency

    cases = [c for c in CASES if c.op == op]
    assert cases and all(c.forms == ("static8",) for c in cases)
    path = build(cases[0], "static8", tmp_path / f"{cases[0].name}.tflite")
    r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 2})
    assert [k[-1] for k in r["kernels"].values()] == [f"TFLite {op}"] * 4
    hw = load_profile("host-cpu", "litert-cpu")
    key = f"elementwise.builtin8.{op}"
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {key: 0.002}, "kind_overhead_s": {key: 1e-6}}}})
    measured = {}
    for case in cases:
        g = tflite.load(build(case, "static8", tmp_path / f"{case.name}.tflite"))
        measured[(case.name, "static8")] = (g, predicted_ms(g, truth, "int8-static"))
        assert predicted_ms(g, truth, "int8-static") != predicted_ms(g, hw, "int8-static")
        assert predicted_ms(g, truth, "fp32") == predicted_ms(g, hw, "fp32")
    cpu = fit(measured, hw)["units"]["cpu"]
    assert set(cpu["efficiency"]) == {key} and cpu["efficiency"][key] == pytest.approx(0.002, rel=0.03)
    fitted = hw.with_overrides(fit(measured, hw))
    assert efficiency(fitted.units[0], "elementwise", "int8", "ADD") == efficiency(hw.units[0], "elementwise", "int8", "ADD")
