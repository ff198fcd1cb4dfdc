"""API behaviour the web UI relies on: re-analysis with other inputs, results that are never stale after a
re-analysis (HTTP validators and the server's own caches), and link-opened models under "Shared with me"."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from store.db import session_scope
from store.models import Job
from tests.conftest import token_client


def _run_newest_job(app: Any, model_id: str) -> str:
    from worker.jobs import run_job

    services = app.extensions["edgescope"]
    with session_scope(services.sessions) as s:
        job_id = s.scalars(select(Job.id).where(Job.model_id == model_id).order_by(Job.created_at.desc())).first()
    return run_job(services, job_id)


def _upload(app: Any, client: Any, path: Any, **fields: str) -> str:
    with open(path, "rb") as f:
        r = client.post("/api/models", data={"file": (f, path.name), "targets": '["ort-cpu/host"]', **fields},
                        content_type="multipart/form-data")
    assert r.status_code == 201, r.get_json()
    mid = r.get_json()["id"]
    assert _run_newest_job(app, mid) == "ready"
    return mid


def test_reanalyze_with_other_inputs_and_results_are_fresh_after_it(app: Any, client: Any, zoo: Any) -> None:
    mid = _upload(app, client, zoo.path("dynamic_dims"), inputs='{"input_ids": [1, 8], "mask": [1, 8]}')
    assert client.get(f"/api/models/{mid}").get_json()["input_shapes"] == {"input_ids": [1, 8], "mask": [1, 8]}
    ops = client.get(f"/api/models/{mid}/ops")
    etag = ops.headers["ETag"]
    assert "no-cache" in ops.headers["Cache-Control"]
    assert client.get(f"/api/models/{mid}/ops", headers={"If-None-Match": etag}).status_code == 304
    op_ids = [o["id"] for o in ops.get_json()["ops"]]
    before = {op: client.get(f"/api/models/{mid}/ops/{op}/options").get_json() for op in op_ids}

    # bad bodies are refused before anything is queued
    for body, word in (([1], "JSON object"), ({"inputs": {"input_ids": [1, 0]}}, "positive"),
                       ({"inputs": [1, 2]}, "object"), ({"input_values": {"mask": "x"}}, "number")):
        r = client.post(f"/api/models/{mid}/reanalyze", json=body)
        assert r.status_code == 400 and word in r.get_json()["error"], r.get_json()
    r = client.post(f"/api/models/{mid}/reanalyze", json={"inputs": {"input_ids": [1, 512], "mask": [1, 512]}})
    assert r.status_code == 202 and r.get_json()["input_shapes"]["input_ids"] == [1, 512]
    assert r.get_json()["status"] == "queued"
    assert _run_newest_job(app, mid) == "ready"

    fresh = client.get(f"/api/models/{mid}/ops", headers={"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.headers["ETag"] != etag
    assert fresh.get_json()["ops"] != ops.get_json()["ops"]
    # every per-op option record is read with the new index (a stale one answered 500 or the old numbers)
    after = {}
    for op in [o["id"] for o in fresh.get_json()["ops"]]:
        r = client.get(f"/api/models/{mid}/ops/{op}/options")
        assert r.status_code == 200, (op, r.get_json())
        after[op] = r.get_json()
    assert any(after[op]["latency_ms"] != before[op]["latency_ms"] for op in after if op in before)
    graph = client.get(f"/api/models/{mid}/graph?view=compiled&format=columns")
    assert graph.status_code == 200 and graph.headers["ETag"]


def test_reanalyze_needs_editor_rights(app: Any, client: Any, zoo: Any) -> None:
    mid = _upload(app, client, zoo.path("tiny_cnn"))
    bob = token_client(app, "bob@example.com")
    assert client.put(f"/api/models/{mid}/link", json={"enabled": True}).status_code == 200
    r = bob.post(f"/api/models/{mid}/reanalyze", json={"inputs": {"x": [1, 3, 8, 8]}})
    assert r.status_code == 403
    assert client.get(f"/api/models/{mid}").get_json()["input_shapes"] == {}


def test_a_model_opened_through_its_link_is_shared_with_me_while_the_link_is_on(app: Any, client: Any, zoo: Any) -> None:
    mid = _upload(app, client, zoo.path("tiny_cnn"))
    bob = token_client(app, "bob@example.com")
    assert bob.get(f"/api/models/{mid}").status_code == 404  # no link yet: nothing recorded
    assert client.put(f"/api/models/{mid}/link", json={"enabled": True}).status_code == 200
    assert bob.get("/api/models?scope=shared").get_json()["models"] == []  # not opened yet
    assert bob.get(f"/api/models/{mid}").status_code == 200
    shared = bob.get("/api/models?scope=shared").get_json()["models"]
    assert [m["id"] for m in shared] == [mid] and shared[0]["your_role"] == "viewer"
    assert bob.get("/api/models").get_json()["models"] == []  # still not "mine"
    assert client.get("/api/models?scope=shared").get_json()["models"] == []  # the owner's own visit counts for nothing
    assert client.put(f"/api/models/{mid}/link", json={"enabled": False}).status_code == 200
    assert bob.get("/api/models?scope=shared").get_json()["models"] == []
    assert client.delete(f"/api/models/{mid}").status_code == 204
    assert bob.get("/api/models?scope=shared").get_json()["models"] == []


def test_the_pages_early_graph_request_is_not_an_error_before_the_model_is_ready(app: Any, client: Any, zoo: Any) -> None:
    with open(zoo.path("tiny_cnn"), "rb") as f:
        mid = client.post("/api/models", data={"file": (f, "t.onnx")}, content_type="multipart/form-data").get_json()["id"]
    url = f"/api/models/{mid}/graph?view=compiled&format=columns"
    assert client.get(url).status_code == 409
    r = client.get(url + "&early=1")
    assert r.status_code == 204 and r.data == b""
    assert _run_newest_job(app, mid) == "ready"
    assert client.get(url + "&early=1").get_json()["ids"]
