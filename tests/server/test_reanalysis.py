"""A re-analysis replaces every result a model serves: documents, the per-op option index the server caches
in-process, and the per-op option records (issue 13: per-op dialogs answered 500 after a re-analysis)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from store.db import session_scope
from store.models import Artifact, Job


def _run_newest_job(app, model_id: str) -> None:  # type: ignore[no-untyped-def]
    from worker.jobs import run_job

    services = app.extensions["edgescope"]
    with session_scope(services.sessions) as s:
        job_id = s.scalars(select(Job.id).where(Job.model_id == model_id).order_by(Job.created_at)).all()[-1]
    assert run_job(services, job_id) == "ready"


def _per_op_agrees_with_bulk(client, model_id: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Every op's per-op record is the one of the table served now: its row under the fp32 preset equals the
    bulk table's figure."""
    bulk = client.get(f"/api/models/{model_id}/options").get_json()
    p = [x["name"] for x in bulk["presets"]].index("fp32")
    for i, op in enumerate(bulk["ops"]):
        r = client.get(f"/api/models/{model_id}/ops/{op}/options")
        assert r.status_code == 200, (op, r.get_json())
        one = r.get_json()
        assert one["op"] == op
        j = one["combos"].index(bulk["combos"][i][p])
        assert one["latency_ms"][j] == bulk["metrics"]["latency_ms"][i][p]
        assert one["activation_bytes"][j] == bulk["metrics"]["activation_bytes"][i][p]
    return bulk


def test_reanalysis_replaces_cached_option_index(app, client, zoo) -> None:  # type: ignore[no-untyped-def]
    services = app.extensions["edgescope"]
    with open(zoo.path("dynamic_dims"), "rb") as f:
        r = client.post("/api/models", data={"file": (f, "dyn.onnx"), "targets": '["ort-cpu/host"]',
                                             "inputs": '{"input_ids": [1, 8]}'}, content_type="multipart/form-data")
    model_id = r.get_json()["id"]
    _run_newest_job(app, model_id)
    first = _per_op_agrees_with_bulk(client, model_id)  # fills the server's in-process caches
    with session_scope(services.sessions) as s:
        old_keys = {a.key for a in s.scalars(select(Artifact).where(Artifact.model_id == model_id))}

    # Re-analysed with other inputs.
    assert client.post(f"/api/models/{model_id}/reanalyze", json={"inputs": {"input_ids": [4, 64]}}).status_code == 202
    _run_newest_job(app, model_id)

    model = client.get(f"/api/models/{model_id}").get_json()
    assert model["summary"]["inputs"]["input_ids"] == [4, 64]
    second = _per_op_agrees_with_bulk(client, model_id)
    assert second["ops"] == first["ops"]
    # The new shapes reached the simulator (4x64 tokens, not 1x8) and the compiled graph's values.
    act = lambda t: sum(row[0] for row in t["metrics"]["activation_bytes"])  # noqa: E731
    assert act(second) > 20 * act(first) > 0
    ops = client.get(f"/api/models/{model_id}/ops").get_json()
    gather = next(o for o in ops["ops"] if o["type"] == "Gather")
    assert [v["shape"] for v in gather["outputs"]] == [[4, 64, 32]]
    assert ops["work_unknown"]["tasks"] == 0 and not any(o["work_unknown"] for o in ops["ops"])
    plan = {p["name"]: p for p in model["inputs"]}
    assert plan["input_ids"]["declared"] == ["batch", "seq"] and plan["input_ids"]["set_by"] == "user"
    assert plan["mask"]["shape"] == [4, 64] and plan["mask"]["value"] == 1
    # The previous analysis' blobs are gone and no row points to them.
    with session_scope(services.sessions) as s:
        new_keys = {a.key for a in s.scalars(select(Artifact).where(Artifact.model_id == model_id))}
    assert new_keys and not new_keys & old_keys
    assert not any(services.blobs.exists(k) for k in old_keys)


def test_reanalysis_with_an_input_the_model_does_not_have_is_refused(app, client, zoo) -> None:  # type: ignore[no-untyped-def]
    """Once a model's inputs are known (its input plan, kept even when the analysis failed), a re-analysis naming an
    input it does not have is a 400 naming its inputs, not a queued job that fails minutes later the same way."""
    with open(zoo.path("dynamic_dims"), "rb") as f:
        r = client.post("/api/models", data={"file": (f, "dyn.onnx"), "targets": '["ort-cpu/host"]',
                                             "inputs": '{"nosuch": [1, 3]}'}, content_type="multipart/form-data")
    model_id = r.get_json()["id"]
    from worker.jobs import run_job

    services = app.extensions["edgescope"]
    with session_scope(services.sessions) as s:
        job_id = s.scalars(select(Job.id).where(Job.model_id == model_id)).one()
    assert run_job(services, job_id) == "failed"
    m = client.get(f"/api/models/{model_id}").get_json()
    assert "no input 'nosuch'" in m["error"] and m["inputs"]
    declared = [i["name"] for i in m["inputs"]]
    for body in ({"inputs": {"nosuch": [1, 3]}}, {"input_values": {"nosuch": 3}}):
        r = client.post(f"/api/models/{model_id}/reanalyze", json=body)
        assert r.status_code == 400 and r.get_json()["code"] == "bad_field", r.get_json()
        assert "'nosuch'" in r.get_json()["error"] and all(n in r.get_json()["error"] for n in declared)
    with session_scope(services.sessions) as s:  # nothing queued, the stored inputs unchanged
        assert len(s.scalars(select(Job.id).where(Job.model_id == model_id)).all()) == 1
    assert client.get(f"/api/models/{model_id}").get_json()["input_shapes"] == {"nosuch": [1, 3]}
    # the model's own inputs are accepted
    name = declared[0]
    r = client.post(f"/api/models/{model_id}/reanalyze", json={"inputs": {}, "input_values": {}})
    assert r.status_code == 202, r.get_json()
    assert name and client.get(f"/api/models/{model_id}").get_json()["input_shapes"] == {}
