"""Format detection on bytes (compiler/frontends/__init__.py: each format's `sniff`, magic numbers and protobuf
structure, no trial parsing): every head is claimed by exactly the format it is, whatever the file is named."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from compiler import frontends
from compiler.frontends import coreml, onnx as onnx_frontend, pt2, tflite
from compiler.graph import ModelFormatError

SNIFFERS = {"onnx": onnx_frontend.sniff, "tflite": tflite.sniff, "coreml": coreml.sniff, "pt2": pt2.sniff}


def onnx_head() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


# An .mlmodel starts like a protobuf too: specificationVersion (field 1 = 4), then a ModelDescription (field 2)
# whose first field is `input` (0x0a); an ONNX ModelProto's field 2 is the producer's name instead.
HEADS = {
    "onnx": onnx_head(),
    "tflite": (28).to_bytes(4, "little") + b"TFL3" + bytes(64),  # root table offset, then the file identifier
    "coreml": b"\x08\x04\x12\x20\x0a\x05input" + bytes(32),
    "pt2": b"PK\x03\x04" + bytes(26) + b"model/archive_format" + bytes(16),
}


@pytest.mark.parametrize("fmt", sorted(HEADS))
def test_each_head_is_claimed_by_its_own_format_only(fmt: str) -> None:
    claims = {name for name, sniff in SNIFFERS.items() if sniff(HEADS[fmt], "upload.bin")}
    assert claims == {fmt}


@pytest.mark.parametrize("fmt", sorted(HEADS))
def test_detect_names_the_format_of_a_misnamed_file(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "upload.bin"
    path.write_bytes(HEADS[fmt])
    assert frontends.detect(path) == fmt


def test_tflite_root_offset_must_be_aligned_and_past_the_identifier() -> None:
    assert not tflite.sniff((30).to_bytes(4, "little") + b"TFL3" + bytes(64), "m.tflite")
    assert not tflite.sniff((4).to_bytes(4, "little") + b"TFL3" + bytes(64), "m.tflite")


def test_onnx_structure_check_refuses_other_protobufs_and_bad_ir_versions() -> None:
    model = onnx.load_from_string(HEADS["onnx"])
    model.ir_version = 99
    assert not onnx_frontend.sniff(model.SerializeToString(), "m.onnx")
    assert not onnx_frontend.sniff(b"\x10\x01", "m.onnx")  # field 2 as a varint: not ModelProto's wire type


def test_a_zip_is_a_pt2_or_core_ml_package_by_its_entries_or_its_name() -> None:
    bare = b"PK\x03\x04" + bytes(64)
    assert not pt2.sniff(bare, "weights.zip") and not coreml.sniff(bare, "weights.zip")
    assert pt2.sniff(bare, "net.pt2") and coreml.sniff(bare, "net.mlpackage.zip")
    assert coreml.sniff(b"PK\x03\x04" + b"model.mlpackage/Manifest.json", "upload.zip")


def test_a_known_extension_with_foreign_bytes_says_so(tmp_path: Path) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(b"not a flatbuffer at all" * 4)
    with pytest.raises(ModelFormatError, match=r"named \.tflite but is not a valid TensorFlow Lite model"):
        frontends.detect(path)
