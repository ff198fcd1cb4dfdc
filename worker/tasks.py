"""Celery tasks: thin wrappers that take ids and call plain functions in worker.jobs.

Registered on each app by `register` with the app's settings closed over: in a worker thread
`task.app` may resolve to Celery's default app, so tasks must not look their settings up there.
"""

from __future__ import annotations

from functools import cache

from celery import Celery

from edgescope.config import Settings
from store.services import Services

from . import exports, jobs

ANALYZE = "edgescope.analyze_model"
EXPORT = "edgescope.export_model"


@cache
def _services(settings: Settings) -> Services:
    return Services(settings)


def analyze_model(settings: Settings, job_id: str) -> str:
    services = _services(settings)
    try:
        return jobs.run_job(services, job_id)
    except Exception as e:
        # run_job ends its own failures; this catches the store itself failing (database or
        # blob store down) so the job is not left "running" when the store comes back.
        jobs.fail(services, job_id, f"Internal error while running the job ({type(e).__name__}).")
        raise


def export_model(settings: Settings, export_id: str) -> str:
    services = _services(settings)
    try:
        return exports.run_export(services, export_id)
    except Exception as e:
        exports.fail(services, export_id, f"Internal error while exporting ({type(e).__name__}).")
        raise


def register(app: Celery, settings: Settings) -> None:
    @app.task(name=ANALYZE, acks_late=True)
    def _analyze(job_id: str) -> str:
        return analyze_model(settings, job_id)

    @app.task(name=EXPORT, acks_late=True)
    def _export(export_id: str) -> str:
        return export_model(settings, export_id)
