"""TFLite, Core ML and .pt2 graphs through the sweep: ONNX-vocabulary costing, default targets, and a
whole-model-only measurement (LiteRT) scaling the predicted per-op latencies."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import frontends
from compiler.profile import Profile
from compiler.vocabulary.targets import default_targets, get_target
from simulator.costs import WEIGHTED_KINDS
from simulator.sweep import sweep
from simulator.totals import totals
from testkit import modelzoo


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    d = tmp_path_factory.mktemp("formats")
    return {
        "tflite_cnn": frontends.load(modelzoo.tflite_cnn(d / "cnn.tflite")),
        "tflite_block": frontends.load(modelzoo.tflite_transformer_block(d / "block.tflite")),
        "coreml_cnn": frontends.load(modelzoo.coreml_cnn_mlpackage_zip(d / "cnn.mlpackage.zip")),
        "pt2": frontends.load(modelzoo.pt2_net_with_sources(d / "net.pt2")),
    }


def test_litert_cpu_host_target_and_defaults() -> None:
    t = get_target("litert-cpu/host")
    assert (t.backend, t.profile, t.float_format, t.measurable) == ("litert-cpu", "host-cpu", "fp32", True)
    assert default_targets("tflite") == ["litert-cpu/host", "litert/pixel-8"]
    assert default_targets("coreml") == ["coreml/apple-a17"]
    assert default_targets("pt2")[:2] == ["ort-cpu/host", "coreml/apple-a17"]


# (model, target, hand-computed MACs of the model's conv / matmul ops)
CASES = [
    # CONV_2D 3->16 3x3 s2 on 32x32 (16x16x16 out x 27) + depthwise 3x3 (4096 x 9) + 1x1 16->16 (4096 x 16)
    # + FULLY_CONNECTED 16->10 (its int8 weight through DEQUANTIZE, folded at load).
    ("tflite_cnn", "litert/pixel-8", 4096 * 27 + 4096 * 9 + 4096 * 16 + 160),
    # 6 FULLY_CONNECTED 32x32 on 16 tokens + QK^T and AV (16 x 16 x 32 each).
    ("tflite_block", "litert-cpu/host", 6 * 16 * 32 * 32 + 2 * 16 * 16 * 32),
    ("coreml_cnn", "coreml/apple-a17", None),
    ("pt2", "coreml/apple-a17", None),
]


@pytest.mark.parametrize("model,target,macs", CASES)
def test_non_onnx_graphs_are_costed_in_onnx_terms(models: dict, model: str, target: str, macs: int | None) -> None:
    g = models[model]
    r = sweep(g, target)
    assert r.bulk["ops"] == [n.id for n in g.nodes]  # ids unchanged by the view
    heavy = [w for w in r.works if w.kind in WEIGHTED_KINDS or w.kind == "matmul"]
    assert heavy and all(w.macs > 0 for w in heavy), [(w.kind, w.macs) for w in r.works]
    if macs is not None:
        assert sum(w.macs for w in r.works) == macs
    fp32 = totals(r.bulk, r.per_op, "fp32", {})
    assert 0 < fp32["latency_ms"] < 50 and fp32["size_bytes"] > 0
    # Weighted ops carry their kernels: fp16 halves the weight bytes of a float model.
    if get_target(target).float_format == "fp32":
        half = totals(r.bulk, r.per_op, "fp16", {})
        assert half["size_bytes"] < fp32["size_bytes"]


def _litert_profile(latency_ms: float) -> Profile:
    return Profile(target="litert-cpu/host", runtime="ai-edge-litert test; per-op not measured", device="cpu",
                   threads=1, runs=20, warmup=3, latency_ms=latency_ms, latency_p90_ms=latency_ms * 1.1,
                   peak_memory_bytes=0, input_shapes={}, tasks={})


def test_whole_model_measurement_scales_per_op_predictions(models: dict) -> None:
    g = models["tflite_cnn"]
    pred = sweep(g, "litert-cpu/host")
    assert pred.bulk["label"]["baseline"] == "predicted"
    base = totals(pred.bulk, pred.per_op, "fp32", {})["latency_ms"]
    r = sweep(g, "litert-cpu/host", _litert_profile(3 * base))
    lab = r.bulk["label"]
    assert lab["baseline"] == "predicted, scaled to measured total" and lab["scale"] == pytest.approx(3.0)
    assert lab["measured_runtime"].startswith("ai-edge-litert")
    got = totals(r.bulk, r.per_op, "fp32", {})
    assert got["latency_ms"] == pytest.approx(3 * base, rel=1e-9)
    assert r.bulk["base"]["latency_ms"] == pytest.approx(3 * base, rel=1e-9)
    # Options and per-op rows keep their predicted ratio to fp32; conversions scale alike.
    for preset in ("int8-static", "fp16"):
        assert totals(r.bulk, r.per_op, preset, {})["latency_ms"] == pytest.approx(
            3 * totals(pred.bulk, pred.per_op, preset, {})["latency_ms"], rel=1e-9)
    assert r.per_op[0]["latency_ms"][5] == pytest.approx(3 * pred.per_op[0]["latency_ms"][5], rel=1e-12)
    # A profile of another target, or one with per-task timings, does not scale.
    other = _litert_profile(3 * base)
    other.target = "ort-cpu/host"
    assert sweep(g, "litert-cpu/host", other).bulk["label"]["baseline"] == "predicted"


def test_held_out_error_is_cited_only_for_its_target(models: dict, tmp_path: Path) -> None:
    from simulator.profiles import load_profile

    hw = load_profile("host-cpu").with_overrides({"error_pct_median": 6.5, "error_models": 8,
                                                  "error_target": "ort-cpu/host"})
    g = models["tflite_cnn"]
    assert sweep(g, "ort-cpu/host", hardware=hw).bulk["label"]["error_pct_median"] == 6.5
    lab = sweep(g, "litert-cpu/host", hardware=hw).bulk["label"]
    assert lab["error_pct_median"] is None and lab["error_models"] == 0


def test_label_text_says_when_per_op_figures_are_scaled() -> None:
    from simulator.predict import label_text

    lab = {"profile": "host-cpu", "calibrated": True, "error_pct_median": None, "error_models": 0,
           "baseline": "predicted, scaled to measured total", "measured_runtime": "ai-edge-litert 2.3.0"}
    assert "scaled to the measured total (ai-edge-litert 2.3.0)" in label_text(lab)
    assert "not measured yet" not in label_text(lab)
    assert "median error 9.8% on 8 held-out models" in label_text(
        {**lab, "baseline": "measured", "error_pct_median": 9.8, "error_models": 8})
