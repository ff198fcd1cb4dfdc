"""Upload -> ready -> results, end to end, on the embedded default and on Redis + PostgreSQL + S3
with a separate real Celery worker process."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from edgescope.config import Settings
from tests.conftest import FAST_PROFILE, REDIS_URL, ROOT, token_client


def _check_ready_results(get, model: dict) -> None:  # type: ignore[no-untyped-def]
    """The documented result documents exist and agree with each other."""
    assert model["status"] == "ready", model.get("error")
    assert model["progress"] == 100 and all(s["status"] == "done" for s in model["stages"])
    summary = model["summary"]
    host = next(t for t in summary["targets"] if t["target"] == "ort-cpu/host")
    assert host["measured"] is True and host["latency_ms"] > 0 and host["peak_memory_bytes"] > 0
    assert host["label"].startswith("measured: onnxruntime")

    ops = get(f"/api/models/{model['id']}/ops?target=ort-cpu/host")
    assert ops["measured"] is True and len(ops["ops"]) == summary["task_count"] > 0
    assert [o["index"] for o in ops["ops"]] == list(range(len(ops["ops"])))
    covered = {s for o in ops["ops"] for s in o["source_nodes"]}
    assert covered, "compiled tasks map back to source nodes"
    assert any(o["type"] in ("Conv", "FusedConv") and o["macs"] > 0 for o in ops["ops"])
    timed = [o for o in ops["ops"] if o["measured"]]
    assert timed and all(o["latency_ms"] >= 0 for o in timed)
    assert abs(sum(o["share"] for o in ops["ops"]) - 1.0) < 1e-6

    graph = get(f"/api/models/{model['id']}/graph")
    assert {n["id"] for n in graph["nodes"]} == {o["id"] for o in ops["ops"]}
    _check_columns_match(graph, get(f"/api/models/{model['id']}/graph?view=compiled&format=columns"))
    source = get(f"/api/models/{model['id']}/graph?view=source")
    assert len(source["nodes"]) == summary["source_op_count"]

    table = get(f"/api/models/{model['id']}/options")
    assert table["ops"] == [o["id"] for o in ops["ops"]]
    assert any(op.startswith("/") for op in table["ops"])  # ids like "/fc/Gemm" must route too
    for op in table["ops"]:
        one = get(f"/api/models/{model['id']}/ops/{requests.utils.quote(op, safe='')}/options")
        assert one["op"] == op and len(one["combos"]) >= 1


def _check_columns_match(graph: dict, cols: dict) -> None:
    """format=columns is the same graph as the default format, column by column, edges as node indices."""
    nodes = graph["nodes"]
    assert cols["view"] == graph["view"]
    for col, field in (("ids", "id"), ("names", "name"), ("types", "type"), ("namespaces", "namespace")):
        assert cols[col] == [n[field] for n in nodes], col
    assert len(cols["src"]) == len(cols["dst"]) == len(graph["edges"]) > 0
    assert [(cols["ids"][a], cols["ids"][b]) for a, b in zip(cols["src"], cols["dst"])] == \
        [(e["src"], e["dst"]) for e in graph["edges"]]


def test_embedded_default_end_to_end(live_server, zoo) -> None:  # type: ignore[no-untyped-def]
    def get(path: str) -> dict:
        r = live_server.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        return r.json()

    model = live_server.upload(zoo.path("tiny_cnn"))
    _check_ready_results(get, model)
    page = requests.get(model["url"], timeout=10)
    assert page.status_code == 200 and "<html" in page.text.lower()

    bad = live_server.get(f"/api/models/{model['id']}/graph?format=xml")
    assert bad.status_code == 400 and bad.json()["code"] == "bad_format"
    # A model analysed before the columns were stored: the server derives them from the stored graph.
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{live_server.data_dir / 'edgescope.db'}")
    with engine.begin() as c:
        gone = c.execute(sa.text("DELETE FROM artifacts WHERE model_id = :m AND kind = 'graph_columns'"),
                         {"m": model["id"]}).rowcount
    engine.dispose()
    assert gone >= 2  # the source view and each target's compiled view
    for view in ("compiled", "source"):
        _check_columns_match(get(f"/api/models/{model['id']}/graph?view={view}"),
                             get(f"/api/models/{model['id']}/graph?view={view}&format=columns"))


def test_bad_models_fail_with_reason_and_server_stays_up(live_server, zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = zoo.path("tiny_cnn").read_bytes()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(good[: len(good) // 2])
    # All three queued at once (the embedded worker runs them in order): the good one still runs after the failures.
    ids = [live_server.upload(p, wait=False)["id"] for p in (truncated, zoo.path("unknown_op"), zoo.path("tiny_cnn"))]
    m = live_server.wait(ids[0])
    assert m["status"] == "failed" and "truncated or corrupt" in m["error"]
    assert m["summary"] is None
    r = live_server.get(f"/api/models/{m['id']}/ops")
    assert r.status_code == 409 and "failed" in r.json()["error"]

    m = live_server.wait(ids[1])
    assert m["status"] == "failed" and "FooBar" in m["error"]

    # The same server goes on to analyse a good model.
    assert live_server.wait(ids[2])["status"] == "ready"


@pytest.mark.postgres
@pytest.mark.redis
def test_redis_postgres_s3_with_separate_worker(tmp_path: Path, postgres_url: str, s3_endpoint: str,
                                                s3_bucket: str, calibration_dir: Path, zoo) -> None:  # type: ignore[no-untyped-def]
    from server.app import create_app
    from store.db import upgrade

    env = {
        **FAST_PROFILE,
        "EDGESCOPE_EXPORT_CHECK": "1",  # the production default: the worker dry-runs the ONNX exporter
        "EDGESCOPE_DATABASE_URL": postgres_url,
        "EDGESCOPE_BROKER_URL": REDIS_URL,
        "EDGESCOPE_QUEUE": f"edgescope-test-{secrets.token_hex(4)}",
        "EDGESCOPE_BLOB_URL": f"s3://{s3_bucket}/blobs",
        "EDGESCOPE_S3_ENDPOINT_URL": s3_endpoint,
        "EDGESCOPE_DATA_DIR": str(tmp_path / "data"),
        "EDGESCOPE_CALIBRATION_DIR": str(calibration_dir),
    }
    settings = Settings.from_env(env=env)
    upgrade(settings.database_url)
    log = open(tmp_path / "worker.log", "wb")
    worker = subprocess.Popen([sys.executable, "-m", "edgescope", "worker", "--loglevel", "WARNING"],
                              env={**os.environ, **env}, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        client = token_client(create_app(settings), "bob@example.com")

        def get(path: str) -> dict:
            r = client.get(path)
            assert r.status_code == 200, (path, r.get_data(as_text=True)[:300])
            return r.get_json()

        with open(zoo.path("tiny_cnn"), "rb") as f:
            r = client.post("/api/models", data={"file": (f, "tiny.onnx")}, content_type="multipart/form-data")
        assert r.status_code == 201
        model_id = r.get_json()["id"]
        deadline = time.monotonic() + 300
        while (m := get(f"/api/models/{model_id}"))["status"] not in ("ready", "failed"):
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-2000:]
            assert time.monotonic() < deadline, f"still {m['status']} {m['stage']}"
            time.sleep(0.1)
        _check_ready_results(get, m)
        # The results really are in S3, not on local disk.
        import boto3

        keys = [o["Key"] for o in boto3.client("s3", endpoint_url=s3_endpoint)
                .list_objects_v2(Bucket=s3_bucket, Prefix=f"blobs/models/{model_id}/")["Contents"]]
        assert any(k.endswith("ops.json.gz") for k in keys) and any("/upload/" in k for k in keys)
    finally:
        worker.terminate()
        worker.wait(30)


def test_input_overrides_through_the_api(live_server, zoo) -> None:  # type: ignore[no-untyped-def]
    m = live_server.upload(zoo.path("dynamic_dims"), inputs={"input_ids": [2, 24]})
    assert m["status"] == "ready", m["error"]
    # The same symbolic dims (batch, seq) take the same sizes on every input.
    assert m["summary"]["inputs"] == {"input_ids": [2, 24], "mask": [2, 24]}
    assert m["input_shapes"] == {"input_ids": [2, 24]}
    m = live_server.upload(zoo.path("dynamic_dims"), inputs={"nope": [1, 2]})
    assert m["status"] == "failed" and "nope" in m["error"]


def test_pt2_upload_with_sources(live_server, zoo) -> None:  # type: ignore[no-untyped-def]
    """A .pt2 saved by export-pt2: compiled and profiled through ONNX, its source files browsable."""
    m = live_server.upload(zoo.path("pt2_net_with_sources"), targets=["ort-cpu/host"])
    assert m["format"] == "pt2" and m["status"] == "ready", m["error"]
    ops = live_server.get(f"/api/models/{m['id']}/ops").json()["ops"]
    assert ops and all(o["source_nodes"] for o in ops if o["measured"])
    # Each task points back to the user's code through its source nodes.
    located = [o for o in ops if o["locations"]]
    assert located and all(loc["line"] > 0 and loc["file"] for o in located for loc in o["locations"])
    files = live_server.get(f"/api/models/{m['id']}/sources").json()["files"]
    assert {loc["file"] for o in located for loc in o["locations"]} & {f["path"] for f in files}
    assert files and all(f["bytes"] > 0 for f in files)
    text = live_server.get(f"/api/models/{m['id']}/sources/{files[0]['path']}").json()["text"]
    assert "nn.Module" in text or "def " in text
    assert live_server.get(f"/api/models/{m['id']}/sources/../../etc/passwd").status_code == 404


def test_tflite_upload_measured_on_litert(live_server, zoo) -> None:  # type: ignore[no-untyped-def]
    """A .tflite: measured on LiteRT here, whole model and per op (LiteRT's profiler), and labelled so."""
    m = live_server.upload(zoo.path("tflite_cnn"))
    assert m["format"] == "tflite" and m["status"] == "ready", m["error"]
    assert m["targets"][0] == "litert-cpu/host"
    host = m["summary"]["targets"][0]
    assert host["measured"] is True and host["latency_ms"] > 0 and "LiteRT's profiler" in host["label"]
    ops = {o["id"]: o for o in live_server.get("/api/models/{}/ops".format(m["id"])).json()["ops"]}
    # Every operator measured but the DEQUANTIZE of a constant weight, which LiteRT runs once at prepare.
    assert [i for i, o in ops.items() if not o["measured"]] == ["DEQUANTIZE_5"]
    assert ops["DEPTHWISE_CONV_2D_1"]["kernels"] == ["Convolution (NHWC, F32) DWConv"]
    table = live_server.get("/api/models/{}/options".format(m["id"])).json()
    assert table["label"]["baseline"] == "measured"


def test_coreml_upload_predicted(live_server, zoo) -> None:  # type: ignore[no-untyped-def]
    """A zipped .mlpackage: read on Linux, predicted on the Apple profile (Core ML does not run here)."""
    m = live_server.upload(zoo.path("coreml_cnn_mlpackage_zip"))
    assert m["format"] == "coreml" and m["status"] == "ready", m["error"]
    (apple,) = m["summary"]["targets"]
    assert apple["target"] == "coreml/apple-a17" and apple["measured"] is False and apple["latency_ms"] > 0
    ops = live_server.get("/api/models/{}/ops".format(m["id"])).json()["ops"]
    assert any((o["macs"] or 0) > 0 for o in ops)  # convs are costed, not zero
