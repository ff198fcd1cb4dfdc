"""The fault-injection suite's machinery: real servers and workers as separate processes, a private
redis-server that can be restarted, process trees to kill, and the checks every fault test ends with.

Short leases keep it quick: a job whose worker died is re-queued about FAST_LEASE["EDGESCOPE_JOB_LEASE_S"]
+ EDGESCOPE_RECONCILE_INTERVAL_S seconds after its last heartbeat. Figures (recovery times, peak RSS) are
printed with a `FIGURE` prefix; run with `-s` to see them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import FAST_PROFILE, ROOT, LiveServer, free_port, start_server

FAST_LEASE = {"EDGESCOPE_JOB_LEASE_S": "3", "EDGESCOPE_RECONCILE_INTERVAL_S": "1", "EDGESCOPE_REQUEUE_AFTER_S": "3",
              "EDGESCOPE_TEMP_MAX_AGE_S": "3600"}
RSS_LIMIT_BYTES = 1024**3


def figure(text: str) -> None:
    print(f"\nFIGURE {text}", flush=True)


# --- processes ------------------------------------------------------------------------------------------------

def children(pid: int) -> list[int]:
    """Every descendant of pid (any depth)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = subprocess.run(["pgrep", "-P", str(p)], capture_output=True, text=True).stdout.split()
        for k in map(int, kids):
            out.append(k)
            todo.append(k)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def peak_rss(pid: int) -> int:
    """VmHWM: the most resident memory the process ever had, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def sandbox_children(pid: int) -> list[int]:
    return [c for c in children(pid) if "compiler.sandbox_child" in cmdline(c)]


def profiling_children(pid: int) -> list[int]:
    """The sandboxed children that profile (not the ONNX export check, which runs beside profiling)."""
    return [c for c in sandbox_children(pid) if "dry_run_child" not in cmdline(c)]


def wait_for(what: str, predicate: Any, timeout_s: float, every_s: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise TimeoutError(f"{what} not within {timeout_s} s")


def no_orphans(pids: list[int], timeout_s: float = 15) -> None:
    wait_for(f"processes {pids} to end", lambda: not any(alive(p) for p in pids), timeout_s)


def temp_folders(data_dir: Path) -> list[str]:
    root = data_dir / "tmp"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


# --- a private Redis ------------------------------------------------------------------------------------------

@dataclass
class PrivateRedis:
    port: int
    folder: Path
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        # No persistence: a restart loses every message, as a Redis without AOF/RDB does.
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        wait_for("redis", lambda: _ping(redis.Redis(port=self.port)), 20)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _ping(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001
        return False


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (Debian: apt-get install redis-server)")
    r = PrivateRedis(free_port(), tmp_path)
    r.start()
    try:
        yield r
    finally:
        r.stop()


# --- the scaled setup: PostgreSQL + Redis + web + separate workers ---------------------------------------------

@dataclass
class Scaled:
    env: dict[str, str]
    data_root: Path
    web: LiveServer
    workers: list[subprocess.Popen] = field(default_factory=list)

    def start_worker(self, name: str, extra: dict[str, str] | None = None) -> subprocess.Popen:
        """Workers on one machine share its data folder (and so its temp folder): a restarted or second
        worker sweeps what a killed one left. `extra`: this worker's own settings."""
        data = self.worker_data()
        data.mkdir(parents=True, exist_ok=True)
        log = open(self.data_root / f"{name}.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "edgescope", "worker", "--concurrency", "1",
                                 "--loglevel", "WARNING"],
                                env={**self.env, "EDGESCOPE_DATA_DIR": str(data), **(extra or {})}, stdout=log,
                                stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        self.workers.append(proc)
        return proc

    def worker_data(self) -> Path:
        return self.data_root / "workers"

    def stop_workers(self) -> None:
        """Kill every worker with its whole process group (pool and sandboxed children too)."""
        for p in self.workers:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(20)
        self.workers.clear()

    def stop(self) -> None:
        self.stop_workers()
        if self.web is not None and self.web.proc.poll() is None:
            self.web.proc.kill()
            self.web.proc.wait(20)


def start_scaled(tmp_path: Path, postgres_url: str, redis_url: str, calibration_dir: Path,
                 extra: dict[str, str] | None = None, workers: tuple[str, ...] = (),
                 upgrade: bool = True) -> Scaled:
    """`workers` start before the web server, so that their start-up (seconds of imports) overlaps its own;
    `upgrade=False` for a database already at the schema's head."""
    env = {**os.environ, **FAST_PROFILE, **FAST_LEASE, "EDGESCOPE_DATABASE_URL": postgres_url,
           "EDGESCOPE_BROKER_URL": redis_url, "EDGESCOPE_BLOB_URL": f"file://{tmp_path / 'blobs'}",
           "EDGESCOPE_CALIBRATION_DIR": str(calibration_dir), "EDGESCOPE_QUEUE": "faults", **(extra or {})}
    if upgrade:
        subprocess.run([sys.executable, "-m", "edgescope", "db", "upgrade"], env=env, check=True, cwd=ROOT,
                       capture_output=True)
    scaled = Scaled(env=env, data_root=tmp_path, web=None)  # type: ignore[arg-type]
    try:
        for name in workers:
            scaled.start_worker(name)
        (tmp_path / "web").mkdir()
        scaled.web = start_server(tmp_path / "web" / "data",
                                  {k: v for k, v in env.items() if k.startswith("EDGESCOPE_")})
    except BaseException:
        scaled.stop()
        raise
    return scaled


def job_row(server: LiveServer, model_id: str) -> dict[str, Any]:
    return server.get(f"/api/models/{model_id}").json()


def wait_stage(server: LiveServer, model_id: str, stage: str, timeout_s: float = 240) -> dict[str, Any]:
    return wait_for(f"stage {stage}", lambda: (m := job_row(server, model_id))["stage"] == stage
                    and m["status"] == "running" and m, timeout_s, every_s=0.05)


def wait_done(server: LiveServer, model_id: str, timeout_s: float) -> tuple[dict[str, Any], float]:
    t0 = time.monotonic()
    m = wait_for("ready or failed", lambda: (m := job_row(server, model_id))["status"] in ("ready", "failed") and m,
                 timeout_s, every_s=0.2)
    return m, time.monotonic() - t0


def ended_well(m: dict[str, Any]) -> None:
    """Ready, or failed with a sentence for the user (no internal path or stack text)."""
    assert m["status"] in ("ready", "failed"), m
    if m["status"] == "failed":
        err = m["error"] or ""
        assert len(err) > 20 and "Traceback" not in err and "/tmp/" not in err and ".cc:" not in err, err


def post_json(url: str, path: str, body: Any, **kw: Any) -> requests.Response:
    return requests.post(url + path, json=body, timeout=60, **kw)
