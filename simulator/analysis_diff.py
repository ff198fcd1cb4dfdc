"""What changed between two optimization states of one model, and what each change did to the totals.

Totals come from the totals rule (simulator/totals.py) only. Each change is also evaluated alone, applied to the
`before` state: options interact through the conversions and crossings between neighbours, so the changes'
own effects need not add up to the whole difference, and both are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from simulator.totals import totals

METRICS = ("latency_ms", "peak_memory_bytes", "memory_power_mw", "size_bytes", "fps")
# Each change alone costs one evaluation of the whole model; past this many, changes are listed without it.
MAX_EVALUATED = 500


class State(TypedDict):
    model_wide: str
    overrides: dict[str, str]


def _delta(after: Mapping[str, float], before: Mapping[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in METRICS}


def state_diff(bulk: Mapping[str, Any], per_op: Mapping[str, Mapping[str, Any]], before: State,
               after: State) -> dict[str, Any]:
    """`per_op` holds the per-op option records of every op either state overrides."""
    t0 = totals(bulk, per_op, before["model_wide"], before["overrides"])
    t1 = totals(bulk, per_op, after["model_wide"], after["overrides"])
    changes: list[dict[str, Any]] = []
    if before["model_wide"] != after["model_wide"]:
        changes.append({"kind": "model_wide", "op": None, "before": before["model_wide"],
                        "after": after["model_wide"]})
    pos = {op: i for i, op in enumerate(bulk["ops"])}
    ops = sorted(set(before["overrides"]) | set(after["overrides"]), key=lambda o: pos.get(o, len(pos)))
    for op in ops:
        b, a = before["overrides"].get(op), after["overrides"].get(op)
        if a != b:
            # None: the op follows the model-wide option
            changes.append({"kind": "override", "op": op, "before": b, "after": a})
    for k, c in enumerate(changes):
        if k >= MAX_EVALUATED:
            c["alone"] = None
            continue
        if c["kind"] == "model_wide":
            t = totals(bulk, per_op, after["model_wide"], before["overrides"])
        else:
            o = dict(before["overrides"])
            if c["after"] is None:
                del o[c["op"]]
            else:
                o[c["op"]] = c["after"]
            t = totals(bulk, per_op, before["model_wide"], o)
        c["alone"] = _delta(t, t0)
    return {"before": t0, "after": t1, "delta": _delta(t1, t0), "changes": changes,
            "evaluated": min(len(changes), MAX_EVALUATED)}
