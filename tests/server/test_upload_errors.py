"""Bad uploads get a clear 4xx and leave nothing behind; reads of unknown or unfinished models too."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from edgescope.config import Settings
from tests.conftest import migrate, token_client


def _post(client, data: bytes | None, filename: str = "m.onnx", **fields):  # type: ignore[no-untyped-def]
    form = dict(fields)
    if data is not None:
        form["file"] = (io.BytesIO(data), filename)
    return client.post("/api/models", data=form, content_type="multipart/form-data")


def _count_models(client) -> int:  # type: ignore[no-untyped-def]
    return len(client.get("/api/models").get_json()["models"])


def test_missing_file(client) -> None:  # type: ignore[no-untyped-def]
    r = _post(client, None)
    assert r.status_code == 400 and "'file'" in r.get_json()["error"]


def test_empty_file(client) -> None:  # type: ignore[no-untyped-def]
    r = _post(client, b"")
    assert r.status_code == 400 and "empty" in r.get_json()["error"]
    assert _count_models(client) == 0


def test_random_bytes_named_onnx(client) -> None:  # type: ignore[no-untyped-def]
    r = _post(client, os.urandom(5000))
    body = r.get_json()
    assert r.status_code == 415
    assert "ONNX" in body["error"] and body["code"] == "unsupported_format"
    assert _count_models(client) == 0


def test_unknown_extension_names_supported_formats(client) -> None:  # type: ignore[no-untyped-def]
    r = _post(client, b"hello world, not a model", filename="notes.txt")
    assert r.status_code == 415 and "supported formats" in r.get_json()["error"]


def test_upload_over_limit(tmp_path: Path, calibration_dir: Path, zoo) -> None:  # type: ignore[no-untyped-def]
    from server.app import create_app

    settings = Settings.from_env(env={}, data_dir=tmp_path, calibration_dir=calibration_dir, max_upload_bytes=1000)
    migrate(settings.database_url)
    client = token_client(create_app(settings), "big@example.com")
    data = zoo.path("tiny_cnn").read_bytes()
    assert len(data) > 1000
    r = _post(client, data)
    assert r.status_code == 413 and "1000 bytes" in r.get_json()["error"]
    # Far over the limit: refused by the request size check before the body is read.
    r = _post(client, b"\0" * 200_000)
    assert r.status_code == 413
    assert _count_models(client) == 0


@pytest.mark.parametrize("field,value,message", [
    ("inputs", "{not json", "not valid JSON"),
    ("inputs", '{"x": [1, -3]}', "positive integers"),
    ("inputs", "[1, 2]", "JSON dict"),
    ("input_values", '{"sr": "fast"}', "must be a number"),
    ("targets", '["no-such/target"]', "Unknown target"),
])
def test_bad_fields(client, zoo, field: str, value: str, message: str) -> None:  # type: ignore[no-untyped-def]
    r = _post(client, zoo.path("tiny_cnn").read_bytes(), **{field: value})
    assert r.status_code == 400 and message in r.get_json()["error"]
    assert _count_models(client) == 0


def test_target_that_cannot_run_the_format(client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from testkit import tflite_builder

    data = tflite_builder.cnn(tmp_path / "cnn.tflite").read_bytes()
    r = _post(client, data, filename="cnn.tflite", targets='["litert-cpu/host", "ort-cpu/host"]')
    body = r.get_json()
    assert r.status_code == 400 and body["code"] == "target_format"
    assert body["error"] == ("The target ort-cpu/host cannot run a tflite model; the targets for tflite models "
                             "are: litert-cpu/host, litert-qnn/snapdragon-8g3, litert-qnn/snapdragon-8-elite, "
                             "litert/pixel-8.")
    assert _count_models(client) == 0
    r = _post(client, data, filename="cnn.tflite", targets='["litert/pixel-8"]')
    assert r.status_code == 201 and r.get_json()["targets"] == ["litert/pixel-8"]


def test_unknown_model_is_404(client) -> None:  # type: ignore[no-untyped-def]
    for path in ("/api/models/nope", "/api/models/nope/ops", "/api/models/nope/graph", "/api/models/nope/options"):
        r = client.get(path)
        assert r.status_code == 404 and r.get_json()["code"] == "not_found", path


def test_anonymous_upload_is_refused(app, zoo) -> None:  # type: ignore[no-untyped-def]
    r = _post(app.test_client(), zoo.path("tiny_cnn").read_bytes())
    assert r.status_code == 401 and "Sign in" in r.get_json()["error"]


def test_results_of_queued_model_are_409(client, zoo) -> None:  # type: ignore[no-untyped-def]
    # No worker runs in this test: the job stays queued in the file broker.
    r = _post(client, zoo.path("tiny_cnn").read_bytes(), name="tiny")
    assert r.status_code == 201
    body = r.get_json()
    assert body["status"] == "queued" and body["url"].endswith(f"/m/{body['id']}") and body["name"] == "tiny"
    r = client.get(f"/api/models/{body['id']}/ops")
    assert r.status_code == 409 and "still being analysed" in r.get_json()["error"]
    assert client.get(f"/api/models/{body['id']}/download").data == zoo.path("tiny_cnn").read_bytes()
    assert client.delete(f"/api/models/{body['id']}").status_code == 204
    assert client.get(f"/api/models/{body['id']}").status_code == 404
