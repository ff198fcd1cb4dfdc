"""Settings, read once from the environment (`EDGESCOPE_*`) with embedded defaults.

With nothing set, everything lives under one data directory: SQLite, blobs on disk and a
file-based Celery broker consumed by a worker thread inside the web process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

PREFIX = "EDGESCOPE_"


@dataclass(frozen=True)
class Settings:
    # Everything of the embedded default lives here.
    data_dir: Path = Path("instance")
    # SQLAlchemy URL; default sqlite:///<data_dir>/edgescope.db
    database_url: str = ""
    # file:///path or s3://bucket/prefix; default file://<data_dir>/blobs
    blob_url: str = ""
    # Endpoint of an S3-compatible server (MinIO, moto); empty = AWS.
    s3_endpoint_url: str = ""
    # redis://... for separate workers; empty = embedded worker on a file broker.
    broker_url: str = ""
    # Celery queue the web process sends to and workers consume.
    queue: str = "edgescope"
    max_upload_bytes: int = 512 * 1024 * 1024
    # Targets analysed when an upload names none; empty = the simulator's default set per format.
    default_targets: tuple[str, ...] = ()
    profile_runs: int = 30
    profile_warmup: int = 5
    profile_threads: int = 1
    profile_timeout_s: int = 600
    profile_memory_bytes: int = 8 * 1024**3
    # The pause before a noisy or drifted profile round is timed again (compiler.profile.measure_rounds).
    profile_remeasure_pause_ms: int = 1000
    # Rounds of the model's fast CPU time each ORT 1-thread profile takes (compiler.profile.FAST_ROUNDS, ~1.5 s a
    # profile; 0: not timed, and the views read the profile's own CPU time). The test suite sets 0 except where a
    # test reads that figure.
    profile_fast_rounds: int = 6
    # Dry-run the ONNX exporter during each ONNX analysis, so presets it cannot write for this file are marked
    # (a sandboxed child beside profiling, ~1-2 s on small models). The test suite turns it off except where
    # it tests it.
    export_check: bool = True
    # Wall-clock limit of one analysis job in a worker.
    job_time_limit_s: int = 3600
    # A worker holds a lease on the job it runs and renews it every third of this; a job whose lease
    # expired (its worker died) is re-queued by the reconciler, or failed after job_max_attempts tries.
    job_lease_s: int = 30
    job_max_attempts: int = 3
    # How often the reconciler looks for expired leases, jobs missing from the broker and stale temp folders.
    reconcile_interval_s: int = 10
    # A queued job that no broker message holds for this long is sent again (broker restarted, message lost).
    requeue_after_s: int = 30
    # One folder per job or upload lives here; crashed ones are removed at start-up and after temp_max_age_s.
    temp_dir: Path | None = None
    temp_max_age_s: int = 6 * 3600
    # JSON request bodies larger than this get 413.
    max_json_bytes: int = 1024 * 1024
    # Per-user upload quota per hour (a window that opens with the user's first upload in it): uploads
    # received and their bytes; 0 = no quota.
    upload_quota_count_per_hour: int = 100
    upload_quota_bytes_per_hour: int = 16 * 1024**3
    # Interpreter of the litert-torch venv that converts .pt2 to .tflite (LiteRT targets);
    # empty = <checkout>/.venv-litert-torch/bin/python when it exists (compiler.backends.pt2_tflite).
    litert_torch_python: str = ""
    # Converted .pt2 files kept by content (compiler/conversion_cache.py); default <data_dir>/cache/conversions,
    # "off" keeps none. At most conversion_cache_mb of them (least recently used go first).
    conversion_cache_dir: str = ""
    conversion_cache_mb: int = 2048
    # Host calibration cache (measured kernel efficiencies); default <data_dir>/calibration.
    calibration_dir: Path | None = None
    # Anyone may create an account from the sign-in page; when off, admins use `edgescope users create`.
    allow_signup: bool = True
    # Mark session cookies Secure (set it when the server is reached over HTTPS).
    secure_cookies: bool = False
    secret_key: str = ""
    public_url: str = ""  # base of shareable URLs; empty = the request's host

    @property
    def calibration_path(self) -> Path:
        return (self.calibration_dir or self.data_dir / "calibration") / "host-cpu.json"

    @property
    def temp_root(self) -> Path:
        return Path(self.temp_dir or self.data_dir / "tmp")

    @property
    def conversion_cache_root(self) -> Path | None:
        if self.conversion_cache_dir == "off":
            return None
        return Path(self.conversion_cache_dir or self.data_dir / "cache" / "conversions")

    @property
    def embedded_worker(self) -> bool:
        return not self.broker_url

    def resolved(self) -> Settings:
        """Fill URLs that default to places under data_dir."""
        data_dir = Path(self.data_dir).expanduser().resolve()
        return replace(
            self,
            data_dir=data_dir,
            database_url=self.database_url or f"sqlite:///{data_dir / 'edgescope.db'}",
            blob_url=self.blob_url or f"file://{data_dir / 'blobs'}",
            calibration_dir=Path(self.calibration_dir or data_dir / "calibration").expanduser().resolve(),
            temp_dir=Path(self.temp_dir or data_dir / "tmp").expanduser().resolve(),
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(PREFIX + f.name.upper())
            if raw is None:
                continue
            values[f.name] = _parse(f.name, raw, f.type)
        values.update(overrides)
        return cls(**values).resolved()


def _parse(name: str, raw: str, type_: Any) -> Any:
    t = str(type_)
    try:
        if t == "int":  # every int setting is a count, a size or a duration: none below 0
            if (n := int(raw)) < 0:
                raise ValueError(raw)
            return n
        if t == "bool":
            if raw.strip().lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ValueError(raw)
            return raw.strip().lower() in ("1", "true", "yes", "on")
        if t in ("Path", "Path | None"):
            return Path(raw)
        if t.startswith("tuple"):
            return tuple(s.strip() for s in raw.split(",") if s.strip())
    except ValueError:
        raise SystemExit(f"{PREFIX}{name.upper()}={raw!r} is not a valid {t}") from None
    return raw
