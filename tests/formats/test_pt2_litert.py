""".pt2 on LiteRT targets: converted by litert-torch in its own venv (`make converter`), measured on
`litert-cpu/host`, tasks mapped back to FX nodes (namespaces, source lines); hostile archives refused
before any conversion; without the converter the target is predicted with a note, never an error.

Two conversions in all (a small CNN, a transformer block), ~30 s each on a loaded machine."""

from __future__ import annotations

import pickle
import subprocess
from pathlib import Path

import pytest
import torch
from torch import nn

from compiler import frontends
from compiler.backends import compile_for_target, pt2_tflite
from compiler.graph import ModelFormatError
from tests.formats.test_pt2 import _Payload, _replace
from testkit.live import QUICK_ROUNDS
from worker.pipeline import AnalysisOptions, analyze

HERE = Path(__file__).resolve()


def _line(marker: str) -> int:
    return next(i for i, line in enumerate(HERE.read_text().splitlines(), 1) if line.endswith(f"# {marker}"))


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x)  # CONV1
        x = self.pool(x)
        x = torch.relu(self.conv2(x))  # CONV2
        return self.fc(x.mean((2, 3)))


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = ((q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5).softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def _export(module: nn.Module, x: torch.Tensor, path: Path) -> Path:
    torch.manual_seed(0)
    torch.export.save(torch.export.export(module.eval(), (x,)), path)
    return path


@pytest.fixture(scope="module")
def converter() -> Path:
    python = pt2_tflite.converter_python()
    assert python is not None, "the litert-torch venv is missing: run `make converter` (make test does)"
    return python


@pytest.fixture(scope="module")
def cnn_pt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    return _export(CNN(), torch.randn(1, 3, 16, 16), tmp_path_factory.mktemp("pt2-litert") / "cnn.pt2")


def _analyze(pt2: Path, workdir: Path):  # type: ignore[no-untyped-def]
    result = analyze(pt2, workdir, AnalysisOptions(targets=("litert-cpu/host",), runs=5, warmup=1, **QUICK_ROUNDS))
    (r,) = result.targets
    return result.source, r


def test_cnn_measured_on_litert_with_fx_namespaces_and_lines(converter: Path, cnn_pt2: Path, tmp_path: Path) -> None:
    source, r = _analyze(cnn_pt2, tmp_path)
    assert r.compiled_model_path is not None and r.compiled_model_path.suffix == ".tflite"
    assert r.profile is not None and r.profile.measured and r.profile.latency_ms > 0
    assert r.profile.runtime.startswith("ai-edge-litert")
    meta = r.compiled.metadata
    assert meta["converted_from"].startswith("pt2 (litert-torch 0.10.0")
    assert meta["source_nodes_covered"] == meta["source_nodes"] == str(len(source.nodes))
    assert meta["tasks_mapped"] == meta["tasks"]
    # LiteRT exports quantize the converted file: its size, not the .pt2's, is what file sizes are predicted from.
    assert meta["file_size_bytes"] == str(r.compiled_model_path.stat().st_size)
    # The TFLite operators are the tasks; each names the FX nodes it runs.
    convs = [t for t in r.compiled.nodes if t.op_type == "CONV_2D"]
    assert len(convs) == 2
    first, second = convs
    assert first.source_nodes == ["conv2d"] and first.namespace == "conv1 (Conv2d)"
    assert first.location is not None and Path(first.location.file).resolve() == HERE
    assert first.location.line == _line("CONV1")
    assert second.source_nodes == ["conv2d_1", "relu"]  # ReLU fused into the Conv
    assert second.location is not None and second.location.line == _line("CONV2")
    by_op = {t.op_type: t for t in r.compiled.nodes}
    assert by_op["MAX_POOL_2D"].namespace == "pool (MaxPool2d)" and by_op["FULLY_CONNECTED"].namespace == "fc (Linear)"
    assert r.sweep is not None


def test_transformer_block_tasks_map_to_modules(converter: Path, tmp_path: Path) -> None:
    pt2 = _export(Block(), torch.randn(1, 8, 32), tmp_path / "block.pt2")
    (tmp_path / "work").mkdir()
    source, r = _analyze(pt2, tmp_path / "work")
    assert r.profile is not None and r.profile.latency_ms > 0
    tasks = r.compiled.nodes
    assert len(tasks) > len(source.nodes)  # LayerNorm is decomposed into MEAN, RSQRT, MUL, ...
    assert all(t.source_nodes for t in tasks), [t.id for t in tasks if not t.source_nodes]
    assert {s for t in tasks for s in t.source_nodes} == {n.id for n in source.nodes}
    fx = {n.id: n for n in source.nodes}
    ns = {t.namespace for t in tasks}
    ln1, ln2, attn, qkv = "ln1 (LayerNorm)", "ln2 (LayerNorm)", "attn (Attention)", "attn (Attention)/attn.qkv (Linear)"
    mlp0, mlp2 = "mlp/mlp.0 (Linear)", "mlp/mlp.2 (Linear)"
    assert {ln1, qkv, attn, ln2, mlp0, "mlp/mlp.1 (GELU)", mlp2} <= ns
    rsqrt = [t for t in tasks if t.op_type == "RSQRT"]
    assert [t.namespace for t in rsqrt] == [ln1, ln2]
    assert all(fx[s].op_type == "aten.layer_norm" for t in rsqrt for s in t.source_nodes)
    fcs = [t for t in tasks if t.op_type == "FULLY_CONNECTED"]
    # Each Linear is one FULLY_CONNECTED; proj's task also holds the reshape before it, so its
    # namespace is their common one (attn), as for fused ORT tasks.
    assert [[fx[s].namespace for s in t.source_nodes if fx[s].op_type == "aten.linear"] for t in fcs] == \
        [[qkv], ["attn (Attention)/attn.proj (Linear)"], [mlp0], [mlp2]]
    assert [t.namespace for t in fcs] == [qkv, attn, mlp0, mlp2]


def test_hostile_pt2_refused_before_conversion(converter: Path, cnn_pt2: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "pwned"
    bad = _replace(cnn_pt2, tmp_path / "bad.pt2", "data/constants/custom_obj_0", pickle.dumps(_Payload(marker), 2))
    started = []
    from compiler.backends import pt2_onnx

    monkeypatch.setattr(pt2_onnx, "run", lambda *a, **k: started.append(a))  # convert_vetted's sandbox call
    source = frontends.load(cnn_pt2)  # the upload's graph; the backend must vet the file itself
    with pytest.raises(ModelFormatError, match="refus|os.system|posix.system"):
        compile_for_target(bad, "litert-cpu/host", tmp_path, source)
    assert not started and not marker.exists()


def test_converter_child_cannot_unpickle(converter: Path, tmp_path: Path) -> None:
    # Defence in depth, in the converter's own interpreter: torch.load is weights_only there too.
    marker, evil = tmp_path / "pwned-child", tmp_path / "evil.pt"
    torch.save({"x": _Payload(marker)}, evil)
    code = ("import sys, torch\nfrom compiler.backends.pt2_onnx import _harden_torch_loading\n_harden_torch_loading()\n"
            "try:\n    torch.load(sys.argv[1], weights_only=False)\nexcept Exception as e:\n    print('refused')\n")
    out = subprocess.run([str(converter), "-c", code, str(evil)], capture_output=True, text=True,
                         cwd=HERE.parents[2], check=True)
    assert "refused" in out.stdout and not marker.exists()


def test_without_converter_predicted_with_a_note(cnn_pt2: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pt2_tflite.ENV, str(tmp_path / "no-such-python"))
    source = frontends.load(cnn_pt2)
    compiled, path = compile_for_target(cnn_pt2, "litert-cpu/host", tmp_path, source)
    assert path is None
    assert "litert-torch converter is not installed" in compiled.metadata["note"]
    assert [t.source_nodes for t in compiled.nodes] == [[n.id] for n in source.nodes]
    # Through the pipeline: the job completes, the target predicted (no profile) rather than failing.
    (tmp_path / "job").mkdir()
    _, r = _analyze(cnn_pt2, tmp_path / "job")
    assert r.profile is None and r.compiled_model_path is None and r.sweep is not None


def test_fx_names_and_scopes_from_tensor_names() -> None:
    fused = ("pkg.Net/torch.nn.modules.container.Sequential_blocks/pkg.Block_0/torch.nn.modules.activation.ReLU_act/"
             "#relu;;pkg.Net/torch.nn.modules.container.Sequential_blocks/pkg.Block_0/torch.nn.modules.conv.Conv2d_conv/"
             "#conv2d_1;1")
    assert pt2_tflite.fx_names(fused) == ["relu", "conv2d_1"]
    assert pt2_tflite._scope(fused, {"blocks/0/act", "blocks/0", "blocks/0/conv", ""}) == "blocks/0/act"
    assert pt2_tflite._scope("pkg.Net;1", {"stem", ""}) == ""
    assert pt2_tflite._scope("pkg.Net/torch.nn.modules.conv.Conv2d_stem;", {"blocks/0/conv"}) is None


def test_relative_paths_reach_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sandbox child runs in its own temporary directory: a relative model path must still work.
    from compiler.backends import litert
    from compiler.profile import ProfileSettings
    from testkit import tflite_builder as tb

    tb.int8_add(tmp_path / "m.tflite")
    monkeypatch.chdir(tmp_path)
    source = frontends.load("m.tflite")
    compiled = litert.compile("m.tflite", "out.tflite", source)
    assert compiled.metadata["runtime"].startswith("ai-edge-litert") and Path("out.tflite").is_file()
    assert litert.profile("out.tflite", ProfileSettings(runs=1, warmup=0)).latency_ms > 0


def test_pad_split_off_a_conv_is_a_helper_not_the_conv() -> None:
    # litert-torch writes an explicit PAD (tagged with the conv) before a CONV_2D that fuses conv,
    # batch norm and activation: the CONV_2D implements all three, the PAD and TRANSPOSE serve it.
    from compiler.graph import Graph, Node, Value, WeightStats

    def v(name: str, weight: bool = False) -> Value:
        return Value(name, [1, 4, 4, 8], "float32", WeightStats(4, 16, 0.0, 1.0, 0.0) if weight else None)

    fx = [Node("conv2d", "conv2d", "aten.conv2d", "stem/0", ["x", "stem.0.weight"], ["conv2d"]),
          Node("batch_norm", "batch_norm", "aten.batch_norm", "stem/1", ["conv2d"], ["batch_norm"]),
          Node("hardtanh", "hardtanh", "aten.hardtanh", "stem/2", ["batch_norm"], ["hardtanh"])]
    source = Graph("m", "pt2", fx, {n: v(n) for n in ("x", "conv2d", "batch_norm", "hardtanh")} |
                   {"stem.0.weight": v("stem.0.weight", True)}, ["x"], ["hardtanh"])
    conv, bn, act = "R/Sequential_stem/Conv2d_0/#conv2d", "R/Sequential_stem/BatchNorm2d_1/#batch_norm", \
        "R/Sequential_stem/ReLU6_2/#hardtanh"
    tfl = [Node("TRANSPOSE_0", "", "TRANSPOSE", "", ["serving_default_args_0"], [conv + ";2"]),
           Node("PAD_1", "", "PAD", "", [conv + ";2"], [conv + ";3"]),
           Node("CONV_2D_2", "", "CONV_2D", "", [conv + ";3", conv + ";"], [f"{act};;{bn};;{conv};4"]),
           Node("TRANSPOSE_3", "", "TRANSPOSE", "", [f"{act};;{bn};;{conv};4"], ["serving_default_output_0"])]
    names = ["serving_default_args_0", conv + ";2", conv + ";3", f"{act};;{bn};;{conv};4", "serving_default_output_0"]
    compiled = Graph("m", "tflite", tfl, {n: v(n) for n in names} | {conv + ";": v(conv + ";", True)},
                     ["serving_default_args_0"], ["serving_default_output_0"])
    mapped = pt2_tflite.map_to_fx(source, compiled)
    tasks = {t.id: t for t in compiled.nodes}
    assert tasks["CONV_2D_2"].source_nodes == ["conv2d", "batch_norm", "hardtanh"]
    assert tasks["CONV_2D_2"].namespace == "stem"
    assert "conv2d" in tasks["PAD_1"].source_nodes and "conv2d" in tasks["TRANSPOSE_0"].source_nodes
    assert mapped == {"covered": 3, "tasks": 4}


@pytest.mark.parametrize("target", ["litert-cpu/host", "litert/pixel-8"])
def test_pt2_exported_for_litert_with_ai_edge_quantizer(converter: Path, cnn_pt2: Path, tmp_path: Path,
                                                        calibration_dir: Path, target: str) -> None:
    """int8 everywhere but the first conv, named as the prediction names it (an operator id on the measured
    target, the FX node on the predicted one): the written .tflite runs in LiteRT with that conv's kernel float."""
    from ai_edge_litert.interpreter import Interpreter

    from simulator.predict import optimize_model

    (tmp_path / "w").mkdir()
    # The FX node: it names the CONV_2D that implements it, not the PAD / TRANSPOSE split off it that come first.
    first_conv = "conv2d"
    if target == "litert-cpu/host":  # measured on the converted file: its CONV_2D operator's id
        (tmp_path / "c").mkdir()
        tasks, _ = compile_for_target(cnn_pt2, target, tmp_path / "c", frontends.load(cnn_pt2))
        first_conv = next(t.id for t in tasks.nodes if t.op_type == "CONV_2D")
    out = tmp_path / "cnn-int8.tflite"
    r = optimize_model(cnn_pt2, out, target, "int8-dynamic", {first_conv: "fp32/fp32/fp32/0"}, tmp_path / "w",
                       calibration_dir / "host-cpu.json")
    assert r["export"] == "tflite" and out.exists() and r["size_bytes"] == out.stat().st_size
    if target == "litert-cpu/host":  # predicted on the converted file, so sized from its own overhead
        assert abs(r["size_error_pct"]) < 2, r["size_error_pct"]
    it = Interpreter(model_path=str(out))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], torch.randn(1, 3, 16, 16).numpy())
    it.invoke()
    kernels = {d["name"]: d["dtype"] for d in it.get_tensor_details() if len(d["shape"]) == 4 and d["shape"][0] > 1}
    dtypes = sorted(str(k.__name__) for k in kernels.values())
    assert "int8" in dtypes and "float32" in dtypes, kernels  # the kept conv stays float, the other is int8
