"""Format detection and user-facing errors for unreadable files."""

from __future__ import annotations

import os
import shutil

import pytest

from compiler import frontends
from compiler.frontends import onnx as onnx_frontend
from compiler.graph import ModelFormatError


def test_sniff_onnx_by_structure(zoo) -> None:
    head = zoo.path("tiny_cnn").read_bytes()[:4096]
    assert onnx_frontend.sniff(head, "anything.bin")
    assert not onnx_frontend.sniff(b"TFL3" + bytes(100), "m.onnx")
    assert not onnx_frontend.sniff(b"PK\x03\x04" + bytes(100), "m.onnx")  # zip (Core ML package, .pt)


def test_detect_misnamed_onnx(tmp_path, zoo) -> None:
    path = tmp_path / "model.bin"
    shutil.copy(zoo.path("tiny_cnn"), path)
    assert frontends.detect(path) == "onnx"
    assert frontends.load(path).nodes[0].op_type == "Conv"


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_named_onnx(tmp_path, seed) -> None:
    path = tmp_path / "random.onnx"
    path.write_bytes(os.urandom(2000 + seed))
    with pytest.raises(ModelFormatError, match="not a valid ONNX model|truncated or corrupt"):
        frontends.load(path)


def test_random_bytes_unknown_extension(tmp_path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello, this is not a model\n" * 10)
    with pytest.raises(ModelFormatError, match=r"supported formats: ONNX \(\.onnx\)"):
        frontends.load(path)


def test_empty_file(tmp_path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(ModelFormatError, match="empty"):
        frontends.load(path)


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.99])
def test_truncated_protobuf(tmp_path, zoo, fraction) -> None:
    data = zoo.path("mobilenet_v2_like").read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: int(len(data) * fraction)])
    assert frontends.detect(path) == "onnx"  # the head still looks like ONNX ...
    with pytest.raises(ModelFormatError, match="truncated or corrupt"):  # ... the body does not
        frontends.load(path)


def test_empty_tflite_says_what_is_missing(tmp_path) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(64))
    assert frontends.detect(path) == "tflite"
    with pytest.raises(ModelFormatError, match="contains no subgraph"):
        frontends.load(path)


def test_override(tmp_path, zoo) -> None:
    assert frontends.detect(zoo.path("tiny_cnn"), override="ONNX") == "onnx"
    with pytest.raises(ModelFormatError, match="unknown format 'keras'"):
        frontends.detect(zoo.path("tiny_cnn"), override="keras")


def test_registry_is_data() -> None:
    names = [f.name for f in frontends.FORMATS]
    assert names[0] == "onnx" and {"tflite", "coreml", "pt2"} <= set(names)
    assert [f.name for f in frontends.supported()] == ["onnx", "tflite", "coreml", "pt2"]
