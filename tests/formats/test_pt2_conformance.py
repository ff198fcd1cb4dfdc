"""Cases found by the `.pt2` conformance sweep (benchmarks/pt2_conformance.py).

A `.pt2` exported with a dynamic batch (`torch.export.Dim`) is converted at the shapes it is predicted at (the
user's, or the defaults): before, the converted ONNX file and Core ML program kept the symbolic batch and every task
of a dynamic-batch CNN was of unknown work on ort-cpu/host, the ORT EPs and coreml/apple-a17
(benchmarks/pt2_conformance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from compiler import frontends
from compiler.backends import compile_for_target
from compiler.concrete import unknown_values
from compiler.graph import Value


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(8, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


@pytest.fixture(scope="module")
def dynamic_pt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("pt2-dynamic") / "dyn.pt2"
    batch = torch.export.Dim("batch", min=1, max=32)
    ep = torch.export.export(Net().eval(), (torch.randn(2, 3, 16, 16),), dynamic_shapes=({0: batch},))
    torch.export.save(ep, path)
    return path


@pytest.mark.parametrize("target", ["ort-qnn/snapdragon-8g3", "coreml/apple-a17"])
def test_dynamic_batch_is_converted_at_the_planned_shape(dynamic_pt2: Path, tmp_path: Path, target: str) -> None:
    source = frontends.load(dynamic_pt2)
    assert not source.values["x"].is_static  # the archive's batch is symbolic
    source.values["x"] = Value(name="x", shape=[3, 3, 16, 16], dtype="float32")  # as concrete.apply_plan does
    compiled, _ = compile_for_target(dynamic_pt2, target, tmp_path, source)
    assert "fallback" not in compiled.metadata
    assert unknown_values(compiled) == []
    conv = next(n for n in compiled.nodes if n.op_type.lower() == "conv")
    assert compiled.values[conv.outputs[0]].shape == [3, 8, 16, 16]  # the planned batch, not 1 or the export's 2


class Cond(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.mean() > 0, lambda t: self.a(t).relu(), lambda t: self.b(t), (x,))


def test_control_flow_fallback_on_core_ml_names_it(tmp_path: Path) -> None:
    """coremltools has no torch.cond; its own message ("Only torch.Tensor attr handled yet") named nothing."""
    path = tmp_path / "cond.pt2"
    torch.export.save(torch.export.export(Cond().eval(), (torch.randn(1, 3, 8, 8),)), path)
    compiled, out = compile_for_target(path, "coreml/apple-a17", tmp_path, frontends.load(path))
    assert out is None
    assert "no control flow (torch.cond)" in compiled.metadata["fallback"]


class WholeSlice(nn.Module):
    """GhostNet's `out[:, :self.out_chs]` over all the channels: torch.export keeps it as `aten.alias`."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 4, 1), nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.cat([self.a(x)], 1)[:, :4])


def test_alias_is_read_through_for_core_ml(tmp_path: Path) -> None:
    """coremltools lacks aten.alias (and its decomposition, prims.view_of): GhostNet fell back to the FX graph."""
    path = tmp_path / "alias.pt2"
    ep = torch.export.export(WholeSlice().eval(), (torch.randn(1, 3, 8, 8),))
    assert any("alias" in str(n.target) for n in ep.graph.nodes)
    torch.export.save(ep, path)
    compiled, out = compile_for_target(path, "coreml/apple-a17", tmp_path, frontends.load(path))
    assert out is not None and "fallback" not in compiled.metadata
    assert sorted(n.op_type for n in compiled.nodes if n.op_type == "conv") == ["conv", "conv"]
