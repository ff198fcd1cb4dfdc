"""One timing at a time on this machine: every Edgescope process that times a runtime (a profile's timed rounds,
a calibration's case timings) holds one host-wide lock while it does.

Why: two timings side by side slow each other far beyond the share of a CPU each gets. On a 2-vCPU cloud VM whose
vCPUs behave as the two hyperthreads of one core (an Emerald Rapids Xeon, 2026-12-05), a single-thread fp32 GEMM
probe ran at 146-156 GFLOP/s alone and beside a scalar busy loop on the other vCPU, but at 69-94 beside a numpy
GEMM there: vector work on the sibling halves the speed, and `worker --concurrency 2` (docker-compose.yml) would
time one model beside another's profile. With this lock the second timing waits (seconds: a profile's rounds
are capped by REMEASURE_BUDGET_S; a calibration's minutes); work that only computes (compile, sweep) still runs.

The lock is an flock on one file (EDGESCOPE_TIMING_LOCK, default `edgescope-timing.lock` in the system's temp
dir), so every worker process on the host shares it and the kernel drops it when a holder dies. Nested holds in one
thread are free (an ORT profile's warm-up and its rounds); other threads of the process wait like other processes.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no host-wide lock, timings may overlap
    fcntl = None  # type: ignore[assignment]

LOCK_ENV = "EDGESCOPE_TIMING_LOCK"

_held = threading.local()  # depth: how many nested holds this thread has


def lock_path() -> Path:
    """EDGESCOPE_TIMING_LOCK, else one file in this process's temp dir (a sandbox child is handed its parent's path:
    its own TMPDIR is a folder of its own, compiler.sandbox)."""
    return Path(os.environ.get(LOCK_ENV) or Path(tempfile.gettempdir()) / "edgescope-timing.lock")


def _open_lock() -> int:
    """A descriptor of the lock file, or -1 where none can be opened (then time as if alone rather than fail)."""
    try:
        path = lock_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)  # flock needs no write access: any user may wait
    except OSError:
        return -1


@contextmanager
def timing_alone() -> Iterator[float]:
    """Hold the host-wide timing lock for the block; yields the seconds waited for it (0 when nested)."""
    depth = getattr(_held, "depth", 0)
    fd = -1 if depth or fcntl is None else _open_lock()
    _held.depth = depth + 1
    try:
        if fd < 0:
            yield 0.0
            return
        t0 = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield time.monotonic() - t0
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        _held.depth = depth
        if fd >= 0:
            os.close(fd)
