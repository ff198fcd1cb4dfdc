"""The look-alikes of shipped edge models (corpus.lookalikes) build and run: the DBNet-style detector keeps the input's
size at another H x W, the BlazeFace-like detector gives 896 anchors, the VAD's scripted form holds the If its
TorchScript export writes and takes the 16 kHz branch for sr = 16000."""

from __future__ import annotations

import torch

from corpus.builders import build
from corpus.lookalikes import model
from corpus.models import BY_ID


def test_detectors_run_at_their_shapes() -> None:
    with torch.no_grad():  # the modules alone: build() runs the detector once at 736 x 736 (seconds)
        assert model("dbnet-det").eval()(torch.randn(1, 3, 64, 32)).shape == (1, 2, 64, 32)
        boxes, scores = model("blazeface").eval()(torch.randn(1, 3, 128, 128))
    assert boxes.shape == (1, 896, 16) and scores.shape == (1, 896, 1)


def test_the_vad_branches_on_its_sample_rate_when_scripted() -> None:
    b = build(BY_ID["torch/vad-if"])
    assert b.input_names == ["input", "state", "sr"] and b.script
    scripted = torch.jit.script(b.module)
    assert "prim::If" in str(scripted.graph)
    with torch.no_grad():
        out, state = scripted(*b.args)
        ref, _ = b.module.b16(*b.args[:2])  # type: ignore[operator]
    assert state.shape == (2, 1, 128) and torch.allclose(out, ref)
