"""A 4xx with a sentence for the user, raised from service code and turned into JSON once."""

from __future__ import annotations

from flask import jsonify
from flask.typing import ResponseReturnValue


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def handle_api_error(e: ApiError) -> ResponseReturnValue:
    return jsonify(error=e.message, code=e.code), e.status
