"""What tests and benchmarks run as a user does: `edgescope serve` in a child process on a free port, signed in
with an API token (benchmarks/pipeline.py times uploads through it; tests/conftest.py's `live_server` is one)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
# Profiling in tests: the minimum the product allows (20 runs), little warm-up, no pause before a noisy round is
# timed again (it is timed again all the same: on two busy cores a tiny model's round is often noisy, and the
# product's 1 s pause per extra round added up over the suite's hundreds of profiles).
# Fewer profiling runs, and no export dry run (tests/compiler/test_onnx_prepare.py and
# tests/simulator/test_export_options.py test it; test_pipeline_e2e.py runs it through the worker).
# No rounds of the fast CPU time (~1.5 s of each ORT 1-thread profile): no test of a server or of the settings below
# reads it; tests/server/test_summary_latency.py profiles with the product's rounds and checks the figure.
FAST_PROFILE = {"EDGESCOPE_PROFILE_RUNS": "20", "EDGESCOPE_PROFILE_WARMUP": "2", "EDGESCOPE_EXPORT_CHECK": "0",
                "EDGESCOPE_PROFILE_REMEASURE_PAUSE_MS": "0", "EDGESCOPE_PROFILE_FAST_ROUNDS": "0"}
# The same two for the profiles and analyses tests make in-process (ProfileSettings / AnalysisOptions keywords),
# where no test reads the fast CPU time or the pause.
QUICK_ROUNDS: dict[str, Any] = {"remeasure_pause_s": 0.0, "fast_rounds": 0}


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
            requests.get(url, timeout=10)
            return
        except (requests.ConnectionError, requests.Timeout):  # not listening yet, or still starting up (busy host)
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout_s} s")


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
            time.sleep(0.1)
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
