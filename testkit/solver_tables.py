"""Random option tables in the schema of docs/option-table.md, small enough to search exhaustively."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from simulator.totals import totals

FORMATS = ("fp32", "fp16", "int8")
KERNELS = ("fp32", "fp16", "int8", "int4")
PRESETS = (("fp32", "fp32", "fp32"), ("fp16", "fp16", "fp16"), ("int8-static", "int8", "int8"))


def random_table(seed: int, n: int = 5, combos_per_op: int = 5, units: bool = True, float_graph_ms: float = 0.0
                 ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A DAG of n ops (a chain plus skip edges), each with a few combos whose figures follow the formats
    loosely (int8 faster and smaller, not always); two units with crossings when `units`. `float_graph_ms`: the
    totals rule's float-graph term on the last unit (the one float ops run on here), paid while one runs float."""
    rng = np.random.default_rng(seed)
    ops = [f"op{i}" for i in range(n)]
    unit_names = ["npu", "cpu"] if units else ["cpu"]
    per_op: dict[str, dict[str, Any]] = {}
    bulk_combos, bulk_units, metrics = [], [], {k: [] for k in ("latency_ms", "weight_bytes", "activation_bytes",
                                                                 "dram_bytes")}
    for i, op in enumerate(ops):
        weighted = bool(rng.random() < 0.7)
        universe = ([f"{a}/{b}/{k}/{s}" for a in FORMATS for b in FORMATS for k in KERNELS for s in (0, 50)]
                    if weighted else [f"{a}/{b}/-/0" for a in FORMATS for b in FORMATS])
        presets = [f"{a}/{a}/{k}/0" if weighted else f"{a}/{a}/-/0" for _, a, k in PRESETS]
        extra = [c for c in universe if c not in presets]
        chosen = presets + [extra[j] for j in rng.choice(len(extra), size=combos_per_op - 3, replace=False)]
        rows: dict[str, list[Any]] = {k: [] for k in metrics}
        unit = []
        for c in chosen:
            a, b, k, s = c.split("/")
            bits = {"fp32": 4, "fp16": 2, "int8": 1, "int4": 0.5, "-": 0}
            speed = {"fp32": 1.0, "fp16": 0.8, "int8": 0.5}[a] * rng.uniform(0.7, 1.4)
            rows["latency_ms"].append(float(rng.uniform(0.2, 2.0) * speed))
            w = float(rng.integers(1000, 100000)) if weighted else 0.0
            rows["weight_bytes"].append(w * bits[k] * (1 - int(s) / 100) / 4)
            rows["activation_bytes"].append(float(rng.integers(100, 5000) * bits[b]))
            rows["dram_bytes"].append(float(rng.integers(1000, 50000) * bits[a]))
            unit.append(0 if (units and a == "int8" and rng.random() < 0.8) else len(unit_names) - 1)
        per_op[op] = {"op": op, "combos": chosen, "unit": unit, **rows}
        bulk_combos.append(chosen[:3])
        bulk_units.append([unit_names[u] for u in unit[:3]])
        for k in metrics:
            metrics[k].append(rows[k][:3])
    src, dst = [], []
    for i in range(1, n):
        src.append(i - 1)
        dst.append(i)
        if i >= 2 and rng.random() < 0.4:
            src.append(i - 2)
            dst.append(i)
    bulk = {"schema": 2, "ops": ops,
            "presets": [{"name": p[0]} for p in PRESETS], "metrics": metrics,
            "supported": [[True] * 3 for _ in ops], "combos": bulk_combos, "unit_names": unit_names,
            "units": bulk_units,
            "edges": {"src": src, "dst": dst, "elements": [float(rng.integers(100, 10000)) for _ in src]},
            "conversion": {"fixed_ms": 0.01, "ms_per_element": {f"{a}>{b}": 2e-5 for a in FORMATS for b in FORMATS}},
            "crossing": {"fixed_s": 5e-5, "bytes_per_s": 1e9} if units else None,
            "constants": {"dram_pj_per_byte": 20.0, "size_overhead_bytes": 4096,
                          "per_inference_ms": float(rng.uniform(0.0, 0.2))}}
    if float_graph_ms:
        bulk["constants"]["float_graph_ms"] = {unit_names[-1]: float_graph_ms}
    return bulk, per_op


def every_state(bulk: dict[str, Any], per_op: dict[str, dict[str, Any]], model_wide: str,
                keep_float: frozenset[str] = frozenset()):  # type: ignore[no-untyped-def]
    """(overrides, totals) of every state: each op on its preset row or one of its combos."""
    from simulator.solver import is_float_combo

    p = [x["name"] for x in bulk["presets"]].index(model_wide)
    choices = []
    for i, op in enumerate(bulk["ops"]):
        opts: list[str | None] = [None] + list(per_op[op]["combos"])
        if op in keep_float:
            opts = [c for c in opts if is_float_combo(c if c is not None else bulk["combos"][i][p])]
        choices.append(opts)
    for pick in itertools.product(*choices):
        ov = {op: c for op, c in zip(bulk["ops"], pick) if c is not None}
        yield ov, totals(bulk, per_op, model_wide, ov)
