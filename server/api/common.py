"""Small helpers every API blueprint uses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import current_app, request

from store.services import Services

from .errors import ApiError


def services() -> Services:
    """The app's handles to stored state (server.app.create_app puts them there): the one way views reach them."""
    return current_app.extensions["edgescope"]


def json_body() -> dict[str, Any]:
    try:
        data = request.get_json(silent=True)
    except RecursionError:
        raise ApiError(400, "bad_json", "The JSON body is nested too deeply.") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_json", "Send a JSON object (Content-Type: application/json).")
    return data


def iso(dt: datetime | None) -> str | None:
    """UTC timestamps as `...Z`; SQLite hands back naive datetimes that were written in UTC."""
    if dt is None:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).isoformat().replace("+00:00", "Z")
