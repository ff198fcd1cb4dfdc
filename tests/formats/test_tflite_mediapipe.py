"""MediaPipe's custom operators that XNNPACK runs (compiler.frontends.tflite_custom): read with their options, counted
and priced as the builtin each runs as, run by LiteRT as they are and timed as XNNPACK's operators."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import backends
from compiler.frontends import tflite
from compiler.graph import Graph, Node
from compiler.profile import ProfileSettings
from simulator.calibrated import hardware_for
from simulator.costs import Work
from simulator.litert_cases import TARGET, predicted_ms
from simulator.tflite_ops import tflite_works
from testkit import tflite_builder as tb
from testkit.live import QUICK_ROUNDS


def _by_op(g: Graph, works: list[Work], op: str) -> tuple[Node, Work]:
    i = next(k for k, n in enumerate(g.nodes) if n.op_type == op)
    return g.nodes[i], works[i]


def test_custom_ops_read_and_counted_as_the_builtin_they_run_as(tmp_path: Path) -> None:
    g = tflite.load(tb.mediapipe_ops(tmp_path / "mp.tflite"))
    twin = tflite.load(tb.mediapipe_ops(tmp_path / "builtin.tflite", builtin=True))
    works, twin_works = tflite_works(g)[0], tflite_works(twin)[0]
    deconv, dw = _by_op(g, works, "Convolution2DTransposeBias")
    assert deconv.attributes.items() >= {"runs_as": "TRANSPOSE_CONV", "padding": "VALID", "stride_w": 2,
                                         "stride_h": 2}.items()
    _, tw = _by_op(twin, twin_works, "TRANSPOSE_CONV")
    assert dw.kind == tw.kind == "conv" and dw.macs == tw.macs == 32 * 32 * 16 * (8 * 2 * 2)
    pool, pw = _by_op(g, works, "MaxPoolingWithArgmax2D")
    assert pool.attributes["runs_as"] == "MAX_POOL_2D" and pool.attributes["filter_width"] == 2
    _, tpw = _by_op(twin, twin_works, "MAX_POOL_2D")
    assert pw.kind == tpw.kind == "pool" and pw.flops == tpw.flops == 16 * 16 * 16 * 4
    unpool, uw = _by_op(g, works, "MaxUnpooling2D")
    assert "runs_as" not in unpool.attributes and unpool.attributes["filter_height"] == 2
    assert uw.kind == "layout" and uw.flops == 32 * 32 * 16


def test_custom_deconvolution_priced_as_xnnpack_deconvolution(tmp_path: Path, calibration_dir: Path) -> None:
    hw = hardware_for(TARGET, calibration_dir / "host-cpu.json")
    g = tflite.load(tb.mediapipe_ops(tmp_path / "mp.tflite"))
    twin = tflite.load(tb.mediapipe_ops(tmp_path / "builtin.tflite", builtin=True))
    ms, twin_ms = predicted_ms(g, hw, "fp32"), predicted_ms(twin, hw, "fp32")
    # operators 1..: the custom file's deconvolution is its fourth operator, the twin's its third
    assert twin_ms[1] > 0.0 and ms[2] == pytest.approx(twin_ms[1], rel=1e-3)


def test_custom_ops_run_in_litert_and_are_timed_as_xnnpack_operators(tmp_path: Path) -> None:
    path = tb.mediapipe_ops(tmp_path / "mp.tflite")
    backend = backends.for_target("litert-cpu/host")
    compiled, out = backend.compile(path, tmp_path, tflite.load(path))
    assert out is not None and Path(out).read_bytes() == path.read_bytes()  # run as it is: nothing stood in
    prof = backend.profile(out, ProfileSettings(runs=5, warmup=1, **QUICK_ROUNDS))
    assert "without custom operator" not in prof.runtime
    assert prof.kernels["Convolution2DTransposeBias_3"] == ["Deconvolution (NHWC, F32) Subconv2D"]
    assert prof.kernels["MaxPoolingWithArgmax2D_1"] == ["ArgMax Pooling (NHWC, F32)"]
    assert prof.kernels["MaxUnpooling2D_2"] == ["Unpooling (NHWC, X32)"]
    assert prof.kernels["CONV_2D_0"] == ["Convolution (NHWC, F32) IGEMM"]
    assert prof.tasks["Convolution2DTransposeBias_3"].median_ms > 0.0


def test_per_op_table_offers_a_custom_op_float_only(tmp_path: Path) -> None:
    """ai-edge-quantizer has no recipe for a custom operator: a per-op override cannot quantize it, while the
    builtin twin's deconvolution takes every recipe the quantizer has."""
    from compiler.vocabulary.options import all_combos, parse_preset
    from simulator.costs import takes_kernel_option
    from simulator.exportable import mark_tflite

    for builtin, op in ((False, "Convolution2DTransposeBias"), (True, "TRANSPOSE_CONV")):
        g = tflite.load(tb.mediapipe_ops(tmp_path / f"{op}.tflite", builtin=builtin))
        works = tflite_works(g)[0]
        masks = mark_tflite(works, [parse_preset("int8-dynamic")], {}, g)
        i = next(k for k, n in enumerate(g.nodes) if n.op_type == op)
        offered = {(c.input, c.kernel) for c, ok in zip(all_combos(takes_kernel_option(works[i])), masks[i]) if ok}
        assert ("fp32", "fp32") in offered
        assert (("fp32", "int8") in offered) is builtin and (("int8", "int8") in offered) is builtin


@pytest.mark.parametrize("option", ["int8-dynamic", "fp16", "int8-static"])
def test_exports_of_custom_ops_keep_them_float_as_predicted(tmp_path: Path, calibration_dir: Path,
                                                           option: str) -> None:
    """The written file's size is the predicted one: the custom deconvolution's weights stay float32 (before, its
    kernel was sized as quantized: int8-dynamic predicted a third of the file)."""
    from compiler.frontends.tflite_custom import CUSTOM
    from simulator.predict import optimize_model

    src = tb.mediapipe_ops(tmp_path / "mp.tflite", width=128)
    (tmp_path / "w").mkdir()
    out = tmp_path / f"mp-{option}.tflite"
    r = optimize_model(src, out, "litert-cpu/host", option, {}, tmp_path / "w", calibration_dir / "host-cpu.json")
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"], r["size_bytes"])
    written = tflite.load(out)
    deconv = next(n for n in written.nodes if n.op_type == "Convolution2DTransposeBias")
    assert deconv.attributes[CUSTOM] and written.values[deconv.inputs[1]].dtype == "float32"


def test_a_per_op_override_quantizing_a_custom_op_is_refused(tmp_path: Path) -> None:
    """Refused in one sentence before anything is written (ai-edge-quantizer would write it float, unlike the
    override's prediction); an override keeping it float exports."""
    from compiler.errors import ModelRunError
    from compiler.optimize.litert_export import export_tflite

    src = tb.mediapipe_ops(tmp_path / "mp.tflite")
    out = tmp_path / "mp-op.tflite"
    with pytest.raises(ModelRunError, match="Convolution2DTransposeBias_3 is a custom operator"):
        export_tflite(src, out, "fp32", {"Convolution2DTransposeBias_3": "int8-dynamic"})
    assert not out.exists()
    assert export_tflite(src, out, "int8-dynamic", {"Convolution2DTransposeBias_3": "fp32"}).size_bytes > 0
