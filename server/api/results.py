"""Analysis results of a ready model, streamed from the documents the worker stored."""

from __future__ import annotations

import gzip
import hashlib
import json

from flask import Blueprint, Response, request, send_file
from flask.typing import ResponseReturnValue

from store.blobs import BlobNotFound
from store.db import session_scope

from ..access import model_for
from ..auth import current_user
from .common import services
from .errors import ApiError
from .stored import (charge_of, columns_of, find_artifact, op_index, op_record, option_table, ready_model,
                     replaced_error, require_artifact, requested_target, upgraded_ops, version_of)

bp = Blueprint("results", __name__, url_prefix="/api/models/<model_id>")


def _fresh(resp: Response, version: str) -> Response:
    # A re-analysis writes new results under the same URLs: the browser may keep them but must ask again each time
    # (a 304 when unchanged), so no view shows the previous analysis.
    resp.headers["Cache-Control"] = "private, no-cache"
    resp.set_etag(hashlib.sha256(version.encode()).hexdigest()[:32])
    return resp.make_conditional(request)


def _send_gz_json(key: str, version: str) -> Response:
    gz = "gzip" in request.headers.get("Accept-Encoding", "")
    tag = f"{version}|{'gz' if gz else 'id'}"
    if request.if_none_match and request.if_none_match.contains(hashlib.sha256(tag.encode()).hexdigest()[:32]):
        return _fresh(Response(status=304), tag)  # unchanged: not even read from the blob store
    try:
        data = services().blobs.get_bytes(key)
    except BlobNotFound:
        raise replaced_error() from None
    if gz:
        resp = Response(data, mimetype="application/json")
        resp.headers["Content-Encoding"] = "gzip"
    else:
        resp = Response(gzip.decompress(data), mimetype="application/json")
    resp.headers["Vary"] = "Accept-Encoding"
    return _fresh(resp, tag)


def _document(model_id: str, kind: str, per_target: bool) -> Response:
    with session_scope(services().sessions) as s:
        m = ready_model(s, model_id)
        a = require_artifact(s, model_id, kind, requested_target(m) if per_target else "")
        key, version = a.key, version_of(a)
    return _send_gz_json(key, version)


def _table_document(model_id: str, kind: str) -> Response:
    """The ops document or the bulk option table of a target: as stored, or upgraded where the table was stored
    under schema 1 (server/api/stored.py)."""
    svc = services()
    with session_scope(svc.sessions) as s:
        m = ready_model(s, model_id)
        t = requested_target(m)
        a = require_artifact(s, model_id, kind, t)
        key, version = a.key, version_of(a)
        try:
            charge = charge_of(s, model_id, t)
        except BlobNotFound:
            raise replaced_error() from None
    if charge is None:
        return _send_gz_json(key, version)
    try:
        doc = option_table(svc.blobs, key, version) if kind == "options" else upgraded_ops(svc.blobs, key, version, charge)
    except BlobNotFound:
        raise replaced_error() from None
    return _fresh(Response(json.dumps(doc, separators=(",", ":")), mimetype="application/json"), f"{version}|v2")


@bp.get("/ops")
def ops(model_id: str) -> ResponseReturnValue:
    return _table_document(model_id, "ops")


@bp.get("/graph")
def graph(model_id: str) -> ResponseReturnValue:
    view = request.args.get("view", "compiled")
    if view not in ("compiled", "source"):
        raise ApiError(400, "bad_view", "view must be 'compiled' or 'source'.")
    fmt = request.args.get("format", "nodes")
    if fmt not in ("nodes", "columns"):
        raise ApiError(400, "bad_format", "format must be 'nodes' (the default) or 'columns'.")
    if fmt == "nodes":
        return _document(model_id, "graph", per_target=view == "compiled")
    with session_scope(services().sessions) as s:
        try:
            m = ready_model(s, model_id)
        except ApiError as e:
            # `early=1`: the page's first request, sent before it knows the model's status (web/index.html); a
            # model still being analysed answers "nothing yet" rather than an error the browser would log
            if e.status == 409 and request.args.get("early") == "1":
                return Response(status=204)
            raise
        target = requested_target(m) if view == "compiled" else ""
        stored = find_artifact(s, model_id, "graph_columns", target)
        a = stored if stored is not None else require_artifact(s, model_id, "graph", target)
        key, version = a.key, version_of(a)
    if stored is not None:
        return _send_gz_json(key, version)
    # Analysed before the columns were stored: derived from the stored graph once per process.
    try:
        resp = Response(columns_of(services().blobs, key, version), mimetype="application/json")
    except BlobNotFound:
        raise replaced_error() from None
    return _fresh(resp, version)


@bp.get("/options")
def options(model_id: str) -> ResponseReturnValue:
    return _table_document(model_id, "options")


@bp.get("/ops/<opid:op_id>/options")
def op_options(model_id: str, op_id: str) -> ResponseReturnValue:
    svc = services()
    with session_scope(svc.sessions) as s:
        m = ready_model(s, model_id)
        t = requested_target(m)
        ia = require_artifact(s, model_id, "op_options_index", t)
        index_key, index_version = ia.key, version_of(ia)
        pack_key = require_artifact(s, model_id, "op_options", t).key
        try:
            charge = charge_of(s, model_id, t)
        except BlobNotFound:
            raise replaced_error() from None
    try:
        index, pack = op_index(svc.blobs, index_key, index_version)
        if op_id not in index:
            raise ApiError(404, "unknown_op", f"No op '{op_id}' in this model's compiled graph for {t}.")
        return op_record(svc.blobs, pack_key, pack, index[op_id], charge)
    except BlobNotFound:
        raise replaced_error() from None


@bp.get("/download")
def download(model_id: str) -> ResponseReturnValue:
    from store import keys

    svc = services()
    with session_scope(svc.sessions) as s:
        m, _ = model_for(s, model_id, current_user())
        key, filename = keys.upload(m.id, m.filename), m.filename
    return send_file(svc.blobs.open_stream(key), as_attachment=True, download_name=filename,
                     mimetype="application/octet-stream")


def _with_upload(model_id: str, fn):  # type: ignore[no-untyped-def]
    """Call fn(local path of the uploaded file) for a model the caller may view."""
    from store import keys
    from store.blobs import local_copy

    svc = services()
    with session_scope(svc.sessions) as s:
        m, _ = model_for(s, model_id, current_user())
        key, suffix = keys.upload(m.id, m.filename), "." + m.filename.rsplit(".", 1)[-1]
    with local_copy(svc.blobs, key, suffix) as path:
        return fn(path)


@bp.get("/sources")
def sources(model_id: str) -> ResponseReturnValue:
    """Source files saved with a .pt2 by `edgescope export-pt2` (empty for other models)."""
    from compiler.sources import list_sources

    files = _with_upload(model_id, list_sources)
    return {"files": [{"path": f.path, "bytes": f.bytes} for f in files]}


@bp.get("/sources/<path:path>")
def source_file(model_id: str, path: str) -> ResponseReturnValue:
    from compiler.sources import SourceNotFound, read_source

    try:
        text = _with_upload(model_id, lambda p: read_source(p, path))
    except SourceNotFound:
        raise ApiError(404, "no_source", f"No source file '{path}' saved with this model.") from None
    return {"path": path, "text": text}
