"""Kill a separate Celery worker mid-profile (its main process, the pool child running the job, the sandboxed
profiling child, or all of it) and restart Redis with jobs queued and running: PostgreSQL + Redis + workers.

Each test asserts the job ends ready (or failed with a reason) within a stated time, that no process
outlives its worker, and that no temporary folder is left.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from tests.conftest import FAST_PROFILE, free_port, fresh_postgres_db
from tests.faults.conftest import (PrivateRedis, Scaled, alive, children, ended_well, figure, no_orphans, peak_rss,
                                   profiling_children, sandbox_children, start_scaled, temp_folders, wait_done,
                                   wait_for, wait_stage)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

# Within the minute: lease 3 s + reconcile tick 1 s + the re-run itself on a busy machine.
RECOVERY_LIMIT_S = 60
# Long enough to be killed mid-profile.
SLOW_PROFILE = {"EDGESCOPE_PROFILE_RUNS": "80"}


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory, calibration_dir: Path) -> Any:  # type: ignore[no-untyped-def]
    """The web server, its database (a copy of the run's migrated one; tests/store/test_migrations.py runs the
    migrations) and a private Redis, shared by the module's tests: each test has its own workers and models, and
    ends with no job left running (what they test is the workers, the jobs and Redis, not the web process)."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (Debian: apt-get install redis-server)")
    redis = PrivateRedis(free_port(), tmp_path_factory.mktemp("redis"))
    redis.start()
    try:
        with fresh_postgres_db(migrated=True) as postgres_url:
            s = start_scaled(tmp_path_factory.mktemp("scaled"), postgres_url, redis.url, calibration_dir,
                             SLOW_PROFILE, upgrade=False)
            s.redis = redis  # type: ignore[attr-defined]
            s.postgres_url = postgres_url  # type: ignore[attr-defined]
            try:
                yield s
            finally:
                s.stop()
    finally:
        redis.stop()


@pytest.fixture
def stack(scaled: Scaled) -> Any:  # type: ignore[no-untyped-def]
    """The shared setup with this test's worker "a" (stack.workers[0]); every worker is killed after the test."""
    scaled.start_worker("a")
    try:
        yield scaled
    finally:
        scaled.stop_workers()


def _job_worker_pid(stack: Scaled, model_id: str) -> int:
    from store.models import Job

    engine = create_engine(stack.postgres_url)  # type: ignore[attr-defined]
    with engine.connect() as c:
        worker = c.execute(select(Job.worker).where(Job.model_id == model_id, Job.status == "running")).scalar()
    engine.dispose()
    assert worker, "the running job names its worker"
    return int(worker.rsplit(":", 1)[1])


def _upload(stack: Scaled, zoo) -> str:  # type: ignore[no-untyped-def]
    return stack.web.upload(zoo.path("mobilenet_v2_like", width=1.0, resolution=160), wait=False,
                            targets=["ort-cpu/host"])["id"]


def _no_temp_left(stack: Scaled) -> None:
    wait_for("temp folders swept", lambda: not temp_folders(stack.worker_data()), 30)


@pytest.mark.parametrize("victim", ["main", "pool-child", "all"])
def test_killed_worker_job_recovers(stack: Scaled, zoo, victim: str) -> None:  # type: ignore[no-untyped-def]
    a = stack.workers[0]
    model_id = _upload(stack, zoo)
    wait_stage(stack.web, model_id, "profile")
    pool_child = _job_worker_pid(stack, model_id)
    tree = children(a.pid)
    assert pool_child in tree and sandbox_children(pool_child), "profiling runs in a sandboxed child"
    killed_at = time.monotonic()
    if victim == "main":
        os.kill(a.pid, signal.SIGKILL)
    elif victim == "pool-child":
        os.kill(pool_child, signal.SIGKILL)
    else:
        for pid in [a.pid] + tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    # A healthy worker to take the job over; it re-runs it at the tests' usual profile (only "a" has to be slow
    # enough to be killed mid-profile).
    stack.start_worker("b", FAST_PROFILE)
    m, _ = wait_done(stack.web, model_id, RECOVERY_LIMIT_S)
    recovery = time.monotonic() - killed_at
    figure(f"worker killed ({victim}) mid-profile: job {m['status']} {recovery:.1f} s after the kill, "
           f"attempts {m['attempts']}")
    assert m["status"] == "ready", m["error"]
    assert recovery < RECOVERY_LIMIT_S
    if victim != "main":  # the main process alone dying leaves its pool child to finish the job
        no_orphans(tree)
    else:
        no_orphans([p for p in tree if p != pool_child] + sandbox_children(pool_child), 30)
    _no_temp_left(stack)


def test_killed_sandbox_child_fails_the_job_with_a_reason(stack: Scaled, zoo) -> None:  # type: ignore[no-untyped-def]
    model_id = _upload(stack, zoo)
    wait_stage(stack.web, model_id, "profile")
    pool_child = _job_worker_pid(stack, model_id)
    kids = wait_for("profiling child", lambda: profiling_children(pool_child), 30)
    os.kill(kids[0], signal.SIGKILL)
    m, seconds = wait_done(stack.web, model_id, 60)
    figure(f"sandboxed profiling child killed: job {m['status']} in {seconds:.1f} s: {m['error']}")
    ended_well(m)
    assert m["status"] == "failed" and "signal 9" in m["error"]
    assert alive(pool_child)  # the worker carries on
    _no_temp_left(stack)
    assert peak_rss(pool_child) < 1024**3


def test_redis_restart_loses_no_job(stack: Scaled, zoo) -> None:  # type: ignore[no-untyped-def]
    first = _upload(stack, zoo)
    # Queued behind the running job (concurrency 1): a small model is enough, only the first has to be
    # mid-profile when Redis goes.
    queued = [stack.web.upload(Path(zoo.path("tiny_cnn")), wait=False, targets=["ort-cpu/host"])["id"]
              for _ in range(2)]
    wait_stage(stack.web, first, "profile")
    assert all(stack.web.get(f"/api/models/{m}").json()["status"] == "queued" for m in queued)
    redis = stack.redis  # type: ignore[attr-defined]
    redis.stop()  # every queued message is gone with it
    time.sleep(1)
    redis.start()
    restarted = time.monotonic()
    during = stack.web.upload(Path(zoo.path("tiny_cnn")), wait=False, targets=["ort-cpu/host"])["id"]
    results = {}
    for model_id in [first] + queued + [during]:
        m, _ = wait_done(stack.web, model_id, 240)
        results[model_id] = (m["status"], time.monotonic() - restarted)
        assert m["status"] == "ready", m["error"]
    figure("Redis restarted (no persistence) with 1 job running and 2 queued, 1 uploaded right after: "
           + ", ".join(f"{st} at +{t:.0f} s" for st, t in results.values()))
    _no_temp_left(stack)
