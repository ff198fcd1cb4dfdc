"""Export an optimized model through the API: built by the worker, measured in the sandbox, downloadable."""

from __future__ import annotations

import time
from pathlib import Path

import onnxruntime as ort


def _wait_export(live_server, mid: str, eid: str, timeout_s: float = 300) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while (e := live_server.get(f"/api/models/{mid}/exports/{eid}").json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, e
        time.sleep(0.3)
    return e


def test_export_int8_predicted_vs_measured(live_server, zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    m = live_server.upload(zoo.path("mobilenet_v2_like"), targets=["ort-cpu/host"])
    assert m["status"] == "ready", m["error"]
    mid = m["id"]
    first_op = live_server.get(f"/api/models/{mid}/ops").json()["ops"][0]["id"]
    state = {"target": "ort-cpu/host", "model_wide": "int8-dynamic", "overrides": {first_op: "fp32/fp32/fp32/0"}}
    r = live_server.http.post(f"{live_server.url}/api/models/{mid}/exports", json={"state": state}, timeout=30)
    assert r.status_code == 202, r.text
    e = _wait_export(live_server, mid, r.json()["id"])
    assert e["status"] == "ready", e["error"]
    assert e["predicted"]["label"].startswith("predicted") and e["measured"]["label"].startswith("measured")
    assert e["measured"]["latency_ms"] > 0 and e["predicted"]["latency_ms"] > 0
    # What the UI predicted for the file size is what was written, within 2%.
    assert abs(e["predicted"]["size_bytes"] / e["size_bytes"] - 1) < 0.02
    data = live_server.get(e["download_url"]).content
    assert len(data) == e["size_bytes"]
    out = tmp_path / e["filename"]
    out.write_bytes(data)
    ops = {n.op_type for n in __import__("onnx").load(str(out)).graph.node}
    assert ops & {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "DynamicQuantizeMatMul"}
    ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])  # loads and runs on ORT
    listed = live_server.get(f"/api/models/{mid}/exports").json()["exports"]
    assert [x["id"] for x in listed] == [e["id"]]


def test_export_rejects_bad_state(live_server, zoo) -> None:  # type: ignore[no-untyped-def]
    m = live_server.upload(zoo.path("tiny_cnn"), targets=["ort-cpu/host"])
    post = lambda body: live_server.http.post(f"{live_server.url}/api/models/{m['id']}/exports", json=body, timeout=30)  # noqa: E731
    r = post({"state": {"model_wide": "int7"}})
    assert r.status_code == 400 and "int7" in r.json()["error"]
    r = post({"state": {"target": "coreml/apple-a17"}})
    assert r.status_code == 400
    assert live_server.get(f"/api/models/{m['id']}/exports/nope").status_code == 404
