"""TFLite frontend (flatbuffer reader without TensorFlow) and the LiteRT CPU backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler import backends, frontends
from compiler.errors import InputSpecError, ModelRunError, SandboxError
from compiler.frontends import tflite
from compiler.graph import ModelFormatError
from compiler.profile import ProfileSettings
from testkit import tflite_builder as tb
from testkit.live import QUICK_ROUNDS


@pytest.fixture(scope="session")
def cnn(models) -> Path:
    return models.get("cnn.tflite", tb.cnn)


@pytest.fixture(scope="session")
def block(models) -> Path:
    return models.get("block.tflite", tb.transformer_block)


def _tiny(path: Path, mutate=None) -> Path:
    """ADD of an input and a constant; `mutate(writer)` corrupts it before writing."""
    w = tb.TfliteWriter()
    x = w.tensor("x", [1, 4])
    c = w.const("c", np.ones((1, 4), np.float32))
    y = w.tensor("y", [1, 4])
    w.op("ADD", [x, c], [y], w.options("AddOptions"))
    if mutate:
        mutate(w)
    return w.save(path, [x], [y])


# -- frontend -----------------------------------------------------------------------------------

def test_cnn_ops_namespaces_weights(cnn: Path) -> None:
    g = frontends.load(cnn)
    assert g.format == "tflite"
    assert [n.op_type for n in g.nodes] == ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "ADD", "MEAN",
                                            "DEQUANTIZE", "FULLY_CONNECTED"]
    assert [n.id for n in g.nodes][:2] == ["CONV_2D_0", "DEPTHWISE_CONV_2D_1"]
    conv = g.nodes[0]
    assert conv.namespace == "net/stem/conv"
    assert conv.attributes["stride_h"] == 2 and conv.attributes["fused_activation_function"] == "RELU6"
    assert conv.attributes["padding"] == "SAME"
    assert g.inputs == ["input"] and g.outputs == ["logits"]
    assert g.values["input"].shape == [1, 32, 32, 3] and g.values["input"].dtype == "float32"
    w = g.values["net/stem/conv/weights"]
    assert w.shape == [16, 3, 3, 3] and w.weight is not None and w.weight.elements == 16 * 27
    assert w.weight.bytes == 16 * 27 * 4 and w.weight.min < 0 < w.weight.max
    pw = g.values["net/block1/pw/weights"].weight
    assert pw is not None and pw.sparsity >= 0.25  # a quarter of the output channels was zeroed
    assert g.values["net/stem/conv/Relu6"].weight is None  # activation, not a constant
    assert g.metadata["producer"] == "edgescope"


def test_quantization_params(cnn: Path) -> None:
    v = tflite.load(cnn).values["net/head/fc/weights_int8"]
    assert v.dtype == "int8" and v.quant is not None
    assert v.quant.scale == [pytest.approx(0.025)] and v.quant.zero_point == [0] and v.quant.axis is None
    assert v.weight is not None and v.weight.bytes == 160 and -127 <= v.weight.min < 0 < v.weight.max <= 127


def test_transformer_block(block: Path) -> None:
    g = tflite.load(block)
    ops = [n.op_type for n in g.nodes]
    assert ops.count("FULLY_CONNECTED") == 6 and ops.count("BATCH_MATMUL") == 2 and "SOFTMAX" in ops
    bmm = next(n for n in g.nodes if n.op_type == "BATCH_MATMUL")
    assert bmm.attributes["adj_y"] is True and bmm.namespace == "block0/attn"
    assert {n.namespace for n in g.nodes} >= {"block0/attn/q", "block0/mlp/fc1"}
    assert len(g.edges()) >= 12


def test_detect_by_content_not_name(cnn: Path, tmp_path: Path) -> None:
    misnamed = tmp_path / "model.bin"
    misnamed.write_bytes(cnn.read_bytes())
    assert frontends.detect(misnamed) == "tflite"
    fake = tmp_path / "fake.tflite"
    fake.write_bytes(b"\x00" * 64)
    with pytest.raises(ModelFormatError, match="not a valid TensorFlow Lite model"):
        frontends.detect(fake)


# -- hostile files --------------------------------------------------------------------------------

def test_bad_magic(cnn: Path) -> None:
    data = bytearray(cnn.read_bytes())
    data[4:8] = b"XXXX"
    with pytest.raises(ModelFormatError, match="file identifier"):
        tflite.parse(bytes(data))


def test_truncated_at_many_points(cnn: Path) -> None:
    data = cnn.read_bytes()
    for cut in (3, 8, 40, len(data) // 4, len(data) // 2, len(data) - 100):
        with pytest.raises(ModelFormatError, match="truncated|corrupt"):
            tflite.parse(data[:cut])


def test_random_garbage_after_header_never_crashes(cnn: Path) -> None:
    rng = np.random.default_rng(7)
    data = bytearray(cnn.read_bytes())
    outcomes = set()
    for _ in range(200):  # flip bytes: either a graph or a ModelFormatError, nothing else
        d = bytearray(data)
        for i in rng.integers(8, len(d), size=8):
            d[i] = int(rng.integers(0, 256))
        try:
            tflite.parse(bytes(d))
            outcomes.add("ok")
        except ModelFormatError:
            outcomes.add("error")
    assert "error" in outcomes


def test_out_of_range_buffer_index(tmp_path: Path) -> None:
    def bad(w: tb.TfliteWriter) -> None:
        w.tensors[1].buffer = 999
    path = _tiny(tmp_path / "bad_buffer.tflite", bad)
    with pytest.raises(ModelFormatError, match="refers to buffer 999"):
        frontends.load(path)
    # LiteRT itself, in the sandbox: a clear error or a reported crash, never a dead caller.
    with pytest.raises((ModelRunError, SandboxError)):
        backends.for_target("litert-cpu/host").compile(path, tmp_path, tflite.load(_tiny(tmp_path / "ok.tflite")))


def test_out_of_range_tensor_and_opcode(tmp_path: Path) -> None:
    def bad_tensor(w: tb.TfliteWriter) -> None:
        w.operators[0].inputs = np.array([0, 42], np.int32)
    with pytest.raises(ModelFormatError, match="refers to tensor 42"):
        tflite.load(_tiny(tmp_path / "t.tflite", bad_tensor))

    def bad_code(w: tb.TfliteWriter) -> None:
        w.operators[0].opcodeIndex = 5
    with pytest.raises(ModelFormatError, match="operator code 5"):
        tflite.load(_tiny(tmp_path / "c.tflite", bad_code))


# -- LiteRT backend -----------------------------------------------------------------------------

def test_litert_compile_and_profile(cnn: Path, tmp_path: Path) -> None:
    source = tflite.load(cnn)
    backend = backends.for_target("litert-cpu/host")
    assert backend.measures
    compiled, path = backend.compile(cnn, tmp_path, source)
    assert path is not None and path.read_bytes() == cnn.read_bytes()
    assert [n.source_nodes for n in compiled.nodes] == [[n.id] for n in source.nodes]
    assert compiled.metadata["target"] == "litert-cpu/host"
    prof = backend.profile(path, ProfileSettings(runs=20, warmup=2, **QUICK_ROUNDS))
    assert prof.target == "litert-cpu/host" and prof.measured and prof.runs == 20
    assert 0 < prof.latency_ms <= prof.latency_p90_ms < 1000
    # The thread's CPU time beside the wall time (1 thread: XNNPACK runs on it), which a busy machine's measurement
    # reads instead of the wall time (simulator.measured.own_whole_ms), as for ORT.
    assert prof.noise is not None and 0 < prof.noise["cpu_latency_ms"] and 0 < prof.noise["cpu_share"] <= 1
    assert prof.peak_memory_bytes > 0
    assert prof.input_shapes == {"input": [1, 32, 32, 3]}
    # Per-operator times from LiteRT's own profiler: every operator but the DEQUANTIZE of a constant (run
    # once at prepare), each with the XNNPACK kernels it ran; a 1x1 CONV_2D runs as XNNPACK's Fully Connected.
    ops = [n.id for n in source.nodes if n.op_type != "DEQUANTIZE"]
    assert sorted(prof.tasks) == sorted(ops) and "LiteRT's profiler" in prof.runtime
    assert all(t.runs == 20 and 0 <= t.p25_ms <= t.p75_ms for t in prof.tasks.values())
    assert prof.tasks["CONV_2D_0"].median_ms > 0
    assert prof.kernels["DEPTHWISE_CONV_2D_1"] == ["Convolution (NHWC, F32) DWConv"]
    assert prof.kernels["CONV_2D_2"] == ["Fully Connected (NC, F32) GEMM"]


def test_litert_profile_transformer_and_bad_override(block: Path, tmp_path: Path) -> None:
    backend = backends.for_target("litert-cpu/host")
    _, path = backend.compile(block, tmp_path, tflite.load(block))
    prof = backend.profile(path, ProfileSettings(runs=5, warmup=1, **QUICK_ROUNDS))
    assert prof.latency_ms > 0 and prof.input_shapes == {"x": [1, 16, 32]}
    with pytest.raises(InputSpecError):
        backend.profile(path, ProfileSettings(runs=5, warmup=1, input_shapes={"nope": [1]}, **QUICK_ROUNDS))


def test_int8_model_quantization_and_run(tmp_path: Path) -> None:
    path = tb.int8_add(tmp_path / "q.tflite")
    g = tflite.load(path)
    y = g.values["y"]
    assert y.dtype == "int8" and y.quant is not None and y.quant.zero_point == [-3]
    assert y.quant.scale == [pytest.approx(0.2)]
    backend = backends.for_target("litert-cpu/host")
    _, compiled = backend.compile(path, tmp_path, g)
    prof = backend.profile(compiled, ProfileSettings(runs=3, warmup=1, **QUICK_ROUNDS))
    assert prof.input_shapes == {"x": [1, 8]} and prof.latency_ms > 0


def test_unresolved_custom_op_leaves_only_that_op_unmeasured(tmp_path: Path, calibration_dir: Path) -> None:
    """LiteRT refuses a model with a custom op it has no kernel for; the op is stood in for while the rest is
    measured, and every target still analyses and predicts the whole model."""
    from worker.pipeline import AnalysisOptions, analyze

    path = tb.with_custom_op(tmp_path / "custom.tflite")
    opts = AnalysisOptions(targets=("litert-cpu/host", "litert/pixel-8"), runs=20, warmup=2,
                           calibration_path=calibration_dir / "host-cpu.json", **QUICK_ROUNDS)
    host, pixel = analyze(path, tmp_path, opts).targets
    assert host.profile is not None and "without custom operator(s) EdgescopeTestOp" in host.profile.runtime
    assert sorted(host.profile.tasks) == ["ADD_2", "CONV_2D_0", "FULLY_CONNECTED_4", "LOGISTIC_5", "MEAN_3"]
    assert "EdgescopeTestOp" in host.compiled.metadata["note"] and "not measured" in host.compiled.metadata["note"]
    assert host.compiled_model_path is not None and host.compiled_model_path.read_bytes() != path.read_bytes()
    for r in (host, pixel):
        assert r.sweep.bulk["ops"] == [n.id for n in tflite.load(path).nodes]
        assert r.sweep.bulk["base"]["latency_ms"] > 0
    i = pixel.sweep.bulk["ops"].index("EdgescopeTestOp_1")
    assert pixel.sweep.bulk["units"][i][0] == "cpu" and pixel.sweep.bulk["units"][0][0] == "gpu"


def test_dynamic_input_that_prepares_only_at_its_real_shape(tmp_path: Path) -> None:
    """A 3x3 VALID conv on an input whose file shape is the placeholder [1, 1, 1, 3] (signature [1, -1, -1, 3]):
    LiteRT cannot prepare it there, but it runs, and is measured per op, at the shape the user gives."""
    w = tb.TfliteWriter()
    x = w.tensor("x", [1, 1, 1, 3], signature=[1, -1, -1, 3])
    y = w.tensor("y", [1, 1, 1, 4], signature=[1, -1, -1, 4])
    w.op("CONV_2D", [x, w.const("w", np.ones((4, 3, 3, 3), np.float32)), w.const("b", np.zeros(4, np.float32))],
         [y], w.options("Conv2DOptions", padding=1, strideW=1, strideH=1))
    path = w.save(tmp_path / "dyn.tflite", [x], [y])
    backend = backends.for_target("litert-cpu/host")
    compiled, out = backend.compile(path, tmp_path, tflite.load(path))
    assert out is not None and compiled.nodes[0].op_type == "CONV_2D"
    prof = backend.profile(out, ProfileSettings(runs=5, warmup=1, input_shapes={"x": [1, 16, 16, 3]}, **QUICK_ROUNDS))
    assert prof.input_shapes == {"x": [1, 16, 16, 3]} and list(prof.tasks) == ["CONV_2D_0"]
    assert prof.kernels["CONV_2D_0"] == ["Convolution (NHWC, F32) IGEMM"]


def test_dynamic_batch_shapes_reach_the_work_counts(tmp_path: Path) -> None:
    """A .tflite with a dynamic batch (signature [-1, 16]; the file stores 1) leaves every tensor downstream symbolic
    in the frontend: without the shapes LiteRT propagates at the fed size, each operator's work was unknown (BirdNET:
    294 of 376). The profile records each operator's output shapes at the fed shapes, and they make the work known."""
    from compiler.concrete import fill_by_name, observed_shapes
    from simulator.tflite_ops import tflite_works

    w = tb.TfliteWriter()
    x = w.tensor("x", [1, 16], signature=[-1, 16])
    h = w.tensor("h", [1, 8], signature=[-1, 8])
    y = w.tensor("y", [1, 8], signature=[-1, 8])
    w.op("FULLY_CONNECTED", [x, w.const("w", np.ones((8, 16), np.float32)), -1], [h], w.options("FullyConnectedOptions"))
    w.op("LOGISTIC", [h], [y])
    path = w.save(tmp_path / "batch.tflite", [x], [y])
    backend = backends.for_target("litert-cpu/host")
    compiled, out = backend.compile(path, tmp_path, tflite.load(path))
    assert out is not None and not any(w.shapes_known for w in tflite_works(compiled)[0])
    prof = backend.profile(out, ProfileSettings(runs=3, warmup=1, input_shapes={"x": [4, 16]}, **QUICK_ROUNDS))
    assert prof.output_shapes == {"FULLY_CONNECTED_0": [[[4, 8], "float32"]], "LOGISTIC_1": [[[4, 8], "float32"]]}
    fill_by_name(compiled, {"x": ([4, 16], "float32"), **observed_shapes(compiled, prof.output_shapes)}, overwrite=True)
    works = tflite_works(compiled)[0]
    assert all(w.shapes_known for w in works) and works[0].macs == 4 * 8 * 16 and works[1].out_elements == 32


def test_missing_runtime_is_not_a_corrupt_file(cnn: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installation without LiteRT's schema module said the file was 'truncated or corrupt' (seen when the venv
    lost ai_edge_litert mid-run): the one-line error names what to install instead."""
    def missing() -> None:
        raise ModuleNotFoundError("No module named 'ai_edge_litert'")

    monkeypatch.setattr(tflite, "_schema", missing)
    with pytest.raises(ModelFormatError) as e:
        tflite.load(cnn)
    assert "corrupt" not in str(e.value) and "install ai-edge-litert" in str(e.value)
