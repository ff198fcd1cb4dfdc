"""The Celery application: Redis (or any broker URL) at scale, a file broker when embedded."""

from __future__ import annotations

import secrets

from celery import Celery

from edgescope.config import Settings

from . import file_broker, tasks


def make_celery(settings: Settings) -> Celery:
    app = Celery("edgescope")
    conf: dict[str, object] = dict(
        task_ignore_result=True,  # job state lives in our own table
        # A worker that dies mid-job: its lease expires and the reconciler re-queues the job (worker/lease.py);
        # acks_late also has the broker redeliver the message, which a claim then ignores or takes.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # jobs are long; don't hoard them
        task_time_limit=settings.job_time_limit_s + 60,
        task_soft_time_limit=settings.job_time_limit_s,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        task_default_queue=settings.queue,
    )
    if settings.broker_url:
        conf["broker_url"] = settings.broker_url
        if settings.broker_url.startswith("redis"):
            # Redelivery of un-acked messages after a worker dies; longer than any job (leases recover sooner).
            conf["broker_transport_options"] = {"visibility_timeout": settings.job_time_limit_s * 2}
    else:
        queue = settings.data_dir / "broker"
        (queue / "queue").mkdir(parents=True, exist_ok=True)
        (queue / "processed").mkdir(parents=True, exist_ok=True)
        conf["broker_url"] = f"{file_broker.SCHEME}://"  # kombu's file transport, messages written whole
        conf["broker_transport_options"] = {
            "data_folder_in": str(queue / "queue"),
            "data_folder_out": str(queue / "queue"),
            "processed_folder": str(queue / "processed"),
            "store_processed": False,
            "control_folder": str(queue / "control"),
        }
        conf["worker_enable_remote_control"] = False  # the file transport has no broadcast
    app.conf.update(conf)
    tasks.register(app, settings)
    return app


def enqueue(app: Celery, job_id: str) -> None:
    """Send an analysis job to the workers. Call after the job row is committed. The task id starts with the
    job id, so the reconciler can tell which jobs the broker holds (`worker.broker_inventory`)."""
    app.send_task(tasks.ANALYZE, args=[job_id], task_id=f"{job_id}.{secrets.token_hex(6)}")


def enqueue_export(app: Celery, export_id: str) -> None:
    """Send an export job (build an optimized model file) to the workers. Call after commit."""
    app.send_task(tasks.EXPORT, args=[export_id])
