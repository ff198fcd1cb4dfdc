"""The analysis' export check: each distinct way of writing an ONNX file exported once from the model, in a
sandboxed child, so the option table marks what the exporter cannot build (issue 14: an option offered is one
that exports) with the one sentence why."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from compiler.optimize.onnx_export import export_onnx, reuse_preparation
from compiler.optimize.onnx_prepare import crash_sentence, one_line
from compiler.optimize.onnx_rules import FLOAT_FORMAT
from compiler.vocabulary.formats import lut_bits
from compiler.vocabulary.options import OptionError

# One model-wide option per distinct way of writing the file (pruning only changes weight values; 2- and 4-bit
# palettes are packed, 6- and 8-bit stored a byte per index), and the presets each stands for.
DRY_RUN_OPTIONS = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights", "palettize-4bit", "palettize-8bit")


def dry_run_option(preset: str) -> str:
    """The DRY_RUN_OPTIONS entry whose file has the structure `preset`'s file has."""
    from compiler.vocabulary.options import parse_preset

    p = parse_preset(preset)
    c = p.resolve(FLOAT_FORMAT, True)
    bits = lut_bits(c.kernel)
    if bits:
        return "palettize-4bit" if bits <= 4 else "palettize-8bit"
    if c.kernel == "int8":
        return "int8-dynamic" if p.dynamic else "int8-static"
    return {"fp16": "fp16", "int4": "int4-weights"}.get(c.kernel, "fp32")


def dry_run_child(payload: dict[str, object]) -> dict[str, str | None]:
    """Sandbox child: export `payload["model"]` with each DRY_RUN_OPTIONS entry; {option: None or the reason}."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # ORT's quantizers log advice on every call
    shapes, values = payload.get("shapes") or {}, payload.get("values") or {}
    out: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory() as td, reuse_preparation(Path(td)):
        for option in payload.get("options") or DRY_RUN_OPTIONS:  # type: ignore[attr-defined]
            try:
                export_onnx(str(payload["model"]), Path(td) / f"{option}.onnx", option,
                            input_shapes=shapes, calibration_samples=1, input_values=values)  # type: ignore[arg-type]
                out[option] = None
            except OptionError as e:
                out[option] = str(e)
            except Exception as e:  # noqa: BLE001 - any failure of the exporter marks the option, never the analysis
                out[option] = f"the exporter failed on this model ({one_line(e)})"
    return out


def dry_run(model_path: str | os.PathLike[str], input_shapes: Mapping[str, list[int]],
            input_values: Mapping[str, float] | None = None, timeout_s: float = 600,
            memory_limit_bytes: int | None = None) -> dict[str, str | None]:
    """Export every DRY_RUN_OPTIONS entry of `model_path` in a sandboxed child: {option: None or why it fails}.
    A child that dies (ORT crashing on one option's file) runs each option in a child of its own, so only the
    options that crash are marked, each with why: a CRNN's fp16 LSTM at dynamic width took every option down."""
    from compiler import sandbox
    from compiler.errors import SandboxError

    limits = sandbox.Limits(timeout_s=timeout_s, what="the export check",
                            **({"memory_limit_bytes": memory_limit_bytes} if memory_limit_bytes else {}))
    payload = {"model": os.fspath(Path(model_path).resolve()), "shapes": dict(input_shapes),
               "values": dict(input_values or {})}
    try:
        return sandbox.run(_CHILD, payload, limits)  # type: ignore[no-any-return]
    except SandboxError:
        pass
    out: dict[str, str | None] = {}
    for option in DRY_RUN_OPTIONS:
        try:
            out.update(sandbox.run(_CHILD, {**payload, "options": [option]}, limits))
        except SandboxError as e:
            out[option] = crash_sentence(f"the {option} export", e)
    return out


_CHILD = "compiler.optimize.onnx_dry_run:dry_run_child"


def mark_dry_run(bulk: dict[str, object], reasons: Mapping[str, str | None]) -> None:
    """Mark the bulk table's presets whose dry-run export failed (bulk["exportable"] / ["export_reasons"])."""
    names = [p["name"] for p in bulk["presets"]]  # type: ignore[index, union-attr]
    ok = list(bulk.get("exportable") or [True] * len(names))  # type: ignore[call-overload]
    why = list(bulk.get("export_reasons") or [None] * len(names))  # type: ignore[call-overload]
    for i, name in enumerate(names):
        r = reasons.get(dry_run_option(name))
        if r is not None and ok[i]:
            ok[i], why[i] = False, r
    bulk["exportable"], bulk["export_reasons"] = ok, why
