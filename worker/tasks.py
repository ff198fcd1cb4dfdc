"""Celery tasks: thin wrappers that take ids and call plain functions in worker.jobs."""

from __future__ import annotations

from functools import cache

from celery import shared_task
from celery.app.task import Task

from edgescope.config import Settings
from store.services import Services

from . import jobs


@cache
def _services(settings: Settings) -> Services:
    return Services(settings)


@shared_task(name="edgescope.analyze_model", bind=True, acks_late=True)
def analyze_model(self: Task, job_id: str) -> str:
    services = _services(self.app.conf.edgescope_settings)
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    return jobs.run_job(services, job_id, redelivered=redelivered)
