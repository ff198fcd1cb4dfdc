"""Diff API: a saved analysis against its parent (override changes and their effect on the totals), and a model
against another version of the network (ops matched, per-op and total deltas)."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.totals import totals
from tests.conftest import token_client
from tests.server.test_web_api import _upload


def test_analysis_diff_against_parent_and_base(app: Any, client: Any, zoo: Any) -> None:
    mid = _upload(app, client, zoo.path("tiny_cnn"))
    table = client.get(f"/api/models/{mid}/options").get_json()
    first, last = table["ops"][0], table["ops"][-1]
    base_preset = table["base"]["preset"]
    parent_state = {"target": "ort-cpu/host", "model_wide": base_preset, "overrides": {last: "fp16/fp16/fp16/0"}}
    r = client.post(f"/api/models/{mid}/analyses", json={"name": "parent", "state": parent_state})
    assert r.status_code == 201, r.get_json()
    parent = r.get_json()
    child_state = {"target": "ort-cpu/host", "model_wide": "int8-dynamic", "overrides": {first: "fp32/fp32/fp32/0"}}
    child = client.post(f"/api/models/{mid}/analyses/{parent['id']}/fork", json={"state": child_state}).get_json()

    d = client.get(f"/api/models/{mid}/analyses/{child['id']}/diff").get_json()
    assert d["against"] == {"id": parent["id"], "name": "parent"}
    kinds = [(c["kind"], c["op"], c["before"], c["after"]) for c in d["changes"]]
    assert kinds == [("model_wide", None, base_preset, "int8-dynamic"), ("override", first, None, "fp32/fp32/fp32/0"),
                     ("override", last, "fp16/fp16/fp16/0", None)]
    # the totals are the totals rule's on the per-op records the API serves
    per_op = {op: client.get(f"/api/models/{mid}/ops/{op}/options").get_json() for op in (first, last)}
    want_before = totals(table, per_op, base_preset, parent_state["overrides"])
    want_after = totals(table, per_op, "int8-dynamic", child_state["overrides"])
    assert d["before"] == pytest.approx(want_before, rel=1e-12) and d["after"] == pytest.approx(want_after, rel=1e-12)
    assert d["delta"]["latency_ms"] == pytest.approx(want_after["latency_ms"] - want_before["latency_ms"])
    # each change alone, applied to the parent's state
    alone_mw = totals(table, per_op, "int8-dynamic", parent_state["overrides"])
    assert d["changes"][0]["alone"]["size_bytes"] == pytest.approx(alone_mw["size_bytes"] - want_before["size_bytes"])
    undo_fp16 = totals(table, per_op, base_preset, {})
    assert d["changes"][2]["alone"]["latency_ms"] == pytest.approx(undo_fp16["latency_ms"] - want_before["latency_ms"])

    # against the unoptimized model; the parent against it names its one override
    d0 = client.get(f"/api/models/{mid}/analyses/{parent['id']}/diff").get_json()
    assert d0["against"]["id"] is None and [c["op"] for c in d0["changes"]] == [last]
    assert d0["before"]["latency_ms"] == pytest.approx(table["base"]["latency_ms"], rel=1e-9)
    db = client.get(f"/api/models/{mid}/analyses/{child['id']}/diff?against=base").get_json()
    assert [c["kind"] for c in db["changes"]] == ["model_wide", "override"]
    assert client.get(f"/api/models/{mid}/analyses/{child['id']}/diff?against=nope").status_code == 404
    assert token_client(app, "bob@example.com").get(
        f"/api/models/{mid}/analyses/{child['id']}/diff").status_code == 404  # not shared with bob


def test_model_diff_matches_two_versions(app: Any, client: Any, zoo: Any) -> None:
    a = _upload(app, client, zoo.path("namespaced", layers=2))
    b = _upload(app, client, zoo.path("namespaced", layers=3))
    ops_a = client.get(f"/api/models/{a}/ops").get_json()
    ops_b = client.get(f"/api/models/{b}/ops").get_json()
    d = client.get(f"/api/models/{a}/diff?other={b}").get_json()
    assert d["target"] == "ort-cpu/host" and d["a"]["id"] == a and d["b"]["id"] == b
    rows = d["ops"]
    assert {r["a"] for r in rows if r["a"]} == {o["id"] for o in ops_a["ops"]}
    assert {r["b"] for r in rows if r["b"]} == {o["id"] for o in ops_b["ops"]}
    assert d["counts"]["removed"] == 0 and d["counts"]["added"] == len(ops_b["ops"]) - len(ops_a["ops"]) > 0
    added = [r for r in rows if r["how"] == "added"]
    assert all("layer.2" in r["name"] for r in added), [r["name"] for r in added]
    by_b = {o["id"]: o for o in ops_b["ops"]}
    for r in rows:
        if r["a"] and r["b"]:
            assert r["latency_ms"][1] == by_b[r["b"]]["latency_ms"] and r["macs"][0] is not None
    assert d["totals"]["latency_ms"] == {"a": ops_a["latency_ms"], "b": ops_b["latency_ms"],
                                         "delta": ops_b["latency_ms"] - ops_a["latency_ms"]}
    macs = d["totals"]["macs"]
    assert macs["delta"] == sum(o["macs"] for o in ops_b["ops"]) - sum(o["macs"] for o in ops_a["ops"]) > 0
    assert d["totals"]["tasks"]["delta"] == len(added)

    assert client.get(f"/api/models/{a}/diff").status_code == 400
    assert client.get(f"/api/models/{a}/diff?other={b}&target=coreml/apple-a17").status_code == 400
    bob = token_client(app, "bob@example.com")
    assert bob.get(f"/api/models/{a}/diff?other={b}").status_code == 404
