"""Clean 4xx on hostile requests, atomic limits, leases and the reconciler, without a worker running."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from edgescope.config import Settings
from tests.conftest import migrate, token_client


def _app(tmp_path: Path, calibration_dir: Path, **overrides):  # type: ignore[no-untyped-def]
    from server.app import create_app

    settings = Settings.from_env(env={}, data_dir=tmp_path / "data", calibration_dir=calibration_dir, **overrides)
    migrate(settings.database_url)
    return create_app(settings)


def _upload(client, data: bytes, filename: str = "m.onnx", **fields):  # type: ignore[no-untyped-def]
    return client.post("/api/models", data={"file": (io.BytesIO(data), filename), **fields},
                       content_type="multipart/form-data")


def _no_leak(body: dict) -> None:  # type: ignore[type-arg]
    text = json.dumps(body)
    assert set(body) == {"error", "code"}, body
    assert "/tmp" not in text and "Traceback" not in text and ".cc:" not in text


# --- request bodies ----------------------------------------------------------------------------------------

def test_json_body_over_limit_is_a_json_413(tmp_path: Path, calibration_dir: Path) -> None:
    app = _app(tmp_path, calibration_dir, max_json_bytes=1000)
    r = app.test_client().post("/api/auth/login", data=json.dumps({"email": "a@b.cd", "password": "x" * 5000}),
                               content_type="application/json")
    assert r.status_code == 413 and r.get_json()["code"] == "too_large"
    assert "EDGESCOPE_MAX_JSON_BYTES" in r.get_json()["error"]
    _no_leak(r.get_json())


def test_deeply_nested_json_is_a_400(client) -> None:  # type: ignore[no-untyped-def]
    deep = "[" * 100_000 + "]" * 100_000
    r = client.post("/api/tokens", data=deep, content_type="application/json")
    assert r.status_code == 400 and "nested too deeply" in r.get_json()["error"]
    _no_leak(r.get_json())
    r = _upload(client, b"\x08\x07", inputs='{"x":' * 50_000 + "1" + "}" * 50_000)
    assert r.status_code == 400 and "nested too deeply" in r.get_json()["error"]


def test_long_file_name_is_shortened_keeping_the_extension(client, zoo) -> None:  # type: ignore[no-untyped-def]
    r = _upload(client, zoo.path("tiny_cnn").read_bytes(), filename="a" * 300 + ".onnx")
    assert r.status_code == 201, r.get_json()
    body = r.get_json()
    assert body["format"] == "onnx" and body["name"].endswith(".onnx") and len(body["name"]) <= 120
    assert client.get(f"/api/models/{body['id']}/download").data == zoo.path("tiny_cnn").read_bytes()


def test_upload_leaves_no_temporary_file(client, zoo) -> None:  # type: ignore[no-untyped-def]
    from server.api.common import services

    with client.application.app_context():
        root = services().settings.temp_root
    assert _upload(client, zoo.path("tiny_cnn").read_bytes()).status_code == 201
    assert _upload(client, os.urandom(3000)).status_code == 415
    assert not root.exists() or list(root.iterdir()) == []


def test_upload_quota_by_count_and_bytes(tmp_path: Path, calibration_dir: Path, zoo) -> None:
    size = zoo.path("tiny_cnn").stat().st_size
    app = _app(tmp_path, calibration_dir, upload_quota_count_per_hour=2, upload_quota_bytes_per_hour=10 * size)
    client = token_client(app, "quota@example.com")
    data = zoo.path("tiny_cnn").read_bytes()
    assert _upload(client, data).status_code == 201
    assert _upload(client, data).status_code == 201
    r = _upload(client, data)
    assert r.status_code == 429 and r.get_json()["code"] == "upload_quota"
    assert "EDGESCOPE_UPLOAD_QUOTA_COUNT_PER_HOUR" in r.get_json()["error"]
    # Bytes: a user whose next upload would pass the byte quota is refused before the body is read.
    app2 = _app(tmp_path / "b", calibration_dir, upload_quota_bytes_per_hour=int(size * 1.5))
    other = token_client(app2, "bytes@example.com")
    assert _upload(other, data).status_code == 201
    assert _upload(other, data).status_code == 429
    assert token_client(app2, "fresh@example.com") is not None  # another user has their own quota


# --- atomic limits -----------------------------------------------------------------------------------------

def _parallel_guesses(url: str, n: int) -> list[int]:
    import concurrent.futures

    import requests

    def guess(_: int) -> int:
        return requests.post(f"{url}/api/auth/login", json={"email": "victim@example.com", "password": "wrong guess!"},
                             timeout=60).status_code

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        return list(pool.map(guess, range(n)))


@pytest.mark.slow
def test_parallel_wrong_guesses_hold_the_limit(live_server) -> None:  # type: ignore[no-untyped-def]
    import requests

    requests.post(f"{live_server.url}/api/auth/signup", timeout=30,
                  json={"email": "victim@example.com", "password": "the real password"})
    codes = _parallel_guesses(live_server.url, 20)
    print(f"\nparallel login (SQLite, 20 wrong guesses, limit 5): {codes.count(401)} checked, "
          f"{codes.count(429)} refused")
    assert codes.count(401) == 5 and codes.count(429) == 15, codes


def test_limit_counter_is_atomic_on_postgres(postgres_url: str) -> None:
    import concurrent.futures

    from server.limits import Limit, take
    from store.db import make_engine, make_sessionmaker, upgrade

    upgrade(postgres_url)
    sessions = make_sessionmaker(make_engine(postgres_url))
    limit = Limit("login-email:x@example.com", 5, timedelta(minutes=15))
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        got = list(pool.map(lambda _: take(sessions, limit), range(40)))
    assert got.count(True) == 5


# --- leases, re-analyse, reconciler --------------------------------------------------------------------------

def _job(app, client, zoo, **values):  # type: ignore[no-untyped-def]
    from sqlalchemy import select, update

    from store.db import session_scope
    from store.models import Job

    body = _upload(client, zoo.path("tiny_cnn").read_bytes()).get_json()
    svc = app.extensions["edgescope"]
    with session_scope(svc.sessions) as s:
        job_id = s.scalar(select(Job.id).where(Job.model_id == body["id"]))
        if values:
            s.execute(update(Job).where(Job.id == job_id).values(**values))
    return svc, body["id"], job_id


def test_reanalyse_is_allowed_once_the_lease_expired(app, client, zoo) -> None:  # type: ignore[no-untyped-def]
    now = datetime.now(UTC)
    svc, model_id, job_id = _job(app, client, zoo, status="running", lease_token="t", attempts=1,
                                 lease_expires_at=now + timedelta(seconds=60))
    assert client.post(f"/api/models/{model_id}/reanalyze").status_code == 409  # a live worker holds it
    from sqlalchemy import update

    from store.db import session_scope
    from store.models import Job

    with session_scope(svc.sessions) as s:
        s.execute(update(Job).where(Job.id == job_id).values(lease_expires_at=now - timedelta(seconds=1)))
    r = client.post(f"/api/models/{model_id}/reanalyze")
    assert r.status_code == 202 and r.get_json()["status"] == "queued"
    with session_scope(svc.sessions) as s:
        old = s.get(Job, job_id)
        assert old.status == "failed" and "stopped responding" in old.error


def test_reconciler_requeues_then_fails_after_max_attempts(app, client, zoo) -> None:  # type: ignore[no-untyped-def]
    from store.db import session_scope
    from store.models import Job
    from worker.reconcile import reconcile_once

    past = datetime.now(UTC) - timedelta(seconds=5)
    svc, _, job_id = _job(app, client, zoo, status="running", lease_token="a", attempts=1, lease_expires_at=past)
    sent: list[str] = []
    report = reconcile_once(svc, sent.append)
    assert report.requeued == [job_id] and sent == [job_id]
    with session_scope(svc.sessions) as s:
        assert s.get(Job, job_id).status == "queued"
    assert reconcile_once(svc, sent.append).requeued == []  # done once, not on every tick

    max_attempts = svc.settings.job_max_attempts
    svc, _, job_id = _job(app, client, zoo, status="running", lease_token="b", attempts=max_attempts,
                          lease_expires_at=past)
    report = reconcile_once(svc, sent.append)
    assert report.failed == [job_id]
    with session_scope(svc.sessions) as s:
        job = s.get(Job, job_id)
        assert job.status == "failed" and f"stopped {max_attempts} times" in job.error


def test_reconciler_resends_queued_jobs_the_broker_lost(app, client, zoo) -> None:  # type: ignore[no-untyped-def]
    from worker.reconcile import reconcile_once

    old = datetime.now(UTC) - timedelta(seconds=app.extensions["edgescope"].settings.requeue_after_s + 5)
    svc, _, job_id = _job(app, client, zoo, enqueued_at=old)
    # The upload's message is still in the embedded file broker: held, so not sent again.
    sent: list[str] = []
    assert reconcile_once(svc, sent.append).resent == [] and sent == []
    for f in (svc.settings.data_dir / "broker" / "queue").glob("*.msg"):
        f.unlink()  # the broker loses it
    assert reconcile_once(svc, sent.append).resent == [job_id] and sent == [job_id]


def test_broker_inventory_reads_redis(settings: Settings) -> None:
    from dataclasses import replace

    from tests.conftest import REDIS_URL
    from worker.broker_inventory import held_jobs
    from worker.celery_app import enqueue, make_celery

    st = replace(settings, broker_url=REDIS_URL, queue=f"inventory-{os.getpid()}")
    app = make_celery(st)
    enqueue(app, "jobAAA")
    try:
        assert "jobAAA" in (held_jobs(st, fresh_s=30) or set())
    finally:
        import redis

        redis.Redis.from_url(REDIS_URL).delete(st.queue)
    assert held_jobs(st, fresh_s=30) == set()


# --- temp folders and messages ------------------------------------------------------------------------------

def test_sweep_removes_folders_of_dead_processes_and_old_ones(settings: Settings) -> None:
    from worker import scratch

    root = settings.temp_root
    root.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = scratch._host()
    gone = root / f"upload.u1.{host}.{dead.pid}.abcd"
    mine = root / scratch.folder_name("job", "j1")
    old = root / "job.j2.otherhost.1.abcd"
    for d in (gone, mine, old):
        d.mkdir()
    os.utime(old, (time.time() - settings.temp_max_age_s - 10,) * 2)
    removed = scratch.sweep(settings, running_here=set())
    assert sorted(removed) == sorted([gone.name, old.name]) and mine.exists()


def test_public_message_drops_paths_and_source_lines() -> None:
    from worker.messages import public_message

    raw = ("[ONNXRuntimeError] : 1 : FAIL : Load model from /tmp/edgescope-sandbox-x1/blob.onnx failed:"
           "/onnxruntime_src/onnxruntime/core/graph/model.cc:180 onnxruntime::Model::Model(onnx::ModelProto&&, "
           "const PathString&, const IOnnxRuntimeOpSchemaRegistryList*, const logging::Logger&) "
           "Unsupported model IR version: 11, max supported IR version: 10")
    out = public_message(raw)
    assert "/tmp" not in out and "model.cc" not in out and "onnxruntime::Model" not in out
    assert "Unsupported model IR version: 11" in out and "blob.onnx" in out
    tb = 'bad thing Traceback (most recent call last):\n  File "/x/y.py", line 3, in f\n    boom()'
    assert public_message(tb) == "bad thing"


# --- the server process itself ------------------------------------------------------------------------------

def test_waitress_413_for_a_huge_declared_upload_is_json(live_server) -> None:  # type: ignore[no-untyped-def]
    host, port = live_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /api/models HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                     b"Content-Length: 99999999999\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413") and b"application/json" in head
    assert json.loads(body)["code"] == "too_large"


def test_sandbox_child_dies_with_its_parent() -> None:
    code = "from compiler import sandbox\nsandbox.run('tests.compiler.sandbox_targets:sleep', {'seconds': 60})\n"
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2])
    child = None
    deadline = time.monotonic() + 30
    while child is None and time.monotonic() < deadline:
        out = subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout.split()
        child = int(out[0]) if out else None
        time.sleep(0.1)
    assert child is not None
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists():
        state = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}/stat").exists() else "X"
        if state == "Z":
            break
        time.sleep(0.1)
    alive = Path(f"/proc/{child}/stat").exists() and Path(f"/proc/{child}/stat").read_text().split()[2] != "Z"
    assert not alive, "the sandbox child outlived its parent"


def test_reconciler_fails_exports_left_running_past_the_time_limit(app, client, zoo) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import select

    from store.db import session_scope
    from store.models import Export, User
    from worker.reconcile import reconcile_once

    svc, model_id, _ = _job(app, client, zoo)
    old = datetime.now(UTC) - timedelta(seconds=svc.settings.job_time_limit_s + 3600)
    with session_scope(svc.sessions) as s:
        user_id = s.scalar(select(User.id))
        stale = Export(model_id=model_id, requested_by=user_id, state={}, status="running", created_at=old)
        fresh = Export(model_id=model_id, requested_by=user_id, state={}, status="running")
        s.add_all([stale, fresh])
        s.flush()
        stale_id, fresh_id = stale.id, fresh.id
    assert stale_id in reconcile_once(svc, lambda _: None).failed
    with session_scope(svc.sessions) as s:
        assert s.get(Export, stale_id).status == "failed" and "time limit" in s.get(Export, stale_id).error
        assert s.get(Export, fresh_id).status == "running"


def test_calibration_is_a_visible_stage_of_the_first_job(app, client, zoo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import simulator.calibration as calibration
    from store.db import session_scope
    from store.models import Job
    from worker import jobs, lease

    svc, _, job_id = _job(app, client, zoo)
    token = jobs.claim(svc, job_id)
    assert token is not None
    seen: list[tuple[str, list]] = []  # type: ignore[type-arg]

    def fake_calibrate(path, *a, **k):  # type: ignore[no-untyped-def]
        with session_scope(svc.sessions) as s:
            job = s.get(Job, job_id)
            seen.append((job.stage, [dict(st) for st in job.stages]))

    monkeypatch.setattr(calibration, "is_cached", lambda path: False)
    monkeypatch.setattr(calibration, "load_or_calibrate", fake_calibrate)
    beat = lease.Heartbeat(svc, job_id, token)
    opts = jobs.pipeline.AnalysisOptions(targets=("ort-cpu/host",), calibration_path=svc.settings.calibration_path)
    jobs._calibrate_if_needed(svc, opts, jobs._Progress(svc, job_id, token, beat))
    stage, stages = seen[0]
    assert stage == "calibrate" and stages[0]["name"] == "calibrate" and stages[0]["status"] == "running"
    assert "Calibrating this machine, once" in stages[0]["note"]
    with session_scope(svc.sessions) as s:
        done = s.get(Job, job_id).stages[0]
        assert done["status"] == "done" and done["seconds"] is not None and done["seconds"] >= 0  # the wait is shown
