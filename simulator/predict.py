"""Predict a model's totals under an optimization state, and build that optimized model for real.

One place for what `edgescope predict` / `edgescope optimize` and the server's export jobs do:
compile for the target, sweep, apply model-wide choice + per-op overrides by the totals rule, and
(for ONNX targets) write the optimized file with the overrides mapped from tasks to source nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from compiler.graph import Graph

from .options import OptionError, parse_combo, parse_preset
from .sweep import SweepResult

METRICS = ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")


def overrides_for_tasks(compiled: Graph, per_op: Any, ops: Mapping[str, str], float_format: str) -> dict[str, str]:
    """Keys may be task ids, task names or source node names; values presets or combos -> {task id: combo}."""
    by_key: dict[str, str] = {}
    for n in compiled.nodes:
        by_key.setdefault(n.id, n.id)
        if n.name:
            by_key.setdefault(n.name, n.id)
        for s in n.source_nodes:
            by_key.setdefault(s, n.id)
    index = {n.id: i for i, n in enumerate(compiled.nodes)}
    out = {}
    for key, option in ops.items():
        tid = by_key.get(key)
        if tid is None:
            raise OptionError(f"{key!r} is neither a task nor a source node of this model")
        combos = per_op[index[tid]]["combos"]
        has_kernel = combos[0].split("/")[2] != "-"
        if "/" in option:
            combo = parse_combo(option, has_kernel).name
        else:
            combo = parse_preset(option).resolve(float_format, has_kernel).name
        out[tid] = combo
    return out


def predict(model: Path, target: str, model_wide: str, ops: Mapping[str, str], calibration: Path | None,
            workdir: Path, progress: Callable[[str], None] | None = None
            ) -> tuple[dict[str, Any], Graph, Graph, dict[str, str], SweepResult]:
    """-> (prediction document, source graph, compiled graph, {task id: combo}, sweep)."""
    from .model import compile_for
    from .sweep import sweep
    from .targets import get_target
    from .totals import totals

    t = get_target(target)
    preset = parse_preset(model_wide).name
    source, compiled = compile_for(model, target, workdir)
    hw = None
    if t.profile == "host-cpu" and calibration is not None:
        from .calibration import load_or_calibrate

        hw = load_or_calibrate(calibration, progress=progress)
    r = sweep(compiled, target, hardware=hw, source=source)
    names = [p["name"] for p in r.bulk["presets"]]
    if preset not in names:
        # Any valid combination works, not only the listed ones: resolve it per op through the overrides.
        over_all = {n.id: preset for n in compiled.nodes}
        overrides = {**overrides_for_tasks(compiled, r.per_op, over_all, t.float_format),
                     **overrides_for_tasks(compiled, r.per_op, ops, t.float_format)}
        base_preset = "fp32"
    else:
        overrides = overrides_for_tasks(compiled, r.per_op, ops, t.float_format)
        base_preset = preset
    tot = totals(r.bulk, r.per_op, base_preset, overrides)
    p = names.index(base_preset)
    rows = []
    for i, n in enumerate(compiled.nodes):
        if n.id in overrides:
            e = r.per_op[i]
            j = e["combos"].index(overrides[n.id])
            vals = {m: e[m][j] for m in METRICS}
            combo, sup = overrides[n.id], e["supported"][j]
        else:
            vals = {m: r.bulk["metrics"][m][i][p] for m in METRICS}
            combo, sup = r.bulk["combos"][i][p], r.bulk["supported"][i][p]
        rows.append({"id": n.id, "name": n.name, "type": n.op_type, "combo": combo, "supported": sup,
                     "unit": r.bulk["units"][i][p], **vals})
    out = {"target": target, "model_wide": preset, "overrides": overrides, "label": r.bulk["label"],
           "totals": tot, "ops": rows}
    return out, source, compiled, overrides, r


def _known_nodes(overrides: dict[str, str], model: Path, workdir: Path) -> dict[str, str]:
    """Drop overrides of source nodes that the exporter's own preprocessing removes (ORT's basic pass
    folds BatchNorm into its Conv): the task's option still reaches the node that absorbed them."""
    from compiler.optimize.onnx_export import preprocess

    names = {n.name for n in preprocess(model, workdir / "known-nodes.onnx").graph.node}
    return {k: v for k, v in overrides.items() if k in names}


def optimize_model(model: Path, out_path: Path, target: str, model_wide: str, ops: Mapping[str, str],
                   workdir: Path, calibration: Path | None, input_shapes: Mapping[str, list[int]] | None = None,
                   progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write the optimized ONNX model for `target` and return its prediction beside its real size."""
    from compiler.optimize.onnx_export import export_onnx

    from .targets import get_target

    if get_target(target).export != "onnx":
        raise OptionError(f"{target}: optimized models are exported for ONNX targets here; Core ML export needs a "
                          f"PyTorch model (compiler.optimize.coreml_export.export_coreml)")
    out, source, compiled, overrides, _ = predict(model, target, model_wide, ops, calibration, workdir, progress)
    # Export works on source nodes: each task override applies to the source nodes it implements.
    by_id = {n.id: n for n in compiled.nodes}
    src_names = {n.id: n.name or n.id for n in source.nodes}
    src_over: dict[str, str] = {}
    for tid, combo in overrides.items():
        for s in by_id[tid].source_nodes or [tid]:
            src_over[src_names.get(s, s)] = combo
    res = export_onnx(model, out_path, out["model_wide"], _known_nodes(src_over, model, workdir), input_shapes=input_shapes)
    pred = out["totals"]
    return {**out, "path": str(res.path), "size_bytes": res.size_bytes,
            "size_error_pct": (pred["size_bytes"] / res.size_bytes - 1) * 100, "notes": res.notes,
            "predicted": {k: pred[k] for k in ("latency_ms", "size_bytes", "peak_memory_bytes", "memory_power_mw")}
            | {"label": out["label"]}}
