"""Diffs: a saved analysis against its parent (or another analysis of the same model), and a model against
another model (two versions of a network, ops matched by compiler/matching.py)."""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue

from compiler.matching import match_ops, ops_from_documents
from compiler.vocabulary.options import OptionError
from simulator.analysis_diff import State, state_diff
from store.blobs import BlobNotFound
from store.db import session_scope
from store.models import Model

from ..auth import current_user
from .common import services
from .errors import ApiError
from .analyses import analysis_of
from .stored import (charge_of, columns_of, find_artifact, json_blob, op_index, op_record, option_table, ready_model,
                     replaced_error, require_artifact, upgraded_ops, version_of)

bp = Blueprint("diffs", __name__, url_prefix="/api/models/<model_id>")

OP_FIELDS = ("latency_ms", "macs", "weight_bytes", "activation_bytes")


def _ops_doc(s: Any, m: Model, target: str) -> Any:
    a = require_artifact(s, m.id, "ops", target)
    return upgraded_ops(services().blobs, a.key, version_of(a), charge_of(s, m.id, target))


def _edges(s: Any, m: Model, target: str) -> list[tuple[str, str]]:
    stored = find_artifact(s, m.id, "graph_columns", target)
    if stored is not None:
        cols = json_blob(services().blobs, stored.key, version_of(stored))
    else:
        a = require_artifact(s, m.id, "graph", target)
        cols = json.loads(columns_of(services().blobs, a.key, version_of(a)))
    ids = cols["ids"]
    return [(ids[x], ids[y]) for x, y in zip(cols["src"], cols["dst"], strict=True)]


@bp.get("/analyses/<analysis_id>/diff")
def analysis_diff(model_id: str, analysis_id: str) -> ResponseReturnValue:
    """`?against=<analysis id>` (default: its parent; `base`, or no parent: the unoptimized model)."""
    svc = services()
    with session_scope(svc.sessions) as s:
        m = ready_model(s, model_id)
        a = analysis_of(s, m, analysis_id)
        against = request.args.get("against") or a.parent_id or "base"
        other = None if against == "base" else analysis_of(s, m, against)
        target = a.state["target"]
        if other is not None and other.state["target"] != target:
            raise ApiError(400, "other_target", f"'{other.name}' is for {other.state['target']}, this analysis for "
                                                f"{target}: compare analyses of one target.")
        bulk_a = require_artifact(s, m.id, "options", target)
        ia = require_artifact(s, m.id, "op_options_index", target)
        pack_key = require_artifact(s, m.id, "op_options", target).key
        index_key, index_version = ia.key, version_of(ia)
        bulk_key, bulk_version = bulk_a.key, version_of(bulk_a)
        try:
            charge = charge_of(s, m.id, target)
        except BlobNotFound:
            raise replaced_error() from None
        after: State = {"model_wide": a.state["model_wide"], "overrides": dict(a.state["overrides"])}
        base_info = {"id": None, "name": "unoptimized"} if other is None else {"id": other.id, "name": other.name}
        name = a.name
    try:
        bulk = option_table(svc.blobs, bulk_key, bulk_version)
        before: State = ({"model_wide": bulk["base"]["preset"], "overrides": {}} if other is None else
                         {"model_wide": other.state["model_wide"], "overrides": dict(other.state["overrides"])})
        index, pack = op_index(svc.blobs, index_key, index_version)
        per_op = {op: op_record(svc.blobs, pack_key, pack, index[op], charge)
                  for op in set(before["overrides"]) | set(after["overrides"]) if op in index}
        diff = state_diff(bulk, per_op, before, after)
    except BlobNotFound:
        raise replaced_error() from None
    except OptionError as e:  # a state the current results no longer offer (the model was re-analysed)
        raise ApiError(409, "stale_state", str(e)) from None
    return jsonify(target=target, analysis={"id": analysis_id, "name": name}, against=base_info,
                   before_state=before, after_state=after, **diff)


@bp.get("/diff")
def model_diff(model_id: str) -> ResponseReturnValue:
    """`?other=<model id>&target=T`: this model (a) against another (b), ops matched by name, namespace and
    structure; per-op and total deltas are b - a."""
    other_id = request.args.get("other")
    if not other_id:
        raise ApiError(400, "bad_other", "Name the model to compare with: ?other=<model id>.")
    svc = services()
    with session_scope(svc.sessions) as s:
        ma, mb = ready_model(s, model_id), ready_model(s, other_id)
        common = [t for t in ma.targets if t in mb.targets]
        target = request.args.get("target") or (common[0] if common else "")
        if target not in common:
            raise ApiError(400, "no_common_target", f"Both models must be analysed for the target; in common: "
                                                    f"{', '.join(common) or 'none'}.")
        try:
            ops_a, ops_b = _ops_doc(s, ma, target), _ops_doc(s, mb, target)
            ea, eb = _edges(s, ma, target), _edges(s, mb, target)
        except BlobNotFound:
            raise replaced_error() from None
        names = {"a": {"id": ma.id, "name": ma.name}, "b": {"id": mb.id, "name": mb.name}}
        peaks, peaks_measured = [], []
        for mm in (ma, mb):
            t = next((x for x in (mm.summary or {}).get("targets", []) if x["target"] == target), None)
            peaks.append(t.get("peak_memory_bytes") if t else None)
            peaks_measured.append(bool(t.get("measured")) if t else None)  # measured here where the target runs here
    m = match_ops(ops_from_documents(ops_a["ops"], ea), ops_from_documents(ops_b["ops"], eb))
    ra = {o["id"]: o for o in ops_a["ops"]}
    rb = {o["id"]: o for o in ops_b["ops"]}
    rows = []
    for p in m.pairs:
        x, y = ra.get(p.a) if p.a else None, rb.get(p.b) if p.b else None
        row: dict[str, Any] = {"a": p.a, "b": p.b, "how": p.how, "name": (y or x or {}).get("name", ""),
                               "type": (y or x or {}).get("type", ""), "namespace": (y or x or {}).get("namespace", "")}
        if x and y and x.get("name") != y.get("name"):
            row["a_name"] = x.get("name", "")
        for f in OP_FIELDS:
            row[f] = [x.get(f) if x else None, y.get(f) if y else None]
        rows.append(row)

    def total(doc: Any, f: str) -> float:
        return float(sum((o.get(f) or 0) for o in doc["ops"]))

    totals: dict[str, dict[str, float | None]] = {}
    for f in OP_FIELDS:
        va = ops_a["latency_ms"] if f == "latency_ms" else total(ops_a, f)
        vb = ops_b["latency_ms"] if f == "latency_ms" else total(ops_b, f)
        totals[f] = {"a": va, "b": vb, "delta": vb - va}
    totals["tasks"] = {"a": len(ops_a["ops"]), "b": len(ops_b["ops"]), "delta": len(ops_b["ops"]) - len(ops_a["ops"])}
    pa, pb = peaks
    totals["peak_memory_bytes"] = {"a": pa, "b": pb, "delta": pb - pa if pa is not None and pb is not None else None,
                                   "measured": peaks_measured}
    return jsonify(target=target, **names, measured={"a": ops_a.get("measured"), "b": ops_b.get("measured")},
                   counts=m.counts(), totals=totals, ops=rows)
