"""Dynamic int8 on ONNX Runtime's CPU: the kernels quantize_dynamic adds around a ConvInteger (DynamicQuantizeLinear
before; Cast, Mul by the scale, Add of the bias, the unfused activation after) are fp32 element-wise kernels: the
quantization's two passes priced at the fp32 element-wise rate per input element beside their bytes, the passes after
the ConvInteger by their bytes (simulator.backends._dynamic_int8_kernel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import load_profile
from simulator.roofline import efficiency, rates

HOST = get_target("ort-cpu/host")
DYNAMIC = Combo("fp32", "fp32", "int8", 0)


def test_side_kernels_cost_their_ops_at_the_fp32_elementwise_rate() -> None:
    hw = load_profile("host-cpu")
    u = hw.units[0]
    per_op = 1 / (u.peak_ops_per_s["fp32"] * efficiency(u, "elementwise", "fp32"))
    for kind, fused in (("conv", False), ("conv", True), ("dwconv", True), ("gemm", False)):
        out_ops = 0.0  # the passes after a ConvInteger: their bytes alone
        p = plan(HOST, hw, "Conv" if kind != "gemm" else "Gemm", kind, DYNAMIC, True, fused)
        assert p.tag == "int8dyn" and p.compute == "int8"
        assert (p.extra_ops_per_out, p.extra_ops_per_in, p.extra_ops_format) == (out_ops, 2.0, "fp32"), p
        r = rates(hw, p, kind, True)
        # fp32's element-wise rate, not the int8 peak's (4x the ops per second here): the quantization is fp32 work.
        assert float(r.extra_ops_s) == pytest.approx(out_ops * per_op)
        assert float(r.extra_in_ops_s) == pytest.approx(2.0 * per_op)


def test_the_dynamic_file_runs_those_kernels(tmp_path: Path) -> None:
    """The premise, in ORT itself: a dynamic int8 Conv + Relu runs DynamicQuantizeLinear, ConvInteger and fp32 Cast /
    Mul / Add / Relu kernels (no fusion into the integer kernel)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from compiler.optimize.onnx_export import export_onnx

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(32) * 0.1).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 28, 28])], [w, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "c.onnx")
    q = export_onnx(tmp_path / "c.onnx", tmp_path / "c.dyn.onnx", "int8-dynamic").path
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "c.dyn.opt.onnx")
    ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"])
    ops = sorted(n.op_type for n in onnx.load(str(tmp_path / "c.dyn.opt.onnx")).graph.node)
    for op in ("DynamicQuantizeLinear", "ConvInteger", "Cast", "Add", "Relu"):
        assert op in ops, ops
    assert ops.count("Mul") >= 1, ops


def test_5x5_depthwise_cases_fit_the_dynamic_depthwise_path(tmp_path: Path) -> None:
    """Calibration times 5x5 depthwise chains under int8-dynamic (their im2col has 25 taps a pixel, which the 3x3
    cases cannot tell from the per-pixel costs): the compiled chain's tasks are depthwise Convs with 5x5 kernels."""
    from simulator.calibration_bench import CASES, compile_for_host
    from simulator.costs import kernel_value, kind_of

    cases = [c for c in CASES if c.kind == "dwconv" and c.name.endswith("-5x5") and "shared" not in c.name
             and ("int8-dynamic", "int8dyn") in c.variants]  # fp32 has 5x5 depthwise cases of its own
    assert len(cases) >= 2 and all(c.variants == (("int8-dynamic", "int8dyn"),) for c in cases)
    g = compile_for_host(cases[0].build(tmp_path / "c.onnx"), tmp_path / "c.opt.onnx")
    convs = [n for n in g.nodes if n.op_type in ("Conv", "FusedConv")]
    assert len(convs) == 8 and all(kind_of(n, g) == "dwconv" for n in convs)
    assert all((k := kernel_value(n, g)) is not None and list(k.shape)[2:] == [5, 5] for n in convs)
