"""Core ML frontend (.mlpackage zips and .mlmodel via coremltools' protobuf) and safe zip reading."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from compiler import frontends
from compiler.frontends import archive, coreml
from compiler.graph import ModelFormatError
from testkit import coreml_builder as cb


def test_mlprogram_cnn(cnn_zip: Path) -> None:
    assert frontends.detect(cnn_zip) == "coreml"
    g = frontends.load(cnn_zip)
    assert g.format == "coreml" and g.metadata["model_type"] == "mlProgram"
    assert [n.op_type for n in g.nodes] == ["conv", "relu", "conv", "reduce_mean", "linear"]
    stem, dw = g.nodes[0], g.nodes[2]
    assert stem.attributes["strides"] == [2, 2] and stem.attributes["pad"] == [1, 1, 1, 1]
    assert dw.attributes["groups"] == 16
    assert g.inputs == ["x"] and g.values["x"].shape == [1, 3, 32, 32]
    assert g.values[stem.outputs[0]].shape == [1, 16, 16, 16]
    # BN was folded into the stem conv by coremltools; weights come from weights/weight.bin.
    assert stem.inputs[0] == "x" and stem.attributes["input_params"] == ["x", "weight", "bias"]
    w = g.weights_of(stem)[0]
    assert w.shape == [16, 3, 3, 3] and w.dtype == "float16" and w.weight is not None
    assert w.weight.elements == 432 and w.weight.bytes == 864 and w.weight.min < 0 < w.weight.max
    head = g.weights_of(g.nodes[4])
    ref = cb.SmallCnn.build()[0].head.weight.detach().numpy()
    hw = next(v for v in head if v.shape == [10, 16])
    assert hw.weight.max == pytest.approx(float(ref.max()), abs=1e-3)  # fp16 of the torch weight
    assert len(g.edges()) == 4


def test_mlprogram_transformer_block(block_zip: Path) -> None:
    g = coreml.load(block_zip)
    ops = {n.op_type for n in g.nodes}
    assert {"layer_norm", "linear", "matmul", "softmax", "gelu"} <= ops
    assert sum(n.op_type == "linear" for n in g.nodes) == 4
    assert g.weight_bytes > 2 * (32 * 96 + 32 * 32 + 2 * 32 * 64)  # fp16 weights of the four linears


def test_neuralnetwork_mlmodel(nn_mlmodel: Path) -> None:
    assert frontends.detect(nn_mlmodel) == "coreml"
    g = frontends.load(nn_mlmodel)
    assert g.metadata["model_type"] == "neuralNetwork"
    assert [n.op_type for n in g.nodes] == ["convolution", "activation", "convolution", "reduceMean", "innerProduct"]
    assert g.nodes[2].attributes["nGroups"] == 16
    w = g.weights_of(g.nodes[0])[0]
    ref = cb.expected_stem_weight()
    assert w.weight is not None and w.weight.elements == ref.size  # BN folded, same element count


def test_onnx_still_detected_as_onnx(tmp_path: Path) -> None:
    from testkit import modelzoo

    assert frontends.detect(modelzoo.tiny_cnn(tmp_path / "m.onnx")) == "onnx"


def test_truncated_mlmodel(nn_mlmodel: Path, tmp_path: Path) -> None:
    p = tmp_path / "cut.mlmodel"
    p.write_bytes(nn_mlmodel.read_bytes()[:300])
    with pytest.raises(ModelFormatError, match="truncated or corrupt"):
        frontends.load(p)


def test_missing_weights_file(cnn_zip: Path, tmp_path: Path) -> None:
    out = tmp_path / "noweights.mlpackage.zip"
    with zipfile.ZipFile(cnn_zip) as src, zipfile.ZipFile(out, "w") as dst:
        for i in src.infolist():
            if not i.filename.endswith("weight.bin"):
                dst.writestr(i, src.read(i))
    with pytest.raises(ModelFormatError, match="weight.bin"):
        frontends.load(out)


# -- hostile zips ---------------------------------------------------------------------------------

def _zip_with(path: Path, name: str, data: bytes = b"x", mode: int | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("m.mlpackage/Manifest.json", "{}")
        info = zipfile.ZipInfo(name)
        if mode is not None:
            info.external_attr = mode << 16
        z.writestr(info, data)
    return path


@pytest.mark.parametrize("name", ["../evil.py", "m.mlpackage/../../evil.py", "/etc/evil", "C:/evil", "a\\..\\evil"])
def test_zip_unsafe_paths(tmp_path: Path, name: str) -> None:
    p = _zip_with(tmp_path / "bad.mlpackage.zip", name)
    with pytest.raises(ModelFormatError, match="unsafe path"):
        frontends.load(p)
    with pytest.raises(ModelFormatError, match="unsafe path"):
        archive.extract(p, tmp_path / "out")
    assert not (tmp_path / "evil.py").exists() and not (tmp_path.parent / "evil.py").exists()


def test_zip_symlink(tmp_path: Path) -> None:
    p = _zip_with(tmp_path / "link.mlpackage.zip", "m.mlpackage/Data/x", b"/etc/passwd", stat.S_IFLNK | 0o777)
    with pytest.raises(ModelFormatError, match="symbolic link"):
        coreml.load(p)


def test_zip_bomb(tmp_path: Path) -> None:
    p = tmp_path / "bomb.mlpackage.zip"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("m.mlpackage/Manifest.json", "{}")
        with z.open("m.mlpackage/Data/com.apple.CoreML/weights/weight.bin", "w") as fh:
            zeros = bytes(1 << 20)
            for _ in range(64):  # 64 MiB of zeros, ~64 KiB compressed
                fh.write(zeros)
    assert p.stat().st_size < 1 << 20
    with pytest.raises(ModelFormatError, match="zip bomb"):
        frontends.load(p)
    # The total-size limit on its own (ratio allowed): a small cap refuses the same archive.
    with pytest.raises(ModelFormatError, match="unpacks to more than"):
        archive.SafeZip(p, archive.ZipLimits(max_total_bytes=1 << 20, max_ratio=1e9))


def test_safe_extract_writes_inside_dest(cnn_zip: Path, tmp_path: Path) -> None:
    out = archive.extract(cnn_zip, tmp_path / "x")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert any(f.endswith("Data/com.apple.CoreML/model.mlmodel") for f in files)
    assert all(not f.startswith("..") for f in files)


def test_package_zipped_without_top_folder(cnn_zip: Path, tmp_path: Path) -> None:
    # "Compress" on the package's contents instead of the folder: Manifest.json at the zip root.
    out = tmp_path / "flat.zip"
    with zipfile.ZipFile(cnn_zip) as src, zipfile.ZipFile(out, "w") as dst:
        for i in src.infolist():
            dst.writestr(i.filename.split("/", 1)[1], src.read(i))
    assert frontends.detect(out) == "coreml"
    assert [n.op_type for n in frontends.load(out).nodes] == ["conv", "relu", "conv", "reduce_mean", "linear"]
