""".pt2 on device targets predicted here (ONNX Runtime EPs, LiteRT delegates): converted as the device is handed
the model (ONNX by torch.onnx.export, `.tflite` by litert-torch) and predicted on that file's operators, mapped
back to the FX nodes. On the FX graph itself the profiles' op lists, written in the runtime's operators, matched
nothing: a MobileNetV2 `.pt2` on litert-qnn/snapdragon-8g3 ran every op on the CPU (40.7 ms)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from compiler import frontends
from compiler.backends import compile_for_target, pt2_tflite
from simulator.sweep import sweep
from simulator.totals import totals


class Block(nn.Module):
    """A MobileNetV2-style block: Conv + BatchNorm + ReLU6 (aten.hardtanh_ in the FX graph), depthwise, project."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU6(inplace=True),
            nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False), nn.BatchNorm2d(32), nn.ReLU6(inplace=True),
            nn.Conv2d(32, 16, 1, bias=False), nn.BatchNorm2d(16), nn.Dropout(0.2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.body(x).mean((2, 3)))


@pytest.fixture(scope="module")
def block_pt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("pt2-predicted") / "block.pt2"
    torch.export.save(torch.export.export(Block().eval(), (torch.randn(1, 3, 64, 64),)), path)
    return path


def _units(graph, target: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    r = sweep(graph, target)
    p = [x["name"] for x in r.bulk["presets"]].index("fp32")
    assert totals(r.bulk, r.per_op, "fp32", {})["latency_ms"] > 0
    return {n.op_type: r.bulk["units"][i][p] for i, n in enumerate(graph.nodes)}


@pytest.mark.parametrize("target,conv,runs", [("ort-qnn/snapdragon-8g3", "Conv", "ONNX"),
                                              ("litert-qnn/snapdragon-8g3", "CONV_2D", "TFLite")])
def test_pt2_is_predicted_on_the_converted_operators(block_pt2: Path, tmp_path: Path, target: str, conv: str,
                                                     runs: str) -> None:
    if runs == "TFLite":
        assert pt2_tflite.converter_python() is not None, "run `make converter` (make test does)"
    source = frontends.load(block_pt2)
    compiled, path = compile_for_target(block_pt2, target, tmp_path, source)
    assert path is None  # predicted: nothing to run here
    assert f"converted to {runs}" in compiled.metadata["note"] and "target" not in compiled.metadata
    types = {n.op_type for n in compiled.nodes}
    assert conv in types and not any(t.startswith("aten.") for t in types), types
    # BatchNorm folded into the convs and the eval-mode Dropout gone, as the runtime's file has them.
    assert not types & {"BatchNormalization", "Dropout"}
    # Every FX node the runtime computes is covered by a task (the BatchNorms by their convs).
    fx = {n.id for n in source.nodes}
    covered = {s for n in compiled.nodes for s in n.source_nodes}
    assert covered <= fx and {n.id for n in source.nodes if n.op_type.startswith("aten.conv")} <= covered
    # On the HTP: the convs, the ReLU6s (fused or Clip) and the classifier; none falls to the CPU.
    units = _units(compiled, target)
    assert units[conv] == "htp" and set(units.values()) == {"htp"}, units


def test_pt2_falls_back_to_the_fx_graph_and_says_so(block_pt2: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pt2_tflite.ENV, str(tmp_path / "no-such-python"))
    source = frontends.load(block_pt2)
    compiled, path = compile_for_target(block_pt2, "litert-qnn/snapdragon-8g3", tmp_path, source)
    assert path is None and "litert-torch converter is not installed" in compiled.metadata["note"]
    assert [t.source_nodes for t in compiled.nodes] == [[n.id] for n in source.nodes]
    label = sweep(compiled, "litert-qnn/snapdragon-8g3").bulk["label"]
    assert "litert-torch converter is not installed" in label["fallback"]
    assert "predicted on the upload's own graph, not the runtime's operators" in label["text"]


class GRN(nn.Module):
    """ConvNeXt-V2's global response norm, as timm writes it: `torch.addcmul`, which coremltools' torch frontend
    does not convert ("Unsupported fx node addcmul")."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.gamma, self.beta = nn.Parameter(torch.ones(1, 8, 1, 1)), nn.Parameter(torch.zeros(1, 8, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        nx = x.norm(p=2, dim=(2, 3), keepdim=True)
        return torch.addcmul(self.beta, self.gamma, x * (nx / nx.mean(dim=1, keepdim=True)))


def test_an_op_coremltools_lacks_is_decomposed_and_converted(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = tmp_path / "grn.pt2"
    torch.export.save(torch.export.export(GRN().eval(), (torch.randn(1, 3, 16, 16),)), path)
    source = frontends.load(path)
    assert "aten.addcmul" in {n.op_type for n in source.nodes}
    compiled, out = compile_for_target(path, "coreml/apple-a17", tmp_path, source)
    assert out is not None and compiled.metadata["converted_from"].startswith("pt2 (coremltools")
    assert "fallback" not in compiled.metadata
    assert "conv" in {n.op_type for n in compiled.nodes}
    assert not any(n.op_type.startswith("aten.") for n in compiled.nodes)



def test_cli_commands_keep_conversions(block_pt2: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`predict` (and analyze, optimize, solve) keep converted .pt2 files in the data dir's cache as the worker does:
    a command converts once for all its targets, the next command not at all."""
    from click.testing import CliRunner

    from compiler import conversion_cache
    from edgescope.commands.simulate import predict

    monkeypatch.setattr(conversion_cache, "_folder", conversion_cache.folder())  # restored after the test
    monkeypatch.setenv("EDGESCOPE_CONVERSION_CACHE_DIR", str(tmp_path / "conversions"))
    r = CliRunner().invoke(predict, [str(block_pt2), "--target", "ort-qnn/snapdragon-8g3", "--target",
                                     "ort-xnnpack/rpi5", "--top", "1"])
    assert r.exit_code == 0, r.output
    kept = sorted(p.name for p in (tmp_path / "conversions").glob("*.json"))
    assert len(kept) == 1  # one ONNX conversion for both ORT targets
    again = CliRunner().invoke(predict, [str(block_pt2), "--target", "ort-qnn/snapdragon-8g3", "--top", "1"])
    assert again.exit_code == 0 and again.output.splitlines()[:3] == r.output.splitlines()[:3]
    assert sorted(p.name for p in (tmp_path / "conversions").glob("*.json")) == kept
