"""Browser pages: the built single-page app from web/dist, or a plain page when it is not built."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, abort, render_template, send_from_directory
from flask.typing import ResponseReturnValue

WEB_DIST = Path(__file__).resolve().parent.parent / "web" / "dist"

bp = Blueprint("pages", __name__)


def _app_shell(model_id: str | None = None) -> ResponseReturnValue:
    if (WEB_DIST / "index.html").is_file():
        resp = send_from_directory(WEB_DIST, "index.html", max_age=0)
        return resp
    # Without a web build (e.g. a server-only install) the plain page still shows status and ops.
    return render_template("plain.html", model_id=model_id)


@bp.get("/")
def index() -> ResponseReturnValue:
    return _app_shell()


@bp.get("/account")
def account_page() -> ResponseReturnValue:
    return _app_shell()


@bp.get("/m/<model_id>")
def model_page(model_id: str) -> ResponseReturnValue:
    return _app_shell(model_id)


@bp.get("/m/<model_id>/a/<analysis_id>")
def analysis_page(model_id: str, analysis_id: str) -> ResponseReturnValue:
    return _app_shell(model_id)


@bp.get("/assets/<path:filename>")
def assets(filename: str) -> ResponseReturnValue:
    if not (WEB_DIST / "assets").is_dir():
        abort(404)
    # Vite puts a content hash in every asset name, so they can be cached for good.
    return send_from_directory(WEB_DIST / "assets", filename, max_age=31536000)
