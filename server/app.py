"""Flask application factory: settings, then stored-state handles, then one blueprint per resource."""

from __future__ import annotations

import logging
import secrets

from flask import Flask, jsonify, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.routing import PathConverter

from edgescope.config import Settings
from store.db import check_at_head
from store.services import Services
from worker.celery_app import make_celery

from .uploads import UploadRequest, too_large_message

# Multipart framing around the file: the size limit applies to the model, not the envelope.
MULTIPART_SLACK_BYTES = 64 * 1024


class OpIdConverter(PathConverter):
    # Like `path`, but may start with "/". Werkzeug infers part_isolating from a "/" in the regex;
    # this one has none, so say it: the value spans path segments.
    regex = ".+?"
    part_isolating = False


def create_app(settings: Settings | None = None, *, check_schema: bool = True) -> Flask:
    settings = settings or Settings.from_env()
    app = Flask(__name__, static_folder=None)
    app.request_class = UploadRequest  # uploads stream into their own temp folder (server/uploads.py)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_upload_bytes + MULTIPART_SLACK_BYTES
    app.config["SECRET_KEY"] = settings.secret_key or secrets.token_hex(32)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    # Op ids may hold slashes and even start with one ("/features/0/Conv"); clients percent-encode
    # them, and the server decodes them back into the path, so keep slashes and match a leading one.
    app.url_map.merge_slashes = False
    app.url_map.converters["opid"] = OpIdConverter

    services = Services(settings)
    if check_schema:
        check_at_head(services.engine)  # raises SchemaOutOfDate naming the command to run
    app.extensions["edgescope"] = services
    app.extensions["celery"] = make_celery(settings)

    from .api.analyses import bp as analyses_bp
    from .api.auth import bp as auth_bp
    from .api.diffs import bp as diffs_bp
    from .api.errors import ApiError, handle_api_error
    from .api.exports import bp as exports_bp
    from .api.models import bp as models_bp
    from .api.planning import bp as planning_bp
    from .api.results import bp as results_bp
    from .api.sharing import bp as sharing_bp
    from .auth import authenticate
    from .openapi import bp as openapi_bp
    from .pages import bp as pages_bp

    @app.before_request
    def _limit_json_bodies() -> None:
        # Only multipart uploads may be large; any other body (JSON) is refused past max_json_bytes.
        if request.mimetype != "multipart/form-data":
            request.max_content_length = settings.max_json_bytes  # type: ignore[misc]
            if (request.content_length or 0) > settings.max_json_bytes:
                raise RequestEntityTooLarge()

    app.before_request(authenticate)
    app.register_error_handler(ApiError, handle_api_error)
    for bp in (auth_bp, models_bp, results_bp, planning_bp, sharing_bp, analyses_bp, diffs_bp, exports_bp, openapi_bp,
               pages_bp):
        app.register_blueprint(bp)

    @app.errorhandler(HTTPException)
    def _http_error(e: HTTPException):  # type: ignore[no-untyped-def]
        if not request.path.startswith("/api/"):
            return e
        message = e.description or e.name
        code = (e.name or "error").lower().replace(" ", "_")
        if e.code == 413:
            code = "too_large"
            message = too_large_message(settings.max_upload_bytes)
            if request.mimetype != "multipart/form-data":
                message = (f"The request body is larger than this server accepts for JSON "
                           f"({settings.max_json_bytes} bytes; EDGESCOPE_MAX_JSON_BYTES).")
        return jsonify(error=message, code=code), e.code

    @app.errorhandler(Exception)
    def _unexpected(e: Exception):  # type: ignore[no-untyped-def]
        logging.getLogger(__name__).exception("unhandled error on %s %s", request.method, request.path)
        return jsonify(error="Internal server error; it was logged.", code="internal_error"), 500

    return app
