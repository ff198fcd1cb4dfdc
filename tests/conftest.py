"""Shared fixtures: fresh settings per test, real PostgreSQL/Redis/S3 endpoints, a live server.

PostgreSQL (127.0.0.1:5432, database `test`) and Redis (127.0.0.1:6379) are started by this
machine kind before every session and CI run; tests that need them fail loudly if they are down.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from edgescope.config import Settings

ROOT = Path(__file__).resolve().parent.parent
POSTGRES_ADMIN_URL = os.environ.get("EDGESCOPE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("EDGESCOPE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# Profiling in tests: the minimum the product allows (20 runs), little warm-up.
FAST_PROFILE = {"EDGESCOPE_PROFILE_RUNS": "20", "EDGESCOPE_PROFILE_WARMUP": "2"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout_s: float = 60, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            requests.get(url, timeout=2)
            return
        except requests.ConnectionError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout_s} s")


@pytest.fixture(scope="session")
def calibration_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One host calibration for the whole run: it measures kernels and takes seconds (minutes on a busy
    machine). EDGESCOPE_TEST_CALIBRATION_SEED names a cache to start from (used as is if it is current)."""
    folder = tmp_path_factory.mktemp("calibration")
    seed = os.environ.get("EDGESCOPE_TEST_CALIBRATION_SEED")
    if seed and Path(seed).is_file():
        shutil.copyfile(seed, folder / "host-cpu.json")
    return folder


@pytest.fixture
def settings(tmp_path: Path, calibration_dir: Path) -> Settings:
    return Settings.from_env(env=FAST_PROFILE, data_dir=tmp_path / "data", calibration_dir=calibration_dir)


@pytest.fixture
def app(settings: Settings):  # type: ignore[no-untyped-def]
    from server.app import create_app
    from store.db import upgrade

    upgrade(settings.database_url)
    return create_app(settings)


def sign_up(client, email: str, password: str = "correct horse battery") -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Create an account through the API; the test client keeps its session cookie."""
    r = client.post("/api/auth/signup", json={"email": email, "password": password, "name": email.split("@")[0]})
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def token_client(app, email: str):  # type: ignore[no-untyped-def]
    """A test client that authenticates every request with a fresh personal API token."""
    c = app.test_client()
    csrf = sign_up(c, email)["csrf_token"]
    token = c.post("/api/tokens", json={"name": "tests"}, headers={"X-CSRF-Token": csrf}).get_json()["token"]
    c.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return c


@pytest.fixture
def client(app):  # type: ignore[no-untyped-def]
    """Signed in as alice@example.com (API token)."""
    return token_client(app, "alice@example.com")


# Model builders whose files are not ONNX, by a part of the builder's name.
ZOO_EXTENSIONS = {"tflite_": ".tflite", "pt2_": ".pt2", "_mlmodel": ".mlmodel", "mlpackage_zip": ".mlpackage.zip"}


@pytest.fixture(scope="session")
def zoo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Model files built once per run: zoo.path("tiny_cnn") -> Path."""
    from tests import modelzoo

    root = tmp_path_factory.mktemp("zoo")

    class Zoo:
        def path(self, builder: str, **kwargs: Any) -> Path:
            suffix = "-".join(f"{k}{v}" for k, v in sorted(kwargs.items()))
            ext = next((e for key, e in ZOO_EXTENSIONS.items() if key in builder), ".onnx")
            p = root / f"{builder}{'-' + suffix if suffix else ''}{ext}"
            if not p.exists():
                getattr(modelzoo, builder)(p, **kwargs)
            return p

    return Zoo()


# --- PostgreSQL ---------------------------------------------------------------------------------
@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on the local server, dropped afterwards."""
    with fresh_postgres_db() as url:
        yield url


@contextlib.contextmanager
def fresh_postgres_db() -> Iterator[str]:
    from sqlalchemy import create_engine, text

    name = f"edgescope_test_{secrets.token_hex(4)}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# --- S3 (moto's standalone server over HTTP) --------------------------------------------------
@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url, 60, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    import boto3

    for k, v in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    name = f"edgescope-{secrets.token_hex(4)}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return name


# --- A live server, as a user runs it -----------------------------------------------------------
@dataclass
class LiveServer:
    url: str
    data_dir: Path
    proc: subprocess.Popen
    http: requests.Session  # signed in as owner@example.com with an API token

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.http.get(self.url + path, timeout=30, **kw)

    def upload(self, path: Path, wait: bool = True, timeout_s: float = 300, **fields: Any) -> dict[str, Any]:
        data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()}
        with open(path, "rb") as f:
            r = self.http.post(f"{self.url}/api/models", files={"file": (path.name, f)}, data=data, timeout=60)
        r.raise_for_status()
        model = r.json()
        return self.wait(model["id"], timeout_s) if wait else model

    def wait(self, model_id: str, timeout_s: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            m = self.get(f"/api/models/{model_id}").json()
            if m["status"] in ("ready", "failed"):
                return m
            time.sleep(0.3)
        raise TimeoutError(f"model {model_id} not done after {timeout_s} s")


def start_server(data_dir: Path, env: dict[str, str] | None = None) -> LiveServer:
    port = free_port()
    full_env = {**os.environ, **FAST_PROFILE, "EDGESCOPE_DATA_DIR": str(data_dir), **(env or {})}
    log = open(data_dir.parent / f"server-{port}.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "edgescope", "serve", "--port", str(port)],
                            env=full_env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/api/openapi.json", 120, proc)
    http = requests.Session()
    sign = http.post(f"{url}/api/auth/signup", timeout=30,
                     json={"email": "owner@example.com", "password": "owner password 1"}).json()
    r = http.post(f"{url}/api/tokens", json={"name": "tests"}, headers={"X-CSRF-Token": sign["csrf_token"]},
                  timeout=30)
    http.cookies.clear()
    http.headers["Authorization"] = f"Bearer {r.json()['token']}"
    return LiveServer(url=url, data_dir=data_dir, proc=proc, http=http)


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory, calibration_dir: Path) -> Iterator[LiveServer]:
    """`edgescope serve` on the embedded default (SQLite, local blobs, in-process worker)."""
    root = tmp_path_factory.mktemp("live")
    server = start_server(root / "data", {"EDGESCOPE_CALIBRATION_DIR": str(calibration_dir)})
    try:
        yield server
    finally:
        server.proc.terminate()
        server.proc.wait(20)
