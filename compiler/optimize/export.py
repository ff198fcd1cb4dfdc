"""One entry for writing an optimized model: dispatch on the target's exporter (`Target.export`).

- "onnx": ONNX Runtime's tools (`compiler.optimize.onnx_export`).
- "coreml": coremltools.optimize.coreml on an uploaded `.mlpackage` or the one converted from a `.pt2` (W8A8
  calibrated on the `.pt2`: compiler.optimize.coreml_w8a8).
- "tflite": ai-edge-quantizer on an uploaded `.tflite`, or on the one litert-torch converts from a `.pt2`.

Each is given the simulator's prediction of the state it writes and returns it next to the real file size, so
the worker, the API and `edgescope optimize` report predicted vs actual the same way. Predicting is the
simulator's job: `simulator.predict.optimize_model` predicts, then calls `optimize_for_target` here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.graph import Graph
from compiler.vocabulary.options import OptionError
from compiler.vocabulary.targets import get_target, targets_for_format

if TYPE_CHECKING:
    from compiler.optimize.onnx_export import ExportResult

# File extension of each exporter's output (a Core ML package is a folder, so it is zipped).
EXTENSIONS = {"onnx": ".onnx", "coreml": ".mlpackage.zip", "tflite": ".tflite"}
# Upload formats each exporter starts from (Core ML: coremltools converts from torch, not from ONNX).
SOURCES = {"onnx": ("onnx", "pt2"), "coreml": ("coreml", "pt2"), "tflite": ("tflite", "pt2")}
_FORMAT_NAMES = {"onnx": "an ONNX model", "pt2": "a PyTorch .pt2", "coreml": "a Core ML model",
                 "tflite": "a .tflite model"}
# What runs the file, for "does not run on this server" labels.
RUNTIMES = {"onnx": "this ONNX Runtime execution provider", "coreml": "Core ML", "tflite": "LiteRT on this device"}


def exporter(target: str, model_format: str) -> str:
    """The exporter for `target`, or OptionError saying why this model cannot be exported there."""
    kind = get_target(target).export
    if kind not in EXTENSIONS:
        raise OptionError(f"no exporter for {target}; exports are built for ONNX Runtime, Core ML and LiteRT targets")
    if model_format not in SOURCES[kind]:
        can = [t for t in targets_for_format(model_format)
               if get_target(t).export in SOURCES and model_format in SOURCES[get_target(t).export]]
        raise OptionError(f"{target} exports start from {' or '.join(_FORMAT_NAMES[f] for f in SOURCES[kind])}; "
                          f"this one is {_FORMAT_NAMES.get(model_format, model_format)}"
                          + (" (coremltools converts from PyTorch, not from ONNX)" if kind == "coreml" else "")
                          + f"; its targets with exports: {', '.join(can) or 'none'}")
    return kind


def check_state(target: str, model_format: str, model_wide: str, overrides: Mapping[str, str]) -> str:
    """Validate before queueing: the exporter exists for this model and supports every option."""
    kind = exporter(target, model_format)
    if kind == "tflite":
        from compiler.optimize.litert_export import check_options

        check_options(model_wide, overrides)
    return kind


def optimize_for_target(model_path: str | os.PathLike[str], out_path: str | os.PathLike[str], target: str,
                        prediction: Mapping[str, Any], source: Graph, compiled: Graph,
                        workdir: str | os.PathLike[str], input_shapes: Mapping[str, list[int]] | None = None,
                        input_values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write the optimized model for `target` at `out_path` (extension: EXTENSIONS[kind]) in the state the
    simulator predicted: `prediction`, `source` and `compiled` are what `simulator.predict.predict_model` returned
    for this model (its resolved model-wide option, its overrides by task id, its input plan and totals).
    Returns {"path", "size_bytes" (on disk; a Core ML package unzipped), "predicted", "size_error_pct", "notes",
    "choices", "prediction", "export"}."""
    # Absolute: sandboxed children (LiteRT compile, quantization) run in their own working directory.
    model_path, out_path, workdir = Path(model_path).resolve(), Path(out_path).resolve(), Path(workdir)
    kind = exporter(target, source.format)
    if kind == "onnx":
        res = _write_onnx(model_path, out_path, prediction, source, compiled, workdir)
        choices = res.choices
    elif kind == "coreml":
        from compiler.optimize.coreml_export import export_coreml_file

        # A .pt2 is calibrated at the shapes the prediction used (the input plan's) for W8A8.
        res = export_coreml_file(_coreml_source(model_path, source.format, compiled.metadata, workdir), out_path,
                                 prediction["model_wide"], prediction["overrides"], compiled,
                                 pt2=model_path if source.format == "pt2" else None,
                                 input_shapes={p["name"]: p["shape"] for p in prediction["inputs"]},
                                 input_values={p["name"]: p["value"] for p in prediction["inputs"]
                                               if p["value"] is not None})
        choices = res.weights
    else:
        from compiler.optimize.litert_export import export_tflite

        # Task ids of a .tflite are its operator ids (one task per operator).
        tflite_src, tflite_ops = model_path, prediction["overrides"]
        if source.format == "pt2":
            tflite_src, tflite_ops = _tflite_source(model_path, source, compiled, prediction["overrides"], workdir)
        res = export_tflite(tflite_src, out_path, prediction["model_wide"], tflite_ops, input_shapes, input_values)
        choices = res.choices
    pred = prediction["totals"]["size_bytes"]
    return {"path": str(res.path), "size_bytes": res.size_bytes,
            "predicted": {**prediction["totals"], "label": prediction["label_text"]},
            "size_error_pct": (pred / res.size_bytes - 1) * 100, "notes": res.notes, "choices": choices,
            "prediction": prediction, "export": kind}


def _write_onnx(model_path: Path, out_path: Path, prediction: Mapping[str, Any], source: Graph, compiled: Graph,
                workdir: Path) -> ExportResult:
    """The ONNX export of the predicted state."""
    # Export works on source nodes: a task's override applies to every source node it implements. They are
    # keyed by source node id, which the exporter names each node by (a repeated or empty name gets its id).
    by_id = {n.id: n for n in compiled.nodes}
    src_over: dict[str, str] = {}
    for tid, combo in prediction["overrides"].items():
        for s in by_id[tid].source_nodes or [tid]:
            src_over[s] = combo
    from compiler.optimize.onnx_export import export_onnx, exportable_names

    if source.format == "pt2":
        # Exported from the ONNX file torch.onnx.export makes of it (the one ort-cpu/host compiled, else made here).
        # Its nodes are not the FX nodes the analysis shows, so per-op overrides have nowhere to go.
        if src_over:
            raise OptionError("per-op overrides of a .pt2 model cannot be exported to ONNX (its ONNX nodes are not "
                              "the FX nodes the analysis shows); export a model-wide option, or upload the ONNX file")
        from compiler.backends.pt2_onnx import to_onnx

        converted = workdir / "source.onnx"
        model_path = converted if converted.exists() else to_onnx(model_path, converted)
    known = exportable_names(model_path)
    # The exporter calibrates static int8 at the shapes the prediction used (the input plan's).
    used = {p["name"]: p["shape"] for p in prediction["inputs"]}
    return export_onnx(model_path, out_path, prediction["model_wide"],
                       {k: v for k, v in src_over.items() if k in known}, input_shapes=used,
                       input_values={p["name"]: p["value"] for p in prediction["inputs"] if p["value"] is not None},
                       upload=source.format != "pt2")


def _tflite_source(pt2: Path, source: Graph, compiled: Graph, overrides: Mapping[str, str],
                   workdir: Path) -> tuple[Path, dict[str, str]]:
    """The .tflite litert-torch made of a .pt2, and the overrides keyed by its operator ids.
    On litert-cpu/host the prediction already ran on the converted file (tasks are operators); on
    a predicted LiteRT target tasks are FX nodes, so the file is converted here and each operator
    takes the option of the FX nodes it implements (the first one's, if they differ)."""
    converted = workdir / "litert-cpu.tflite"
    if compiled.format == "tflite" and converted.exists():
        return converted, dict(overrides)
    from compiler.backends import pt2_tflite

    tdir = workdir / "tflite"
    tdir.mkdir(exist_ok=True)
    tasks, path = pt2_tflite.compile_for_litert(pt2, tdir, source)
    if path is None:
        raise OptionError(f"the model could not be converted to TFLite, so it cannot be exported for LiteRT: "
                          f"{tasks.metadata.get('note', 'no converted file')}")
    by_op: dict[str, str] = {}
    for t in tasks.nodes:
        chosen = next((overrides[s] for s in t.source_nodes if s in overrides), None)
        if chosen is not None:
            by_op[t.id] = chosen
    return path, by_op


def _coreml_source(model_path: str | os.PathLike[str], fmt: str, metadata: Mapping[str, str],
                   workdir: str | os.PathLike[str]) -> Path:
    if fmt == "coreml":
        return Path(model_path)
    # A .pt2 was converted by the Core ML backend while compiling for the prediction
    # (compiler.backends.coreml.compile writes it there); a failed conversion left a note instead.
    converted = Path(workdir) / "coreml.mlpackage.zip"
    if not converted.exists():
        raise OptionError(f"the model could not be converted to Core ML, so it cannot be exported for it: "
                          f"{metadata.get('note', 'no converted package')}")
    return converted


def measure_export(path: Path, target: str, kind: str, workdir: Path, settings: Any) -> Any:
    """Measure an exported file on `target` here, as the analysis measures an upload. An ONNX file is compiled
    first (ORT's optimizations: constant folding decodes palettes at load, fusions, NCHWc) and the compiled graph
    is profiled, since the ORT profile runs its file with optimizations off; other files are profiled as written."""
    from compiler.backends import compile_for_target, for_target

    if kind != "onnx":
        return for_target(target).profile(path, settings)
    from compiler.frontends import onnx as onnx_frontend

    from compiler.backends.ort import AS_WRITTEN

    compiled_dir = Path(workdir) / "measure"
    compiled_dir.mkdir(parents=True, exist_ok=True)
    source = onnx_frontend.load(path)
    source.metadata[AS_WRITTEN] = "true"  # a QDQ export runs as written, not as the float graph an upload's table is
    _, compiled_path = compile_for_target(path, target, compiled_dir, source)
    return for_target(target).profile(compiled_path or path, settings)
