"""Core ML export of a PyTorch model with coremltools.optimize.coreml compression.

Conversion from torch works on Linux; Core ML prediction (and so activation calibration for W8A8)
needs macOS, so `int8-static` writes int8 weights and says activations were not quantized.
Per-op overrides are keyed by the name of the weight's const op in the MIL program (as
`coremltools.optimize.coreml.get_weights_metadata` lists them); `weight_names()` returns them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.optimize.choices import Choice, resolve_option
from simulator.formats import lut_bits
from simulator.options import OptionError

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

    meta = cto.get_weights_metadata(mlmodel, weight_threshold=MIN_WEIGHT_ELEMENTS)
    return {name: int(m.val.size) for name, m in meta.items()}


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
        out.append(("palettize", cto.OpPalettizerConfig(mode="kmeans", nbits=lb,
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
                  overrides: Mapping[str, str] | None = None) -> CoreMLExport:
    """Compress an ML Program per weight and save it as .mlpackage. Overrides: {weight name: option}."""
    import coremltools.optimize.coreml as cto

    names = weight_names(mlmodel)
    overrides = dict(overrides or {})
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise OptionError(f"{unknown[0]!r} is not a compressible weight of this model; weights: "
                          f"{', '.join(list(names)[:8])}{' ...' if len(names) > 8 else ''}")
    notes: list[str] = []
    choices = {n: resolve_option(overrides.get(n, model_wide), FLOAT_FORMAT, True) for n in names}
    if any(c.combo.input == "int8" for c in choices.values()):
        notes.append("activations not quantized: W8A8 calibration runs the model, which Core ML can only do on macOS")
    # One pass per kind of compression, each with per-weight configs (op_name_configs keyed by weight name).
    for kind in ("prune", "palettize", "quantize"):
        per_name: dict[str, Any] = {}
        for n, c in choices.items():
            for k, cfg in _configs(c):
                if k == kind:
                    per_name[n] = cfg
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
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return CoreMLExport(out, size, {n: c.combo.name for n, c in choices.items()}, notes)
