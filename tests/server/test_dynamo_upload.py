"""A model exported by torch's dynamo exporter with its default external data file, uploaded as people bring it:
through the API with both files, and by `edgescope upload` (which sends both), analysed to the end on the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest

from tests.cli.test_cli import _cli
from tests.external_data_models import dynamo_with_data


def test_a_dynamo_export_with_its_data_file_is_analysed(live_server: Any, calibration_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    model, data = dynamo_with_data(tmp_path / "export")
    with open(model, "rb") as f, open(data, "rb") as g:
        r = live_server.http.post(f"{live_server.url}/api/models", timeout=60, data={"targets": '["ort-cpu/host"]'},
                                  files=[("file", (model.name, f)), ("data", (data.name, g))])
    assert r.status_code == 201, r.text
    m = live_server.wait(r.json()["id"])
    assert m["status"] == "ready", m["error"]
    stored = live_server.get(f"/api/models/{m['id']}/download").content
    assert len(stored) == m["size_bytes"] > data.stat().st_size
    assert not [t for t in onnx.load_from_string(stored).graph.initializer if t.external_data]
    ops = live_server.get(f"/api/models/{m['id']}/ops", params={"target": "ort-cpu/host"}).json()["ops"]
    conv = [o for o in ops if "Conv" in o["type"]]
    assert len(conv) == 2 and {o["macs"] for o in conv} == {3 * 32 * 9 * 32 * 32, 32 * 64 * 9 * 32 * 32}

    # The CLI sends the model and its data file; the server merges them into the same file.
    token = live_server.http.headers["Authorization"].removeprefix("Bearer ")
    monkeypatch.setenv("EDGESCOPE_TOKEN", token)
    p = _cli("upload", str(model), "--server", live_server.url, "--target", "ort-cpu/host", "--wait",
             calibration_dir=calibration_dir, cwd=tmp_path / "cli")
    assert p.returncode == 0 and "ready" in p.stderr, p.stderr
    mid = p.stdout.strip().rsplit("/", 1)[1]
    assert live_server.get(f"/api/models/{mid}/download").content == stored
    data.unlink()  # without it the server names the file to send
    p = _cli("upload", str(model), "--server", live_server.url, calibration_dir=calibration_dir,
             cwd=tmp_path / "cli")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "(400)" in p.stderr and "'small_cnn.onnx.data'" in p.stderr
