"""A real Celery worker running in a thread of the web process (the embedded default)."""

from __future__ import annotations

import threading

from celery import Celery
from celery.worker import WorkController


class _Controller(WorkController):
    def __init__(self, *args: object, **kwargs: object) -> None:
        self.started = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: object) -> None:
        self.started.set()


def start_embedded_worker(app: Celery, timeout_s: float = 30.0) -> WorkController:
    """Start a solo-pool worker consuming app's broker; returns once it consumes."""
    worker = _Controller(app=app, pool="solo", concurrency=1, hostname="embedded@edgescope",
                         without_heartbeat=True, without_mingle=True, without_gossip=True,
                         loglevel="WARNING", ready_callback=None)
    thread = threading.Thread(target=worker.start, name="edgescope-worker", daemon=True)
    thread.start()
    if not worker.started.wait(timeout_s):
        raise RuntimeError("the embedded Celery worker did not start within %.0f s" % timeout_s)
    return worker
