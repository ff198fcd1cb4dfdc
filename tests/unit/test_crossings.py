"""Partition crossings under per-op overrides: the totals rule charges a crossing on each edge whose ends run
on different units in the current state (preset + overrides), as the bulk columns do for a preset alone."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.formats import BITS
from compiler.vocabulary.targets import get_target, list_targets
from simulator.profiles import load_profile
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, conv_chain, graph, weight

EP_TARGETS = ["ort-qnn/snapdragon-8g3", "ort-coreml/apple-a17", "ort-nnapi/pixel-8", "coreml/apple-a17"]
EL = 8 * 16 * 16  # elements of every activation below


def _three(middle: str) -> Graph:
    """x -> Conv -> <middle> -> Conv -> y, 8 channels of 16 x 16."""
    conv = lambda i, x, y: Node(f"conv{i}", f"conv{i}", "Conv", inputs=[x, f"w{i}"], outputs=[y],  # noqa: E731
                                attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]})
    return graph([conv(1, "x", "a"), Node("mid", "mid", middle, inputs=["a"], outputs=["b"]), conv(2, "b", "y")],
                 [act(v, [1, 8, 16, 16]) for v in ("x", "a", "b", "y")]
                 + [weight("w1", [8, 8, 3, 3]), weight("w2", [8, 8, 3, 3])], ["x"], ["y"])


def _without_crossings(b: dict[str, Any], per_op: Any, preset: str, overrides: dict[str, str]) -> tuple[float, float]:
    """(latency_ms, dram bytes) of the rule as it was before crossings: the per-inference term, chosen metrics
    plus conversions."""
    p = [x["name"] for x in b["presets"]].index(preset)
    lat, dram = b["constants"]["per_inference_ms"], 0.0
    fmt = []
    for i, op in enumerate(b["ops"]):
        if op in overrides:
            e = per_op[i]
            j = e["combos"].index(overrides[op])
            lat, dram = lat + e["latency_ms"][j], dram + e["dram_bytes"][j]
            fmt.append(overrides[op].split("/"))
        else:
            lat, dram = lat + b["metrics"]["latency_ms"][i][p], dram + b["metrics"]["dram_bytes"][i][p]
            fmt.append(b["combos"][i][p].split("/"))
    for s, d, el in zip(b["edges"]["src"], b["edges"]["dst"], b["edges"]["elements"]):
        a, z = fmt[s][1], fmt[d][0]
        if a != z:
            lat += b["conversion"]["fixed_ms"] + el * b["conversion"]["ms_per_element"][f"{a}>{z}"]
            dram += el * (BITS[a] + BITS[z]) / 8
    return lat, dram


def _dram(b: dict[str, Any], t: dict[str, float]) -> float:
    return t["memory_power_mw"] * t["latency_ms"] / 1e3 / 1e-9 / b["constants"]["dram_pj_per_byte"]


def _by_hand(target: str, producer_out: str) -> tuple[float, float]:
    """(ms, bytes) of one crossing of an EL-element activation, from the profile's own figures."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    moved = EL * BITS[producer_out] / 8 * 2
    return hw.partition_crossing_s * 1e3 + moved / hw.dram_bandwidth_bytes_per_s * 1e3, moved


def test_override_to_a_cpu_only_format_adds_two_crossings_and_overriding_back_removes_them() -> None:
    target = "ort-nnapi/pixel-8"
    r = sweep(_three("Relu"), target)
    b = r.bulk
    p = [x["name"] for x in b["presets"]].index("fp16")
    assert [row[p] for row in b["units"]] == ["gpu", "gpu", "gpu"]
    plain = totals(b, r.per_op, "fp16", {})
    # The NNAPI accelerator (gpu unit) has no int8 kernels: an int8 Relu falls back to the CPU EP.
    cpu_relu = {"mid": "int8/int8/-/0"}
    j = r.per_op[1]["combos"].index(cpu_relu["mid"])
    assert b["unit_names"][r.per_op[1]["unit"][j]] == "cpu"
    got = totals(b, r.per_op, "fp16", cpu_relu)
    lat0, dram0 = _without_crossings(b, r.per_op, "fp16", cpu_relu)
    in_ms, in_b = _by_hand(target, "fp16")  # conv1 (accelerator, writes fp16) -> Relu (CPU)
    out_ms, out_b = _by_hand(target, "int8")  # Relu (CPU, writes int8) -> conv2 (accelerator)
    assert in_ms == pytest.approx(0.1 + 2048 * 2 * 2 / 5.12e10 * 1e3, rel=1e-12)  # pixel-8.yaml figures
    assert got["latency_ms"] == pytest.approx(lat0 + in_ms + out_ms, rel=1e-12)
    assert _dram(b, got) == pytest.approx(dram0 + in_b + out_b, rel=1e-9)
    # Back onto the accelerator: the crossings go, and the totals are the preset's to the last digit.
    back = {"mid": b["combos"][1][p]}
    assert r.per_op[1]["unit"][r.per_op[1]["combos"].index(back["mid"])] == b["unit_names"].index("gpu")
    assert totals(b, r.per_op, "fp16", back) == plain


def test_override_that_joins_a_cpu_partition_removes_the_crossing_the_bulk_row_paid() -> None:
    target = "ort-nnapi/pixel-8"
    r = sweep(_three("NonMaxSuppression"), target)  # not in NNAPI's op list: on the CPU under every preset
    b = r.bulk
    p = [x["name"] for x in b["presets"]].index("fp16")
    assert [row[p] for row in b["units"]] == ["gpu", "cpu", "gpu"]
    # conv1 moved to the CPU (int8: no int8 kernels on the accelerator): the accelerator -> CPU crossing that
    # NonMaxSuppression's bulk row pays is taken off.
    on_cpu = {"conv1": "int8/int8/int8/0"}
    j = r.per_op[0]["combos"].index(on_cpu["conv1"])
    assert b["unit_names"][r.per_op[0]["unit"][j]] == "cpu"
    got = totals(b, r.per_op, "fp16", on_cpu)
    lat0, dram0 = _without_crossings(b, r.per_op, "fp16", on_cpu)
    paid_ms, paid_b = _by_hand(target, b["combos"][0][p].split("/")[1])
    assert got["latency_ms"] == pytest.approx(lat0 - paid_ms, rel=1e-12)
    assert _dram(b, got) == pytest.approx(dram0 - paid_b, rel=1e-9)
    # conv2 overridden to its own preset combo: its row pays no crossing, so the rule charges CPU -> HTP.
    same = {"conv2": b["combos"][2][p]}
    assert totals(b, r.per_op, "fp16", same)["latency_ms"] == pytest.approx(
        totals(b, r.per_op, "fp16", {})["latency_ms"], rel=1e-12)


@pytest.mark.parametrize("target,unit", [("ort-qnn/snapdragon-8g3", "htp"), ("coreml/apple-a17", "ane"),
                                         ("ort-coreml/apple-a17", "ane")])
def test_accelerators_that_lower_fp32_run_every_format_of_a_supported_op(target: str, unit: str) -> None:
    """HTP runs fp32 graphs at fp16 (enable_htp_fp16_precision) and the ANE computes fp16 only, so no activation
    format sends a supported op off the accelerator."""
    r = sweep(_three("Relu"), target)
    row = r.per_op[1]
    assert {r.bulk["unit_names"][u] for u in row["unit"]} == {unit}
    # (on the ANE the Relu after a conv also runs inside the conv's kernel: a second note follows)
    assert any(n.startswith(f"fp32/fp32/-/0: fp32 computed as fp16 on {unit}") for n in row["notes"])


def test_moving_the_middle_op_to_another_unit_pays_two_crossings() -> None:
    """NNAPI: a format the accelerator lacks (int8) sends the op to the CPU EP, with a crossing on each side."""
    target = "ort-nnapi/pixel-8"
    r = sweep(_three("Relu"), target)
    b = r.bulk
    pre = get_target(target).float_format
    p = [x["name"] for x in b["presets"]].index(pre)
    accel = {row[p] for row in b["units"]}
    assert len(accel) == 1 and "cpu" not in accel
    row = r.per_op[1]
    combo = next(c for c, u in zip(row["combos"], row["unit"]) if b["unit_names"][u] not in accel)
    got = totals(b, r.per_op, pre, {"mid": combo})
    lat0, _ = _without_crossings(b, r.per_op, pre, {"mid": combo})
    two = _by_hand(target, b["combos"][0][p].split("/")[1])[0] + _by_hand(target, combo.split("/")[1])[0]
    assert got["latency_ms"] == pytest.approx(lat0 + two, rel=1e-12)
    assert totals(b, r.per_op, pre, {"mid": b["combos"][1][p]}) == totals(b, r.per_op, pre, {})


def _graphs() -> list[Graph]:
    return [conv_chain(), _three("Relu"), _three("NonMaxSuppression")]


@pytest.mark.parametrize("target", list_targets())
def test_without_overrides_the_totals_are_the_bulk_columns_alone(target: str) -> None:
    """Regression: the crossing term changes nothing without overrides (the bulk columns already pay them)."""
    for g in _graphs():
        r = sweep(g, target)
        b = r.bulk
        for preset in [x["name"] for x in b["presets"]]:
            t = totals(b, r.per_op, preset, {})
            lat0, _ = _without_crossings(b, r.per_op, preset, {})
            assert t["latency_ms"] == lat0, (target, preset)


@pytest.mark.parametrize("target", EP_TARGETS + ["ort-xnnpack/rpi5", "litert/pixel-8"])
def test_overriding_every_op_with_its_preset_combo_keeps_the_preset_totals(target: str) -> None:
    """Per-op rows carry no crossings and bulk rows do: the rule must make up exactly the difference."""
    for g in _graphs():
        r = sweep(g, target)
        b = r.bulk
        for p, preset in enumerate(x["name"] for x in b["presets"]):
            every = {op: b["combos"][i][p] for i, op in enumerate(b["ops"])}
            assert all(r.per_op[i]["unit"][r.per_op[i]["combos"].index(c)] == b["unit_names"].index(b["units"][i][p])
                       for i, c in enumerate(every.values())), (target, preset)
            want, got = totals(b, r.per_op, preset, {}), totals(b, r.per_op, preset, every)
            # Where an op fell back, its override asks the exporter for the fallback: an ONNX file then
            # differs (QDQ around an op the runtime runs in float), so only the runtime figures must agree.
            fell_back = not all(row[p] for row in b["supported"])
            for k in want:
                if fell_back and k in ("size_bytes", "peak_memory_bytes"):
                    continue
                assert got[k] == pytest.approx(want[k], rel=1e-12), (target, preset, k)
