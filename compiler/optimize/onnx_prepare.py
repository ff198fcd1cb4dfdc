"""Bring a real ONNX file into the shape ORT's quantization tools expect, before any option is applied.

Real exports break those tools in ways our own test models do not (issue 14): repeated or empty node names
(dynamo), `value_info` that ORT's optimizations made stale (quantize_static's shape inference then fails with
"Inferred shape and existing shape differ"), and opsets older than an option's ops (per-channel QDQ needs 13).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import onnx

from compiler.frontends.onnx_scopes import name_by_id
from compiler.optimize.onnx_fp16 import restore_fp32
from compiler.vocabulary.options import OptionError

# Opset each kind of step writes ops of: per-channel DequantizeLinear (`axis`), BitwiseAnd in the palette decoder.
OPSET_STATIC_INT8 = 13
OPSET_PALETTE = 18


def one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:240]}"


def opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def named_copy(src: str | os.PathLike[str], out: Path, min_opset: int = 0, notes: list[str] | None = None) -> Path:
    """`src` with every node named by its analysis id (a unique name stays; an empty or repeated one becomes
    `<op>_<index>`, as compiler.frontends.onnx names it, so per-op overrides keyed by the analysis reach the same
    node), its fp16 values restored to fp32 (compiler.optimize.onnx_fp16: what ORT's tools expect; said in
    `notes`), converted to `min_opset` if it is older (onnx.version_converter), without stale value_info."""
    model = onnx.load(os.fspath(src))
    name_by_id(model)
    if restore_fp32(model) and notes is not None:
        notes.append("the weights stored fp16 were restored to fp32 before the option was applied (exactly: "
                     "fp16 -> fp32 loses nothing); inputs and outputs are fp32")
    have = opset(model)
    if have and have < min_opset:
        from onnx import version_converter

        try:
            model = version_converter.convert_version(model, min_opset)
        except Exception as e:  # noqa: BLE001 - the converter's failure is a property of this file
            raise OptionError(f"the option needs ONNX opset {min_opset} and converting this opset-{have} model "
                              f"failed ({one_line(e)})") from e
    del model.graph.value_info[:]
    for n in model.graph.node:
        # The torch exporters' debug records (stack traces, module paths: ~2.4 KB per node on dynamo files) are
        # not part of a deployed model, and the file size predicted for every option leaves them out.
        del n.metadata_props[:]
        n.doc_string = ""
    onnx.save(model, os.fspath(out))
    return out


def clear_value_info(model: onnx.ModelProto) -> None:
    """Shapes recorded before ORT's rewrites (a Gemm turned MatMul, folded BatchNorms) no longer hold."""
    del model.graph.value_info[:]


def quant_ready(src: Path, out: Path) -> Path:
    """ORT's quantization pre-processing (symbolic shape inference, then ONNX shape inference) without its
    optimization pass (done already, names kept). Where it fails (symbolic inference is fragile on some graphs)
    the file goes on without it: the quantizers infer what they need themselves."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    started = time.time()
    try:
        quant_pre_process(os.fspath(src), os.fspath(out), skip_optimization=True)
    except Exception:  # noqa: BLE001 - optional help, see docstring
        _remove_partial_model(started)
        return src
    return out


# Where ORT's symbolic shape inference saves the model it could not finish (weights as external data) before it
# raises: the working directory, which for `edgescope serve` and `edgescope optimize` is the user's.
_PARTIAL = "sym_shape_infer_temp.onnx"


def _remove_partial_model(since: float) -> None:
    """Remove the copy ORT left in the working directory (written after `since`: never a file of the user's)."""
    p = Path(_PARTIAL)
    try:
        if p.stat().st_mtime < since - 1:
            return
        m = onnx.load(os.fspath(p), load_external_data=False)
        for t in m.graph.initializer:
            for e in t.external_data:
                if e.key == "location" and Path(e.value).name == e.value:  # beside it, by ORT's uuid name
                    (p.parent / e.value).unlink(missing_ok=True)
        p.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - gone already (another export's cleanup), or not ORT's: leave it
        pass
