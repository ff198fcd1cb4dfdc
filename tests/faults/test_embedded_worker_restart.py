"""The embedded worker is supervised: a worker that Celery stops on an "unrecoverable" error is replaced, and jobs
sent afterwards run (before, the web process kept serving while every later upload waited in the queue)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

from worker import file_broker
from worker.embedded import start_embedded_worker


def _app(folder: Path) -> Celery:
    q = folder / "queue"
    q.mkdir(parents=True)
    app = Celery("restart-test")
    app.conf.update(broker_url=f"{file_broker.SCHEME}://", task_ignore_result=True, worker_hijack_root_logger=False,
                    worker_enable_remote_control=False, broker_connection_retry_on_startup=True,
                    broker_transport_options={"data_folder_in": str(q), "data_folder_out": str(q),
                                              "store_processed": False, "polling_interval": 0.05,
                                              "control_folder": str(folder / "control")})
    return app


def test_a_stopped_worker_is_replaced_and_later_jobs_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(tmp_path)
    ran = threading.Event()

    @app.task(name="t.ping")
    def ping() -> None:
        ran.set()

    assert "t.ping" in app.tasks  # registered before the worker reads the registry
    real_get = file_broker.Channel._get
    failures = [1]

    def failing_once(self: Any, queue: str) -> Any:
        if failures[0]:
            failures[0] -= 1
            raise RuntimeError("a consumer bug")  # not a connection error: Celery stops the worker
        return real_get(self, queue)

    monkeypatch.setattr(file_broker.Channel, "_get", failing_once)
    w = start_embedded_worker(app, timeout_s=60, pause_s=0.1)
    try:
        app.send_task("t.ping")
        assert ran.wait(60), "the job sent after the worker's failure never ran"
        assert w.restarts >= 1 and failures[0] == 0
        assert w.consuming()
    finally:
        w.stop()
