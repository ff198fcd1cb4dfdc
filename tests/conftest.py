"""Shared fixtures: fresh settings per test, real PostgreSQL/Redis/S3 endpoints, a live server.

PostgreSQL (127.0.0.1:5432, database `test`) and Redis (127.0.0.1:6379) are started by this
machine kind before every session and CI run; tests that need them fail loudly if they are down.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgescope.config import Settings
# Tests import these from here too.
from testkit.live import FAST_PROFILE, ROOT, LiveServer, free_port, start_server, wait_http  # noqa: F401

POSTGRES_ADMIN_URL = os.environ.get("EDGESCOPE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
# pytest-xdist runs the suite in parallel workers (gw0, gw1, ...; `make test` asks for one per CPU).
XDIST_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)


def _worker_redis_url(url: str) -> str:
    """Each worker its own Redis database: two workers' Celery apps on one queue would take each other's tasks."""
    base, _, db = url.rpartition("/")
    return f"{base}/{(int(db) - XDIST_WORKER) % 16}" if db.isdigit() else url


REDIS_URL = _worker_redis_url(os.environ.get("EDGESCOPE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15"))
# Each worker its own timing lock (compiler.timing_lock): the suite's workers time side by side as they always did
# (no test checks a figure that another worker's timing would move beyond its tolerance), instead of queueing every
# profile behind the other worker's; tests/compiler/test_timing_lock.py checks the host-wide lock between processes.
os.environ.setdefault("EDGESCOPE_TIMING_LOCK", f"/tmp/edgescope-test-timing-{os.getuid()}-gw{XDIST_WORKER}.lock")


# Calibration's own sources: a cached calibration made by other code is not reused (the cache's version, ORT
# version and CPU are checked too, by the loaders).
_CALIBRATION_SOURCES = ("simulator/calibration.py", "simulator/calibration_bench.py", "simulator/calibration_fit.py",
                        "simulator/host_machine.py", "simulator/calibration_models.py", "simulator/calibration_video.py",
                        "simulator/calibration_int8dyn.py", "simulator/calibration_index.py",
                        "simulator/calibration_timing.py", "simulator/litert_calibration.py",
                        "simulator/litert_cases.py", "simulator/litert_lut.py", "simulator/litert_signal.py",
                        "simulator/litert_control.py", "simulator/litert_layout.py",
                        "simulator/hardware/host-cpu.yaml")


def _machine_cache() -> Path:
    """Where a run keeps this machine's calibration for the next runs: ~/.cache/edgescope/test-calibration/<hash of
    calibration's sources>/ (EDGESCOPE_TEST_CALIBRATION_CACHE overrides; "off" calibrates every run)."""
    import hashlib

    digest = hashlib.sha256()
    for rel in _CALIBRATION_SOURCES:
        digest.update((ROOT / rel).read_bytes())
    base = os.environ.get("EDGESCOPE_TEST_CALIBRATION_CACHE") or str(Path.home() / ".cache" / "edgescope"
                                                                      / "test-calibration")
    return Path(base) / digest.hexdigest()[:16]


def _copy_in(src: Path, dst: Path) -> None:
    if src.is_file() and not dst.exists():
        part = dst.with_name(f"{dst.name}.{XDIST_WORKER}.{os.getpid()}")
        shutil.copyfile(src, part)
        part.replace(dst)  # atomic: another worker never reads half a file


def _workers_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder every pytest-xdist worker sees (each worker's own is inside it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if "PYTEST_XDIST_WORKER" in os.environ else root


def _calibration_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = _workers_folder(tmp_path_factory) / "calibration"
    folder.mkdir(exist_ok=True)
    return folder


def _needs_calibration(item: pytest.Item) -> bool:
    """The test uses this machine's calibration: through its fixtures, or through the live server the browser tests
    ask for at run time (tests/browser/conftest.py `ui_server`)."""
    return "calibration_dir" in getattr(item, "fixturenames", ()) or "tests/browser/" in item.nodeid


_CALIBRATION_STASH = pytest.StashKey[bool]()  # some collected test needs the calibration


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules whose tests need the calibration run after all others (each module's tests stay together and in
    order, so module-scoped fixtures are made once): when no calibration is cached, `calibration_started` makes it in
    a child process on the second core while the tests that need none run (on 2 cores: ~190 s of a run hidden).
    Within each group the files with a `slow` test come first: `make test`'s two xdist workers take whole files in
    this order (`--no-loadscope-reorder`), so a long file started last cannot leave one core idle at the end."""
    needs = {item.nodeid.split("::")[0] for item in items if _needs_calibration(item)}  # by test file
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    config.stash[_CALIBRATION_STASH] = bool(needs)
    # stable: each group keeps its order
    items.sort(key=lambda item: (item.nodeid.split("::")[0] in needs, item.nodeid.split("::")[0] not in slow))


_CALIBRATING: dict[str, subprocess.Popen[bytes]] = {}
_CALIBRATE = ("import sys; from simulator.calibration import load_or_calibrate; "
              "from simulator.litert_calibration import with_litert; "
              "with_litert(load_or_calibrate(sys.argv[1]), sys.argv[1])")


@pytest.fixture(scope="session", autouse=True)
def calibration_started(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """At the run's first test: this machine's host calibration (ONNX Runtime's, and LiteRT's beside it) starts
    from EDGESCOPE_TEST_CALIBRATION_SEED (a cache from `edgescope calibrate --out FILE`, with its LiteRT cache beside
    it: `cache_path`) or from the machine's test cache (`_machine_cache`), each used only if current (same
    calibration version, ORT/LiteRT version and CPU). If neither is and some test needs it, the calibration is made
    in a child process (`edgescope calibrate`'s code, its own thread CPU time on the second core) while the tests that
    need none run first; `calibration_dir` waits for it. Nothing is started for a run that needs no calibration."""
    from simulator.calibration import is_cached
    from simulator.litert_calibration import cache_path, is_cached as litert_cached

    folder = _calibration_folder(tmp_path_factory)
    host = folder / "host-cpu.json"
    machine_cache = _machine_cache() if os.environ.get("EDGESCOPE_TEST_CALIBRATION_CACHE") != "off" else None
    for start in (os.environ.get("EDGESCOPE_TEST_CALIBRATION_SEED"), machine_cache and machine_cache / "host-cpu.json"):
        if start and is_cached(start):  # the first current one
            _copy_in(Path(start), host)
            _copy_in(cache_path(start), cache_path(host))
            break
    if not request.config.stash.get(_CALIBRATION_STASH, False) or (is_cached(host) and litert_cached(host)):
        yield
        return
    with open(folder / f"calibrate.{XDIST_WORKER}.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", _CALIBRATE, str(host)], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    _CALIBRATING["proc"] = proc
    try:
        yield
    finally:
        if proc.poll() is None:  # the run ended (or was interrupted) before any test needed it
            proc.terminate()
            proc.wait(30)


@pytest.fixture(scope="session")
def calibration_dir(tmp_path_factory: pytest.TempPathFactory, calibration_started: None) -> Path:
    """This machine's host calibration (see `calibration_started`), ready before any test that analyses a model:
    tests that start servers then never spend their own deadline in the worker's `calibrate` stage (4-8 min on a busy
    2-core machine). Shared by pytest-xdist workers through the loaders' file locks
    (`simulator.calibration.load_or_calibrate`). What it measured is left in the machine's test cache for the next
    runs."""
    from simulator.calibration import load_or_calibrate
    from simulator.litert_calibration import cache_path, with_litert

    folder = _calibration_folder(tmp_path_factory)
    host = folder / "host-cpu.json"
    if (proc := _CALIBRATING.pop("proc", None)) is not None and proc.wait() != 0:
        log = Path(folder / f"calibrate.{XDIST_WORKER}.log").read_text(errors="replace")
        pytest.fail(f"the host calibration failed (exit {proc.returncode}):\n{log[-4000:]}")
    with_litert(load_or_calibrate(host), host)  # a no-op when both caches are current
    machine_cache = _machine_cache() if os.environ.get("EDGESCOPE_TEST_CALIBRATION_CACHE") != "off" else None
    if machine_cache is not None:
        machine_cache.mkdir(parents=True, exist_ok=True)
        for src in (host, cache_path(host)):
            dst = machine_cache / src.name
            if src.read_bytes() != (dst.read_bytes() if dst.is_file() else b""):
                part = dst.with_name(f"{dst.name}.{os.getpid()}")
                shutil.copyfile(src, part)
                part.replace(dst)
    return folder


@pytest.fixture(scope="session", autouse=True)
def shared_conversions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One conversion cache (compiler/conversion_cache.py) for the run: in-process analyses and the servers tests
    start keep converted .pt2 files in it, so a model several tests upload is converted once per run (each
    conversion is a child that imports torch: 5-20 s). tests/compiler/test_conversion_cache.py tests the cache."""
    from compiler import conversion_cache

    folder = _workers_folder(tmp_path_factory) / "conversions"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDGESCOPE_CONVERSION_CACHE_DIR", str(folder))  # servers started as processes
        conversion_cache.configure(folder)
        yield folder
        conversion_cache.configure(None)


@pytest.fixture(scope="session", autouse=True)
def cheap_password_hashes() -> Iterator[None]:
    """Argon2id at its defaults (64 MiB, 3 passes, 4 lanes) costs ~0.2 s of CPU per sign-up and per sign-in, and
    the in-process apps of the tests sign up hundreds of accounts: here they hash with argon2id at its lightest
    cost. Servers that tests start as processes keep the defaults (tests/server/test_accounts.py checks the
    stored hash is argon2)."""
    from argon2 import PasswordHasher

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("server.api.auth.HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        yield


@pytest.fixture
def settings(tmp_path: Path, calibration_dir: Path) -> Settings:
    return Settings.from_env(env=FAST_PROFILE, data_dir=tmp_path / "data", calibration_dir=calibration_dir)


@pytest.fixture
def app(settings: Settings):  # type: ignore[no-untyped-def]
    from server.app import create_app

    migrate(settings.database_url)
    return create_app(settings)


# --- Databases migrated once per run --------------------------------------------------------------
# alembic commits the migrations' DDL step by step: ~1.8 s of fsyncs for each new SQLite file and ~2.2 s on
# PostgreSQL, for every test that makes an app. Tests start from a copy of a database migrated once per run
# (tests/store/test_migrations.py runs the migrations themselves, up and down, on both).
_TEMPLATES: dict[str, Any] = {}


@pytest.fixture(scope="session", autouse=True)
def migrated_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _TEMPLATES["dir"] = tmp_path_factory.mktemp("schema")
    yield
    if (name := _TEMPLATES.pop("postgres", None)) is not None:
        _drop_postgres_db(name)


def migrate(url: str) -> None:
    """`store.db.upgrade(url)` for a test's database; a new SQLite file starts as a copy of the migrated one."""
    from store.db import upgrade

    if url.startswith("sqlite:///") and not (path := Path(url.removeprefix("sqlite:///"))).exists():
        if "sqlite" not in _TEMPLATES:
            template = _TEMPLATES["dir"] / "edgescope.db"
            upgrade(f"sqlite:///{template}")
            assert not template.with_name("edgescope.db-wal").exists()  # all of it in the one file
            _TEMPLATES["sqlite"] = template
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_TEMPLATES["sqlite"], path)
    upgrade(url)  # at head already: alembic only checks


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
    from testkit import modelzoo

    root = tmp_path_factory.mktemp("zoo")

    class Zoo:
        def path(self, builder: str, **kwargs: Any) -> Path:
            suffix = "-".join(f"{k}{v}" for k, v in sorted(kwargs.items()))
            ext = next((e for key, e in ZOO_EXTENSIONS.items() if key in builder), ".onnx")
            p = root / f"{builder}{'-' + suffix if suffix else ''}{ext}"
            if not p.exists():
                getattr(modelzoo, builder)(p, **kwargs)
            return p

        def copy(self, builder: str, dest: Path, **kwargs: Any) -> Path:
            """The built file under the name a test uploads it as (a torch export costs seconds; a copy does not)."""
            shutil.copyfile(self.path(builder, **kwargs), dest)
            return dest

    return Zoo()


class SharedModels:
    """Model files that cost a torch export (testkit.modelzoo builders, seconds each), built once per run for all
    pytest-xdist workers: the first worker to ask builds one under a file lock, in a folder of its own renamed into
    place whole; the others wait for it. Tests only read them (a .pt2 uploaded by several tests, the same bytes,
    is also converted once: the run's conversion cache is keyed by content)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, builder: str) -> Path:
        from testkit import modelzoo

        ext = next((e for key, e in ZOO_EXTENSIONS.items() if key in builder), ".onnx")
        folder = self.root / builder
        if not folder.is_dir():
            with open(self.root / f"{builder}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not folder.is_dir():
                    part = self.root / f"{builder}.part-{os.getpid()}"
                    shutil.rmtree(part, ignore_errors=True)
                    part.mkdir()
                    getattr(modelzoo, builder)(part / f"{builder}{ext}")
                    part.rename(folder)
        return folder / f"{builder}{ext}"


@pytest.fixture(scope="session")
def shared_models(tmp_path_factory: pytest.TempPathFactory) -> SharedModels:
    root = _workers_folder(tmp_path_factory) / "shared-models"
    root.mkdir(exist_ok=True)
    return SharedModels(root)


# --- PostgreSQL ---------------------------------------------------------------------------------
@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on the local server, dropped afterwards."""
    with fresh_postgres_db() as url:
        yield url


@contextlib.contextmanager
def fresh_postgres_db(migrated: bool = False) -> Iterator[str]:
    """A new database, dropped afterwards; `migrated`: at the schema's head (a copy of the run's migrated one)."""
    if migrated and "postgres" not in _TEMPLATES:
        from store.db import upgrade

        name = _create_postgres_db()
        upgrade(_postgres_url(name))
        _TEMPLATES["postgres"] = name
    name = _create_postgres_db(_TEMPLATES["postgres"] if migrated else None)
    try:
        yield _postgres_url(name)
    finally:
        _drop_postgres_db(name)


def _postgres_url(name: str) -> str:
    return POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


def _create_postgres_db(template: str | None = None) -> str:
    from sqlalchemy import create_engine, text

    name = f"edgescope_test_{secrets.token_hex(4)}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    admin.dispose()
    return name


def _drop_postgres_db(name: str) -> None:
    from sqlalchemy import create_engine, text

    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
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
