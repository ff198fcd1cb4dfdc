"""Blob stores: local directory and S3 over HTTP (moto's standalone server) behave the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.blobs import BlobNotFound, LocalBlobStore, S3BlobStore, local_copy, open_blob_store
from store.packed import pack, read_record


def _exercise(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "in.bin"
    src.write_bytes(b"0123456789" * 1000)
    assert store.put_file("models/a/upload/m.onnx", src) == 10_000
    assert store.exists("models/a/upload/m.onnx")
    assert store.get_range("models/a/upload/m.onnx", 5, 7) == b"5678901"
    store.put_bytes("models/a/targets/ort-cpu/host/ops.json.gz", b"{}")
    assert store.get_bytes("models/a/targets/ort-cpu/host/ops.json.gz") == b"{}"
    with local_copy(store, "models/a/upload/m.onnx", ".onnx") as p:
        assert p.read_bytes() == src.read_bytes() and p.suffix == ".onnx"
    blob, offsets = pack([{"op": i, "v": [i] * i} for i in range(50)])
    store.put_bytes("models/a/pack", blob)
    assert read_record(store, "models/a/pack", offsets, 37) == {"op": 37, "v": [37] * 37}
    store.delete("models/a/pack")
    store.delete("models/a/pack")  # gone already: no error
    assert not store.exists("models/a/pack") and store.exists("models/a/upload/m.onnx")
    store.delete_prefix("models/a")
    assert not store.exists("models/a/upload/m.onnx")
    with pytest.raises(BlobNotFound):
        store.get_bytes("models/a/upload/m.onnx")
    for bad in ("../etc/passwd", "/abs", "a//b", "a/./b", ""):
        with pytest.raises(ValueError):
            store.put_bytes(bad, b"x")


def test_local_store(tmp_path: Path) -> None:
    _exercise(LocalBlobStore(tmp_path / "blobs"), tmp_path)


def test_s3_store_over_http(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    store = open_blob_store(f"s3://{s3_bucket}/edgescope/prefix", s3_endpoint)
    assert isinstance(store, S3BlobStore)
    _exercise(store, tmp_path)


def test_unknown_scheme_lists_known_ones() -> None:
    with pytest.raises(ValueError, match="file://, s3://"):
        open_blob_store("ftp://host/x")
    with pytest.raises(ValueError, match="names no bucket"):
        open_blob_store("s3:///prefix")
