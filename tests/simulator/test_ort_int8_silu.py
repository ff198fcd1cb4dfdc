"""Static int8 on ONNX Runtime's CPU: a SiLU (x * Sigmoid(x)), which the fp32 graph fuses into QuickGelu, runs on
uint8 in the int8 file (QLinearSigmoid + QLinearMul), not as float between DequantizeLinear and QuantizeLinear, at its
own calibrated rate (simulator.backends._INT8_ELEMENTWISE, calibration case quickgelu-1x262144)."""

from __future__ import annotations

from pathlib import Path

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import load_profile
from simulator.roofline import efficiency

HOST = get_target("ort-cpu/host")
INT8 = Combo("int8", "int8", "-", 0)


def test_a_silu_runs_int8_at_its_own_rate() -> None:
    hw = load_profile("host-cpu")
    p = plan(HOST, hw, "QuickGelu", "elementwise", INT8, False, False)
    assert p.supported and p.resolved == INT8 and (p.compute, p.tag) == ("int8", "int8")
    u = hw.units[0]
    fitted = hw.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.int8.QuickGelu": 0.5}}}}).units[0]
    assert efficiency(fitted, "elementwise", "int8", "QuickGelu") == 0.5
    assert efficiency(u, "elementwise", "int8", "QuickGelu") == efficiency(u, "elementwise", "int8")
    # A Gelu still has no uint8 kernel: float between Q / DQ (the int8 combo falls back).
    assert not plan(HOST, hw, "Gelu", "elementwise", INT8, False, False).supported


def test_calibration_fits_it_on_the_int8_file_of_a_silu_chain(tmp_path: Path) -> None:
    """The case's int8-static file runs what the models' do: QLinearSigmoid and QLinearMul, no float Sigmoid."""
    import onnx
    import onnxruntime as ort

    from compiler.optimize.onnx_export import export_onnx
    from simulator.calibration_bench import CASES

    case = next(c for c in CASES if c.name == "quickgelu-1x262144")
    assert ("int8-static", "elementwise.int8.QuickGelu") in case.variants
    q = export_onnx(case.build(tmp_path / "c.onnx"), tmp_path / "c.int8.onnx", "int8-static").path
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "c.opt.onnx")
    ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"])
    ops = [n.op_type for n in onnx.load(str(tmp_path / "c.opt.onnx")).graph.node]
    assert ops.count("QLinearSigmoid") == 8 and ops.count("QLinearMul") == 8, ops
    assert "Sigmoid" not in ops and "QuickGelu" not in ops
