"""Core ML files as coremltools writes them for users (the corpus's Core ML exporters found these): a NeuralNetwork
`.mlmodel` keeps no intermediate shapes, a weight-quantized ML Program keeps its int8 weights in `constexpr_*`
ops, and an ML Program converted at the defaults stores fp16 weights. Each is costed on its work and priced at
the preset it stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import frontends
from compiler.frontends.onnx_view import onnx_view
from simulator.sweep import sweep
from testkit import coreml_builder as cb

TARGET = "coreml/apple-a17"


def _compute(path: Path) -> tuple[list[float], dict]:  # type: ignore[type-arg]
    g = frontends.load(path)
    p = sweep(g, TARGET, None, source=g)
    return [w.macs for w in p.works if w.kind in ("conv", "dwconv", "dwconvnchw", "convsmall", "convnchw", "gemm",
                                                  "matmul")], p.bulk


def test_neuralnetwork_shapes_are_propagated(nn_mlmodel: Path) -> None:
    g = frontends.load(nn_mlmodel)
    shapes = [g.values[n.outputs[0]].shape for n in g.nodes]
    # stem conv stride 2 (32 -> 16), ReLU, depthwise conv, mean over H and W, Linear to 10
    assert shapes[0] == [1, 16, 16, 16] and shapes[2] == [1, 16, 16, 16], shapes
    assert shapes[-1] is not None and shapes[-1][-1] == 10, shapes
    p = sweep(g, TARGET, None, source=g)
    assert all(w.shapes_known for w in p.works), [n.id for n, w in zip(g.nodes, p.works) if not w.shapes_known]


def test_neuralnetwork_priced_as_its_ml_program(nn_mlmodel: Path, cnn_zip: Path) -> None:
    nn_macs, nn_bulk = _compute(nn_mlmodel)
    ml_macs, ml_bulk = _compute(cnn_zip)
    assert sorted(nn_macs) == sorted(ml_macs) and min(nn_macs) > 0
    assert nn_bulk["base"]["preset"] == "fp32" and ml_bulk["base"]["preset"] == "fp16"  # what each file stores
    nn_ms, ml_ms = nn_bulk["base"]["latency_ms"], ml_bulk["base"]["latency_ms"]
    assert abs(nn_ms / ml_ms - 1) < 0.25, (nn_ms, ml_ms)


def test_neuralnetwork_activation_kinds(nn_mlmodel: Path) -> None:
    view = onnx_view(frontends.load(nn_mlmodel))
    assert [n.op_type for n in view.nodes][:2] == ["Conv", "Relu"]


def test_int8_weights_are_weights_not_tasks(int8_zip: Path, cnn_zip: Path) -> None:
    g = frontends.load(int8_zip)
    assert not any(n.op_type.startswith("constexpr_") for n in g.nodes), [n.op_type for n in g.nodes]
    stem = g.weights_of(next(n for n in g.nodes if n.op_type == "conv"))
    kernel = next(v for v in stem if v.shape == [16, 3, 3, 3])
    assert kernel.dtype == "int8" and kernel.weight is not None
    assert kernel.weight.elements == 432 and 432 <= kernel.weight.bytes < 432 + 16 * 8  # int8 + scales, zero points
    q_macs, q_bulk = _compute(int8_zip)
    f_macs, f_bulk = _compute(cnn_zip)
    assert sorted(q_macs) == sorted(f_macs)  # was: convs of 0 MACs reading their kernel as an activation
    assert q_bulk["base"]["preset"] == "int8-dynamic"  # Core ML's weight-only int8
    assert q_bulk["base"]["latency_ms"] <= f_bulk["base"]["latency_ms"] * 1.05


def test_an_already_compressed_package_is_not_exported_again(int8_zip: Path, tmp_path: Path) -> None:
    from compiler.optimize.coreml_export import load_package
    from compiler.vocabulary.options import OptionError

    # coremltools compresses float consts only: an fp16 "export" of this package wrote the int8 file unchanged
    with pytest.raises(OptionError, match="already compressed .*constexpr_affine_dequantize"):
        load_package(int8_zip, tmp_path)


def test_neuralnetwork_reshape_copies_zero_and_infers_minus_one() -> None:
    from compiler.frontends.coreml_nn_shapes import _reshape

    assert _reshape([0, -1, 32], [1, 56, 56, 32]) == [1, 3136, 32]  # PVT-v2's tokens: was unknown, and all after it


def _keyword_spotter():  # type: ignore[no-untyped-def]
    """A one-layer LSTM keyword spotter (40 features, hidden 64) and its input of 20 frames."""
    import torch
    from torch import nn

    class Kws(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(40, 64, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lstm(x)[0]

    return Kws().eval(), (torch.randn(1, 20, 40),)


def test_neuralnetwork_lstm_weights_are_read(tmp_path: Path) -> None:
    ml = cb._convert(*_keyword_spotter(), "neuralnetwork")
    path = tmp_path / "kws.mlmodel"
    ml.save(str(path))
    g = frontends.load(path)
    weights = sum(v.weight.bytes for v in g.values.values() if v.weight is not None)
    # 4 gates x (40 + 64) x 64 fp32 weights + biases, inside LSTMWeightParams: were not read (a 0 B LSTM)
    assert weights >= 4 * (40 + 64) * 64 * 4
    assert weights <= path.stat().st_size
    lstm = next(n for n in g.nodes if n.op_type == "uniDirectionalLSTM")
    assert g.values[lstm.outputs[0]].shape == [20, 1, 64, 1, 1]  # [Seq, B, H, 1, 1]: was unknown, and all after it
    p = sweep(g, TARGET, None, source=g)
    assert all(w.shapes_known for w in p.works)


def test_a_hardswish_is_priced_as_its_onnx_twin(tmp_path: Path) -> None:
    """coremltools writes a PyTorch Hardswish as thresholded_relu + sigmoid_hard + mul (ML Program; the NeuralNetwork
    file as the same three layers), an ONNX export as one HardSwish: the same network costs the same from either
    file (MobileNetV3-Small's ML Program was +31% above its ONNX export on coreml/apple-a17, LCNet-050's +58%)."""
    import torch
    from torch import nn

    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.Hardswish(), nn.Conv2d(16, 16, 3, padding=1, groups=16),
                        nn.Hardswish(), nn.Conv2d(16, 8, 1)).eval()
    x = torch.randn(1, 3, 64, 64)
    package = cb.mlpackage_from(net, (x,), tmp_path / "hs.mlpackage.zip")
    nn_path = tmp_path / "hs.mlmodel"
    cb._convert(net, (x,), "neuralnetwork").save(str(nn_path))
    onnx_path = tmp_path / "hs.onnx"
    torch.onnx.export(net, (x,), onnx_path, dynamo=False, opset_version=17)
    ms = {}
    for path in (package, nn_path, onnx_path):
        g = frontends.load(path)
        r = sweep(g, TARGET)
        p = [x["name"] for x in r.bulk["presets"]].index("fp16")
        ms[path.name] = sum(row[p] for row in r.bulk["metrics"]["latency_ms"])
    view = onnx_view(frontends.load(package))
    assert [n.op_type for n in view.nodes].count("HardSwish") == 2, [n.op_type for n in view.nodes]
    assert sum(1 for n in view.nodes if n.attributes.get("act_part") == "HardSwish") == 4
    for name in ("hs.mlpackage.zip", "hs.mlmodel"):
        assert abs(ms[name] / ms["hs.onnx"] - 1) < 0.03, ms  # was +92% from either Core ML file


def test_ml_program_lstm_is_costed_as_an_lstm(tmp_path: Path) -> None:
    """An ML Program's `lstm` op (weight_ih [4H, I], weight_hh [4H, H]) is costed as ONNX's LSTM: its MACs per step,
    where it was an unknown op of no work (a keyword spotter: 0.17 ms vs 0.51 from its ONNX export)."""
    path = cb.mlpackage_from(*_keyword_spotter(), tmp_path / "kws.mlpackage.zip")
    g = frontends.load(path)
    assert [n.op_type for n in onnx_view(g).nodes].count("LSTM") == 1
    p = sweep(g, TARGET, None, source=g)
    lstm = next(w for n, w in zip(g.nodes, p.works) if n.op_type == "lstm")
    assert lstm.macs == 20 * 4 * 64 * (40 + 64), lstm.macs  # steps x gates x hidden x (input + hidden); was 0
