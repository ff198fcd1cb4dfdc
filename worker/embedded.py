"""A real Celery worker running in a thread of the web process (the embedded default), restarted if it stops.

Celery ends a worker on any error it deems unrecoverable (a broker read failing, a bug in a consumer step); in a
separate process a supervisor (systemd, compose's `restart:`) starts it again, but the embedded worker's only
supervisor is this module: without it, every later upload would wait in the queue for ever.
"""

from __future__ import annotations

import logging
import threading
import time

from celery import Celery
from celery.worker import WorkController

log = logging.getLogger(__name__)


class _Controller(WorkController):
    def __init__(self, *args: object, ever_started: threading.Event, **kwargs: object) -> None:
        self.started, self.ever_started = threading.Event(), ever_started
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: object) -> None:
        self.started.set()
        self.ever_started.set()  # the supervisor's start() waits for the first worker only


class EmbeddedWorker:
    """Runs one solo-pool worker at a time in a daemon thread; a worker that stops is replaced after a pause that
    doubles while workers keep failing fast (up to `max_pause_s`), so a persistent fault does not spin a core."""

    def __init__(self, app: Celery, pause_s: float = 1.0, max_pause_s: float = 60.0):
        self.app, self.pause_s, self.max_pause_s = app, pause_s, max_pause_s
        self.restarts = 0
        self.current: _Controller | None = None
        self._first = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="edgescope-worker", daemon=True)

    def _controller(self) -> _Controller:
        return _Controller(app=self.app, pool="solo", concurrency=1, hostname="embedded@edgescope",
                           without_heartbeat=True, without_mingle=True, without_gossip=True,
                           loglevel="WARNING", ready_callback=None, ever_started=self._first)

    def _run(self) -> None:
        pause = self.pause_s
        while not self._stopping.is_set():
            began = time.monotonic()
            try:
                self.current = self._controller()
                self.current.start()  # returns when the worker stops (Celery logs an unrecoverable error first)
            except Exception:  # noqa: BLE001 - building a worker failed: try again after the pause
                log.exception("the embedded worker could not start")
            if self._stopping.is_set():
                return
            if time.monotonic() - began > self.max_pause_s:
                pause = self.pause_s  # it ran a while: a new fault, not the same one again
            self.restarts += 1
            log.error("the embedded worker stopped; restart %d in %.0f s", self.restarts, pause)
            self._stopping.wait(pause)
            pause = min(pause * 2, self.max_pause_s)

    def start(self, timeout_s: float) -> None:
        self._thread.start()
        if not self._first.wait(timeout_s):
            raise RuntimeError("the embedded Celery worker did not start within %.0f s" % timeout_s)

    def consuming(self) -> bool:
        """True while a worker is consuming (for health checks)."""
        c = self.current
        return c is not None and c.started.is_set() and self._thread.is_alive()

    def stop(self) -> None:
        self._stopping.set()
        if self.current is not None:
            self.current.stop(in_sighandler=False)


def start_embedded_worker(app: Celery, timeout_s: float = 30.0, pause_s: float = 1.0) -> EmbeddedWorker:
    """Start the supervised solo-pool worker consuming app's broker; returns once the first worker consumes."""
    w = EmbeddedWorker(app, pause_s=pause_s)
    w.start(timeout_s)
    return w
