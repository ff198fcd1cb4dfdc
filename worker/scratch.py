"""Temporary folders: one per job, export or upload, under `EDGESCOPE_TEMP_DIR` (`<data dir>/tmp`).

A folder is named `<kind>.<id>.<host>.<pid>.<random>` and removed when its job or upload ends. A
process killed mid-job cannot remove its own, so `sweep` (at start-up and on every reconciler tick)
removes folders whose process is gone (same host), job folders whose job no longer runs here, and
anything older than `EDGESCOPE_TEMP_MAX_AGE_S`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgescope.config import Settings

KINDS = ("job", "export", "upload")
# A folder this young is never swept for "its job is not running": it may belong to a job claimed
# between the reconciler's query and its listing of the folders.
YOUNG_S = 120.0


def _host() -> str:
    return socket.gethostname().replace(".", "_")[:60]


def folder_name(kind: str, key: str) -> str:
    # Ids are URL-safe base64 (no "."), so "." separates the parts.
    return f"{kind}.{key}.{_host()}.{os.getpid()}.{secrets.token_hex(4)}"


@contextmanager
def scratch_folder(settings: Settings, kind: str, key: str) -> Iterator[Path]:
    """A fresh folder for one job, export or upload; removed (with everything in it) when the block ends."""
    root = settings.temp_root
    root.mkdir(parents=True, exist_ok=True)
    folder = root / folder_name(kind, key)
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _parse(name: str) -> tuple[str, str, str, int] | None:
    parts = name.split(".")
    if len(parts) != 5 or parts[0] not in KINDS or not parts[3].isdigit():
        return None
    return parts[0], parts[1], parts[2], int(parts[3])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(settings: Settings, running_here: set[str] | None = None) -> list[str]:
    """Remove folders left by crashed jobs and uploads; returns their names. `running_here`: ids of jobs
    and exports that still run (None: do not judge folders by their job)."""
    root = settings.temp_root
    if not root.is_dir():
        return []
    removed, host, now = [], _host(), time.time()
    for entry in root.iterdir():
        try:
            age = now - entry.stat().st_mtime
        except FileNotFoundError:
            continue
        parsed = _parse(entry.name)
        stale = age > settings.temp_max_age_s
        if parsed is not None and not stale:
            kind, key, where, pid = parsed
            if where == host and not _alive(pid):
                stale = True  # its process died
            elif kind != "upload" and running_here is not None and age > YOUNG_S \
                    and key not in running_here:
                stale = True  # its job ended or was taken over elsewhere
        if stale:
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
            removed.append(entry.name)
    return removed
