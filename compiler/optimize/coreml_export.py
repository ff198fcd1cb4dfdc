"""Core ML export with coremltools.optimize.coreml compression, of a PyTorch model or of a Core ML
file (an uploaded zipped `.mlpackage`, or the one Edgescope converted from a `.pt2`).

Conversion from torch works on Linux; Core ML prediction (and so coremltools' own activation calibration for
W8A8: `linear_quantize_activations` runs `MLModel.predict`) needs macOS. For a `.pt2` upload the activation
ranges come from running its torch program here instead (`compiler.optimize.coreml_w8a8`), and `int8-static`
writes W8A8: int8 weights and quantize / dequantize pairs around every conv, linear, add and pool, as
coremltools does. An uploaded ML Program cannot be run here, so there `int8-static` writes int8 weights only;
the simulator predicts each as written (`simulator.backends.plan`). Every saved package is loaded back (spec and
MIL program) and must hold each compressed weight's decompression op and, under W8A8, a dequantized input to
each op the option quantizes (`check_package`).
Per-op overrides are keyed by the name of the weight's const op in the MIL program (as
`coremltools.optimize.coreml.get_weights_metadata` lists them); `weight_names()` returns them, and
`weights_by_task()` maps the simulator's task ids (MIL ops) onto them.

Files are written as zipped `.mlpackage` (a package is a folder), stored uncompressed so the
download is the package's size on disk, which is what the simulator predicts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from compiler.backends.coreml import zip_package
from compiler.graph import Graph, ModelFormatError
from compiler.optimize.choices import Choice, resolve_option
from compiler.optimize.coreml_w8a8 import ActivationPlan
from compiler.optimize.palette import kmeans_1d
from compiler.vocabulary.formats import lut_bits
from compiler.vocabulary.options import OptionError

FLOAT_FORMAT = "fp16"  # ML Program default precision
MIN_WEIGHT_ELEMENTS = 2048  # coremltools' weight_threshold: smaller consts (biases) stay uncompressed


@dataclass
class CoreMLExport:
    path: Path
    size_bytes: int
    weights: dict[str, str]  # weight name -> combo applied
    notes: list[str] = field(default_factory=list)


def _ct() -> Any:
    try:
        import coremltools as ct
    except ImportError as e:  # pragma: no cover - pinned dependency
        raise OptionError("Core ML export needs coremltools (pip install coremltools==9.0)") from e
    return ct


def convert(module: Any, example_inputs: Sequence[Any], fp32: bool = False) -> Any:
    """torch module -> ML Program (iOS 18: per-block int4 and joint sparse + palettized weights need it)."""
    import torch

    ct = _ct()
    traced = torch.jit.trace(module.eval(), tuple(example_inputs))
    return ct.convert(traced, inputs=[ct.TensorType(name=f"input_{i}", shape=tuple(x.shape))
                                      for i, x in enumerate(example_inputs)],
                      convert_to="mlprogram", minimum_deployment_target=ct.target.iOS18,
                      compute_precision=ct.precision.FLOAT32 if fp32 else ct.precision.FLOAT16)


def weight_names(mlmodel: Any) -> dict[str, int]:
    """{const op name: elements} of the weights compression can act on."""
    import coremltools.optimize.coreml as cto

    # get_weights_metadata keeps sizes >= its threshold, the compression passes sizes > theirs: +1 lists exactly
    # what they compress (a 32x64 Linear, 2048 values, stays fp16; listed, its check failed).
    meta = cto.get_weights_metadata(mlmodel, weight_threshold=MIN_WEIGHT_ELEMENTS + 1)
    return {name: int(m.val.size) for name, m in meta.items()}


def _kmeans_lut(w: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(table of 2^bits values in the weight's dtype, one uint8 index per value), for coremltools' custom mode."""
    table, idx = kmeans_1d(w, bits)
    return table.astype(w.dtype), idx


def _configs(c: Choice) -> list[Any]:
    """Compression passes for one choice, in the order coremltools applies jointly (prune first)."""
    import coremltools.optimize.coreml as cto

    out: list[Any] = []
    if c.combo.sparsity:
        out.append(("prune", cto.OpMagnitudePrunerConfig(target_sparsity=c.combo.sparsity / 100,
                                                         weight_threshold=MIN_WEIGHT_ELEMENTS)))
    k = c.combo.kernel
    lb = lut_bits(k)
    if lb is not None:
        # coremltools' own "kmeans" mode needs scikit-learn (or kmeans1d), which Edgescope does not install: the
        # ONNX exporter's k-means instead, one table per weight as there.
        out.append(("palettize", cto.OpPalettizerConfig(mode="custom", lut_function=partial(_kmeans_lut, bits=lb),
                                                        weight_threshold=MIN_WEIGHT_ELEMENTS)))
    elif k == "int8":
        out.append(("quantize", cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8",
                                                            granularity="per_channel",
                                                            weight_threshold=MIN_WEIGHT_ELEMENTS)))
    elif k == "int4":
        out.append(("quantize", cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int4",
                                                            granularity="per_block", block_size=32,
                                                            weight_threshold=MIN_WEIGHT_ELEMENTS)))
    return out


def export_coreml(mlmodel: Any, out_path: str | os.PathLike[str], model_wide: str,
                  overrides: Mapping[str, str] | None = None, activations: ActivationPlan | None = None,
                  calibration_note: str = "") -> CoreMLExport:
    """Compress an ML Program per weight and save it as .mlpackage. Overrides: {weight name: option}.
    `activations`: the ops to give int8 activations and their ranges (coreml_w8a8.plan_activations); without it,
    int8 activations are not written (weights only, with a note)."""
    import coremltools.optimize.coreml as cto

    from compiler.optimize.coreml_w8a8 import quantize_activations

    names = weight_names(mlmodel)
    overrides = dict(overrides or {})
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise OptionError(f"{unknown[0]!r} is not a compressible weight of this model; weights: "
                          f"{', '.join(list(names)[:8])}{' ...' if len(names) > 8 else ''}")
    notes: list[str] = []
    choices = {n: resolve_option(overrides.get(n, model_wide), FLOAT_FORMAT, True) for n in names}
    if activations is not None:
        if activations.quantized:
            mlmodel = quantize_activations(mlmodel, activations)
        notes.append(calibration_note)
    elif any(c.combo.input == "int8" for c in choices.values()):
        notes.append("int8 weights only, as predicted: W8A8 calibration runs the model, which Core ML can only do "
                     "on macOS for an uploaded ML Program (a .pt2 upload is calibrated here)")
    # One pass per kind of compression, each with per-weight configs (op_name_configs keyed by weight name).
    # Pruning replaces a weight's const by a `<name>_sparsified` constexpr_sparse_to_dense op, which is the
    # name the joint passes after it look up (keyed by the old name, they compressed nothing).
    pruned: set[str] = set()
    for kind in ("prune", "palettize", "quantize"):
        per_name: dict[str, Any] = {}
        for n, c in choices.items():
            for k, cfg in _configs(c):
                if k == kind:
                    per_name[f"{n}_sparsified" if n in pruned else n] = cfg
        if kind == "prune":
            pruned = set(per_name)
        if not per_name:
            continue
        config = cto.OptimizationConfig(op_name_configs=per_name)
        if kind == "prune":
            mlmodel = cto.prune_weights(mlmodel, config=config)
        elif kind == "palettize":
            mlmodel = cto.palettize_weights(mlmodel, config=config, joint_compression=any(
                c.combo.sparsity for c in choices.values()))
        else:
            mlmodel = cto.linear_quantize_weights(mlmodel, config=config, joint_compression=any(
                c.combo.sparsity for c in choices.values()))
    out = Path(out_path)
    if out.exists():
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    mlmodel.save(os.fspath(out))
    check_package(out, choices, activations.quantized if activations is not None else ())
    return CoreMLExport(out, package_bytes(out), {n: c.combo.name for n, c in choices.items()}, notes)


def promised_ops(name: str, c: Choice) -> list[tuple[str, str]]:
    """(op type, op name prefix) of the constexpr ops a weight's choice must leave in the program
    (coremltools names them after the weight: `<w>_sparsified`, `<w>[_sparsified_nonzero_data_0]_quantized`)."""
    sparse = c.combo.sparsity > 0
    out = [("constexpr_sparse_to_dense", f"{name}_sparsified")] if sparse else []
    if lut_bits(c.combo.kernel) is not None:
        out.append(("constexpr_lut_to_sparse" if sparse else "constexpr_lut_to_dense", name))
    elif c.combo.kernel in ("int8", "int4"):
        out.append(("constexpr_sparse_blockwise_shift_scale" if sparse else "constexpr_blockwise_shift_scale", name))
    return out


# The iOS 17 opset's form of a decompression op (programs converted for iOS 17, as compiler.backends.coreml
# converts a .pt2): coremltools writes per-channel int8 weights as constexpr_affine_dequantize there.
_IOS17_FORM = {"constexpr_blockwise_shift_scale": "constexpr_affine_dequantize"}


def check_package(package: Path, choices: Mapping[str, Choice], activations: Sequence[str] = ()) -> None:
    """The saved package loads back (spec, then the MIL program, which type-checks every op), holds the
    decompression op of every weight its option compresses and a dequantized (int8) input to every op of
    `activations` (W8A8); else ModelRunError, in one sentence."""
    from compiler.optimize.coreml_w8a8 import ops_without_dequantized_input

    from coremltools.converters.mil.frontend.milproto.load import load as mil_load

    from compiler.errors import ModelRunError

    ct = _ct()
    try:
        ml = ct.models.MLModel(os.fspath(package), skip_model_load=True)
        spec = ml.get_spec()
        mil_load(spec, spec.specificationVersion, ml.weights_dir)
    except Exception as e:  # noqa: BLE001 - whatever coremltools raises, the export failed
        raise ModelRunError(f"the Core ML package coremltools wrote does not load back "
                            f"({type(e).__name__}: {' '.join(str(e).split())[:300]})") from None
    ops = [(op.type, op.attributes["name"].immediateValue.tensor.strings.values[0])
           for fn in spec.mlProgram.functions.values() for block in fn.block_specializations.values()
           for op in block.operations if op.type.startswith("constexpr_") and "name" in op.attributes]
    missing = [f"{name} has no {kind}" for name, c in choices.items() for kind, prefix in promised_ops(name, c)
               if not any(t in (kind, _IOS17_FORM.get(kind)) and n.startswith(prefix) for t, n in ops)]
    missing += [f"{name} has no int8 input" for name in ops_without_dequantized_input(spec, activations)]
    if missing:
        raise ModelRunError(f"the Core ML package is not what the option promises ({len(missing)} weight(s) or "
                            f"op(s) left uncompressed: {'; '.join(missing[:3])}{'; ...' if len(missing) > 3 else ''})")


def package_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def load_package(src: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> Any:
    """A zipped `.mlpackage` (vetted, extracted under `workdir`) as an MLModel that is not compiled
    (Core ML does not run here). NeuralNetwork `.mlmodel` files are refused: compression needs an
    ML Program."""
    from compiler.frontends.archive import extract

    ct = _ct()
    if not zipfile.is_zipfile(src):
        raise OptionError("Core ML compression exports need an ML Program (.mlpackage); this model is a "
                          "NeuralNetwork .mlmodel: convert it with convert_to='mlprogram' and upload the package")
    root = extract(src, Path(workdir) / "package", label="Core ML package")
    manifests = sorted(root.glob("Manifest.json")) or sorted(root.glob("*/Manifest.json"))
    if not manifests:
        raise ModelFormatError("the zip holds no .mlpackage (no Manifest.json at its top or one folder down)")
    ml = ct.models.MLModel(os.fspath(manifests[0].parent), skip_model_load=True)
    if ml.get_spec().WhichOneof("Type") != "mlProgram":
        raise OptionError("Core ML compression exports need an ML Program; this package holds a NeuralNetwork")
    packed = sorted({op.type for fn in ml.get_spec().mlProgram.functions.values()
                     for b in fn.block_specializations.values() for op in b.operations
                     if op.type.startswith("constexpr_")})
    if packed:  # coremltools compresses float consts only: its fp16 'export' of an int8 package was the int8 file
        raise OptionError(f"this package's weights are already compressed ({', '.join(packed)}); Core ML exports "
                          "compress float weights: export from the float (fp16 or fp32) package")
    return ml


def const_outputs(mlmodel: Any) -> dict[str, str]:
    """{const op name: its output's name}. They differ (`op_5_weight_to_fp16` writes
    `var_5_weight_to_fp16`): compression names the op, the graph's tasks read the output."""
    out = {}
    for fn in mlmodel.get_spec().mlProgram.functions.values():
        for block in fn.block_specializations.values():
            for op in block.operations:
                name = op.attributes.get("name")
                if op.type == "const" and name is not None and op.outputs:
                    out[name.immediateValue.tensor.strings.values[0]] = op.outputs[0].name
    return out


def weights_by_task(compiled: Graph, names: Mapping[str, int], outputs: Mapping[str, str]) -> dict[str, list[str]]:
    """{task id: compressible weights (const op names) it reads}, from the tasks' input value names."""
    by_value = {outputs.get(w, w): w for w in names}
    return {n.id: [by_value[v] for v in n.inputs if v in by_value]
            for n in compiled.nodes if any(v in by_value for v in n.inputs)}


def export_coreml_file(src: str | os.PathLike[str], out_zip: str | os.PathLike[str], model_wide: str,
                       task_overrides: Mapping[str, str], compiled: Graph, pt2: str | os.PathLike[str] | None = None,
                       input_shapes: Mapping[str, list[int]] | None = None,
                       input_values: Mapping[str, Any] | None = None) -> CoreMLExport:
    """Compress a zipped `.mlpackage` into a zipped `.mlpackage` at `out_zip`; overrides keyed by
    task id of `compiled` (the Core ML program as the simulator saw it). `pt2`: the torch program the package was
    converted from, run at `input_shapes` to calibrate int8 activations (W8A8). `size_bytes` is the package's
    size on disk."""
    with tempfile.TemporaryDirectory(prefix="edgescope-coreml-") as tmp:
        ml = load_package(src, tmp)
        per_task = weights_by_task(compiled, weight_names(ml), const_outputs(ml))
        overrides = {w: option for tid, option in task_overrides.items() for w in per_task.get(tid, [])}
        stem = Path(out_zip).name.removesuffix(".zip").removesuffix(".mlpackage")
        plan, note = _activation_plan(ml, model_wide, task_overrides, pt2, input_shapes, input_values)
        res = export_coreml(ml, Path(tmp, "out", f"{stem}.mlpackage"), model_wide, overrides, plan, note)
        skipped = [t for t in task_overrides if t not in per_task]
        if skipped:
            res.notes.append(f"{len(skipped)} override(s) name ops without a compressible weight "
                             f"(< {MIN_WEIGHT_ELEMENTS} elements or none): {', '.join(skipped[:5])}")
        zip_package(res.path, Path(out_zip))
        return CoreMLExport(Path(out_zip), res.size_bytes, res.weights, res.notes)


def _int8_activations(option: str) -> bool:
    return resolve_option(option, FLOAT_FORMAT, True).combo.input == "int8"


def _activation_plan(ml: Any, model_wide: str, task_overrides: Mapping[str, str], pt2: str | os.PathLike[str] | None,
                     shapes: Mapping[str, list[int]] | None, values: Mapping[str, Any] | None
                     ) -> tuple[ActivationPlan | None, str]:
    """The W8A8 plan of a package converted from `pt2`: ops whose option (override by task id, else model-wide)
    has int8 activations, with ranges measured on the torch program. None where there is nothing to calibrate or
    no torch program to run (an uploaded ML Program: weights only)."""
    from compiler.optimize import coreml_w8a8 as w8a8

    asked = _int8_activations(model_wide) or any(_int8_activations(o) for o in task_overrides.values())
    if pt2 is None or not asked:
        return None, ""
    by_output = w8a8.op_names_by_output(ml)
    selected = {op for out, op in by_output.items() if _int8_activations(task_overrides.get(out, model_wide))}
    ranges = w8a8.fx_ranges(pt2, shapes, values)
    plan = w8a8.plan_activations(w8a8.program(ml), ranges, selected)
    return plan, w8a8.write_w8a8_note(plan, w8a8.CALIBRATION_SAMPLES)
