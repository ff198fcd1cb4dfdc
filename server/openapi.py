"""Serves the hand-written OpenAPI document (server/openapi.json); a test keeps it in step with the routes."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from flask import Blueprint, jsonify
from flask.typing import ResponseReturnValue

SPEC_PATH = Path(__file__).with_name("openapi.json")
bp = Blueprint("openapi", __name__)


@cache
def spec() -> dict[str, Any]:
    return json.loads(SPEC_PATH.read_text())


@bp.get("/api/openapi.json")
def openapi() -> ResponseReturnValue:
    return jsonify(spec())
