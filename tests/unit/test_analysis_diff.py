"""What changed between two states and what each change did (simulator/analysis_diff.py), on the totals rule's
hand-written table (a -> b -> c; presets fp32 and int8): figures followed on paper."""

from __future__ import annotations

import pytest

from simulator.analysis_diff import state_diff
from tests.unit.test_totals_rule import FP32_NW, INT8_NW, PER_OP, table


def test_changes_alone_and_together() -> None:
    before = {"model_wide": "fp32", "overrides": {}}
    after = {"model_wide": "int8", "overrides": {"b": FP32_NW}}
    d = state_diff(table(), PER_OP, before, after)  # type: ignore[arg-type]
    assert d["before"]["latency_ms"] == 3.25
    # int8 everywhere but b: 0.5 + 0.25 + 1.0, plus two conversions 0.03 + 0.02
    assert d["after"]["latency_ms"] == pytest.approx(1.8, rel=1e-12)
    assert d["delta"]["latency_ms"] == pytest.approx(1.8 - 3.25, rel=1e-12)
    assert [(c["kind"], c["op"], c["before"], c["after"]) for c in d["changes"]] == [
        ("model_wide", None, "fp32", "int8"), ("override", "b", None, FP32_NW)]
    # int8 alone: 0.5 + 0.125 + 1.0 (no conversion); b's fp32 override alone on fp32: nothing changes
    assert d["changes"][0]["alone"]["latency_ms"] == pytest.approx(1.625 - 3.25, rel=1e-12)
    assert d["changes"][0]["alone"]["size_bytes"] == -900.0  # weights 1200 -> 300
    assert d["changes"][1]["alone"]["latency_ms"] == 0.0
    # the two alone do not add up to the whole: the override's conversions only exist under int8
    together = d["changes"][0]["alone"]["latency_ms"] + d["changes"][1]["alone"]["latency_ms"]
    assert together != pytest.approx(d["delta"]["latency_ms"])
    assert d["evaluated"] == 2


def test_an_override_removed_or_changed_and_nothing_changed() -> None:
    before = {"model_wide": "int8", "overrides": {"b": FP32_NW}}
    d = state_diff(table(), PER_OP, before, {"model_wide": "int8", "overrides": {}})  # type: ignore[arg-type]
    assert [(c["op"], c["before"], c["after"]) for c in d["changes"]] == [("b", FP32_NW, None)]
    assert d["changes"][0]["alone"]["latency_ms"] == pytest.approx(1.625 - 1.8, rel=1e-12)
    d2 = state_diff(table(), PER_OP, before, {"model_wide": "int8", "overrides": {"b": INT8_NW}})  # type: ignore[arg-type]
    assert d2["changes"][0]["after"] == INT8_NW and d2["after"]["latency_ms"] == pytest.approx(1.625, rel=1e-12)
    same = state_diff(table(), PER_OP, before, before)  # type: ignore[arg-type]
    assert same["changes"] == [] and same["delta"]["latency_ms"] == 0.0
