"""Dynamic int8 Convs on ONNX Runtime's CPU as MLAS runs them: ConvInteger has no pre-packed weights, and QGEMM packs
its A operand (the weights) again for every 256 output pixels (simulator.roofline.QGEMM_STRIDE_N); a stride-2
ConvInteger gathers its im2col buffer element by element, at a figure calibration fits on stride-2 cases of its own
(`<kind>.int8dyn.im2col.strided`). Integration tier: the graphs are compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.profiles import load_profile

HW = load_profile("host-cpu")
KEY = "conv.int8dyn"


def _conv_graph(tmp_path: Path, name: str, c: int, hw: int, stride: int = 1):  # -> Graph
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from simulator.calibration_bench import compile_for_host

    o = (hw + 2 - 3) // stride + 1
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) * 0.05).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(c, np.float32), "b")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[stride] * 2)],
                          name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, o, o])], [w, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / f"{name}.onnx")
    return compile_for_host(tmp_path / f"{name}.onnx", tmp_path / f"{name}.opt.onnx")


def _cost_of(g, sub: str, value: float) -> float:  # noqa: ANN001
    """What `value` s per unit of the figure `sub` adds to g's int8-dynamic prediction (ms)."""
    from simulator.calibration_fit import _predict_ms

    h0, h1 = (HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {sub: v}}}}) for v in (0.0, value))
    return _predict_ms(g, h1, "int8-dynamic") - _predict_ms(g, h0, "int8-dynamic")


def test_weights_are_packed_once_per_256_output_pixels(tmp_path: Path) -> None:
    """64 -> 64 3x3 weights (36864) at 56x56 (3136 pixels: 13 panels of 256 columns) and at 7x7 (49: one): the same
    weights, 13 times the packing; fp32 has no such figure."""
    big, small = _conv_graph(tmp_path, "big", 64, 56), _conv_graph(tmp_path, "small", 64, 7)
    per_weight = 1e-9
    assert _cost_of(small, KEY + ".weights", per_weight) == pytest.approx(64 * 64 * 9 * per_weight * 1e3, rel=1e-6)
    assert _cost_of(big, KEY + ".weights", per_weight) == pytest.approx(13 * 64 * 64 * 9 * per_weight * 1e3, rel=1e-6)
    from simulator.calibration_fit import _predict_ms

    h = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY + ".weights": per_weight}}}})
    assert _predict_ms(big, h, "fp32") == pytest.approx(_predict_ms(big, HW, "fp32"))


def test_a_strided_conv_pays_the_strided_figure_on_its_whole_buffer(tmp_path: Path) -> None:
    """64 -> 64 3x3 at stride 2 on 56x56: a 576 x 784 im2col buffer, each element gathered; at stride 1 none."""
    s2, s1 = _conv_graph(tmp_path, "s2", 64, 56, stride=2), _conv_graph(tmp_path, "s1", 64, 28)
    per_element = 1e-10
    assert _cost_of(s2, KEY + ".im2col.strided", per_element) == pytest.approx(576 * 784 * per_element * 1e3,
                                                                                rel=1e-6)
    assert _cost_of(s1, KEY + ".im2col.strided", per_element) == 0.0


def test_calibration_times_stride2_dynamic_convs_each_with_its_own_quantization(tmp_path: Path) -> None:
    """The stride-2 cases (depthwise and dense) are side by side on inputs of their own, so each ConvInteger of the
    exported file has its own DynamicQuantizeLinear, as the prediction charges it; their paths fit the strided
    figure (calibration_fit._STRIDED_FITTED)."""
    import onnx

    from compiler.optimize.onnx_export import export_onnx
    from simulator import calibration_bench, calibration_fit

    cases = [c for c in calibration_bench.CASES if c.name.endswith("-s2") and ("int8-dynamic", "int8dyn") in c.variants]
    assert {c.kind for c in cases} == {"dwconv", "conv"}
    assert {f"{c.kind}.int8dyn" for c in cases} <= calibration_fit._STRIDED_FITTED
    c = min(cases, key=lambda c: c.name)
    src = c.build(tmp_path / "c.onnx")
    q = onnx.load(str(export_onnx(src, tmp_path / "c.dyn.onnx", "int8-dynamic").path))
    ops = [n.op_type for n in q.graph.node]
    assert ops.count("ConvInteger") == ops.count("DynamicQuantizeLinear") == len(q.graph.input) >= 2
    convs = [n for n in onnx.load(str(src)).graph.node if n.op_type == "Conv"]
    assert all([a.ints for a in n.attribute if a.name == "strides"] == [[2, 2]] for n in convs)


def test_calibration_recovers_the_strided_figure_of_dynamic_convs(tmp_path: Path) -> None:
    """Fitted on timings made by known figures, the dense path's strided cost comes back, beside its other figures."""
    from simulator import calibration_bench, calibration_fit

    cases = [c for c in calibration_bench.CASES if c.kind == "conv" and ("int8-dynamic", "int8dyn") in c.variants]
    assert any(c.name.endswith("-s2") for c in cases)
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {KEY: 1.0}, "kind_overhead_s": {
        KEY + ".im2col": 1.5e-10, KEY + ".weights": 6e-10, KEY + ".im2col.strided": 4e-10}}}})
    measured = [(g, "int8-dynamic", calibration_fit._predict_ms(g, truth, "int8-dynamic")) for g in graphs]
    _, s = calibration_fit._fit_eff_setup(measured, HW, KEY)
    assert s[KEY + ".im2col.strided"] == pytest.approx(4e-10, rel=0.25)
    assert s[KEY + ".weights"] == pytest.approx(6e-10, rel=0.25)
