"""A quantized torch module (torch.ao eager quantization, as torchvision.models.quantization builds them) exported
with torch's TorchScript ONNX exporter writes every activation pair as QuantizeLinear -> Cast(to uint8) ->
DequantizeLinear. The session-38 sweep found torchvision's quantized MobileNetV2 predicted on ort-qnn/snapdragon-8g3
as int8-dynamic with every Q, Cast and DQ a task of its own (1.07 ms, half of it conversions): the Cast hid the node
units (simulator/qdq.py). The file is int8-static, its pairs inside the quantized ops, as a QDQ file without Casts."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import corpus  # noqa: F401  (torch pinned as the corpus pins it)
import torch
from torch import nn

from compiler.frontends import load
from compiler.graph import Graph
from compiler.vocabulary.targets import get_target
from simulator.qdq import qdq_preset, qdq_view
from simulator.sweep import SweepResult
from testkit.live import QUICK_ROUNDS


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.quant, self.dequant = torch.ao.quantization.QuantStub(), torch.ao.quantization.DeQuantStub()
        # weights enough to dominate the file's records (~100 B per Q / Cast / DQ node)
        self.c1, self.r1 = nn.Conv2d(3, 64, 3, padding=1), nn.ReLU()
        self.c2, self.r2 = nn.Conv2d(64, 512, 1), nn.ReLU()
        self.fc = nn.Linear(512, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.r2(self.c2(self.r1(self.c1(self.quant(x)))))
        return self.dequant(self.fc(y.mean((2, 3))))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    m = _Net().eval()
    m.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    torch.ao.quantization.prepare(m, inplace=True)
    m(torch.randn(2, 3, 32, 32))
    torch.ao.quantization.convert(m, inplace=True)
    out = tmp_path_factory.mktemp("tsq") / "q.onnx"
    torch.onnx.export(m, (torch.randn(1, 3, 32, 32),), str(out), dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"])
    return out


def test_the_torchscript_exporters_q_cast_dq_is_a_node_unit(exported: Path) -> None:
    ops = [n.op_type for n in onnx.load(exported).graph.node]
    assert "Cast" in ops and "QuantizeLinear" in ops  # the exporter's form this test is about
    g = load(exported)
    qnn = get_target("ort-qnn/snapdragon-8g3")
    assert qdq_preset(g, qnn) == "int8-static" and qdq_preset(g, get_target("ort-nnapi/pixel-8")) == "int8-static"
    view, fused = qdq_view(g, qnn)
    by_id = {n.id: n for n in g.nodes}
    producer = {o: n for n in g.nodes for o in n.outputs}
    # every Cast between a Q and a DQ runs inside the unit, as do both ends of the pair
    casts = {n.id for n in g.nodes if n.op_type == "Cast" and producer.get(n.inputs[0]) is not None
             and producer[n.inputs[0]].op_type == "QuantizeLinear"}
    assert casts and casts <= fused
    assert {by_id[i].op_type for i in fused} == {"QuantizeLinear", "Cast", "DequantizeLinear"}
    # the convs read the float tensors (no DequantizeLinear of an activation in front of them)
    for n in view.nodes:
        if n.op_type == "Conv" and n.inputs[0] != "x":
            src = {o: m for m in view.nodes for o in m.outputs}.get(n.inputs[0])
            assert src is not None and src.op_type != "DequantizeLinear", n.name


def test_the_file_predicts_as_int8_static_without_conversion_tasks(exported: Path, tmp_path: Path) -> None:
    from simulator.predict import AS_UPLOADED, predict_model

    got, _, _ = predict_model(exported, "ort-qnn/snapdragon-8g3", AS_UPLOADED, {}, tmp_path / "a")
    assert got["model_wide"] == "int8-static"
    convs = [r for r in got["ops"] if r["type"] in ("Conv", "Gemm", "MatMul")]
    assert convs and all(r["combo"].startswith("int8/int8/int8") for r in convs)
    # only the model input's Q costs anything among the conversions
    conv_ms = [r["latency_ms"] for r in got["ops"] if r["type"] in ("Cast", "DequantizeLinear")]
    assert conv_ms and max(conv_ms) == 0


@pytest.mark.parametrize("preset", ["fp32", "fp16", "int8-dynamic", "palettize-4bit"])
def test_options_export_the_float_graph_they_are_predicted_on(exported: Path, tmp_path: Path, preset: str) -> None:
    """Every option but the file's own (int8-static) is predicted on the float graph, so the exporter undoes the
    QDQ form first (compiler/optimize/onnx_qdq.py). Before: fp32 wrote the QDQ file back (MobileNetV2 3.6 MB
    written, 14.0 MB predicted), palettize-4bit kept its int8 weights (3.6 MB, 1.9 predicted), fp16 wrote scales
    ORT refuses at opset 17."""
    import numpy as np
    import onnxruntime as ort

    from compiler.optimize.onnx_export import export_onnx
    from simulator.predict import predict_model

    res = export_onnx(exported, tmp_path / "o.onnx", preset)
    ops = {n.op_type for n in onnx.load(res.path).graph.node}
    assert "QuantizeLinear" not in ops and "DequantizeLinear" not in ops or preset == "int8-dynamic"
    assert any("QDQ quantization was undone" in n for n in res.notes)
    got, _, _ = predict_model(exported, "ort-xnnpack/rpi5", preset, {}, tmp_path / "p")
    assert got["totals"]["size_bytes"] == pytest.approx(res.size_bytes, rel=0.05)
    if preset == "fp32":  # the float graph computes what the quantized one does, less its rounding
        x = {"x": np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)}
        a = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"]).run(None, x)[0]
        b = ort.InferenceSession(str(res.path), providers=["CPUExecutionProvider"]).run(None, x)[0]
        assert np.abs(a - b).max() <= 0.1 * np.abs(a).max() + 1e-3


@pytest.fixture(scope="module")
def host(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Graph, SweepResult]:
    from compiler.backends import compile_for_target
    from simulator.profiles import load_profile
    from simulator.sweep import sweep

    source = load(exported)
    compiled, _ = compile_for_target(exported, "ort-cpu/host", tmp_path_factory.mktemp("host"), source)
    return compiled, sweep(compiled, "ort-cpu/host", hardware=load_profile("host-cpu", "ort-cpu"), source=source)


def test_on_the_host_a_qdq_upload_is_predicted_on_the_float_graph_it_exports(
        exported: Path, host: tuple[Graph, SweepResult], tmp_path: Path) -> None:
    """ort-cpu/host compiles (and measures) a QDQ upload's float graph, the file its fp32 export writes and every
    option but int8-static starts from; int8-static, the upload as it is, is its as-uploaded state. Compiled as
    uploaded (QLinearConv, QGemm), the options were scaled from the int8 kernels' times: torchvision's quantized
    MobileNetV2's fp16, int8-dynamic and int4 exports measured 49-64% off (slower than) their prediction."""
    from compiler.backends import compile_for_target
    from compiler.optimize.onnx_export import export_onnx
    from simulator.profiles import load_profile
    from simulator.sweep import sweep
    from simulator.totals import totals

    compiled, r = host
    assert not {n.op_type for n in compiled.nodes} & {"QLinearConv", "QGemm", "QuantizeLinear", "DequantizeLinear"}
    assert r.bulk["base"]["preset"] == "int8-static"
    flt = export_onnx(exported, tmp_path / "float.onnx", "fp32", check=False).path
    fsrc = load(flt)
    (tmp_path / "f").mkdir()
    fcomp, _ = compile_for_target(flt, "ort-cpu/host", tmp_path / "f", fsrc)
    rf = sweep(fcomp, "ort-cpu/host", hardware=load_profile("host-cpu", "ort-cpu"), source=fsrc)
    for option in ("fp32", "fp16", "int8-dynamic", "int4-weights"):
        got = totals(r.bulk, r.per_op, option, {})["latency_ms"]
        assert got == pytest.approx(totals(rf.bulk, rf.per_op, option, {})["latency_ms"], rel=0.02), option


@pytest.mark.parametrize("preset", ["fp32", "fp16", "int8-static", "palettize-4bit"])
def test_on_the_host_every_option_of_a_qdq_upload_is_sized_as_written(
        exported: Path, host: tuple[Graph, SweepResult], tmp_path: Path, preset: str) -> None:
    """Sized as the file each export writes: int8-static is the upload itself, to the byte (it was ORT's
    quantize_static run over the QDQ file, priced afresh: MobileNetV2 +8.2%); the others the float graph's files,
    without the pairs' records (the fp32 export was the 3.7 MB upload, then +0.3% of its float graph)."""
    from compiler.optimize.onnx_export import export_onnx
    from simulator.totals import totals

    _, r = host
    res = export_onnx(exported, tmp_path / "o.onnx", preset, check=False)
    assert totals(r.bulk, r.per_op, preset, {})["size_bytes"] == pytest.approx(res.size_bytes, rel=0.005)
    if preset == "int8-static":
        assert res.path.read_bytes() == exported.read_bytes()


def test_an_op_kept_float_under_int8_static_is_exported_float(exported: Path, tmp_path: Path) -> None:
    """int8-static with a per-op override starts from the float graph too, as it is predicted: run over the QDQ file,
    quantize_static left the op asked to stay fp32 quantized as uploaded (its weight behind a DequantizeLinear)."""
    from compiler.optimize.onnx_export import export_onnx

    convs = [n.name for n in onnx.load(exported).graph.node if n.op_type == "Conv"]
    res = export_onnx(exported, tmp_path / "o.onnx", "int8-static", {convs[1]: "fp32/fp32/fp32/0"}, check=False)
    g = onnx.load(res.path).graph
    inits = {t.name for t in g.initializer}
    kernel = {n.name: n.input[1] for n in g.node if n.op_type == "Conv"}
    assert kernel[convs[1]] in inits and kernel[convs[0]] not in inits  # float weight; the other behind its DQ


def test_an_export_is_compiled_as_written_for_measuring(exported: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An export is measured as it is written (ORT's QLinearConv), not as the float graph the host analyses a QDQ
    upload on: compiled as that, the int8-static export of torchvision's quantized MobileNetV2 (the upload) measured
    3.75 ms CPU, its float graph's time, where the file runs in 2.35."""
    import compiler.backends as backends
    from compiler.backends import compile_for_target
    from compiler.backends.ort import AS_WRITTEN
    from compiler.optimize.export import measure_export

    seen: list[Graph] = []

    def compiled_as(path: Path, target: str, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
        seen.append(source)
        return compile_for_target(path, target, workdir, source)

    monkeypatch.setattr(backends, "compile_for_target", compiled_as)
    with pytest.raises(Exception):  # noqa: B017 - the profile is not the point: its settings are not given
        measure_export(exported, "ort-cpu/host", "onnx", tmp_path, None)
    assert seen and seen[0].metadata.get(AS_WRITTEN) == "true"
    source = load(exported)
    source.metadata[AS_WRITTEN] = "true"
    (tmp_path / "w").mkdir()
    compiled, _ = compile_for_target(exported, "ort-cpu/host", tmp_path / "w", source)
    assert "QLinearConv" in {n.op_type for n in compiled.nodes}


def test_the_corpus_check_holds_a_qdq_uploads_measured_float_graph_against_fp32(exported: Path) -> None:
    """The host profiles a QDQ upload's float graph, so corpus.check compares its measured figures with the fp32
    prediction and times the upload as written apart, against the upload's own preset. Held against the
    as-uploaded (int8-static) prediction, torchvision's quantized MobileNetV2 read as a -38..-47% miss: 3.09 ms
    predicted for its int8 file against 4.95 ms measured on its float graph (which runs 5.23; the file 3.16)."""
    from corpus.check import analyse

    # cpu_ms needs only to be a figure here: 2 rounds back to back, not CPU_ROUNDS 0.4 s apart (~9 s of pauses and
    # budgets for the two timings); no row reads the profile's fast CPU time or its pauses
    row = analyse(exported, {"x": [1, 3, 32, 32]}, None, runs=3, warmup=1, check_exports=False, cpu_rounds=2,
                  cpu_gap_s=0.0, **QUICK_ROUNDS)
    assert row["status"] == "analysed", row.get("error")
    assert row["uploaded_preset"] == "int8-static"
    # the headline prediction is the fp32 one its per-task fp32 figures add up to, not the int8 file's
    fp32_tasks = sum(t[3] for t in row["per_task"])
    assert row["uploaded_predicted_ms"] > 0
    assert row["predicted_ms"] == pytest.approx(fp32_tasks, rel=0.02)
    assert row["uploaded_predicted_ms"] != pytest.approx(fp32_tasks, rel=0.05)
    assert row["uploaded_cpu_ms"] > 0 and row["cpu_ms"] > 0
    assert row["predicted_size"] == pytest.approx(exported.stat().st_size, rel=0.05)  # sized as uploaded
