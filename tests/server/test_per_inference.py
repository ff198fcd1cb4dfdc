"""The time per inference that is no task's (the runtime's fixed cost per call and, measured, the whole model's time
outside its tasks) is a term of the totals rule (`constants.per_inference_ms`, option table schema 2), not a charge
on op 0's latency: op 0 reads its own time in every document (GET /options, /ops, the per-op table, the CSV, the CLI's
JSON) and the totals, the solver's included, add the term once. Analyses stored under schema 1 (op 0 charged,
`constants.first_task_ms`) are read as schema 2 and show the same totals. On torchvision's MobileNetV3-small
(random weights) exported to ONNX, measured (ort-cpu/host) and predicted (ort-qnn/snapdragon-8g3, two units)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import select

from simulator.totals import totals

TARGETS = ("ort-cpu/host", "ort-qnn/snapdragon-8g3")
OLD_NOTE = "latency includes the runtime's fixed cost per inference"


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory, calibration_dir: Path) -> dict[str, Any]:
    import corpus  # noqa: F401  (torchvision importable beside CPU torch)
    import torch
    import torchvision

    from edgescope.config import Settings
    from server.app import create_app
    from tests.conftest import FAST_PROFILE, migrate, token_client
    from tests.server.test_web_api import _run_newest_job

    d = tmp_path_factory.mktemp("per_inference")
    path = d / "mobilenet_v3_small.onnx"
    net = torchvision.models.mobilenet_v3_small(weights=None).eval()
    torch.onnx.export(net, (torch.zeros(1, 3, 96, 96),), str(path), input_names=["pixels"], output_names=["logits"],
                      dynamo=False)
    settings = Settings.from_env(env=FAST_PROFILE, data_dir=d / "data", calibration_dir=calibration_dir)
    migrate(settings.database_url)
    app = create_app(settings)
    client = token_client(app, "alice@example.com")
    with open(path, "rb") as f:
        r = client.post("/api/models", data={"file": (f, path.name), "targets": json.dumps(list(TARGETS))},
                        content_type="multipart/form-data")
    assert r.status_code == 201, r.get_json()
    mid = r.get_json()["id"]
    assert _run_newest_job(app, mid) == "ready"
    return {"app": app, "client": client, "id": mid, "path": path, "calibration_dir": calibration_dir, "dir": d}


def _get(client: Any, url: str) -> Any:
    r = client.get(url)
    assert r.status_code == 200, (url, r.get_data(as_text=True)[:300])
    return r.get_json()


def _state(client: Any, mid: str, t: str) -> dict[str, Any]:
    """Every document of one target that shows op 0's time or a total."""
    bulk = _get(client, f"/api/models/{mid}/options?target={t}")
    op0 = bulk["ops"][0]
    budget = bulk["base"]["latency_ms"] * 0.8
    solve = client.post(f"/api/models/{mid}/solve", json={"target": t, "budget": {"latency_ms": budget}}).get_json()
    csv_text = client.get(f"/api/models/{mid}/ops.csv?target={t}").get_data(as_text=True)
    return {"bulk": bulk, "ops": _get(client, f"/api/models/{mid}/ops?target={t}"),
            "rec0": _get(client, f"/api/models/{mid}/ops/{quote(op0, safe='')}/options?target={t}"),
            "solve": solve, "csv": list(csv.DictReader(io.StringIO("".join(
                x for x in csv_text.splitlines(keepends=True) if not x.startswith("# ")))))}


def _per_op(client: Any, mid: str, t: str, ops: list[str]) -> dict[str, Any]:
    return {o: _get(client, f"/api/models/{mid}/ops/{quote(o, safe='')}/options?target={t}") for o in ops}


@pytest.mark.parametrize("t", TARGETS)
def test_op_0_reads_its_own_time_and_the_totals_add_the_term_once(analysed: dict[str, Any], t: str) -> None:
    client, mid = analysed["client"], analysed["id"]
    s = _state(client, mid, t)
    bulk, ops, rec0 = s["bulk"], s["ops"], s["rec0"]
    c = bulk["constants"]["per_inference_ms"]
    assert bulk["schema"] == 2 and c > 0 and "first_task_ms" not in bulk["constants"]
    p = [x["name"] for x in bulk["presets"]].index(bulk["base"]["preset"])
    col = [row[p] for row in bulk["metrics"]["latency_ms"]]
    base = totals(bulk, {}, bulk["base"]["preset"], {})
    assert base["latency_ms"] == bulk["base"]["latency_ms"]
    # no format changes between ops in the base column: its total is the term plus the ops' own times, once each
    assert base["latency_ms"] == pytest.approx(c + sum(col), rel=1e-12)
    # op 0's per-op table: its own time under the base combo, no note on a charge
    k = rec0["combos"].index(bulk["combos"][0][p])
    assert rec0["latency_ms"][k] == col[0]
    assert not any(n.startswith(OLD_NOTE) for n in rec0["notes"])
    # GET /ops and the CSV: a measured row is the task's own median, a predicted one the table's column
    row0 = ops["ops"][0]
    assert ops["per_inference_ms"] == c
    if row0["measured"]:
        assert t == "ort-cpu/host" and col[0] <= row0["latency_ms"]
    else:
        assert row0["latency_ms"] == col[0]
        assert ops["latency_ms"] == pytest.approx(c + sum(r["latency_ms"] for r in ops["ops"]), rel=1e-12)
    assert float(s["csv"][0]["latency_ms"]) == row0["latency_ms"]
    # the solver's start and proposals are the totals rule's, term included
    sol = s["solve"]
    assert sol["start"] == base
    props = sol["proposals"] or [sol["closest"]]
    for prop in props:
        per_op = _per_op(client, mid, t, list(prop["overrides"]))
        assert totals(bulk, per_op, sol["model_wide"], prop["overrides"]) == prop["totals"]


def test_cli_json_shows_op_0_own_time(analysed: dict[str, Any], tmp_path: Path) -> None:
    from tests.cli.test_cli import _cli

    t = "ort-qnn/snapdragon-8g3"
    bulk = _get(analysed["client"], f"/api/models/{analysed['id']}/options?target={t}")
    c = bulk["constants"]["per_inference_ms"]
    p = _cli("predict", str(analysed["path"]), "--target", t, "--json", calibration_dir=analysed["calibration_dir"],
             cwd=tmp_path / "predict")
    assert p.returncode == 0, p.stderr
    pred = json.loads(p.stdout)
    assert pred["per_inference_ms"] == c and pred["ops"][0]["latency_ms"] == bulk["metrics"]["latency_ms"][0][0]
    assert pred["totals"]["latency_ms"] == pytest.approx(c + sum(o["latency_ms"] for o in pred["ops"]), rel=1e-12)
    p = _cli("analyze", str(analysed["path"]), "--target", t, "--json", calibration_dir=analysed["calibration_dir"],
             cwd=tmp_path / "analyze")
    assert p.returncode == 0, p.stderr
    one = json.loads(p.stdout)["targets"][0]
    assert one["per_inference_ms"] == c and one["ops"][0]["latency_ms"] == bulk["metrics"]["latency_ms"][0][0]
    assert one["latency_ms"] == pytest.approx(c + sum(o["latency_ms"] for o in one["ops"]), rel=1e-12)


def _as_schema_1(app: Any, mid: str, t: str) -> None:
    """Rewrite a target's stored option table, ops document and solver table as the sweep and worker wrote them
    under schema 1 (op 0 charged in every cell, `first_task_ms`, the note on op 0, per-op records in pack format 1),
    under new keys the artifact rows then point at."""
    from store.db import session_scope
    from store.models import Artifact
    from store.packed import PackIndex, pack, read_record
    from simulator.solver.table_bytes import table_bytes

    svc = app.extensions["edgescope"]
    blobs = svc.blobs
    with session_scope(svc.sessions) as s:
        arts = {a.kind: a for a in s.scalars(select(Artifact).where(Artifact.model_id == mid, Artifact.target == t))}
        keys = {k: a.key for k, a in arts.items()}
    load = lambda k: json.loads(gzip.decompress(blobs.get_bytes(keys[k])))  # noqa: E731
    bulk, ops_doc, index = load("options"), load("ops"), load("op_options_index")
    c = bulk["constants"].pop("per_inference_ms")
    bulk["constants"]["first_task_ms"] = c
    bulk["schema"] = 1
    bulk["metrics"]["latency_ms"][0] = [x + c for x in bulk["metrics"]["latency_ms"][0]]
    ix = PackIndex.of(index)
    records = [read_record(blobs, keys["op_options"], ix, i) for i in range(len(index["ops"]))]
    records[0]["latency_ms"] = [x + c for x in records[0]["latency_ms"]]
    records[0]["notes"].append(f"{OLD_NOTE} (0.0100 ms)")
    del ops_doc["per_inference_ms"]
    rows = ops_doc["ops"]
    if not rows[0]["measured"]:
        rows[0]["latency_ms"] += c
    total = sum(r["latency_ms"] or 0.0 for r in rows)
    for r in rows:
        r["share"] = (r["latency_ms"] or 0.0) / total
    blob, offsets = pack(records)
    new = {"options": gzip.compress(json.dumps(bulk).encode()), "ops": gzip.compress(json.dumps(ops_doc).encode()),
           "op_options": blob, "op_options_index": gzip.compress(json.dumps({"ops": index["ops"],
                                                                               "offsets": offsets}).encode()),
           "solver_table": table_bytes(bulk, records)}
    with session_scope(svc.sessions) as s:
        for a in s.scalars(select(Artifact).where(Artifact.model_id == mid, Artifact.target == t)):
            if a.kind in new:
                a.key = f"{a.key}.schema1"
                blobs.put_bytes(a.key, new[a.kind])


def test_analyses_stored_under_schema_1_read_the_same(analysed: dict[str, Any]) -> None:
    """The old layout, stored: every document reads as schema 2 and every total is the same (to the last digit here,
    or one rounding of op 0's time: c + (l0 + c - c) gives l0 + c back unless the subtraction rounded)."""
    app, client, mid = analysed["app"], analysed["client"], analysed["id"]
    before = {t: _state(client, mid, t) for t in TARGETS}
    for t in TARGETS:
        _as_schema_1(app, mid, t)
    for t in TARGETS:
        now, was = _state(client, mid, t), before[t]
        assert now["bulk"]["schema"] == 2 and now["bulk"]["constants"] == was["bulk"]["constants"]
        assert now["bulk"]["base"] == was["bulk"]["base"]  # the stored header totals
        for a, b in zip(now["bulk"]["metrics"]["latency_ms"], was["bulk"]["metrics"]["latency_ms"], strict=True):
            assert a == pytest.approx(b, rel=1e-12, abs=1e-15)
        assert now["rec0"]["latency_ms"] == pytest.approx(was["rec0"]["latency_ms"], rel=1e-12, abs=1e-15)
        assert now["rec0"]["notes"] == was["rec0"]["notes"]
        assert now["ops"]["per_inference_ms"] == was["ops"]["per_inference_ms"]
        for a, b in zip(now["ops"]["ops"], was["ops"]["ops"], strict=True):
            assert a["latency_ms"] == pytest.approx(b["latency_ms"], rel=1e-12, abs=1e-15)
            assert a["share"] == pytest.approx(b["share"], rel=1e-9, abs=1e-15)
        assert [float(r["latency_ms"]) for r in now["csv"]] == pytest.approx(
            [float(r["latency_ms"]) for r in was["csv"]], rel=1e-12, abs=1e-15)
        # every preset's totals as the page computes them, and the solver's (from the stored solver table)
        for preset in [x["name"] for x in now["bulk"]["presets"]]:
            a, b = totals(now["bulk"], {}, preset, {}), totals(was["bulk"], {}, preset, {})
            assert a == pytest.approx(b, rel=1e-12), preset
        assert now["solve"]["start"] == pytest.approx(was["solve"]["start"], rel=1e-12)
        for prop in now["solve"]["proposals"] or [now["solve"]["closest"]]:
            per_op = _per_op(client, mid, t, list(prop["overrides"]))
            assert totals(now["bulk"], per_op, now["solve"]["model_wide"], prop["overrides"]) == pytest.approx(
                prop["totals"], rel=1e-12)
    # a saved analysis' diff against the unoptimized model reads the upgraded table too
    t = TARGETS[1]
    op = now["bulk"]["ops"][0]
    rec = now["rec0"]
    combo = next(x for x, ok in zip(rec["combos"], rec["supported"]) if ok and x != now["bulk"]["combos"][0][0])
    state = {"target": t, "model_wide": "fp32", "overrides": {op: combo}}
    a = client.post(f"/api/models/{mid}/analyses", json={"name": "op 0", "state": state})
    assert a.status_code == 201, a.get_json()
    diff = _get(client, f"/api/models/{mid}/analyses/{a.get_json()['id']}/diff")
    assert diff["before"] == totals(now["bulk"], {}, "fp32", {})
    assert diff["after"] == totals(now["bulk"], {op: rec}, "fp32", {op: combo})
