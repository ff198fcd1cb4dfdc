"""Functions the sandbox tests run in a child process (imported there by dotted path)."""

from __future__ import annotations

import ctypes
import time
from typing import Any


def echo(payload: dict[str, Any]) -> dict[str, Any]:
    return {"echo": payload["x"] * 2}


def segfault(payload: dict[str, Any]) -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def allocate(payload: dict[str, Any]) -> int:
    block = bytearray(payload["bytes"])  # over RLIMIT_AS: MemoryError
    return len(block)


def sleep(payload: dict[str, Any]) -> None:
    time.sleep(payload["seconds"])


def fail(payload: dict[str, Any]) -> None:
    raise RuntimeError("something broke in the child")


def exit_hard(payload: dict[str, Any]) -> None:
    import os

    os._exit(3)


def environ(payload: dict[str, Any]) -> list[str]:
    import os

    return sorted(os.environ)
