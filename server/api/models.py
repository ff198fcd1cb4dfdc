"""Upload, list, read and delete models. Uploading queues the analysis job."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from flask import Blueprint, current_app, jsonify, request
from flask.typing import ResponseReturnValue
from sqlalchemy.orm import selectinload

from compiler import frontends
from compiler.graph import ModelFormatError
from store import keys
from store.db import session_scope
from store.models import Job, Model
from store.services import Services
from worker.celery_app import enqueue
from worker.lease import holds_model, retire_stale

from ..access import model_for, record_link_visit, role_on, visible_models_query
from ..auth import current_user, require_user
from ..upload_data import one_model_file
from ..uploads import HashingFile, receive, safe_filename, too_large_message
from .common import services
from .errors import ApiError
from .serialize import model_json

bp = Blueprint("models", __name__, url_prefix="/api/models")
log = logging.getLogger(__name__)

MAX_NAME = 200


def _json_field(name: str, kind: type) -> Any:
    raw = request.form.get(name)
    if raw is None or raw.strip() == "":
        return kind()
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ApiError(400, "bad_field", f"Field '{name}' is not valid JSON: {e.msg}.") from None
    except RecursionError:
        raise ApiError(400, "bad_field", f"Field '{name}' is nested too deeply.") from None
    if not isinstance(value, kind):
        raise ApiError(400, "bad_field", f"Field '{name}' must be a JSON {kind.__name__}.")
    return value


def _input_shapes(shapes: dict[str, Any] | None = None) -> dict[str, list[int]]:
    shapes = _json_field("inputs", dict) if shapes is None else shapes
    for k, v in shapes.items():
        if not (isinstance(v, list) and v and all(isinstance(d, int) and 0 < d <= 1 << 20 for d in v)):
            raise ApiError(400, "bad_field", f"Input shape for '{k}' must be a list of positive integers, "
                                             f"e.g. [1, 3, 224, 224].")
    return shapes


def _input_values(values: dict[str, Any] | None = None) -> dict[str, float]:
    values = _json_field("input_values", dict) if values is None else values
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ApiError(400, "bad_field", f"Input value for '{k}' must be a number, e.g. 16000.")
    return values


def _targets(fmt: str) -> list[str]:
    from compiler.vocabulary.targets import (TargetFormatError, check_targets_format, default_targets,
                                             list_targets, runs_format)

    asked = _json_field("targets", list)
    targets = asked or list(services().settings.default_targets or default_targets(fmt))
    known = set(list_targets())
    bad = [t for t in targets if t not in known]
    if bad:
        raise ApiError(400, "unknown_target", f"Unknown target(s) {', '.join(map(str, bad))}; "
                                              f"known: {', '.join(sorted(known))}.")
    if not asked:  # the server's defaults: those that run this format, else the format's own
        targets = [t for t in targets if runs_format(t, fmt)] or default_targets(fmt)
    try:
        check_targets_format(targets, fmt)
    except TargetFormatError as e:
        raise ApiError(400, "target_format", f"The {e}.") from None
    return list(dict.fromkeys(targets))


def _save_upload() -> tuple[Path, str, int, str]:
    f = request.files.get("file")
    if f is None:
        raise ApiError(400, "no_file", "Send the model as a multipart form field named 'file'.")
    filename = safe_filename(f.filename)
    if not isinstance(f.stream, HashingFile):  # parsed before the upload folder was set: a server bug
        raise RuntimeError("the upload was not streamed to its folder")
    size = f.stream.size
    if size > services().settings.max_upload_bytes:
        raise ApiError(413, "too_large", too_large_message(services().settings.max_upload_bytes))
    if size == 0:
        raise ApiError(400, "empty_file", f"The uploaded file '{filename}' is empty.")
    f.stream.flush()
    return f.stream.path, filename, size, f.stream.sha256.hexdigest()


@bp.post("")
def upload() -> ResponseReturnValue:
    user = require_user()
    svc = services()
    with receive(svc, user.id) as folder:  # quota, then the body streamed once into the upload's temp folder
        name = (request.form.get("name") or "").strip()[:MAX_NAME]
        shapes, values = _input_shapes(), _input_values()
        _json_field("targets", list)  # a malformed field fails before the model is stored
        path, filename, size, sha = _save_upload()
        try:
            fmt = frontends.detect(path, request.form.get("format") or None)
        except ModelFormatError as e:
            raise ApiError(415, "unsupported_format", str(e)) from None
        merged = one_model_file(svc.settings, folder, path, filename, fmt)  # weights in `data` parts put inside
        if merged is not None:
            path, size, sha = merged
        targets = _targets(fmt)
        model = Model(name=name or filename, filename=filename, format=fmt, size_bytes=size, sha256=sha,
                      input_shapes=shapes, input_values=values, targets=targets, owner_id=user.id)
        job = Job()
        model.jobs.append(job)
        with session_scope(svc.sessions) as s:
            s.add(model)
            s.flush()  # assigns ids
            # Blob first, row committed after: a committed model always has its file (moved, not copied).
            svc.blobs.put_file(keys.upload(model.id, filename), path, move=True)
        model_id, job_id = model.id, job.id
    _enqueue(svc, job_id)
    with session_scope(svc.sessions) as s:
        m, role = model_for(s, model_id, user)
        body = model_json(m, role)
    return jsonify(body), 201, {"Location": body["url"]}


def _enqueue(svc: Services, job_id: str) -> None:
    try:
        enqueue(current_app.extensions["celery"], job_id)
    except Exception:  # noqa: BLE001 - broker down: the job stays queued; the reconciler sends it when it is back
        log.exception("could not queue job %s now; the reconciler will send it again", job_id)


@bp.get("")
def list_models() -> ResponseReturnValue:
    """`?scope=mine` (default): models I own; `?scope=shared`: shared with me or my groups."""
    user = require_user()
    scope = request.args.get("scope", "mine")
    if scope not in ("mine", "shared"):
        raise ApiError(400, "bad_scope", "scope must be 'mine' or 'shared'.")
    with session_scope(services().sessions) as s:
        q = visible_models_query(user, scope).options(selectinload(Model.jobs))
        rows = s.scalars(q.order_by(Model.created_at.desc()).limit(500))
        return jsonify(models=[model_json(m, "owner" if scope == "mine" else role_on(s, user, m)) for m in rows])


@bp.get("/<model_id>")
def read_model(model_id: str) -> ResponseReturnValue:
    user = current_user()
    with session_scope(services().sessions) as s:
        m, role = model_for(s, model_id, user)
        if role == "viewer":
            record_link_visit(s, user, m)  # type: ignore[arg-type]
        return jsonify(model_json(m, role))


@bp.delete("/<model_id>")
def delete_model(model_id: str) -> ResponseReturnValue:
    svc = services()
    with session_scope(svc.sessions) as s:
        m, _ = model_for(s, model_id, current_user(), at_least="owner")
        s.delete(m)
    svc.blobs.delete_prefix(keys.model_prefix(model_id))
    return "", 204


def _reanalysis_inputs() -> tuple[dict[str, list[int]] | None, dict[str, float] | None]:
    """Optional JSON body `{"inputs": {...}, "input_values": {...}}`: each given field replaces the stored one."""
    if not request.get_data():
        return None, None
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        raise ApiError(400, "bad_json", "The JSON body is nested too deeply.") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_json", "Send a JSON object: {\"inputs\": {name: shape}, \"input_values\": {name: number}}.")
    fields = []
    for name in ("inputs", "input_values"):
        v = body.get(name)
        if v is not None and not isinstance(v, dict):
            raise ApiError(400, "bad_field", f"Field '{name}' must be a JSON object.")
        fields.append(v)
    return (None if fields[0] is None else _input_shapes(fields[0]),
            None if fields[1] is None else _input_values(fields[1]))


def _check_input_names(plan: list[dict[str, Any]] | None, shapes: dict[str, Any] | None,
                       values: dict[str, Any] | None) -> None:
    """Names the model's inputs (its last input plan, kept when the analysis failed) do not include: a 400 now, in
    the words the analysis would fail with minutes later (compiler.input_plan.plan_inputs)."""
    if not plan:
        return
    names = [p["name"] for p in plan]
    for name in [*(shapes or {}), *(values or {})]:
        if name not in names:
            raise ApiError(400, "bad_field", f"The model has no input '{name}'; its inputs are: {', '.join(names)}.")


@bp.post("/<model_id>/reanalyze")
def reanalyze(model_id: str) -> ResponseReturnValue:
    """Queue a fresh analysis job (after a failure, with other inputs, or on a new version of Edgescope)."""
    svc = services()
    user = current_user()
    with session_scope(svc.sessions) as s:
        m, _ = model_for(s, model_id, user, at_least="editor")
        shapes, values = _reanalysis_inputs()
        # Running with an expired lease (its worker died) does not hold the model: retried at once.
        if m.job and (holds_model(m.job) or not retire_stale(s, m.job)):
            raise ApiError(409, "busy", "The model is being analysed already.")
        _check_input_names(m.job.inputs if m.job else None, shapes, values)
        if shapes is not None:
            m.input_shapes = shapes
        if values is not None:
            m.input_values = values
        job = Job(model_id=m.id)
        s.add(job)
        s.flush()
        job_id = job.id
    _enqueue(svc, job_id)
    with session_scope(svc.sessions) as s:
        m, role = model_for(s, model_id, user)
        return jsonify(model_json(m, role)), 202
