"""A `.pt2` on a target predicted here (ONNX Runtime EPs, LiteRT delegates on devices): converted as the device would
be handed it, to ONNX (torch.onnx.export, dynamo) or to `.tflite` (litert-torch), and taken as that file's operators,
mapped back to the FX nodes. The device profiles' op lists, placement rules and fits are written in the runtime's
operators (ONNX's `Conv`, `Clip`; TFLite's `CONV_2D`), and their published measurements are of converted files; on
the FX graph a ReLU6 (`aten.hardtanh_`), a BatchNorm left unfolded or an eval-mode `aten.dropout` fell to the CPU
(MobileNetV2 on `litert-qnn/snapdragon-8g3` 40.7 ms, every op on the CPU). If the converter is missing or fails, the
FX graph is still predicted and the target's note says why.
"""

from __future__ import annotations

from pathlib import Path

from compiler.backends.base import as_tasks
from compiler.graph import Graph


def converted_tasks(src: Path, workdir: Path, source: Graph, runs: str) -> Graph:
    """Tasks of the `.pt2` at `src` converted for a runtime that loads `runs` ("onnx" or "tflite")."""
    from compiler.errors import ModelRunError, SandboxError

    if runs == "tflite":
        from compiler.backends.pt2_tflite import compile_for_litert

        compiled, out = compile_for_litert(src, workdir, source)  # its own FX fallback and note when not converted
        if out is not None:
            compiled.metadata.pop("target", None)  # the host check's (LiteRT loads the file), not this target's
            compiled.metadata["note"] = "converted to TFLite by litert-torch: one task per TFLite operator"
        return compiled
    from compiler.backends.pt2_onnx import compile_for_ort

    try:
        # ORT's own optimizations are left out: the EP is handed the exported graph, as an ONNX upload is predicted
        compiled, _ = compile_for_ort(src, workdir, source, opt_level="disable")
    except (ModelRunError, SandboxError) as e:
        fallback = as_tasks(source)
        fallback.metadata["note"] = f"not converted to ONNX ({e}); predicted with one task per FX node"
        fallback.metadata["fallback"] = f"not converted to ONNX ({e})"
        return fallback
    for key in ("target", "runtime", "opt_level"):  # the host compile's, not this target's
        compiled.metadata.pop(key, None)
    compiled.metadata["note"] = "converted to ONNX by torch.onnx.export (dynamo): one task per ONNX node"
    return compiled
