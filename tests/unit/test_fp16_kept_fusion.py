"""Under fp16 on ORT's x86 CPU EP, a Conv's fused activation without an fp16 kernel (Relu) runs fp32 between Casts
like the Conv, the Cast pair between them cancels and ORT fuses them again (ort_fp16.FP16_FUSION_KEPT); a Clip has
an fp16 kernel, stays fp16 behind a real Cast, and the Conv loses its fusion (its own pass, reorders both sides)."""

from __future__ import annotations

from compiler.graph import Node
from compiler.vocabulary.targets import get_target
from simulator.backends import task_facts
from simulator.ort_fp16 import FP16_FUSION_KEPT
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")


def _nchwc_conv(activation: str):  # type: ignore[no-untyped-def]
    # a depthwise 3x3 (MobileNetV2's): little arithmetic per element, so the lost fusion's passes show
    node = Node("c", "c", "Conv", inputs=["x", "w", "b"], outputs=["y"], domain="com.microsoft.nchwc",
                attributes={"activation": activation, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 96})
    return graph([node], [act("x", [1, 96, 112, 112]), weight("w", [96, 1, 3, 3]), weight("b", [96]),
                          act("y", [1, 96, 112, 112])], ["x"], ["y"])


def _fp16_over_fp32(g) -> float:  # type: ignore[no-untyped-def]
    r = sweep(g, HOST, hardware=load_profile("host-cpu"), presets_only=("fp16", "fp32"))
    names = [p["name"] for p in r.bulk["presets"]]
    lat = r.bulk["metrics"]["latency_ms"][0]
    return float(lat[names.index("fp16")] / lat[names.index("fp32")])


def test_a_relu_stays_fused_under_fp16_and_a_clip_does_not() -> None:
    relu, clip = _nchwc_conv("Relu"), _nchwc_conv("Clip")
    assert FP16_FUSION_KEPT in task_facts(HOST, relu)[0]
    assert FP16_FUSION_KEPT not in task_facts(HOST, clip)[0]
    # the Clip's Conv pays its activation's pass and two reorders under fp16; the Relu's none of them
    assert _fp16_over_fp32(relu) < 1.05
    assert _fp16_over_fp32(clip) > _fp16_over_fp32(relu) * 1.15
