"""The reconciler: the database says which jobs must run; make the broker and the workers agree.

Every `EDGESCOPE_RECONCILE_INTERVAL_S` (in `edgescope serve` and in each `edgescope worker`):
1. A running job whose lease expired lost its worker (killed, crashed, machine gone). It is queued and
   sent again, or, once it has had `EDGESCOPE_JOB_MAX_ATTEMPTS` tries, failed with a reason.
2. A queued job that the broker holds no message for (`broker_inventory`) for `EDGESCOPE_REQUEUE_AFTER_S`
   is sent again: Redis restarted without persistence, or a message was lost. A broker that cannot be
   listed gets every queued job re-sent at that age. A duplicate message is harmless: claiming is atomic.
3. Exports (which hold no lease) still unfinished past the job time limit are failed with a reason.
4. Temporary folders of crashed jobs and uploads are removed (`worker.scratch.sweep`), and rate counters of
   windows that ended a day ago are dropped.
Each change is a conditional UPDATE on the row as it was read, so any number of reconcilers can run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import delete, select, update

from store.db import session_scope
from store.models import Export, Job, RateCounter
from store.services import Services

from . import broker_inventory, scratch
from .lease import now

log = logging.getLogger(__name__)

Enqueue = Callable[[str], None]


@dataclass
class Report:
    requeued: list[str] = field(default_factory=list)  # lease expired, tries left
    failed: list[str] = field(default_factory=list)  # lease expired, out of tries
    resent: list[str] = field(default_factory=list)  # queued, missing from the broker
    swept: list[str] = field(default_factory=list)  # temp folders removed


def gave_up_message(attempts: int) -> str:
    return (f"The analysis stopped {attempts} times without finishing: the worker running it was killed or "
            "crashed (for example out of memory). Re-analyse to try again; if it keeps failing, the model may "
            "be too large for this server's workers.")


def _send(enqueue: Enqueue, job_id: str) -> None:
    try:
        enqueue(job_id)
    except Exception:  # noqa: BLE001 - broker down: the job stays queued and is re-sent on a later tick
        log.exception("could not send job %s to the broker; will retry", job_id)


def _mark_stages_failed(s: object, job_id: str) -> None:
    job = s.get(Job, job_id)  # type: ignore[attr-defined]
    if job is not None:
        job.stages = [dict(st, status="failed") if st.get("status") == "running" else st for st in job.stages]


def expire_leases(services: Services, enqueue: Enqueue) -> tuple[list[str], list[str]]:
    st, t = services.settings, now()
    with session_scope(services.sessions) as s:
        rows = s.execute(select(Job.id, Job.attempts, Job.lease_token).where(
            Job.status == "running", Job.lease_expires_at < t)).all()
    requeued, failed = [], []
    for job_id, attempts, token in rows:
        same = (Job.id == job_id, Job.status == "running", Job.lease_token == token, Job.lease_expires_at < t)
        with session_scope(services.sessions) as s:
            if attempts >= st.job_max_attempts:
                done = s.execute(update(Job).where(*same).values(
                    status="failed", error=gave_up_message(attempts), finished_at=t, lease_token=None,
                    lease_expires_at=None)).rowcount
                if done:
                    _mark_stages_failed(s, job_id)
                    failed.append(job_id)
                continue
            done = s.execute(update(Job).where(*same).values(
                status="queued", lease_token=None, lease_expires_at=None, enqueued_at=t)).rowcount
        if done:
            log.warning("job %s lost its worker (lease expired after try %d); queued again", job_id, attempts)
            _send(enqueue, job_id)
            requeued.append(job_id)
    return requeued, failed


def resend_lost(services: Services, enqueue: Enqueue) -> list[str]:
    st, t = services.settings, now()
    cutoff = t - timedelta(seconds=st.requeue_after_s)
    with session_scope(services.sessions) as s:
        rows = s.execute(select(Job.id, Job.enqueued_at).where(
            Job.status == "queued", (Job.enqueued_at < cutoff) | Job.enqueued_at.is_(None))).all()
    if not rows:
        return []
    held = broker_inventory.held_jobs(st, fresh_s=st.requeue_after_s)
    resent = []
    for job_id, sent_at in rows:
        if held is not None and job_id in held:
            continue
        with session_scope(services.sessions) as s:
            match = Job.enqueued_at.is_(None) if sent_at is None else Job.enqueued_at == sent_at
            done = s.execute(update(Job).where(Job.id == job_id, Job.status == "queued", match)
                             .values(enqueued_at=t)).rowcount
        if done:
            log.warning("job %s was queued with no broker message holding it; sent again", job_id)
            _send(enqueue, job_id)
            resent.append(job_id)
    return resent


def fail_stale_exports(services: Services) -> list[str]:
    """Exports hold no lease: one still queued or running past the job time limit (plus the broker's grace)
    lost its worker, and is failed with a reason rather than left running."""
    st, t = services.settings, now()
    cutoff = t - timedelta(seconds=st.job_time_limit_s + 60 + st.requeue_after_s)
    with session_scope(services.sessions) as s:
        ids = list(s.scalars(select(Export.id).where(Export.status.in_(("queued", "running")),
                                                     Export.created_at < cutoff)))
        if ids:
            s.execute(update(Export).where(Export.id.in_(ids), Export.status.in_(("queued", "running")))
                      .values(status="failed", finished_at=t,
                              error="The export did not finish within the job time limit (its worker may have "
                                    "stopped); export again."))
    return ids


def drop_old_counters(services: Services) -> None:
    """Rate counters whose window ended long ago (sign-in: 15 min, uploads: 1 h) count nothing any more."""
    with session_scope(services.sessions) as s:
        s.execute(delete(RateCounter).where(RateCounter.window_start < now() - timedelta(days=1)))


def running_ids(services: Services) -> set[str]:
    with session_scope(services.sessions) as s:
        jobs = s.scalars(select(Job.id).where(Job.status == "running", Job.lease_expires_at >= now()))
        exports = s.scalars(select(Export.id).where(Export.status.in_(("queued", "running"))))
        return set(jobs) | set(exports)


def reconcile_once(services: Services, enqueue: Enqueue) -> Report:
    report = Report()
    report.requeued, report.failed = expire_leases(services, enqueue)
    report.resent = resend_lost(services, enqueue)
    report.failed += fail_stale_exports(services)
    drop_old_counters(services)
    report.swept = scratch.sweep(services.settings, running_ids(services))
    if report.swept:
        log.info("removed %d stale temporary folders: %s", len(report.swept), ", ".join(report.swept[:10]))
    return report


def start_reconciler(services: Services, enqueue: Enqueue, stop: threading.Event | None = None) -> threading.Thread:
    """Run `reconcile_once` now and then every reconcile_interval_s in a daemon thread."""
    stop = stop or threading.Event()

    def run() -> None:
        while True:
            try:
                reconcile_once(services, enqueue)
            except Exception:  # noqa: BLE001 - database or broker away: try again next tick
                log.exception("reconciler tick failed")
            if stop.wait(services.settings.reconcile_interval_s):
                return

    thread = threading.Thread(target=run, name="edgescope-reconciler", daemon=True)
    thread.start()
    return thread
