"""Architectures built with Hugging Face transformers from a config in code (random weights, nothing downloaded):
the models of Apple's Core ML model cards that neither torchvision nor timm has (simulator/published/coreml.csv).

Each builder returns a module whose forward takes one image tensor and returns the tensor the Core ML model
outputs. The configs are those of the checkpoints the cards converted, written out here (their parameter counts
match the cards': Depth Anything small 24.8M, DETR-ResNet50 panoptic 43M).
"""

from __future__ import annotations

import types
from collections.abc import Callable

import torch
from torch import nn


def _depth_anything(out_indices: list[int]) -> nn.Module:
    """Depth Anything small: a DINOv2 ViT-S/14 backbone and a DPT head (hub configs depth-anything/
    Depth-Anything-{V2-}Small-hf: 384 wide, 6 heads, 12 layers; neck 48/96/192/384, fusion 64). V1 taps layers 9-12,
    V2 layers 3/6/9/12: the same compute."""
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config

    backbone = Dinov2Config(hidden_size=384, num_attention_heads=6, num_hidden_layers=12, patch_size=14,
                            image_size=518, out_features=[f"stage{i}" for i in out_indices],
                            reshape_hidden_states=False)
    cfg = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=384, patch_size=14,
                              neck_hidden_sizes=[48, 96, 192, 384], fusion_hidden_size=64)
    return _Depth(DepthAnythingForDepthEstimation(cfg))


class _Depth(nn.Module):
    def __init__(self, m: nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self.m(input).predicted_depth


class _SemanticDetr(nn.Module):
    """DETR with its panoptic mask head, as a semantic-segmentation model: per pixel, the class whose queries'
    masks and scores agree most (transformers' post_process_semantic_segmentation: softmax over classes without
    "no object", sigmoid masks, their product summed over queries, argmax), at the mask head's resolution (1/4)."""

    def __init__(self, m: nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        out = self.m(input)
        classes = out.logits.softmax(-1)[..., :-1]
        masks = out.pred_masks.sigmoid()
        return torch.einsum("bqc,bqhw->bchw", classes, masks).argmax(1)


def _mask_head_forward(head: nn.Module, features: torch.Tensor, attention_masks: torch.Tensor,
                       fpn_features: list[torch.Tensor]) -> torch.Tensor:
    """DETR's mask head in the order of its reference code (repo facebookresearch/detr, models/segmentation.py
    @9a4b93a, MaskHeadSmallConv.forward) and of the transformers 4.x the Core ML card converted with: each FPN
    feature goes through its 1x1 adapter once, then is repeated per query. transformers 5 repeats the FPN features
    first and runs the adapters on all 100 copies (100x their work, 3 GB of fp16 activations at 448x448)."""
    queries = attention_masks.shape[1]

    def per_query(x: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(1).expand(-1, queries, -1, -1, -1).flatten(0, 1)

    x = torch.cat([per_query(features), attention_masks.flatten(0, 1)], dim=1)
    x = head.conv2(head.conv1(x))
    for stage, fpn in zip(head.fpn_stages, fpn_features):
        f = per_query(stage.fpn_adapter(fpn))
        x = stage.refine(f + nn.functional.interpolate(x, size=f.shape[-2:], mode="nearest"))
    return head.output_conv(x)


def _detr_segmentation() -> nn.Module:
    """facebook/detr-resnet-50-panoptic's architecture: a timm ResNet-50 backbone (random weights), 6 + 6
    transformer layers of width 256, 100 queries, 250 classes, the mask head (`_mask_head_forward`)."""
    from transformers import DetrConfig, DetrForSegmentation

    cfg = DetrConfig(use_timm_backbone=True, backbone="resnet50", use_pretrained_backbone=False, num_queries=100,
                     num_labels=250)
    m = DetrForSegmentation(cfg)
    m.mask_head.forward = types.MethodType(_mask_head_forward, m.mask_head)
    return _SemanticDetr(m)


BUILDERS: dict[str, Callable[[], nn.Module]] = {
    "depth-anything-small": lambda: _depth_anything([9, 10, 11, 12]),
    "depth-anything-v2-small": lambda: _depth_anything([3, 6, 9, 12]),
    "detr-resnet50-semantic": _detr_segmentation,
}


def build(name: str) -> nn.Module:
    if name not in BUILDERS:
        raise ValueError(f"unknown transformers architecture {name!r} (known: {', '.join(BUILDERS)})")
    return BUILDERS[name]().eval()
