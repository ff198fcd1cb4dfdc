"""The published-measurement dataset (simulator/published/): every row parses and names its source."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulator import published
from simulator.profiles import list_profiles


# AI Hub's perf.yaml files, coremltools' optimization tables, the READMEs of the papers' official repos
# (iPhone 12 Core ML tables; SwiftFormer's iPhone 14), Apple's Core ML model cards on Hugging Face and Hugging Face's
# Core ML tutorial (A17 Pro).
SOURCES = ("github quic/ai-hub-models qai_hub_models/models/", "github apple/coremltools docs-guides/source/",
           "github apple/ml-mobileone README.md", "github apple/ml-fastvit README.md", "github THU-MIG/RepViT README.md",
           "github snap-research/EfficientFormer README.md", "huggingface apple/coreml-",
           "github huggingface/coreml-examples tutorials/", "github Amshaker/SwiftFormer README.md")


def test_every_row_parses_and_has_a_source() -> None:
    rows = published.load()
    assert len(rows) > 300
    archs = published.architectures()
    for r in rows:
        assert r.source and r.source.startswith(SOURCES), r
        assert "@" in r.source and len(r.source.split("@")[1].split(",")[0].strip()) == 40  # a commit
        assert r.latency_ms > 0 and r.model in archs
        assert r.input == archs[r.model].shape, r
        if r.layers is not None:
            assert r.layers["npu"] + r.layers["gpu"] + r.layers["cpu"] == r.layers["total"], r


def test_validation_models_are_marked_and_present_on_both_vendors() -> None:
    archs = published.architectures()
    val = {m for m, a in archs.items() if a.validation}
    assert val == {"mobilenet_v2", "resnet50", "MobileNetv2-1.0", "ResNet50"}
    chips = {(r.model, r.chip) for r in published.load()}
    assert {("mobilenet_v2", "snapdragon-8g3"), ("resnet50", "snapdragon-8g3"), ("MobileNetv2-1.0", "apple-a17"),
            ("ResNet50", "apple-a17")} <= chips


def test_a_row_without_a_source_is_refused(tmp_path: Path) -> None:
    with open(published.HERE / "coreml.csv", newline="") as f:
        row = next(csv.DictReader(f))
    bad = tmp_path / "bad.csv"
    with open(bad, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=published.COLUMNS)
        w.writeheader()
        w.writerow({**row, "source": " "})
    published.load([published.HERE / "coreml.csv"])  # the file itself loads
    with pytest.raises(published.DatasetError, match="no source"):
        published.load([bad])


def test_chips_with_rows_have_a_profile_or_are_reported_without_one() -> None:
    chips = {r.chip for r in published.load()}
    assert {"snapdragon-8g3", "apple-a17"} <= chips & set(list_profiles())


def test_a17_pro_has_three_families_besides_the_validation_models() -> None:
    """The A17 Pro's own rows (not the A16 stand-ins): MobileViTv2 and the Hugging Face cards' Depth Anything and
    DETR, at the input sizes their cards' apps feed them (non-square for Depth Anything)."""
    archs = published.architectures()
    a17 = [r for r in published.load() if r.chip == "apple-a17" and not archs[r.model].validation]
    assert {archs[r.model].family for r in a17} == {"mobilevit", "depth-anything", "detr"}
    depth = {r.model: r for r in a17 if archs[r.model].family == "depth-anything"}
    assert depth["DepthAnything-small"].input == (1, 3, 396, 518) and depth["DepthAnything-small"].latency_ms == 33.9
    assert depth["DepthAnythingV2-small"].input == (1, 3, 392, 518)
    assert archs["DepthAnything-small"].stem == "transformers-depth-anything-small-396x518"
    assert archs["ResNet50"].stem == "torchvision-resnet50-224"  # square sizes keep their cached files' names


def test_a15_rows_are_swiftformer_on_an_iphone_14() -> None:
    """SwiftFormer's README table (iPhone 14 = A15 Bionic): four fp16 rows of one family, timm's models."""
    archs = published.architectures()
    a15 = [r for r in published.load() if r.chip == "apple-a15"]
    assert sorted((r.model, r.latency_ms) for r in a15) == [("swiftformer_l1", 1.1), ("swiftformer_l3", 1.9),
                                                             ("swiftformer_s", 0.8), ("swiftformer_xs", 0.7)]
    assert {(r.device, r.precision, archs[r.model].family, archs[r.model].source) for r in a15} == {
        ("iPhone 14", "fp16", "swiftformer", "timm")}
    # Their chip's profile: the A17 Pro's structure (its rows use the A17 target's plans), the A15's 15.8 TOPS.
    assert "apple-a15" in list_profiles()
