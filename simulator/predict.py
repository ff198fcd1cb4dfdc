"""Whole-model prediction and export for one state (target, model-wide option, per-op overrides).

Used by `edgescope predict` / `optimize` and by the worker's export job. Overrides may name a task id,
a task name or a source node, and give a preset (`fp16`) or a combo (`int8/int8/int8/50`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from compiler.input_plan import fill_values
from compiler.vocabulary.options import OptionError, parse_combo, parse_preset
from compiler.vocabulary.targets import get_target
from simulator.labels import label_text

METRICS = ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")
# `model_wide` for the file as uploaded: the preset its stored form is (simulator.sweep.native_preset: fp16 or
# int8-static for a .tflite stored so, int8-static for an ONNX QDQ file on the device targets, else fp32).
AS_UPLOADED = "as-uploaded"


def task_overrides(compiled: Graph, per_op: Any, ops: Mapping[str, str], float_format: str) -> dict[str, str]:
    """{task id: combo} from overrides keyed by task id, task name or source node id. A source node several tasks
    implement (a converted file's conv with the PAD and TRANSPOSE split off it) names the one that holds weights."""
    ids = {n.id: i for i, n in enumerate(compiled.nodes)}

    def has_kernel(tid: str) -> bool:
        return bool(per_op[ids[tid]]["combos"][0].split("/")[2] != "-")

    by_key: dict[str, str] = {}
    for n in compiled.nodes:
        by_key.setdefault(n.id, n.id)
        if n.name:
            by_key.setdefault(n.name, n.id)
    implementing: dict[str, list[str]] = {}
    for n in compiled.nodes:
        for s in n.source_nodes:
            implementing.setdefault(s, []).append(n.id)
    for s, tids in implementing.items():
        by_key.setdefault(s, next((t for t in tids if has_kernel(t)), tids[0]))
    out = {}
    for key, option in ops.items():
        tid = by_key.get(key)
        if tid is None:
            raise OptionError(f"--op names {key!r}, which is neither a task nor a source node of this model")
        kernel = has_kernel(tid)
        out[tid] = (parse_combo(option, kernel).name if "/" in option
                    else parse_preset(option).resolve(float_format, kernel).name)
    return out


def predict_model(model_path: str | os.PathLike[str], target: str, model_wide: str, ops: Mapping[str, str],
                  workdir: str | os.PathLike[str], calibration_path: str | os.PathLike[str] | None = None,
                  input_shapes: Mapping[str, list[int]] | None = None,
                  input_values: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], Graph, Graph]:
    """(result, source, compiled): predicted totals and per-op values at the given input shapes and values
    (defaults for the rest, as the worker's), without running the model."""
    from simulator.calibrated import hardware_for
    from simulator.control_flow import body_preset, written_in_body
    from simulator.model import compile_for
    from simulator.sweep import sweep
    from simulator.table_schema import per_inference_ms
    from simulator.totals import float_graph_terms, totals

    t = get_target(target)
    preset = "" if model_wide == AS_UPLOADED else parse_preset(model_wide).name
    source, compiled, plans = compile_for(model_path, target, workdir, input_shapes, input_values)
    r = sweep(compiled, target, hardware=hardware_for(t, calibration_path), source=source,
              input_values=fill_values(plans))
    preset = preset or r.bulk["base"]["preset"]
    names = [p["name"] for p in r.bulk["presets"]]
    if preset in names:
        base, overrides = preset, task_overrides(compiled, r.per_op, ops, t.float_format)
    else:  # a valid combination outside the bulk table: every op becomes an override (a body's, as it is written)
        body, written = written_in_body(t, compiled), body_preset(parse_preset(preset))
        every = {n.id: written if b else preset for n, b in zip(compiled.nodes, body)}
        base = "fp32"
        overrides = {**task_overrides(compiled, r.per_op, every, t.float_format),
                     **task_overrides(compiled, r.per_op, ops, t.float_format)}
    tot = totals(r.bulk, r.per_op, base, overrides)
    p = names.index(base)
    rows = []
    for i, n in enumerate(compiled.nodes):
        if n.id in overrides:
            e = r.per_op[i]
            j = e["combos"].index(overrides[n.id])
            vals = {m: e[m][j] for m in METRICS}
            combo, sup, unit = overrides[n.id], e["supported"][j], r.bulk["unit_names"][e["unit"][j]]
        else:
            vals = {m: r.bulk["metrics"][m][i][p] for m in METRICS}
            combo, sup, unit = r.bulk["combos"][i][p], r.bulk["supported"][i][p], r.bulk["units"][i][p]
        w = r.works[i]
        rows.append({"id": n.id, "name": n.name, "type": n.op_type, "combo": combo, "supported": sup,
                     "unit": unit, "macs": w.macs, "work_unknown": not (w.shapes_known or w.kind == "folded"), **vals})
    # the time per inference outside the tasks in this state: the per-inference term and any float-graph term
    fixed = per_inference_ms(r.bulk) + sum(float_graph_terms(r.bulk, [x["combo"] for x in rows],
                                                             [x["unit"] for x in rows], [x["latency_ms"] for x in rows]))
    unknown = [row for row in rows if row["work_unknown"]]
    unknown_ms = sum(row["latency_ms"] for row in unknown)
    result = {"target": target, "model_wide": preset, "overrides": overrides, "label": r.bulk["label"],
              "label_text": label_text(r.bulk["label"]), "inputs": [p.to_json() for p in plans.values()],
              "totals": tot, "per_inference_ms": fixed, "work_unknown": {"tasks": len(unknown), "latency_ms": unknown_ms,
                                              "share": unknown_ms / tot["latency_ms"] if tot["latency_ms"] > 0 else 0.0},
              "ops": rows}
    return result, source, compiled


def optimize_model(model_path: str | os.PathLike[str], out_path: str | os.PathLike[str], target: str,
                   model_wide: str, ops: Mapping[str, str], workdir: str | os.PathLike[str],
                   calibration_path: str | os.PathLike[str] | None = None,
                   input_shapes: Mapping[str, list[int]] | None = None,
                   input_values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Predict one state and write its optimized model with the target's exporter
    (`compiler.optimize.export.optimize_for_target`, given the prediction), for `edgescope optimize` and the
    worker's export job: {"path", "size_bytes", "predicted": {totals, "label"}, "size_error_pct", "notes",
    "choices", "prediction", "export"}."""
    from compiler.frontends import detect
    from compiler.optimize.export import check_state, optimize_for_target

    # Absolute: sandboxed children (LiteRT compile, quantization) run in their own working directory.
    model_path, out_path = Path(model_path).resolve(), Path(out_path).resolve()
    # Before the prediction: a model the target has no exporter for, or an option its exporter refuses, costs
    # nothing.
    check_state(target, detect(model_path), model_wide, ops)
    result, source, compiled = predict_model(model_path, target, model_wide, ops, workdir, calibration_path,
                                             input_shapes, input_values)
    return optimize_for_target(model_path, out_path, target, result, source, compiled, workdir,
                               input_shapes=input_shapes, input_values=input_values)
