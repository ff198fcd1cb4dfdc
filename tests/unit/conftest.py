"""The fast tier (`make test-fast`): pure code only, in well under a minute. Starting a process or opening a
network connection fails the test here, so nothing slow creeps in unnoticed: a test that needs ONNX Runtime's
sandboxed child, a live server, a database or Chromium belongs beside its module in tests/<package>/ (the
integration tier). `make test` runs both."""

from __future__ import annotations

import os
import socket
import subprocess
from typing import Any, NoReturn

import pytest


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(f"the fast tier (tests/unit) {what}; move this test to the integration tier")

    return refuse


@pytest.fixture(autouse=True)
def pure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("starts no process"))
    for name in ("fork", "posix_spawn", "posix_spawnp"):
        monkeypatch.setattr(os, name, _refuse("starts no process"))
    monkeypatch.setattr(socket.socket, "connect", _refuse("opens no connection"))
