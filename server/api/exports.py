"""Exports: build the optimized model for a state (model-wide option + per-op overrides) in a worker,
then download it, with its predicted totals beside what was measured where this machine can run it.
ONNX Runtime targets get an `.onnx`, Core ML a zipped `.mlpackage`, LiteRT a `.tflite`
(`compiler.optimize.export`)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, jsonify, request, send_file
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from store import keys
from store.db import session_scope
from store.models import Analysis, Export
from worker.celery_app import enqueue_export

from ..access import model_for
from ..auth import current_user
from .analyses import validate_state
from .common import iso, services
from .errors import ApiError

bp = Blueprint("exports", __name__, url_prefix="/api/models/<model_id>/exports")


def export_json(e: Export) -> dict[str, Any]:
    return {"id": e.id, "model_id": e.model_id, "analysis_id": e.analysis_id, "state": e.state, "status": e.status, "error": e.error,
            "filename": e.filename, "size_bytes": e.size_bytes, "predicted": e.predicted, "measured": e.measured,
            "notes": e.notes, "created_at": iso(e.created_at), "finished_at": iso(e.finished_at),
            "download_url": f"/api/models/{e.model_id}/exports/{e.id}/download" if e.status == "ready" else None}


def _get(s: Any, model_id: str, export_id: str) -> Export:
    model_for(s, model_id, current_user())
    e = s.get(Export, export_id)
    if e is None or e.model_id != model_id:
        raise ApiError(404, "not_found", "No such export of this model.")
    return e


@bp.post("")
def create_export(model_id: str) -> ResponseReturnValue:
    user = current_user()
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        raise ApiError(400, "bad_json", "Send a JSON object: {\"state\": {target, model_wide, overrides}}.")
    svc = services()
    with session_scope(svc.sessions) as s:
        m, _ = model_for(s, model_id, user)
        if m.job is None or m.job.status != "ready":
            raise ApiError(409, "not_ready", "The model's analysis has not finished; export it when it is ready.")
        state = validate_state(s, m, data.get("state", {}))
        from compiler.optimize.export import check_state
        from compiler.vocabulary.options import OptionError

        try:  # refused here, not in the worker: no exporter for this model, or an option it lacks
            check_state(state["target"], m.format, state["model_wide"], state["overrides"])
        except OptionError as err:
            raise ApiError(400, "no_export", str(err)) from None
        why = _not_exportable(s, m.id, state)
        if why:
            raise ApiError(400, "no_export", why)
        analysis_id = data.get("analysis_id")
        if analysis_id is not None:  # the saved analysis it is exported from: one of this model's
            a = s.get(Analysis, analysis_id) if isinstance(analysis_id, str) else None
            if a is None or a.model_id != m.id:
                raise ApiError(400, "bad_analysis", "analysis_id is not a saved analysis of this model.")
        e = Export(model_id=m.id, requested_by=user.id, analysis_id=analysis_id, state=state,  # type: ignore[union-attr]
                   predicted=page_totals(s, m.id, state))
        s.add(e)
        s.flush()
        export_id = e.id
    try:
        enqueue_export(current_app.extensions["celery"], export_id)
    except Exception:  # noqa: BLE001 - broker down: say so, keep the row as failed
        with session_scope(svc.sessions) as s:
            row = s.get(Export, export_id)
            row.status, row.error = "failed", "Could not queue the export (broker unavailable)."
        raise ApiError(503, "queue_unavailable", "The export could not be queued; the job broker is unavailable.")
    with session_scope(svc.sessions) as s:
        return jsonify(export_json(s.get(Export, export_id))), 202


@bp.get("")
def list_exports(model_id: str) -> ResponseReturnValue:
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, current_user())
        rows = s.scalars(select(Export).where(Export.model_id == m.id).order_by(Export.created_at.desc()))
        return jsonify(exports=[export_json(e) for e in rows])


@bp.get("/<export_id>")
def read_export(model_id: str, export_id: str) -> ResponseReturnValue:
    with session_scope(services().sessions) as s:
        return jsonify(export_json(_get(s, model_id, export_id)))


@bp.get("/<export_id>/download")
def download_export(model_id: str, export_id: str) -> ResponseReturnValue:
    svc = services()
    with session_scope(svc.sessions) as s:
        e = _get(s, model_id, export_id)
        if e.status != "ready":
            raise ApiError(409, "not_ready", f"The export is {e.status}" + (f": {e.error}" if e.error else "."))
        key, filename = keys.export(model_id, e.id, e.filename), e.filename
    return send_file(svc.blobs.open_stream(key), as_attachment=True, download_name=filename,
                     mimetype="application/zip" if filename.endswith(".zip") else "application/octet-stream")


def _not_exportable(s: Any, model_id: str, state: dict[str, Any]) -> str | None:
    """What the option table marks not exportable in this state (ONNX targets mark it: docs/option-table.md):
    the model-wide preset's reason, or the first override whose combo is marked."""
    from compiler.vocabulary.options import parse_preset
    from store.packed import read_record

    from .stored import json_blob, op_index, require_artifact, version_of

    blobs, target = services().blobs, state["target"]
    stored = require_artifact(s, model_id, "options", target)
    bulk = json_blob(blobs, stored.key, version_of(stored))
    if "exportable" not in bulk:
        return None  # an exporter that does not mark, or a table written before marking
    names = [p["name"] for p in bulk["presets"]]
    preset = parse_preset(state["model_wide"]).name
    if preset in names and not bulk["exportable"][names.index(preset)]:
        return f"{preset} cannot be exported for this model: {bulk['export_reasons'][names.index(preset)]}"
    if state["overrides"]:
        ia = require_artifact(s, model_id, "op_options_index", target)
        index, pack = op_index(blobs, ia.key, version_of(ia))
        pack_key = require_artifact(s, model_id, "op_options", target).key
        for op, combo in state["overrides"].items():
            rec = read_record(blobs, pack_key, pack, index[op])
            ok = rec.get("exportable")
            if ok is not None and combo in rec["combos"] and not ok[rec["combos"].index(combo)]:
                return f"the override {combo} on {op} cannot be exported for this model (marked in its Optimize dialog)"
    return None


def page_totals(s: Any, model_id: str, state: dict[str, Any]) -> dict[str, Any] | None:
    """The predicted totals of `state` as the model page's header shows them: the totals rule
    (simulator.totals, which web/src/totals.ts implements to the last digit) on the analysis's stored option
    tables, which hold the host's measured task times where the target runs here. The export is predicted by
    these figures, not by a prediction remade without the measurements (a 4-layer BERT's int8-dynamic: 1.88 ms
    in the header, 1.52 ms in the export dialog before). None where the stored tables cannot evaluate it."""
    from compiler.vocabulary.options import OptionError, parse_preset
    from simulator.labels import label_text
    from simulator.totals import totals
    from store.blobs import BlobNotFound

    from .stored import charge_of, op_index, op_record, option_table, require_artifact, version_of

    blobs, target = services().blobs, state["target"]
    try:
        oa = require_artifact(s, model_id, "options", target)
        bulk = option_table(blobs, oa.key, version_of(oa))
        per_op: dict[str, Any] = {}
        if state["overrides"]:
            ia = require_artifact(s, model_id, "op_options_index", target)
            index, pack = op_index(blobs, ia.key, version_of(ia))
            pack_key, charge = require_artifact(s, model_id, "op_options", target).key, charge_of(s, model_id, target)
            per_op = {op: op_record(blobs, pack_key, pack, index[op], charge) for op in state["overrides"]}
        tot = totals(bulk, per_op, parse_preset(state["model_wide"]).name, state["overrides"])
    except (ApiError, BlobNotFound, OptionError, KeyError):  # not in the stored tables: the worker predicts it
        return None
    return {**tot, "label": label_text(bulk["label"])}
