"""Where an option's predicted latency goes wrong, per op kind: one ONNX model on `ort-cpu/host`, its fp32 analysis
beside each option's exported file, measured with the same ORT profiler (issue 14; benchmarks/exports.py gives the
whole-model figures).

For each task of the model's compiled graph: the fp32 time measured (m32) and predicted without the measurement
(p32), the option's time predicted with the measured baseline (what the Optimize dialog shows, pO) and without
(pO*), and the option's measured time (mO), matched by the compiled node's name in the exported file's compiled
graph (ORT names fused nodes after their first node, so most tasks match). Exported nodes that match no task
(Casts, DynamicQuantizeLinear, reorders, the scale Mul / bias Add of ConvInteger) are listed by op type: they
are what the prediction charges as conversions and extra passes. Sums are per kind (simulator.costs.kind_of).
Times are ORT profiler medians per node (wall clock) less the profiler's own cost per event (_task_ms); the whole-model
CPU time per run is printed beside them.

    nice -n 10 .venv/bin/python benchmarks/export_ops.py MODEL.onnx [--option fp16 int8-dynamic] [--runs 20]
        [--calibration host-cpu.json] [--input name=1x3x224x224] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))

TARGET = "ort-cpu/host"
# Op types an exporter or ORT adds around a task: listed on their own, not charged to the task they serve.
# ORT names a node its transformers make from one source node `<that node>_token_<n>` (the QDQ fusions' QLinearConv).
_TOKEN = re.compile(r"_token_\d+$")
_ADDED = frozenset({"Cast", "DynamicQuantizeLinear", "ReorderInput", "ReorderOutput", "QuantizeLinear",
                    "DequantizeLinear"})


def _task_ms(profile: Any, overhead_s: float) -> dict[str, float]:
    """Each profiled node's time per run, less what ORT's profiler adds to each event: the calibrated cost
    (`overhead_s`), or where the nodes' medians add up to more than the whole run's own time (timed without the
    profiler), that excess per event, as simulator.measured.measured_ms takes it off the analysis' baseline. The raw
    medians put a static int8 file's kinds over their share of its time: its events are as many as fp32's, each
    costing the profiler 7-12 us of a run's CPU time here, of a run half as long (Zen 4, 2026-12-07: MobileNetV2's
    int8-static file 3.13 ms of thread CPU time, its 70 nodes' medians 3.69; its fp32 file 7.00 against 7.62)."""
    from simulator.measured import own_whole_ms

    if profile is None:
        return {}
    raw = {k: t.median_ms * t.calls for k, t in profile.tasks.items()}
    events = sum(t.calls for t in profile.tasks.values())
    whole = own_whole_ms(profile)
    over = max(overhead_s * 1e3, (sum(raw.values()) - whole) / events if events and whole > 0 else 0.0)
    return {k: max(v - over * profile.tasks[k].calls, 0.25 * v) for k, v in raw.items()}


def _owner(name: str, task_of: dict[str, int]) -> int | None:
    """The task whose source node's name is the longest prefix of `name` ending before a '_'."""
    k = len(name)
    while k > 0:
        if name[:k] in task_of:
            return task_of[name[:k]]
        k = name.rfind("_", 0, k)
    return None


def matched_task(node_id: str, op_type: str, source_nodes: list[str], task_of: dict[str, int]) -> int | None:
    """The task an exported file's compiled node implements: a node ORT kept or made from one source node (not an added
    conversion) by its own name less ORT's `_token_<n>` suffix, else by its source nodes. A static int8 file's
    QLinearConvs carry no source node of the analysis (ORT fuses DequantizeLinear -> Conv -> QuantizeLinear into
    `<Conv>_token_<n>`), so the provenance walk hands the Conv, its Q/DQ pairs and the kernel's own node to the next
    kernel, a QLinearSigmoid / QLinearMul / QLinearAdd: matched by source nodes first, those kernels were charged to
    the Conv before them (a SiLU's 55 + 58 us on a 36 us pointwise QLinearConv, EfficientNet-B0's dense convs
    "4.14 ms against 1.79"; session 47)."""
    if op_type not in _ADDED:
        i = task_of.get(_TOKEN.sub("", node_id))
        if i is not None:
            return i
    return next((task_of[s] for s in source_nodes if s in task_of), None)


def _latency(bulk: dict[str, Any], option: str) -> list[float]:
    j = [p["name"] for p in bulk["presets"]].index(option)
    return [float(row[j]) for row in bulk["metrics"]["latency_ms"]]


def diagnose(path: Path, options: list[str], inputs: dict[str, list[int]], calibration: Path, runs: int,
             warmup: int, workdir: Path) -> dict[str, Any]:
    from compiler.backends import compile_for_target, for_target
    from compiler.backends.ort import AS_WRITTEN
    from compiler.frontends import onnx as onnx_frontend
    from compiler.input_plan import concrete_shapes, fill_values
    from compiler.optimize.onnx_export import export_onnx
    from compiler.profile import ProfileSettings
    from simulator.calibrated import hardware_for
    from simulator.sweep import sweep
    from simulator.totals import totals
    from worker.pipeline import AnalysisOptions, analyze

    # No export check: its dry-run exports run in a child beside the fp32 profile (the other vCPU's load under the
    # measurement lock) and took minutes on GhostNet's int8-static (a 9-minute hold timed out, 2026-12-06).
    res = analyze(path, workdir, AnalysisOptions(targets=(TARGET,), input_shapes=inputs, runs=runs, warmup=warmup,
                                                 calibration_path=calibration, check_exports=False))
    r = res.targets[0]
    hw = hardware_for(r.target, calibration)
    pred = sweep(r.compiled, r.target, None, hardware=hw, source=res.source)
    ids = [n.id for n in r.compiled.nodes]
    kinds = [w.kind for w in r.sweep.works]
    m32 = _task_ms(r.profile, hw.units[0].profiler_overhead_s)
    shapes, values = concrete_shapes(res.inputs), fill_values(res.inputs)
    settings = ProfileSettings(warmup=warmup, runs=runs, threads=1, timeout_s=600, input_shapes=shapes,
                               input_values=values)
    out: dict[str, Any] = {"model": os.fspath(path), "tasks": len(ids),
                           "fp32": {"measured_ms": r.profile.latency_ms,
                                    "cpu_ms": r.profile.noise.get("cpu_latency_ms"),
                                    "predicted_ms": totals(r.sweep.bulk, r.sweep.per_op, "fp32", {})["latency_ms"],
                                    "predicted_unmeasured_ms": totals(pred.bulk, pred.per_op, "fp32", {})["latency_ms"],
                                    "load": r.profile.noise.get("load_per_cpu")},
                           "options": {}}
    p32 = _latency(pred.bulk, "fp32")
    for option in options:
        f = workdir / f"{option}.onnx"
        export_onnx(path, f, option, {}, input_shapes=shapes, input_values=values)
        cdir = workdir / f"{option}-compiled"
        cdir.mkdir()
        written = onnx_frontend.load(f)
        written.metadata[AS_WRITTEN] = "true"  # an int8-static export profiled as written, not its float graph
        compiled, cpath = compile_for_target(f, TARGET, cdir, written)
        prof = for_target(TARGET).profile(cpath or f, settings)
        mo = _task_ms(prof, hw.units[0].profiler_overhead_s)
        # Each exported node -> the task that implements its source node (the exporters keep node names);
        # nodes the exporter or ORT added (Casts, DynamicQuantizeLinear, reorders) match none.
        task_of: dict[str, int] = {}
        for i, n in enumerate(r.compiled.nodes):  # the first task of a source node: its kernel, not a reorder after it
            if n.op_type not in _ADDED:
                for s_ in n.source_nodes:
                    task_of.setdefault(s_, i)
        po = _latency(r.sweep.bulk, option)
        po_star = _latency(pred.bulk, option)
        mo_task = [0.0] * len(ids)
        hit = [False] * len(ids)
        extra: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        added_task = [0.0] * len(ids)
        for n in compiled.nodes:
            ms = mo.get(n.id, 0.0)
            i = matched_task(n.id, n.op_type, n.source_nodes, task_of)
            if i is None or n.op_type in _ADDED:
                e = extra[n.op_type]
                e["n"] += 1
                e["ms"] += ms
                # quantize_dynamic names what it adds after the node it serves (`<node>_quant`, `<node>_quant_
                # scales_mul`, `<node>_output_0_bias_add`): charged to that task's "with added" column.
                owner = i if i is not None else _owner(n.id, task_of)
                if owner is not None and n.op_type not in _ADDED and n.id.endswith("_quant"):
                    mo_task[owner] += ms
                    hit[owner] = True
                    e["n"] -= 1
                    e["ms"] -= ms
                elif owner is not None:
                    added_task[owner] += ms
                continue
            mo_task[i] += ms
            hit[i] = True
        by: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for i, tid in enumerate(ids):
            row = by[kinds[i]]
            if not hit[i]:
                row["unmatched_tasks"] += 1
                continue
            row["n"] += 1
            row["m32"] += m32.get(tid, 0.0)
            row["p32"] += p32[i]
            row["pO"] += po[i]
            row["pO*"] += po_star[i]
            row["mO"] += mo_task[i]
            row["mO+"] += mo_task[i] + added_task[i]
        per_task = [{"id": tid, "kind": kinds[i], "m32": m32.get(tid, 0.0), "p32": p32[i], "pO*": po_star[i],
                     "mO": mo_task[i], "mO+": mo_task[i] + added_task[i]} for i, tid in enumerate(ids)]
        tot_pred = totals(r.sweep.bulk, r.sweep.per_op, option, {})
        tot_star = totals(pred.bulk, pred.per_op, option, {})
        out["options"][option] = {
            "measured_ms": prof.latency_ms, "cpu_ms": prof.noise.get("cpu_latency_ms"),
            "load": prof.noise.get("load_per_cpu"),
            "predicted_ms": tot_pred["latency_ms"], "predicted_unmeasured_ms": tot_star["latency_ms"],
            "sum_tasks_pO": sum(po), "by_kind": {k: dict(v) for k, v in by.items()},
            "unmatched_nodes": {k: dict(v) for k, v in extra.items()}, "per_task": per_task,
        }
    return out


def print_report(d: dict[str, Any]) -> None:
    f = d["fp32"]
    print(f"\n{d['model']}: {d['tasks']} tasks; fp32 measured {f['measured_ms']:.2f} ms (CPU {f['cpu_ms'] or 0:.2f}), "
          f"predicted with it {f['predicted_ms']:.2f}, without {f['predicted_unmeasured_ms']:.2f}; load/CPU "
          f"{f['load'] or 0:.1f}")
    for option, o in d["options"].items():
        print(f"\n  {option}: measured {o['measured_ms']:.2f} ms (CPU {o['cpu_ms'] or 0:.2f}), predicted "
              f"{o['predicted_ms']:.2f} (without the fp32 measurement {o['predicted_unmeasured_ms']:.2f}); load/CPU "
              f"{o['load'] or 0:.1f}")
        print(f"    {'kind':12s} {'n':>4s} {'m32':>8s} {'p32':>8s} {'mO':>8s} {'mO+':>8s} {'pO':>8s} {'pO*':>8s} "
              f"{'mO/m32':>7s} {'mO+/m32':>7s} {'pO*/p32':>7s}")
        for k, v in sorted(o["by_kind"].items(), key=lambda kv: -kv[1].get("mO", 0)):
            if not v.get("n"):
                continue
            print(f"    {k:12s} {int(v['n']):4d} {v['m32']:8.3f} {v['p32']:8.3f} {v['mO']:8.3f} {v['mO+']:8.3f} "
                  f"{v['pO']:8.3f} {v['pO*']:8.3f} {v['mO'] / max(v['m32'], 1e-9):7.2f} "
                  f"{v['mO+'] / max(v['m32'], 1e-9):7.2f} {v['pO*'] / max(v['p32'], 1e-9):7.2f}")
        un = sum(int(v.get("unmatched_tasks", 0)) for v in o["by_kind"].values())
        print(f"    tasks with no node of that name in the export: {un}")
        for t, v in sorted(o["unmatched_nodes"].items(), key=lambda kv: -kv[1]["ms"]):
            print(f"    + {t:28s} x{int(v['n']):3d} {v['ms']:8.3f} ms")
        # Tasks whose measured slowdown most exceeds the predicted one (in measured fp32 ms).
        worst = sorted((t for t in o["per_task"] if t["m32"] > 0 and t["p32"] > 0),
                       key=lambda t: -(t["mO+"] - t["m32"] * t["pO*"] / t["p32"]))[:8]
        for t in worst:
            print(f"    ! {t['id'][:60]:60s} {t['kind']:10s} m32 {t['m32']:6.3f} mO {t['mO']:6.3f} "
                  f"x{t['mO'] / t['m32']:5.2f} with added x{t['mO+'] / t['m32']:5.2f} predicted x{t['pO*'] / t['p32']:5.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--option", nargs="+", default=["fp16", "int8-dynamic"])
    ap.add_argument("--input", action="append", default=[], help="name=1x3x224x224")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--calibration", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from edgescope.config import Settings

    from simulator.calibration import named_file_refusal

    if (why := named_file_refusal(a.calibration)) is not None:  # a stale file would be re-timed in place
        ap.error(why)
    calibration = a.calibration or Path(Settings.from_env().calibration_path)
    inputs = {k: [int(x) for x in v.split("x")] for k, v in (s.split("=", 1) for s in a.input)}
    docs = []
    for m in a.models:
        with tempfile.TemporaryDirectory(prefix="export-ops-") as d:
            doc = diagnose(m, a.option, inputs, calibration, a.runs, a.warmup, Path(d))
        print_report(doc)
        docs.append(doc)
        if a.json:
            a.json.write_text(json.dumps(docs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
