"""Exactly-zero initial weights are randomised before the published architectures are exported: zero-initialised
branches (timm's bn_weight_init=0, zero_init_last BatchNorms) are otherwise exactly zero, and converters fold them
away (litert-torch wrote LeViT-128S as 74 TFLite operators, 334 with them randomised)."""

from __future__ import annotations

import corpus  # noqa: F401  (torchvision importable beside CPU torch; before torchvision and timm)

import torch
from torch import nn

from benchmarks.published_models import build_module, onnx_path, tflite_path
from corpus.builders import build, randomise_zero_weights
from corpus.models import Entry
from simulator.published import architectures


def _zero(m: nn.Module) -> list[str]:
    return [n for n, p in m.named_parameters() if p.numel() > 1 and not p.any()]


def test_only_exactly_zero_parameters_are_randomised() -> None:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.Linear(8, 1))
    nn.init.zeros_(m[1].weight)  # a zero-initialised residual BatchNorm; its bias is zero too
    m[2].weight.data[0, 0] = 0.0  # one zero among non-zero values: not a zero-initialised tensor
    conv, lin = m[0].weight.clone(), m[2].weight.clone()
    assert randomise_zero_weights(m) == 2
    assert _zero(m) == []
    assert torch.equal(m[0].weight, conv) and torch.equal(m[2].weight, lin)
    assert m[2].bias.shape == (1,)  # one value: left as it is, even if it were zero


def test_published_builds_have_no_zero_initialised_branch() -> None:
    a = architectures()["levit"]
    plain = build(Entry("timm/levit_128s", "published", a.source, a.name, a.shape))
    assert any(n.endswith("bn.weight") for n in _zero(plain.module))  # timm closes its residual branches at zero
    built = build_module(a.source, a.name, a.shape, a.reparam)
    assert _zero(built.module) == []
    with torch.no_grad():
        assert not torch.allclose(built.module(*built.args), plain.module(*plain.args))


def test_cached_builds_are_named_for_their_weights(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = architectures()["resnet50"]
    # files built with the zero initial weights (named by the stem alone) are never read as these
    assert onnx_path(a, tmp_path).name == f"{a.stem}.nz.onnx" and tflite_path(a, tmp_path).name == f"{a.stem}.nz.tflite"
