"""The hostile corpus against a real embedded server: every file or request ends in a clean JSON 4xx or a job
that is ready or failed with a reason, nothing runs that should not, and the server's peak RSS (web and
worker in one process) stays under 1 GB."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import LiveServer, start_server
from tests.faults import hostile
from tests.faults.conftest import FAST_LEASE, RSS_LIMIT_BYTES, ended_well, figure, peak_rss, temp_folders, wait_done

pytestmark = pytest.mark.slow
GiB = 1024**3


def _clean_4xx(r: requests.Response) -> dict[str, Any]:
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) == {"error", "code"} and "/tmp" not in body["error"] and "Traceback" not in body["error"]
    return body


def _upload(server: LiveServer, path: Path, name: str | None = None) -> requests.Response:
    with open(path, "rb") as f:
        return server.http.post(f"{server.url}/api/models", files={"file": (name or path.name, f)}, timeout=300)


@pytest.fixture
def server(tmp_path: Path, calibration_dir: Path):  # type: ignore[no-untyped-def]
    s = start_server(tmp_path / "data", {**FAST_LEASE, "EDGESCOPE_CALIBRATION_DIR": str(calibration_dir)})
    try:
        yield s
    finally:
        s.proc.terminate()
        s.proc.wait(20)


def test_hostile_corpus(server: LiveServer, tmp_path: Path, zoo) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "pwned"
    package = zoo.path("coreml_cnn_mlpackage_zip")
    pt2 = zoo.path("pt2_net_with_sources")
    files = {
        # 1800 MiB of weights at ratio ~80, inside the limits (512 MiB upload x 4): read as a stream.
        "bomb-within-limits.mlpackage.zip": lambda: hostile.mlpackage_with_big_weights(
            package, tmp_path / "a.mlpackage.zip", 1800 * hostile.MiB, 0.003),
        # Beyond: 2.5 GiB unpacked at ratio ~80, and 1 GiB of zeros (ratio ~1000).
        "bomb-total.mlpackage.zip": lambda: hostile.mlpackage_with_big_weights(
            package, tmp_path / "b.mlpackage.zip", int(2.5 * GiB), 0.003),
        "bomb-ratio.mlpackage.zip": lambda: hostile.mlpackage_with_big_weights(
            package, tmp_path / "c.mlpackage.zip", GiB, 0),
        "nested-pickle-bomb.pt2": lambda: hostile.nested_pickle_bomb(pt2, tmp_path / "d.pt2"),
        "pickle-decoy.pt2": lambda: hostile.pickle_decoy(pt2, tmp_path / "e.pt2", marker),
        "many-entries.mlpackage.zip": lambda: hostile.many_entries(tmp_path / "f.mlpackage.zip"),
        "traversal.mlpackage.zip": lambda: hostile.traversal(tmp_path / "g.mlpackage.zip"),
    }
    outcomes: dict[str, str] = {}
    errors: dict[str, str] = {}
    # Each file is built and uploaded, and the requests below are sent, while the server works on the jobs
    # before (its embedded worker runs them one at a time, in order); then every job is awaited.
    jobs: dict[str, tuple[str, float]] = {}
    for label, build in files.items():
        r = _upload(server, build(), label)
        if r.status_code != 201:
            outcomes[label] = f"{r.status_code} {_clean_4xx(r)['code']}"
        else:
            jobs[label] = r.json()["id"], time.monotonic()

    # Requests: long names, deep JSON, big JSON, an upload declared over the limit.
    r = _upload(server, zoo.path("tiny_cnn"), "n" * 400 + ".onnx")
    assert r.status_code == 201
    long_name = r.json()["id"]
    deep = "[" * 100_000 + "]" * 100_000
    for path in ("/api/auth/login", "/api/tokens", "/api/groups"):
        r = server.http.post(server.url + path, data=deep, headers={"Content-Type": "application/json"}, timeout=60)
        outcomes[f"100,000-deep JSON to {path}"] = f"{r.status_code} {_clean_4xx(r)['code']}"
    r = server.http.post(server.url + "/api/tokens", data=json.dumps({"name": "x" * (5 * 2**20)}),
                         headers={"Content-Type": "application/json"}, timeout=60)
    outcomes["5 MiB JSON body"] = f"{r.status_code} {_clean_4xx(r)['code']}"
    assert r.status_code == 413
    outcomes["upload declared at 100 GB"] = _declared_oversize(server)

    for label, (model_id, uploaded_at) in jobs.items():
        m, _ = wait_done(server, model_id, 300)
        ended_well(m)
        errors[label] = m["error"] or ""
        outcomes[label] = (f"{m['status']} {time.monotonic() - uploaded_at:.0f} s after its upload"
                           + (f": {m['error'][:90]}" if m["error"] else ""))
    figure("hostile files: " + "; ".join(f"{k} -> {outcomes[k]}" for k in files))
    assert outcomes["pickle-decoy.pt2"].startswith("failed") and "posix.system" in errors["pickle-decoy.pt2"]
    assert not marker.exists()
    assert outcomes["bomb-ratio.mlpackage.zip"].startswith("failed")
    assert outcomes["bomb-total.mlpackage.zip"].startswith("failed")
    assert outcomes["nested-pickle-bomb.pt2"].startswith("failed")
    assert wait_done(server, long_name, 300)[0]["status"] == "ready"
    outcomes["400-character file name"] = "201, ready"

    rss = peak_rss(server.proc.pid)
    figure("hostile requests: " + "; ".join(f"{k} -> {v}" for k, v in outcomes.items() if k not in files))
    figure(f"hostile corpus: web+worker process peak RSS {rss / 2**20:.0f} MiB")
    assert rss < RSS_LIMIT_BYTES
    # A job's folder goes when its job ends, just after its status is stored: give that removal a moment.
    for _ in range(50):
        if not temp_folders(server.data_dir):
            break
        time.sleep(0.2)
    assert not temp_folders(server.data_dir)


def _declared_oversize(server: LiveServer) -> str:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /api/models HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                     b"Content-Length: 100000000000\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413") and json.loads(body)["code"] == "too_large"
    return "413 too_large (JSON)"
