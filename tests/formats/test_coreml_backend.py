"""Core ML backend: .pt2 converted for real (coremltools) with tasks mapped to FX nodes; Core ML
uploads are their own task graph; other formats one task per node."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import backends, frontends
from compiler.graph import ModelFormatError
from edgescope.commands.export_pt2 import export_pt2
from testkit import coreml_builder as cb
from tests.formats.test_pt2 import SRC


@pytest.fixture(scope="session")
def converted(models, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pt2 = models.get("net.pt2", lambda q: export_pt2(f"{SRC / 'net.py'}:build", q)[0])
    source = frontends.load(pt2)
    compiled, path = backends.for_target("coreml/apple-a17").compile(pt2, tmp_path_factory.mktemp("coreml"), source)
    return source, compiled, path


def test_pt2_converted_to_core_ml_program(converted) -> None:  # type: ignore[no-untyped-def]
    source, compiled, path = converted
    assert not backends.for_target("coreml/apple-a17").measures
    assert path is not None and path.name.endswith(".mlpackage.zip")
    assert frontends.detect(path) == "coreml" and compiled.format == "coreml"
    assert compiled.metadata["converted_from"].startswith("pt2 (coremltools")
    ops = [n.op_type for n in compiled.nodes]
    assert ops.count("conv") == 3 and "linear" in ops and "cast" in ops  # fp16 input cast inserted
    ids = {n.id for n in source.nodes}
    covered = {s for n in compiled.nodes for s in n.source_nodes}
    assert covered | set(compiled.eliminated) == ids and all(set(n.source_nodes) <= ids for n in compiled.nodes)


def test_scopes_and_locations_kept_through_conversion(converted) -> None:  # type: ignore[no-untyped-def]
    _, compiled, _ = converted
    conv = next(n for n in compiled.nodes if n.source_nodes == ["conv2d_1"])
    assert conv.op_type == "conv" and conv.namespace == "blocks/blocks.0 (Block)/blocks.0.conv (Conv2d)"
    assert conv.location is not None and (conv.location.file, conv.location.line) == ("layers.py", 14)


def test_coreml_upload_is_its_own_task_graph(models, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    z = models.get("cnn.mlpackage.zip", lambda p: cb.mlpackage_zip(p, "cnn"))
    source = frontends.load(z)
    compiled, path = backends.for_target("coreml/apple-a17").compile(z, tmp_path, source)
    assert path == z and [n.source_nodes for n in compiled.nodes] == [[n.id] for n in source.nodes]


def test_hostile_pt2_refused_before_conversion(models, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import pickle

    from tests.formats.test_pt2 import _Payload, _replace

    pt2 = models.get("net.pt2", lambda q: export_pt2(f"{SRC / 'net.py'}:build", q)[0])
    marker = tmp_path / "pwned"
    bad = _replace(pt2, tmp_path / "bad.pt2", "data/constants/x", pickle.dumps(_Payload(marker), protocol=2))
    with pytest.raises(ModelFormatError, match="refusing"):
        backends.for_target("coreml/apple-a17").compile(bad, tmp_path, frontends.load(pt2))
    assert not marker.exists()


def test_an_ml_programs_silu_is_placed_as_its_onnx_twin(tmp_path: Path) -> None:
    """coremltools writes a PyTorch SiLU as the ML Program op `silu`, an ONNX export as Sigmoid + Mul (and a Hardswish
    with a `thresholded_relu`, ONNX as one HardSwish): the same
    network is placed alike from either file (the .mlpackage of timm's mobilevitv2_050 ran its 25 silu on the GPU,
    8.88 ms, against 1.87 ms for its ONNX export)."""
    import torch
    from torch import nn

    from simulator.sweep import sweep

    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.SiLU(), nn.Conv2d(16, 16, 3, padding=1), nn.SiLU(),
                        nn.Conv2d(16, 16, 1), nn.Hardswish()).eval()
    x = torch.randn(1, 3, 32, 32)
    package = cb.mlpackage_from(net, (x,), tmp_path / "silu.mlpackage.zip")
    onnx_path = tmp_path / "silu.onnx"
    torch.onnx.export(net, (x,), onnx_path, dynamo=False, opset_version=17)
    placed = {}
    for path in (package, onnx_path):
        g = frontends.load(path)
        r = sweep(g, "coreml/apple-a17")
        p = [x["name"] for x in r.bulk["presets"]].index("fp16")
        placed[path.suffix] = {r.bulk["units"][i][p] for i in range(len(g.nodes)) if g.nodes[i].op_type != "const"}
    # a Hardswish is written as thresholded_relu + sigmoid_hard + mul (ONNX: one HardSwish, listed)
    assert {"silu", "thresholded_relu"} <= {n.op_type for n in frontends.load(package).nodes}
    assert placed[".zip"] == placed[".onnx"] == {"ane"}, placed


def test_an_l2_normalize_and_a_broadcast_are_placed_on_the_ane_from_either_file(tmp_path: Path) -> None:
    """F.normalize and an expand (SwiftFormer's additive attention, MobileViTv2's linear attention): ONNX writes them
    as ReduceL2 + Clip + Expand + Div, coremltools as reduce_l2_norm + maximum + real_div and tile. Both run on the A17
    Pro's ANE (SwiftFormer's published 0.7 ms on an iPhone 14 Neural Engine leaves no room for its 24 GPU partitions:
    apple-a17.yaml ops_source), and the same network is placed alike from either file."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from simulator.sweep import sweep

    class Additive(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.q = nn.Parameter(torch.randn(1, 16, 1, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = F.normalize(self.conv(x), dim=1)
            return y * (y * self.q).sum(dim=1, keepdim=True).expand(1, 16, 32, 32)

    net, x = Additive().eval(), torch.randn(1, 3, 32, 32)
    package = cb.mlpackage_from(net, (x,), tmp_path / "additive.mlpackage.zip")
    exported = tmp_path / "additive-raw.onnx"
    torch.onnx.export(net, (x,), exported, dynamo=False, opset_version=17)
    # Its shape chain (Shape, ConstantOfShape, Where) folded at ORT's basic level, as the published builder does.
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(onnx_path := tmp_path / "additive.onnx")
    ort.InferenceSession(str(exported), so, providers=["CPUExecutionProvider"])
    placed, ops = {}, {}
    for path in (package, onnx_path):
        g = frontends.load(path)
        r = sweep(g, "coreml/apple-a17")
        p = [x["name"] for x in r.bulk["presets"]].index("fp16")
        live = [i for i in range(len(g.nodes)) if g.nodes[i].op_type not in ("const", "Constant")]
        placed[path.suffix] = {r.bulk["units"][i][p] for i in live}
        ops[path.suffix] = {g.nodes[i].op_type for i in live}
    assert {"reduce_l2_norm", "maximum", "tile"} <= ops[".zip"] and {"ReduceL2", "Expand"} <= ops[".onnx"], ops
    assert placed[".zip"] == placed[".onnx"] == {"ane"}, placed
