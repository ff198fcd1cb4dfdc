"""Make torchvision 0.28.0's Python side importable beside the CPU build of torch 2.13.0.

PyPI's torchvision wheel carries a `_C.so` linked against torch's CUDA libraries
(`libc10_cuda.so`, `libtorch_cuda.so`), which the CPU build of torch does not have. torchvision
then runs without its compiled ops (`extension._HAS_OPS` is False) but still registers fake
(meta) kernels for them at import, which fails with "operator torchvision::nms does not exist".

This module defines those operators' schemas, as torchvision's C++ side declares them, so the
import succeeds. The models the corpus builds (classification, segmentation, detection backbones)
never call them; `nms` gets a plain-torch CPU kernel so detection post-processing runs eagerly, and
the other operators raise a clear error if ever called. Importing it twice does nothing, and so does
importing it after a working torchvision `_C` has registered the operators. It imports torchvision.
"""

from __future__ import annotations

import torch

_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align": ("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                  "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor"),
    "_roi_align_backward": ("_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, "
                            "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
                            "SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor"),
    "ps_roi_align": ("ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                     "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)"),
    "_ps_roi_align_backward": ("_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
                               "float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
                               "int sampling_ratio, SymInt batch_size, SymInt channels, SymInt height, "
                               "SymInt width) -> Tensor"),
    "roi_pool": ("roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                 "SymInt pooled_width) -> (Tensor, Tensor)"),
    "_roi_pool_backward": ("_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
                           "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
                           "SymInt height, SymInt width) -> Tensor"),
    "ps_roi_pool": ("ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                    "SymInt pooled_width) -> (Tensor, Tensor)"),
    "_ps_roi_pool_backward": ("_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
                              "float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
                              "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor"),
    "qroi_align": ("qroi_align(Tensor input, Tensor rois, float input_scale, int input_zero_point, "
                   "float rois_scale, int rois_zero_point, float spatial_scale, SymInt pooled_height, "
                   "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor"),
    "deform_conv2d": ("deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
                      "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
                      "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor"),
    "_deform_conv2d_backward": ("_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
                                "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, "
                                "SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
                                "SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"),
}

_LIB: torch.library.Library | None = None


def _nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy non-maximum suppression: indices of kept boxes, by decreasing score."""
    order = scores.argsort(descending=True)
    x1, y1, x2, y2 = dets.unbind(1)
    areas = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    keep = []
    suppressed = torch.zeros(dets.shape[0], dtype=torch.bool)
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        w = (torch.minimum(x2[i], x2) - torch.maximum(x1[i], x1)).clamp(min=0)
        h = (torch.minimum(y2[i], y2) - torch.maximum(y1[i], y1)).clamp(min=0)
        inter = w * h
        suppressed |= inter / (areas[i] + areas - inter) > iou_threshold
    return torch.tensor(keep, dtype=torch.long)


def _unavailable(name: str):  # type: ignore[no-untyped-def]
    def kernel(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError(f"torchvision::{name} has no kernel here: PyPI's torchvision _C needs CUDA torch")
    return kernel


def _has_ops() -> bool:
    return True


def install() -> None:
    global _LIB
    if _LIB is not None:
        return
    try:
        torch.ops.torchvision.nms  # noqa: B018  (defined already: the real _C loaded)
        return
    except (AttributeError, RuntimeError):
        pass
    _LIB = torch.library.Library("torchvision", "DEF")
    for name, schema in _SCHEMAS.items():
        _LIB.define(schema)
        _LIB.impl(name, _nms if name in ("nms", "qnms") else _unavailable(name), "CPU")
    import torchvision.extension

    # torchvision checks for its compiled ops before calling them; they are the ones defined above. A named function,
    # not a lambda: tracing a detector scripts batched_nms (`_script_if_tracing`), which compiles this check too, and
    # TorchScript cannot compile a lambda ("Expected a single top-level function": every whole detector's
    # TorchScript export failed so).
    torchvision.extension._has_ops = _has_ops


install()
