"""MediaPipe's custom TFLite operators that XNNPACK runs as its own operators.

MediaPipe's segmentation and detection models (selfie and hair segmentation, the hand detector) carry three custom
operators whose code is a name, not a builtin: `Convolution2DTransposeBias` (a transposed convolution with its bias),
`MaxPoolingWithArgmax2D` and `MaxUnpooling2D` (mediapipe/util/tflite/operations/). A LiteRT build has no kernel of its
own for them, but the XNNPACK delegate takes all three by name (tflite/delegates/xnnpack/xnnpack_delegate.cc,
VisitMediaPipeDeconvolutionNode, VisitMediaPipeMaxPoolingNode, VisitMediaPipeUnpoolingNode), so LiteRT with XNNPACK
runs such a file as it is: as XNNPACK's Deconvolution, ArgMax Pooling and Unpooling operators. Their options are the C
structs XNNPACK copies from the custom data (TfLiteTransposeConvParams, TfLitePoolParams: int32 fields, padding
first); they are read here into the attributes the equivalent builtin carries, with `runs_as` naming that builtin
where there is one, so that work counts, pricing and the profile's attribution treat them as XNNPACK does.
"""

from __future__ import annotations

import struct
from typing import Any

CUSTOM = "custom"  # attribute: True on an operator whose code is a custom one (not a TFLite builtin)
RUNS_AS = "runs_as"  # attribute: the builtin operator whose work and kernels a custom operator has
# custom code -> (the builtin it runs as, if any; its option fields in the order of the C struct's leading int32s).
# MaxUnpooling2D has no builtin twin: it scatters each input element to the position its argmax names.
MEDIAPIPE_OPS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "Convolution2DTransposeBias": ("TRANSPOSE_CONV", ("padding", "stride_w", "stride_h")),
    "MaxPoolingWithArgmax2D": ("MAX_POOL_2D", ("padding", "stride_w", "stride_h", "filter_width", "filter_height")),
    "MaxUnpooling2D": (None, ("padding", "stride_w", "stride_h", "filter_width", "filter_height")),
}
_PADDING = {1: "SAME", 2: "VALID"}  # TfLitePadding (0 is kTfLitePaddingUnknown)


def custom_attributes(code: str, options: bytes) -> dict[str, Any]:
    """The builtin-like attributes of a known custom operator `code` from its raw custom options, else {}."""
    known = MEDIAPIPE_OPS.get(code)
    if known is None:
        return {}
    builtin, fields = known
    n = min(len(fields), len(options) // 4)
    values = struct.unpack(f"<{n}i", options[:4 * n]) if n else ()
    attrs: dict[str, Any] = {RUNS_AS: builtin} if builtin else {}
    for name, v in zip(fields, values):
        if name == "padding":
            attrs[name] = _PADDING.get(v, "UNKNOWN")
        elif v > 0:
            attrs[name] = v
    return attrs
