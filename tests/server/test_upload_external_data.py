"""An ONNX model uploaded with its external data file (torch's dynamo exporter's default) is stored as one file; a
hostile or incomplete pair gets a 4xx that says what is wrong, and nothing is stored."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgescope.config import Settings
from tests.conftest import migrate, token_client

DATA = "model.onnx.data"


def _model(weights: int = 2, dims: tuple[int, ...] = (16, 3, 3, 3)) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(dims).astype(np.float32), f"w{i}") for i in range(weights)]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["y0"], name="conv0", pads=[1, 1, 1, 1])]
    nodes += [helper.make_node("Add", [f"y{i - 1}", f"w{i}"], [f"y{i}"], name=f"add{i}") for i in range(1, weights)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 3, 3])],
                          [helper.make_tensor_value_info(f"y{weights - 1}", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _pair(d: Path, **kw: int) -> tuple[Path, Path]:
    """model.onnx with every weight in model.onnx.data, as onnx.save writes them."""
    d.mkdir(parents=True, exist_ok=True)
    onnx.save(_model(**kw), d / "model.onnx", save_as_external_data=True, location=DATA, size_threshold=0)
    return d / "model.onnx", d / DATA


def _edit_entries(path: Path, **entries: str) -> None:
    """Rewrite the first weight's external data entries (location, offset, length) as a hostile file would."""
    m = onnx.load(path, load_external_data=False)
    t = m.graph.initializer[0]
    for e in t.external_data:
        if e.key in entries:
            e.value = entries.pop(e.key)
    for k, v in entries.items():
        t.external_data.add(key=k, value=v)
    path.write_bytes(m.SerializeToString())


def _post(client, model: Path, *data: tuple[str, bytes]) -> Any:
    form: dict = {"file": (io.BytesIO(model.read_bytes()), model.name)}
    if data:
        form["data"] = [(io.BytesIO(b), name) for name, b in data]
    return client.post("/api/models", data=form, content_type="multipart/form-data")


def _refused(r: Any, status: int, code: str) -> str:
    body = r.get_json()
    assert (r.status_code, body["code"]) == (status, code), body
    return body["error"]


def _count(client: Any) -> int:
    return len(client.get("/api/models").get_json()["models"])


def test_a_model_with_its_data_file_is_stored_as_one_file(client: Any, tmp_path: Path) -> None:
    model, data = _pair(tmp_path)
    r = _post(client, model, (DATA, data.read_bytes()))
    assert r.status_code == 201, r.get_json()
    body = r.get_json()
    stored = client.get(f"/api/models/{body['id']}/download").data
    one = onnx.load_from_string(stored)
    assert all(t.data_location == TensorProto.DEFAULT and not t.external_data for t in one.graph.initializer)
    want = onnx.load(model)  # onnx reads the data beside it: the same weights, bit for bit
    for got, ref in zip(one.graph.initializer, want.graph.initializer):
        assert np.array_equal(numpy_helper.to_array(got), numpy_helper.to_array(ref))
    assert body["size_bytes"] == len(stored) > data.stat().st_size
    assert body["name"] == "model.onnx"


def test_a_model_without_its_data_file_is_refused_naming_it(client: Any, tmp_path: Path) -> None:
    model, _ = _pair(tmp_path)
    msg = _refused(_post(client, model), 400, "missing_data_file")
    assert f"'{DATA}'" in msg and "external_data=False" in msg
    msg = _refused(_post(client, model, ("weights.bin", b"\0" * 64)), 400, "missing_data_file")
    assert f"'{DATA}'" in msg
    assert _count(client) == 0


def test_a_file_the_model_does_not_name_is_refused(client: Any, tmp_path: Path, zoo: Any) -> None:
    model, data = _pair(tmp_path)
    r = _post(client, model, (DATA, data.read_bytes()), ("notes.txt", b"hello"))
    msg = _refused(r, 400, "unused_data_file")
    assert "'notes.txt'" in msg and f"'{DATA}'" in msg
    msg = _refused(_post(client, zoo.path("tiny_cnn"), ("notes.txt", b"hello")), 400, "unused_data_file")
    assert "keeps all its weights inside" in msg
    assert _count(client) == 0


@pytest.mark.parametrize("location", ["../model.onnx.data", "/etc/passwd", "sub/model.onnx.data", "..", ""])
def test_a_location_outside_the_upload_is_refused(client: Any, tmp_path: Path, location: str) -> None:
    model, data = _pair(tmp_path)
    _edit_entries(model, location=location)
    msg = _refused(_post(client, model, (DATA, data.read_bytes())), 400, "bad_data_location")
    assert "plain file name" in msg
    assert _count(client) == 0


@pytest.mark.parametrize("name", ["../model.onnx.data", "a/b", "..", "c:\\x"])
def test_a_data_part_with_a_path_is_refused(client: Any, tmp_path: Path, name: str) -> None:
    model, data = _pair(tmp_path)
    _refused(_post(client, model, (name, data.read_bytes())), 400, "bad_data_name")


@pytest.mark.parametrize("entries,words", [
    ({"offset": "1000000"}, "which has"),  # past the end of the file
    ({"offset": "-8"}, "which has"),
    ({"length": "100"}, "takes 1728 bytes"),  # not the tensor's size
    ({"offset": "0x10"}, "whole number"),
])
def test_offsets_outside_the_file_or_of_the_wrong_size_are_refused(client: Any, tmp_path: Path, entries: dict,
                                                                    words: str) -> None:
    model, data = _pair(tmp_path)
    _edit_entries(model, **entries)
    msg = _refused(_post(client, model, (DATA, data.read_bytes())), 400, "bad_data_offset")
    assert words in msg and "'w0'" in msg
    assert _count(client) == 0


def test_a_range_named_over_and_over_is_refused_before_it_is_read(client: Any, tmp_path: Path) -> None:
    """2,100 weights all pointing at the same 1 MiB: 2.2 GB inside one file, over ONNX's limit (a bomb)."""
    m = _model(weights=1)
    m.graph.initializer.pop()
    for i in range(2100):  # the weights themselves are never made: entries only
        t = m.graph.initializer.add(name=f"big{i}", dims=[262144], data_type=TensorProto.FLOAT,
                                    data_location=TensorProto.EXTERNAL)
        for k, v in (("location", DATA), ("offset", "0"), ("length", str(262144 * 4))):
            t.external_data.add(key=k, value=v)
    model, data = tmp_path / "model.onnx", tmp_path / DATA
    model.write_bytes(m.SerializeToString())
    data.write_bytes(b"\0" * 262144 * 4)
    msg = _refused(_post(client, model, (DATA, data.read_bytes())), 413, "too_large")
    assert "2 GB" in msg
    assert _count(client) == 0


def test_the_pair_counts_against_the_upload_limit(tmp_path: Path, calibration_dir: Path) -> None:
    model, data = _pair(tmp_path / "m")
    limit = model.stat().st_size + data.stat().st_size - 1  # each file fits alone, the pair does not
    settings = Settings.from_env(env={}, data_dir=tmp_path / "d", calibration_dir=calibration_dir,
                                 max_upload_bytes=limit)
    migrate(settings.database_url)
    from server.app import create_app

    client = token_client(create_app(settings), "limit@example.com")
    msg = _refused(_post(client, model, (DATA, data.read_bytes())), 413, "too_large")
    assert f"{limit} bytes" in msg
    assert _count(client) == 0


def test_data_files_go_with_onnx_only_and_need_a_signed_in_user(app: Any, client: Any, tmp_path: Path) -> None:
    from testkit import tflite_builder

    tfl = tflite_builder.cnn(tmp_path / "cnn.tflite")
    msg = _refused(_post(client, tfl, ("cnn.data", b"\0" * 16)), 400, "unused_data_file")
    assert "ONNX model only" in msg
    model, data = _pair(tmp_path / "m")
    _refused(_post(app.test_client(), model, (DATA, data.read_bytes())), 401, "sign_in_required")
