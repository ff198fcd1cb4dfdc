"""Real architectures exported to ONNX the way users export them, for the exporter's tests (not a zoo model: a
transformers BertModel called with keyword args, as HF code wraps it)."""

from __future__ import annotations

from pathlib import Path

BERT_SHAPES = {"input_ids": [1, 32], "attention_mask": [1, 32]}


def bert_onnx(path: Path, layers: int = 2) -> Path:
    """A `layers`-layer BertModel (random weights, hidden 64) exported by TorchScript at opset 17: on ort-cpu/host
    ORT fuses each residual Add + LayerNorm into SkipLayerNormalization."""
    import torch

    import corpus.torchvision_compat  # noqa: F401  (before transformers, which imports torchvision)
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=layers, hidden_size=64, num_attention_heads=2, intermediate_size=128,
                     vocab_size=1000)

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = BertModel(cfg).eval()

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids = torch.ones(*BERT_SHAPES["input_ids"], dtype=torch.long)
    torch.onnx.export(Wrapped().eval(), (ids, ids), str(path), dynamo=False, opset_version=17,
                      input_names=["input_ids", "attention_mask"], output_names=["out"])
    return path
