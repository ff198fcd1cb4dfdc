"""An ONNX file already quantized in QDQ form is predicted on the device targets as the quantized model it is
(simulator/qdq.py): its Q/DQ pairs inside the node units are no tasks, its as-uploaded state is int8-static, and it
agrees with the float file under the int8-static option. Models are built here and quantized with ORT's quantizer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontends import load
from compiler.vocabulary.targets import get_target
from simulator.qdq import qdq_preset, qdq_view
from simulator.sweep import native_preset

DEVICES = ("ort-qnn/snapdragon-8g3", "coreml/apple-a17", "ort-nnapi/pixel-8")


def _float_model(path: Path) -> Path:
    """conv (3->32, 3x3) -> Relu -> conv (32->32, 1x1) -> Relu -> GlobalAveragePool -> Flatten -> Gemm (32->10)."""
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1, name="fc")]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                          [init("w1", 32, 3, 3, 3), init("b1", 32), init("w2", 32, 32, 1, 1), init("b2", 32),
                           init("w3", 10, 32), init("b3", 10)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, path)
    return path


def _quantized(src: Path, out: Path, activation: str = "QUInt8") -> Path:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(1)
            self.it = iter([{"x": rng.random((1, 3, 64, 64), dtype=np.float32)} for _ in range(4)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    # ORT's recommended flow (as the MobileNetV2 check in the README): shape inference first, so the file holds
    # value_info for its tensors, which the exporter's records count too
    pre = out.with_suffix(".pre.onnx")
    quant_pre_process(str(src), str(pre))
    quantize_static(str(pre), str(out), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=getattr(QuantType, activation), weight_type=QuantType.QInt8, per_channel=True)
    return out


def _weights_only(src: Path, out: Path) -> Path:
    """The float model with its weights stored int8 behind DequantizeLinear, activations float."""
    m = onnx.load(src)
    inits = {i.name: i for i in m.graph.initializer}
    extra: list[onnx.NodeProto] = []
    for name in ("w1", "w2", "w3"):
        w = numpy_helper.to_array(inits[name])
        scale = float(np.abs(w).max() / 127)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        inits[name].CopyFrom(numpy_helper.from_array(q, name + "_q"))
        m.graph.initializer.extend([numpy_helper.from_array(np.array(scale, np.float32), name + "_s")])
        extra.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s"], [name], name=name + "_dq"))
    nodes = extra + list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    onnx.save(m, out)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("qdq")
    f = _float_model(d / "float.onnx")
    return {"float": f, "qdq": _quantized(f, d / "qdq.onnx"), "w8a16": _quantized(f, d / "w8a16.onnx", "QUInt16"),
            "weights": _weights_only(f, d / "weights.onnx")}


def test_the_stored_form_is_the_as_uploaded_preset(files: dict[str, Path]) -> None:
    # QNN's HTP runs int8 weights with float or 16-bit activations (its int8-dynamic); NNAPI's int8-dynamic is the CPU
    # EP's dynamic quantization, which such a file does not run: there it stays the float graph it is
    expect = {"float": (None, None), "qdq": ("int8-static", "int8-static"), "w8a16": ("int8-dynamic", None),
              "weights": ("int8-dynamic", None)}
    names = ("fp32", "int8-static", "int8-dynamic")
    qnn, nnapi, host = get_target("ort-qnn/snapdragon-8g3"), get_target("ort-nnapi/pixel-8"), get_target("ort-cpu/host")
    for name, (on_qnn, on_nnapi) in expect.items():
        g = load(files[name])
        assert (qdq_preset(g, qnn), qdq_preset(g, nnapi)) == (on_qnn, on_nnapi), name
        assert native_preset(qnn, g, names) == (on_qnn or "fp32")
        # ort-cpu/host measures the float graph (compiler.backends.ort.quantized_upload): the file is its int8-static,
        # a weights-only or w8a16 file its float graph (the CPU EP's int8-dynamic is dynamic quantization)
        assert native_preset(host, g, names) == ("int8-static" if name == "qdq" else "fp32"), name


def test_the_view_bypasses_every_activation_pair_and_keeps_the_nodes(files: dict[str, Path]) -> None:
    g = load(files["qdq"])
    view, fused = qdq_view(g, get_target("ort-qnn/snapdragon-8g3"))
    assert [n.id for n in view.nodes] == [n.id for n in g.nodes]
    qdq = {n.id for n in g.nodes if n.op_type in ("QuantizeLinear", "DequantizeLinear")}
    weight_dq = {n.id for n in g.nodes if n.op_type == "DequantizeLinear" and g.values[n.inputs[0]].weight is not None}
    assert fused == qdq - weight_dq and fused
    # the quantized ops read the float tensors of the float graph, and the graph output is the Gemm's
    by_name = {n.name: n for n in view.nodes}
    assert by_name["conv2"].inputs[0] in ("r1", "c1") and view.inputs == ["x"]
    assert view.outputs == by_name["fc"].outputs and g.outputs != view.outputs
    assert by_name["conv1"].inputs[0] == "x"
    assert qdq_view(load(files["float"]), get_target("ort-qnn/snapdragon-8g3"))[1] == frozenset()
    # a 16-bit pair stays two tasks where the runtime has no 16-bit kernels
    w8a16 = load(files["w8a16"])
    assert qdq_view(w8a16, get_target("ort-nnapi/pixel-8"))[1] == frozenset()
    assert qdq_view(w8a16, get_target("ort-qnn/snapdragon-8g3"))[1]


@pytest.mark.parametrize("target", DEVICES)
def test_a_qdq_file_predicts_as_the_float_file_under_int8_static(files: dict[str, Path], target: str,
                                                                  tmp_path: Path) -> None:
    from simulator.predict import AS_UPLOADED, predict_model

    ref, _, _ = predict_model(files["float"], target, "int8-static", {}, tmp_path / "a")
    got, _, _ = predict_model(files["qdq"], target, AS_UPLOADED, {}, tmp_path / "b")
    assert got["model_wide"] == "int8-static"
    assert got["totals"]["latency_ms"] == pytest.approx(ref["totals"]["latency_ms"], rel=0.10)
    rows = {r["name"]: r for r in got["ops"]}
    assert rows["conv1"]["combo"].startswith("int8/int8/int8") and rows["fc"]["combo"].startswith("int8/int8/int8")
    # Q / DQ of the node units cost nothing of their own beyond the model's input conversion (on its first reader)
    inner = [r for r in got["ops"] if r["type"] in ("QuantizeLinear", "DequantizeLinear") and "x" not in r["name"]]
    assert inner and all(r["latency_ms"] == 0 for r in inner)
    if get_target(target).export == "onnx":
        # as uploaded, the file's own size (a 7 KB file is mostly records, estimated: +7.5%; MobileNetV2's 3.9 MB
        # within 0.1%, README); its weights are read as stored, no float copy made at run time (before: +14 MB)
        assert got["totals"]["size_bytes"] == pytest.approx(files["qdq"].stat().st_size, rel=0.10)
        assert got["totals"]["peak_memory_bytes"] <= ref["totals"]["peak_memory_bytes"] * 1.1
    # under fp32 the file is its float graph (before this rule: that graph plus a task per Q / DQ, slower)
    fp32, _, _ = predict_model(files["float"], target, "fp32", {}, tmp_path / "c")
    restored, _, _ = predict_model(files["qdq"], target, "fp32", {}, tmp_path / "d")
    assert restored["totals"]["latency_ms"] == pytest.approx(fp32["totals"]["latency_ms"], rel=0.10)


def test_weights_only_and_w8a16_files_are_int8_weights(files: dict[str, Path], tmp_path: Path) -> None:
    from simulator.predict import AS_UPLOADED, predict_model

    for name in ("weights", "w8a16"):
        got, _, _ = predict_model(files[name], "ort-qnn/snapdragon-8g3", AS_UPLOADED, {}, tmp_path / name)
        assert got["model_wide"] == "int8-dynamic"
        assert {r["combo"].split("/")[2] for r in got["ops"] if r["name"] in ("conv1", "conv2", "fc")} == {"int8"}
