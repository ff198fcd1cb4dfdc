"""Shape pipeline results into the JSON documents the API serves (see docs/api.md).

Built once, in the worker, so a request only streams a stored document.
"""

from __future__ import annotations

from typing import Any

from compiler.graph import Graph, Node, Value
from compiler.profile import Profile
from simulator.table_schema import float_graph_ms, per_inference_ms

from .pipeline import AnalysisResult, TargetResult


def _value_json(v: Value | None, name: str) -> dict[str, Any]:
    if v is None:
        return {"name": name, "shape": None, "dtype": "unknown"}
    return {"name": name, "shape": v.shape, "dtype": v.dtype}


def profile_label(p: Profile) -> str:
    return f"measured: {p.runtime}, {p.threads} thread{'s' if p.threads != 1 else ''}, {p.device}"


def predicted_label(bulk: dict[str, Any]) -> str:
    from simulator.predict import label_text

    return label_text(bulk["label"])


def _base_metrics(r: TargetResult) -> tuple[dict[str, int], int, dict[str, list[list[float]]]]:
    bulk = r.sweep.bulk
    names = [p["name"] for p in bulk["presets"]]
    base = names.index(bulk["base"]["preset"]) if bulk["base"]["preset"] in names else 0
    return {op: i for i, op in enumerate(bulk["ops"])}, base, bulk["metrics"]


def _locations(n: Node, source_by_id: dict[str, Node]) -> list[dict[str, Any]]:
    """Where in the user's code a task comes from: its own location, else its source nodes' (unique)."""
    locs = [n.location] if n.location else []
    if not locs:
        locs = [source_by_id[s].location for s in n.source_nodes if s in source_by_id and source_by_id[s].location]
    seen, out = set(), []
    for loc in locs:
        key = (loc.file, loc.line)
        if key not in seen:
            seen.add(key)
            out.append({"file": loc.file, "line": loc.line, "code": loc.code})
    return out


def _work_known(r: TargetResult, i: int | None) -> bool:
    """Whether the cost model knew the task's work (every tensor's shape); folded constants do no work."""
    if i is None or r.sweep is None:
        return True
    w = r.sweep.works[i]
    return w.shapes_known or w.kind == "folded"


def work_unknown(rows: list[dict[str, Any]], total_ms: float | None = None) -> dict[str, Any]:
    """How much of the time is in tasks whose work could not be resolved: their predictions under other options
    are not to be trusted (never a silent zero)."""
    unknown = [row for row in rows if row.get("work_unknown")]
    ms = sum(row["latency_ms"] or 0.0 for row in unknown)
    total = total_ms if total_ms is not None else sum(row["latency_ms"] or 0.0 for row in rows)
    return {"tasks": len(unknown), "latency_ms": ms, "share": ms / total if total > 0 else 0.0}


def ops_table(r: TargetResult, source: Graph | None = None) -> dict[str, Any]:
    g = r.compiled
    source_by_id = {m.id: m for m in source.nodes} if source is not None else {}
    index, base, metrics = _base_metrics(r)
    tasks = r.profile.tasks if r.profile else {}
    # An If / Loop / Scan's profiled time carries the profiler's recording of its body's events: it shows the
    # simulator's figure, from which that cost is taken out (simulator.control_flow.discount_parents).
    parents = {n.parent for n in g.nodes if n.parent}
    rows: list[dict[str, Any]] = []
    for order, n in enumerate(g.nodes):
        i = index.get(n.id)
        m = (lambda key: metrics[key][i][base] if i is not None and key in metrics else None)
        t = tasks.get(n.id)
        row: dict[str, Any] = {
            "id": n.id, "index": order, "name": n.name, "type": n.op_type, "namespace": n.namespace,
            "latency_ms": t.median_ms if t and n.id not in parents else m("latency_ms"),
            "p25_ms": t.p25_ms if t else None, "p75_ms": t.p75_ms if t else None,
            "measured": t is not None,
            "macs": r.sweep.works[i].macs if i is not None else None, "weight_bytes": m("weight_bytes"), "activation_bytes": m("activation_bytes"),
            "work_unknown": not _work_known(r, i),
            "source_nodes": n.source_nodes,
            # Control flow: runs per inference (a body task's trip count, 0 for a branch not taken) and the
            # If / Loop / Scan task and body holding it ("" at the top level).
            "executions": r.sweep.executions[i] if i is not None and r.sweep.executions else 1.0,
            "parent": n.parent, "branch": n.branch,
            "locations": _locations(n, source_by_id),
            "inputs": [_value_json(g.values.get(v), v) for v in n.inputs if v],
            "outputs": [_value_json(g.values.get(v), v) for v in n.outputs if v],
        }
        if r.profile and n.id in r.profile.kernels:  # the runtime's own kernels (LiteRT: XNNPACK operator names)
            row["kernels"] = r.profile.kernels[n.id]
        rows.append(row)
    total_ops = sum(row["latency_ms"] or 0.0 for row in rows)
    for row in rows:
        row["share"] = (row["latency_ms"] or 0.0) / total_ops if total_ops > 0 else 0.0
    if r.profile:
        # the header's tooltip: the state its unoptimized total stands for (measured_latency), then the whole-model
        # median of the profile's runs (its wall time)
        latency, measured, label = r.profile.latency_ms, True, measured_latency(r.profile)["label"]
    else:
        latency, measured, label = r.sweep.bulk["base"]["latency_ms"], False, predicted_label(r.sweep.bulk)
    # Time per inference that is no task's (the runtime's fixed cost, measured time outside the tasks, a unit's
    # float-graph term in the base state): in the predicted latency, in no row.
    return {"target": r.target, "measured": measured, "label": label, "latency_ms": latency,
            "per_inference_ms": base_per_inference_ms(r.sweep.bulk),
            "noise": r.profile.noise or None if r.profile else None, "work_unknown": work_unknown(rows),
            "ops": rows}


def base_per_inference_ms(bulk: dict[str, Any]) -> float:
    """The totals rule's per-inference terms in the table's base state: `per_inference_ms` and, where the table has
    them, the float-graph terms the base preset pays (simulator.totals.float_graph_terms)."""
    fixed = per_inference_ms(bulk)
    if float_graph_ms(bulk):
        from simulator.totals import evaluate, float_graph_terms

        e = evaluate(bulk, {}, bulk["base"]["preset"], {})
        fixed += sum(float_graph_terms(bulk, e.combo, e.unit or [], e.latency_ms))
    return fixed


def measured_latency(p: Profile) -> dict[str, Any]:
    """A measurement's latency as the analysis reads it: where the profile timed the model's fast CPU time
    (simulator.measured.fast_scale: ORT, 1 thread), that figure, which the sweep scales the measured baseline to, so
    the model list, the page's header and an export's measured figure beside its prediction all read one state;
    else its thread CPU time where the machine was busy (simulator.measured.own_whole_ms), else its wall time. The wall
    time is kept beside it (summaries and exports)."""
    from simulator.measured import fast_scale, own_whole_ms

    own, wall = own_whole_ms(p), float(p.latency_ms or 0.0)
    fast = fast_scale(p)
    label = profile_label(p)
    if fast is not None:
        own *= fast
        label += (", fast CPU time (the low percentile of runs over several rounds: the machine's state its rates "
                  "were timed in)")
    elif own < wall:
        label += ", CPU time (the machine was busy: the wall time waited for the CPU)"
    p90 = p.latency_p90_ms * own / wall if own != wall and wall > 0 and p.latency_p90_ms is not None \
        else p.latency_p90_ms
    return {"latency_ms": own, "latency_p90_ms": p90, "wall_latency_ms": p.latency_ms, "label": label}


def target_summary(r: TargetResult, table: dict[str, Any] | None = None) -> dict[str, Any]:
    base = r.sweep.bulk["base"]
    unknown = (table or ops_table(r))["work_unknown"]
    if r.profile:
        # The model's own time, as the header's unoptimized total reads it (on a busy machine its CPU time, not
        # the wall time that waited for the CPU: a model list showing 12.9 ms beside a page showing 3.9 ms)
        own = measured_latency(r.profile)
        return {"target": r.target, "latency_ms": own["latency_ms"], "latency_p90_ms": own["latency_p90_ms"],
                "wall_latency_ms": own["wall_latency_ms"],
                "peak_memory_bytes": r.profile.peak_memory_bytes, "measured": True,
                "label": own["label"], "noise": r.profile.noise or None, "work_unknown": unknown,
                "predicted": {"latency_ms": base["latency_ms"], "peak_memory_bytes": base["peak_memory_bytes"]}}
    return {"target": r.target, "latency_ms": base["latency_ms"], "latency_p90_ms": None,
            "peak_memory_bytes": base["peak_memory_bytes"], "measured": False,
            "label": predicted_label(r.sweep.bulk), "noise": None, "work_unknown": unknown}


def summary(result: AnalysisResult, tables: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """`tables`: each target's ops table, or just its `work_unknown` entry, when the caller built them already (the job
    stores them first: building them again cost a sixth of the store stage of a 10,000-node analysis)."""
    src = result.source
    # The concrete shapes every stage used (the input plan; a profile's are the same).
    inputs = {name: list(p.shape) for name, p in result.inputs.items()}
    if not inputs:
        inputs = {name: src.values[name].shape for name in src.inputs if name in src.values}
    return {
        "source_op_count": len(src.nodes),
        "task_count": len(result.targets[0].compiled.nodes) if result.targets else 0,
        "weight_bytes": src.weight_bytes,
        "inputs": inputs,
        "targets": [target_summary(r, (tables or {}).get(r.target)) for r in result.targets],
        "stage_seconds": result.stage_seconds,
    }
