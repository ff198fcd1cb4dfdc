"""What a CSV of the op table says about itself (its "# " lines) and its rows under a state (GET /ops.csv)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.totals import Evaluation

TOTALS = ("latency_ms", "fps", "peak_memory_bytes", "size_bytes", "memory_power_mw")


def csv_header(model_name: str, model_id: str, target: str, what: str, state: Mapping[str, Any],
               ops_doc: Mapping[str, Any], bulk: Mapping[str, Any], ev: Evaluation) -> list[str]:
    """The file's header lines: the model, target, which state (and its options), and its totals."""
    overrides = state["overrides"]
    lines = [f"Edgescope op table of {model_name} ({model_id}) on {target}",
             f"state: {what}; model-wide option {state['model_wide']}; "
             f"{len(overrides)} per-op option{'' if len(overrides) == 1 else 's'}"
             + (": " + "; ".join(f"{op}={c}" for op, c in overrides.items()) if overrides else "")]
    tot = "; ".join(f"{k}={ev.totals[k]!r}" for k in TOTALS)
    fixed = bulk["constants"].get("per_inference_ms") or 0.0
    lines.append(f"predicted totals ({bulk['label'].get('text', 'predicted')}): {tot}; per_inference_ms={fixed!r} "
                 "(in latency_ms, in no task's row)")
    if what == "unoptimized" and ops_doc.get("measured"):
        lines.append(f"measured latency_ms={ops_doc['latency_ms']!r} ({ops_doc.get('label', 'measured')}); "
                     "rows: each task's measured median where measured, else predicted")
    return lines


def state_rows(bulk: Mapping[str, Any], ev: Evaluation) -> dict[str, dict[str, Any]]:
    """Per task id, its figures under the state (interop.ops_csv's `state`)."""
    out = {}
    for i, op in enumerate(bulk["ops"]):
        out[op] = {"combo": ev.combo[i], "unit": ev.unit[i] if ev.unit is not None else None,
                   "overridden": bool(ev.overridden[i]), "latency_ms": float(ev.latency_ms[i]),
                   "conversion_in_ms": float(ev.conversion_in_ms[i]), "weight_bytes": float(ev.weight_bytes[i]),
                   "activation_bytes": float(ev.activation_bytes[i]), "dram_bytes": float(ev.dram_bytes[i])}
    return out
