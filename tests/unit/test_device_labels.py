"""Device labels carry the held-out error the device fit wrote (simulator/published/heldout.json), as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.vocabulary.targets import get_target, list_targets
from simulator import published
from simulator.predict import label_text
from simulator.sweep import sweep
from tests.simulator.helpers import conv_chain


@pytest.fixture()
def heldout_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "heldout.json"
    monkeypatch.setattr(published, "HELDOUT_PATH", path)
    published.heldout.cache_clear()
    yield path
    published.heldout.cache_clear()


def test_a_fitted_device_label_shows_its_cross_validated_error(heldout_file: Path) -> None:
    heldout_file.write_text(json.dumps({"ort-qnn/snapdragon-8g3": {
        "kind": "leave-one-family-out", "median_pct": 12.3, "within25_pct": 84.0, "n_points": 50, "n_models": 26,
        "families": 15, "placement": {"agree": 48, "n": 52}}}))
    lab = sweep(conv_chain(), "ort-qnn/snapdragon-8g3").bulk["label"]
    assert lab["error_pct_median"] == 12.3 and lab["error_models"] == 26 and lab["heldout"]["n_points"] == 50
    assert lab["text"] == label_text(lab)
    assert "held-out error median 12%, 84% within ±25% (n=50 points, 26 models; leave-one-family-out" in lab["text"]
    assert "placement as published on 48/52" in lab["text"]
    assert "error unknown" not in lab["text"]


def test_a_device_fitted_on_validation_models_only_says_so(heldout_file: Path) -> None:
    heldout_file.write_text(json.dumps({"coreml/apple-a17": {
        "kind": "validation models only", "median_pct": 18.0, "within25_pct": 67.0, "n_points": 6, "n_models": 2,
        "families": 1, "placement": {"agree": 0, "n": 0}}}))
    text = sweep(conv_chain(), "coreml/apple-a17").bulk["label"]["text"]
    assert "held-out error median 18%, 67% within ±25% (n=6 points, 2 models; on validation models" in text
    assert "too few published families" in text
    assert "placement" not in text


def test_a_device_not_refitted_on_its_families_says_why(heldout_file: Path) -> None:
    heldout_file.write_text(json.dumps({"coreml/apple-a17": {
        "kind": "validation models only", "median_pct": 21.6, "within25_pct": 53.8, "n_points": 13, "n_models": 2,
        "families": 4, "refit": False, "placement": {"agree": 0, "n": 0}}}))
    text = sweep(conv_chain(), "coreml/apple-a17").bulk["label"]["text"]
    assert "(n=13 points, 2 models; on validation models never fitted; the profile is not refitted" in text
    assert "too few published families" not in text


@pytest.mark.parametrize("target", ["ort-xnnpack/rpi5", "litert/pixel-8", "ort-nnapi/pixel-8", "ort-coreml/apple-a17"])
def test_a_device_without_public_data_says_its_error_is_unknown(heldout_file: Path, target: str) -> None:
    # Nor has the written file an entry for them (README: no public measurements of these runtimes).
    assert target not in json.loads((published.HERE / "heldout.json").read_text())
    heldout_file.write_text("{}")
    lab = sweep(conv_chain(), target).bulk["label"]
    assert lab["heldout"] is None and lab["error_pct_median"] is None
    assert "error unknown (no published measurements of this target" in lab["text"]


def test_the_written_heldout_file_names_real_targets_and_reaches_their_labels() -> None:
    published.heldout.cache_clear()
    held = published.heldout_all()
    assert held, "benchmarks/device_fit.py --write has not been run"
    for target, h in held.items():
        assert not get_target(target).measurable and target in list_targets()
        assert h["n_points"] > 0 and 0 <= h["within25_pct"] <= 100
        lab = sweep(conv_chain(), target).bulk["label"]
        assert lab["heldout"] == h
        assert f"held-out error median {h['median_pct']:.0f}%" in lab["text"]
