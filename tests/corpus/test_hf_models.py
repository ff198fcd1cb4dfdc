"""The Hugging Face transformers architectures of the A17 Pro rows (corpus/hf_models.py): built from configs in code,
they have the parameter counts Apple's Core ML cards state, and their forward gives the tensor the Core ML model
outputs. transformers is a dev dependency (pyproject.toml): a missing install fails here, it is not skipped."""

from __future__ import annotations

import pytest
import torch

import corpus  # noqa: F401  (torchvision importable beside CPU torch, before transformers imports it)
from corpus.hf_models import BUILDERS, build

pytestmark = pytest.mark.slow  # 6-8 s a model on a 2-vCPU VM


def _params_m(m: torch.nn.Module) -> float:
    return sum(p.numel() for p in m.parameters()) / 1e6


@pytest.mark.parametrize("name", ["depth-anything-small", "depth-anything-v2-small"])
def test_depth_anything_small_matches_the_card_and_gives_a_depth_map(name: str) -> None:
    m = build(name)
    assert _params_m(m) == pytest.approx(24.8, abs=0.05)  # the cards' 24.8M
    with torch.no_grad():
        out = m(torch.randn(1, 3, 140, 196))  # multiples of the 14-pixel patch
    assert out.shape == (1, 140, 196)


def test_detr_segmentation_matches_the_card_and_runs_each_fpn_adapter_once() -> None:
    m = build("detr-resnet50-semantic")
    assert _params_m(m) == pytest.approx(43.0, abs=0.15)  # the card's 43M
    calls: list[int] = []
    for stage in m.m.mask_head.fpn_stages:
        stage.fpn_adapter.register_forward_hook(lambda _m, args, _o: calls.append(args[0].shape[0]))
    with torch.no_grad():
        out = m(torch.randn(1, 3, 128, 128))
    assert out.shape == (1, 32, 32) and out.dtype == torch.int64  # class ids at the mask head's 1/4 resolution
    assert calls == [1, 1, 1]  # on the image's features, before they are repeated for the 100 queries


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="depth-anything-small"):
        build("no-such-model")
    assert set(BUILDERS) == {"depth-anything-small", "depth-anything-v2-small", "detr-resnet50-semantic"}
