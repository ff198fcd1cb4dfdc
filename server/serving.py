"""Serving the app with waitress, whose own refusals speak the API's JSON error format.

Waitress reads a whole request body (into an anonymous temporary file, gone when closed, even after a
crash) before the app sees it, and refuses a body over `max_request_body_size` itself, after the headers
only. That refusal is plain text by default; the API documents `{"error", "code"}` for every 4xx, so the
class waitress's parser raises is replaced by one that answers in JSON. Bodies within waitress's limit
but over the app's (upload limit plus multipart framing, or EDGESCOPE_MAX_JSON_BYTES) get the app's 413.
"""

from __future__ import annotations

import json

from flask import Flask

from edgescope.config import Settings

from .uploads import too_large_message

# Waitress's own cap sits a little above the app's, so the app answers every body it could have read.
WAITRESS_SLACK_BYTES = 1024 * 1024


def _json_too_large(settings: Settings) -> type:
    from waitress.utilities import RequestEntityTooLarge

    body = json.dumps({"error": too_large_message(settings.max_upload_bytes), "code": "too_large"}).encode()

    class JsonRequestEntityTooLarge(RequestEntityTooLarge):
        def to_response(self, ident: str | None = None) -> tuple[str, list[tuple[str, str]], bytes]:
            return (f"{self.code} {self.reason}", [("Content-Type", "application/json")], body)

    return JsonRequestEntityTooLarge


def serve(app: Flask, settings: Settings, host: str, port: int, threads: int) -> None:
    import waitress
    import waitress.parser

    waitress.parser.RequestEntityTooLarge = _json_too_large(settings)  # type: ignore[attr-defined]
    waitress.serve(app, host=host, port=port, threads=threads, ident="edgescope",
                   max_request_body_size=settings.max_upload_bytes + WAITRESS_SLACK_BYTES)
