"""Job leases: the worker running a job holds a token on its row and renews it while it runs.

Claiming sets `lease_token` and `lease_expires_at = now + EDGESCOPE_JOB_LEASE_S`; a heartbeat thread
renews it every third of that. A worker that dies (kill -9, machine lost, out of memory) stops
renewing, so its job's lease expires and the reconciler (`worker/reconcile.py`) re-queues the job or,
after `EDGESCOPE_JOB_MAX_ATTEMPTS` tries, fails it with a reason. Every write of the running job is
conditioned on the token: a worker presumed dead that comes back cannot overwrite its successor.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, or_, update

from store.db import session_scope
from store.models import Job
from store.services import Services


def now() -> datetime:
    return datetime.now(UTC)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


class LeaseLost(RuntimeError):
    """Another worker (or the reconciler) took the job over; this run must stop without writing."""


def claimable(max_attempts: int, at: datetime):  # type: ignore[no-untyped-def]
    """Queued, or running under an expired lease with tries left (its worker died)."""
    return or_(Job.status == "queued",
               and_(Job.status == "running", Job.lease_expires_at < at, Job.attempts < max_attempts))


class Heartbeat:
    """Renews the lease every `lease_s / 3` in a daemon thread; `lost` is set when the row is no longer ours."""

    def __init__(self, services: Services, job_id: str, token: str) -> None:
        self.services, self.job_id, self.token = services, job_id, token
        self.lease = timedelta(seconds=services.settings.job_lease_s)
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"edgescope-heartbeat-{job_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        period = max(self.lease.total_seconds() / 3, 0.2)
        while not self._stop.wait(period):
            try:
                if not self.renew():
                    self.lost.set()
                    return
            except Exception:  # noqa: BLE001 - database briefly away: try again next beat
                continue

    def renew(self) -> bool:
        with session_scope(self.services.sessions) as s:
            res = s.execute(update(Job).where(Job.id == self.job_id, Job.lease_token == self.token,
                                              Job.status == "running")
                            .values(lease_expires_at=now() + self.lease))
            return res.rowcount == 1

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost(f"job {self.job_id} was taken over")


def new_token() -> str:
    return secrets.token_hex(16)


def _aware(dt: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; they were written in UTC.
    return dt.replace(tzinfo=UTC) if dt is not None and dt.tzinfo is None else dt


def holds_model(job: Job) -> bool:
    """Whether the job still occupies its model: queued, or running under a live lease. A running job whose
    worker died (expired lease) does not: the user may re-analyse it at once."""
    if job.status == "queued":
        return True
    if job.status != "running":
        return False
    expires = _aware(job.lease_expires_at)
    return expires is None or expires >= now()


def retire_stale(s: object, job: Job) -> bool:
    """Fail a running job whose lease expired, as it is replaced by a new analysis. False when a reconciler
    re-queued it first (the update is conditional, so exactly one of the two wins)."""
    if job.status != "running":
        return True
    return s.execute(update(Job).where(Job.id == job.id, Job.status == "running",  # type: ignore[attr-defined]
                                Job.lease_token == job.lease_token, Job.lease_expires_at < now())
              .values(status="failed", finished_at=now(), lease_token=None, lease_expires_at=None,
                      error="Its worker stopped responding; replaced by a new analysis.")
              # The session holds the job loaded; SQLite's naive datetimes cannot be compared in Python.
              .execution_options(synchronize_session=False)).rowcount == 1
