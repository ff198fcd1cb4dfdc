"""Option tables stored under schema 1, read as schema 2.

Schema 1 charged the time per inference that no task explains (the runtime's fixed cost per call and, measured, the
whole model's time outside its tasks) to op 0's latency in every bulk column and every per-op combo, and recorded
the amount as `constants.first_task_ms`; every view had to take it out again. Schema 2 keeps op 0's own time and
carries the amount as `constants.per_inference_ms`, a term of the totals rule (simulator/totals.py). Readers of
stored results (the server, the solver's stored table) upgrade a schema-1 table with these functions, so nothing
past them knows the old layout. The totals are the same: c + (l0 + c - c) gives back l0 + c in float64 unless the
subtraction rounded (a last-digit difference at most).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SCHEMA = 2
OLD_NOTE = "latency includes the runtime's fixed cost per inference"  # op 0's note under schema 1


def per_inference_ms(bulk: Mapping[str, Any]) -> float:
    """The totals rule's per-inference term (0.0 for a table without one)."""
    v = bulk.get("constants", {}).get("per_inference_ms")
    return float(v) if v else 0.0


def float_graph_ms(bulk: Mapping[str, Any]) -> dict[str, float]:
    """The totals rule's float-graph terms, {unit: ms} ({} for a table without them): a unit's fixed cost per run
    of a graph that computes float on it, paid when any op of the state runs there with float activations in and
    out (simulator/totals.py `float_graph_terms`). Optional in schema 2: a table without it has no such term."""
    return {str(k): float(v) for k, v in (bulk.get("constants", {}).get("float_graph_ms") or {}).items()}


def old_charge(bulk: Mapping[str, Any]) -> float | None:
    """What a schema-1 table charged to op 0 in every column (0.0 where it did not record it: tables from before
    `first_task_ms` keep their charge in op 0, as their totals always had it); None for a table of schema 2."""
    if int(bulk.get("schema", 1)) >= SCHEMA:
        return None
    c = bulk.get("constants", {}).get("first_task_ms")
    return float(c) if c and bulk.get("ops") else 0.0


def _less(values: Any, c: float) -> list[float]:
    # never below 0: a scaled table (litert) scaled op 0's time and its charge together, rounding apart
    return [max(0.0, float(x) - c) for x in values]


def upgrade_bulk(bulk: Mapping[str, Any]) -> dict[str, Any]:
    """The bulk table as schema 2 (a copy; the argument is left as it is). Its stored `base` stays: the same
    totals."""
    c = old_charge(bulk)
    out = dict(bulk)
    if c is None:
        return out
    if c > 0:
        lat = list(bulk["metrics"]["latency_ms"])
        lat[0] = _less(lat[0], c)
        out["metrics"] = {**bulk["metrics"], "latency_ms": lat}
    out.update(upgraded_head(bulk, c))
    return out


def upgraded_head(bulk: Mapping[str, Any], charge: float) -> dict[str, Any]:
    """The schema and constants of a schema-1 table whose `old_charge` is `charge`, as schema 2."""
    const = {k: v for k, v in bulk["constants"].items() if k != "first_task_ms"}
    const["per_inference_ms"] = charge
    return {"schema": SCHEMA, "constants": const}


def upgrade_op_record(rec: Mapping[str, Any], i: int, charge: float | None) -> dict[str, Any]:
    """Op i's per-op record of a table whose `old_charge` is `charge`, as schema 2 (op 0: its own times, without
    the note on the charge)."""
    out = dict(rec)
    if charge is None or i != 0:
        return out
    if charge > 0:
        out["latency_ms"] = _less(rec["latency_ms"], charge)
    out["notes"] = [n for n in rec.get("notes", []) if not n.startswith(OLD_NOTE)]
    return out


def upgrade_ops_doc(doc: Mapping[str, Any], charge: float | None) -> dict[str, Any]:
    """The ops document (GET /ops) of a table whose `old_charge` is `charge`: a predicted first row was the
    table's column, charge included; measured rows are the tasks' own medians. Shares follow the rows."""
    out = dict(doc)
    if charge is None:
        return out
    out["per_inference_ms"] = charge
    rows = [dict(r) for r in doc["ops"]]
    if charge > 0 and rows and not rows[0].get("measured") and rows[0].get("latency_ms") is not None:
        rows[0]["latency_ms"] = max(0.0, rows[0]["latency_ms"] - charge)
        total = sum(r.get("latency_ms") or 0.0 for r in rows)
        for r in rows:
            r["share"] = (r.get("latency_ms") or 0.0) / total if total > 0 else 0.0
    out["ops"] = rows
    return out
