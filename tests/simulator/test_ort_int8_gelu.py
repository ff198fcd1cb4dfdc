"""Static int8 on ONNX Runtime's CPU: a Gelu (Div, Erf, Add, Mul, Mul, which the fp32 graph fuses into one Gelu) is
split by the QDQ file and its Add and Muls quantized: DequantizeLinear, Div and Erf in fp32, QuantizeLinear, QLinearAdd
and two QLinearMuls. Where calibration timed that split (`gelu-int8-*`: `elementwise.int8.Gelu`) the Gelu is one int8
task at that figure (simulator.backends._INT8_OWN_RATE); without it, the fp32 split between Q/DQ as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_fit import _fit_eff
from simulator.calibration_models import R, activation_chain, compile_for_host
from simulator.profiles import load_profile
from simulator.roofline import efficiency
from simulator.sweep import sweep
from simulator.totals import totals

HOST = get_target("ort-cpu/host")
INT8 = Combo("int8", "int8", "-", 0)
KEY = "elementwise.int8.Gelu"
BASE = load_profile("host-cpu")
CAL = BASE.with_overrides({"units": {"cpu": {"efficiency": {KEY: 0.004}}}})


def _task_ms(g: object, hw: object, preset: str) -> np.ndarray:
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=(preset,))
    j = [p["name"] for p in r.bulk["presets"]].index(preset)
    return np.array([float(row[j]) for row in r.bulk["metrics"]["latency_ms"]])


def test_a_gelu_takes_its_int8_figure_only_where_calibrated() -> None:
    split = plan(HOST, BASE, "Gelu", "elementwise", INT8, False, False)
    assert not split.supported and "5 kernels" in split.note  # the fp32 split between Q/DQ, as before
    p = plan(HOST, CAL, "Gelu", "elementwise", INT8, False, False)
    assert p.supported and p.resolved == INT8 and (p.compute, p.tag) == ("int8", "int8")
    assert "QLinear" in p.note
    assert efficiency(CAL.units[0], "elementwise", "int8", "Gelu") == 0.004
    # other element-wise ops keep their paths: a Div / Erf alone still has no uint8 kernel
    assert not plan(HOST, CAL, "Erf", "elementwise", INT8, False, False).supported


def test_the_case_runs_what_a_models_int8_gelu_runs(tmp_path: Path) -> None:
    """The case's int8-static file: per Gelu Div and Erf in fp32, a QLinearAdd and two QLinearMuls, no fused Gelu
    (ConvNeXt-V2-atto's int8 file: 12 Gelus, 12 Erf; its other Divs are GRN's)."""
    import onnx
    import onnxruntime as ort

    from compiler.optimize.onnx_export import export_onnx
    from simulator.calibration_bench import CASES

    case = next(c for c in CASES if c.name == "gelu-int8-1x262144")
    assert case.variants == (("int8-static", KEY),)
    q = export_onnx(case.build(tmp_path / "c.onnx"), tmp_path / "c.int8.onnx", "int8-static").path
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "c.opt.onnx")
    ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"])
    ops = [n.op_type for n in onnx.load(str(tmp_path / "c.opt.onnx")).graph.node]
    assert (ops.count("Div"), ops.count("Erf"), ops.count("QLinearAdd"), ops.count("QLinearMul")) == (R, R, R, 2 * R)
    assert "Gelu" not in ops


def test_the_figure_prices_int8_only_and_the_fit_reads_it_back(tmp_path: Path) -> None:
    g = compile_for_host(activation_chain("gelu", 65536, tmp_path / "g.onnx"), tmp_path / "g.opt.onnx")
    assert [n.op_type for n in g.nodes].count("Gelu") == R
    for preset in ("fp32", "fp16"):
        assert _task_ms(g, CAL, preset) == pytest.approx(_task_ms(g, BASE, preset))
    assert not np.allclose(_task_ms(g, CAL, "int8-static"), _task_ms(g, BASE, "int8-static"))
    r = sweep(g, "ort-cpu/host", hardware=CAL, presets_only=("int8-static",))
    ms = float(totals(r.bulk, r.per_op, "int8-static", {})["latency_ms"]) - BASE.units[0].run_overhead_s * 1e3
    assert _fit_eff(g, BASE, "int8-static", KEY, ms) == pytest.approx(0.004, rel=2e-3)


@pytest.mark.parametrize(("op_type", "kind"), [("SkipLayerNormalization", "skipnorm"), ("Gelu", "elementwise")])
def test_a_fusion_int8_breaks_does_not_keep_its_measured_fp32_time(op_type: str, kind: str) -> None:
    """The fused kernel measured in the fp32 profile does not run in the int8 file: its int8 cell is predicted (and
    scaled by the in-model factor), not the measured fp32 time (the causal decoder's SkipLayerNormalizations)."""
    fp32 = plan(HOST, BASE, op_type, kind, Combo("fp32", "fp32", "-", 0), False, False)
    assert fp32.fp32_equivalent
    q = plan(HOST, BASE, op_type, kind, INT8, False, False)
    assert not q.supported and not q.fp32_equivalent
