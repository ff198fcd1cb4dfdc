"""POST /solve, GET /ops.csv and GET /model-explorer on analysed models: the solver's proposals are states the
totals rule puts within the budget; the CSV is the op table; Model Explorer's own package reads the node data
and every node id is one of the graph Model Explorer builds from the uploaded file."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from simulator.totals import totals
from tests.server.test_web_api import _upload


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory, calibration_dir: Path, zoo: Any) -> dict[str, Any]:
    """One app with mobilenet_v2_like and tiny_cnn analysed once for the module: every test here only reads
    results (POST /solve computes, it stores nothing)."""
    from edgescope.config import Settings
    from server.app import create_app
    from tests.conftest import FAST_PROFILE, migrate, token_client

    settings = Settings.from_env(env=FAST_PROFILE, data_dir=tmp_path_factory.mktemp("planning") / "data",
                                 calibration_dir=calibration_dir)
    migrate(settings.database_url)
    app = create_app(settings)
    client = token_client(app, "alice@example.com")
    return {"app": app, "client": client, "mobilenet": _upload(app, client, zoo.path("mobilenet_v2_like")),
            "tiny": _upload(app, client, zoo.path("tiny_cnn"))}


def _per_op(client: Any, mid: str, ops: list[str], target: str) -> dict[str, Any]:
    from urllib.parse import quote

    return {o: client.get(f"/api/models/{mid}/ops/{quote(o, safe='')}/options?target={target}").get_json()
            for o in ops}


def test_solve_proposals_meet_the_budget_under_the_totals_rule(analysed: dict[str, Any]) -> None:
    client, mid = analysed["client"], analysed["mobilenet"]
    bulk = client.get(f"/api/models/{mid}/options").get_json()
    base = totals(bulk, {}, "fp32", {})
    # An impossible budget names what it misses and the closest state; how far the table reaches depends on the
    # host's calibration, so the budget asked next is a third of the way from the start to that state.
    r = client.post(f"/api/models/{mid}/solve", json={"budget": {"latency_ms": 1e-6}}).get_json()
    assert r["feasible"] is False and r["unmet"] == ["latency_ms"] and r["closest"]["changes"]
    assert r["closest"]["totals"]["latency_ms"] < base["latency_ms"]
    limit = base["latency_ms"] - (base["latency_ms"] - r["closest"]["totals"]["latency_ms"]) / 3
    r = client.post(f"/api/models/{mid}/solve", json={"target": "ort-cpu/host", "model_wide": "fp32",
                                                     "budget": {"latency_ms": limit}})
    assert r.status_code == 200, r.get_json()
    doc = r.get_json()
    assert doc["feasible"] is True and doc["start"] == base and doc["seconds"] > 0
    objectives = [o for p in doc["proposals"] for o in p["objectives"]]
    assert sorted(objectives) == ["fewest_changes", "least_size", "most_float"]
    for p in doc["proposals"]:
        per_op = _per_op(client, mid, list(p["overrides"]), "ort-cpu/host")
        assert totals(bulk, per_op, "fp32", p["overrides"]) == p["totals"]  # what the browser will compute
        assert p["totals"]["latency_ms"] <= limit
        for c in p["changes"]:
            assert p["overrides"][c["op"]] == c["after"] and c["before"] != c["after"]
    # Keep-float ops stay float in every proposal.
    fewest = next(p for p in doc["proposals"] if "fewest_changes" in p["objectives"])
    kept = fewest["changes"][0]["op"]
    r = client.post(f"/api/models/{mid}/solve", json={"budget": {"latency_ms": limit}, "keep_float": [kept]})
    # Without that op the budget may be out of reach (how much it gave depends on this run's measured profile):
    # then the closest state keeps it float too.
    doc = r.get_json()
    assert doc["proposals"] or doc["feasible"] is False
    states = [p["overrides"] for p in doc["proposals"]] or [{c["op"]: c["after"] for c in doc["closest"]["changes"]}]
    for overrides in states:
        combo = overrides.get(kept, "fp32/fp32/fp32/0").split("/")
        assert combo[0] in ("fp32", "fp16") and combo[2] in ("fp32", "fp16", "-") and combo[3] == "0"


def test_solve_refuses_bad_requests(analysed: dict[str, Any]) -> None:
    client, mid = analysed["client"], analysed["tiny"]
    bad = client.post(f"/api/models/{mid}/solve", json={"budget": {}})
    assert bad.status_code == 400 and "at least one limit" in bad.get_json()["error"]
    bad = client.post(f"/api/models/{mid}/solve", json={"budget": {"latency_ms": "fast"}})
    assert bad.status_code == 400 and bad.get_json()["code"] == "bad_budget"
    bad = client.post(f"/api/models/{mid}/solve", json={"budget": {"fps": 30}, "model_wide": "nope"})
    assert bad.status_code == 400 and "model-wide option 'nope'" in bad.get_json()["error"]
    bad = client.post(f"/api/models/{mid}/solve", json={"budget": {"fps": 30}, "target": "litert/pixel-8"})
    assert bad.status_code == 404 and bad.get_json()["code"] == "unknown_target"


def _csv(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """(the "# " header lines, the rows) of an ops.csv."""
    lines = text.splitlines(keepends=True)
    head = [x[2:].rstrip("\n") for x in lines if x.startswith("# ")]
    return head, list(csv.DictReader(io.StringIO("".join(x for x in lines if not x.startswith("# ")))))


def test_ops_csv_is_the_op_table(analysed: dict[str, Any]) -> None:
    client, mid = analysed["client"], analysed["tiny"]
    ops = client.get(f"/api/models/{mid}/ops").get_json()["ops"]
    r = client.get(f"/api/models/{mid}/ops.csv")
    assert r.status_code == 200 and r.mimetype == "text/csv"
    assert "attachment" in r.headers["Content-Disposition"] and ".csv" in r.headers["Content-Disposition"]
    head, rows = _csv(r.get_data(as_text=True))
    assert "state: unoptimized; model-wide option fp32; 0 per-op options" in head[1]
    assert [x["id"] for x in rows] == [o["id"] for o in ops]
    for x, o in zip(rows, ops):
        assert float(x["latency_ms"]) == o["latency_ms"] and x["type"] == o["type"]
        assert x["source_nodes"] == ";".join(o["source_nodes"])


def test_ops_csv_of_a_state_holds_its_options_and_figures(analysed: dict[str, Any]) -> None:
    """A saved analysis' table (`analysis=`) and the page's unsaved state (`model_wide=`, `overrides=`): each task's
    option, unit and figures under the state, the header naming it, its totals those of the totals rule."""
    from urllib.parse import quote

    from simulator.totals import evaluate

    client, mid = analysed["client"], analysed["mobilenet"]
    bulk = client.get(f"/api/models/{mid}/options").get_json()
    ops = client.get(f"/api/models/{mid}/ops").get_json()["ops"]
    p = [x["name"] for x in bulk["presets"]].index("fp16")
    k = next(i for i in range(1, len(bulk["ops"])) if bulk["combos"][i][p].split("/")[2] != "-")  # a weighted op
    op, combo = bulk["ops"][k], "int8/int8/int8/0"
    state = {"target": "ort-cpu/host", "model_wide": "fp16", "overrides": {op: combo}}
    per_op = _per_op(client, mid, [op], "ort-cpu/host")
    ev = evaluate(bulk, per_op, "fp16", {op: combo})
    a = client.post(f"/api/models/{mid}/analyses", json={"name": "half, one op int8", "state": state}).get_json()
    by_analysis = client.get(f"/api/models/{mid}/ops.csv?analysis={a['id']}")
    by_state = client.get(f"/api/models/{mid}/ops.csv?target=ort-cpu/host&model_wide=fp16"
                          f"&overrides={quote(json.dumps({op: combo}))}")
    for r, what in ((by_analysis, f'analysis "half, one op int8" ({a["id"]})'),
                    (by_state, "the page's state (not saved)")):
        assert r.status_code == 200, r.get_json()
        head, rows = _csv(r.get_data(as_text=True))
        assert head[1] == f"state: {what}; model-wide option fp16; 1 per-op option: {op}={combo}"
        assert f"latency_ms={ev.totals['latency_ms']!r}" in head[2]
        assert f"per_inference_ms={bulk['constants']['per_inference_ms']!r}" in head[2]
        assert [x["id"] for x in rows] == bulk["ops"] == [o["id"] for o in ops]
        for i, x in enumerate(rows):
            assert x["combo"] == ev.combo[i] and x["unit"] == "cpu"
            assert (x["overridden"] == "true") == (x["id"] == op)
            assert float(x["latency_ms"]) == ev.latency_ms[i] and float(x["weight_bytes"]) == ev.weight_bytes[i]
            assert float(x["conversion_in_ms"]) == ev.conversion_in_ms[i]
            assert float(x["unoptimized_latency_ms"]) == ops[i]["latency_ms"]
        assert rows[k]["combo"] == combo and all(x["combo"] == bulk["combos"][i][p] for i, x in enumerate(rows)
                                                  if i != k)
        assert float(rows[k]["conversion_in_ms"]) > 0  # int8 after fp16: a conversion into op k
        # the figures add up to the state's totals (the per-inference term is in no row)
        assert ev.totals["latency_ms"] == pytest.approx(
            bulk["constants"]["per_inference_ms"] + sum(float(x["latency_ms"]) + float(x["conversion_in_ms"])
                                                        for x in rows), rel=1e-9)
    bad = client.get(f"/api/models/{mid}/ops.csv?model_wide=fp16&overrides=%7Bnope")
    assert bad.status_code == 400 and bad.get_json()["code"] == "bad_state"
    bad = client.get(f"/api/models/{mid}/ops.csv?model_wide=fp16&overrides=" + quote(json.dumps({"nope": combo})))
    assert bad.status_code == 400 and bad.get_json()["code"] == "unknown_op"


def _model_explorer_graph(path: Path) -> tuple[str, set[str], set[str]]:
    """(graph id, every node id, ids of operator nodes) as Model Explorer's own adapters build them."""
    if path.suffix == ".onnx":
        from model_explorer_onnx.main import ONNXAdapter

        g = ONNXAdapter().convert(str(path), {})["graphs"][0]
        ids = {n.id for n in g.nodes}
        # "[value] x": inputs, weights, outputs. Constant nodes are values in our graph (no task runs them).
        return g.id, ids, {n.id for n in g.nodes if not n.id.startswith("[") and n.label != "Constant"}
    if path.suffix == ".pt2":
        from model_explorer.builtin_pytorch_exportedprogram_adapter import BuiltinPytorchExportedProgramAdapter

        g = BuiltinPytorchExportedProgramAdapter().convert(str(path), {"const_element_count_limit": 16})["graphs"][0]
        return g.id, {n.id for n in g.nodes}, {n.id for n in g.nodes if n.namespace != "inputs" and n.label != "output"}
    from model_explorer.builtin_tflite_flatbuffer_adapter import BuiltinTfliteFlatbufferAdapter

    g = BuiltinTfliteFlatbufferAdapter().convert(str(path), {})["graphCollections"][0].graphs[0]
    g = g if isinstance(g, dict) else g.__dict__
    nodes = g["nodes"]
    ids = {n["id"] for n in nodes}
    return g["id"], ids, {n["id"] for n in nodes if n["label"] not in ("pseudo_const", "GraphInputs", "GraphOutputs")}


def _check_node_data(client: Any, mid: str, path: Path, target: str) -> None:
    import dacite
    from model_explorer.node_data_builder import GraphNodeData, ModelNodeData

    r = client.get(f"/api/models/{mid}/model-explorer?target={target}&metric=latency_ms")
    assert r.status_code == 200 and "attachment" in r.headers["Content-Disposition"]
    data = r.get_json()
    # Model Explorer's own classes take it (strict: no field they do not know) and write back the same data.
    model = ModelNodeData(graphsData={g: dacite.from_dict(GraphNodeData, d, config=dacite.Config(strict=True))
                                      for g, d in data.items()})
    again = json.loads(model.to_json_string())
    assert {g: (d["results"], d["gradient"]) for g, d in again.items()} == \
        {g: (d["results"], d["gradient"]) for g, d in data.items()}
    graph_id, ids, op_ids = _model_explorer_graph(path)
    assert list(data) == [graph_id]
    results = data[graph_id]["results"]
    assert set(results) <= ids  # every node id we write is one of Model Explorer's nodes
    assert set(results) == op_ids  # and every operator it draws has a value
    ops = client.get(f"/api/models/{mid}/ops?target={target}").get_json()["ops"]
    # Each task's figure lands once, on its first source node (tasks with none, if any, have no node there).
    mapped = sum(o["latency_ms"] or 0 for o in ops if o["source_nodes"] and not o.get("parent"))
    assert mapped > 0.9 * sum(o["latency_ms"] or 0 for o in ops)
    assert abs(sum(v["value"] for v in results.values()) - mapped) < 1e-9


def test_model_explorer_node_data_onnx(analysed: dict[str, Any], zoo: Any) -> None:
    client, mid = analysed["client"], analysed["mobilenet"]
    _check_node_data(client, mid, zoo.path("mobilenet_v2_like"), "ort-cpu/host")
    bad = client.get(f"/api/models/{mid}/model-explorer?metric=colour")
    assert bad.status_code == 400 and bad.get_json()["code"] == "bad_metric"


def test_model_explorer_node_data_tflite(app: Any, client: Any, zoo: Any) -> None:
    path = zoo.path("tflite_cnn")
    with open(path, "rb") as f:
        r = client.post("/api/models", data={"file": (f, path.name), "targets": '["litert-cpu/host"]'},
                        content_type="multipart/form-data")
    mid = r.get_json()["id"]
    from tests.server.test_web_api import _run_newest_job

    assert _run_newest_job(app, mid) == "ready"
    _check_node_data(client, mid, path, "litert-cpu/host")


def test_model_explorer_node_data_pt2(app: Any, client: Any, tmp_path: Path) -> None:
    from testkit import modelzoo

    path = modelzoo.pt2_net_with_sources(tmp_path / "net.pt2")
    with open(path, "rb") as f:
        r = client.post("/api/models", data={"file": (f, path.name), "targets": '["ort-cpu/host"]'},
                        content_type="multipart/form-data")
    mid = r.get_json()["id"]
    from tests.server.test_web_api import _run_newest_job

    assert _run_newest_job(app, mid) == "ready"
    _check_node_data(client, mid, path, "ort-cpu/host")
