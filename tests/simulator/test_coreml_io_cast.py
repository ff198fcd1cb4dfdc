"""An fp16 model with fp32 I/O (ORT's float16 converter, keep_io_types: a Cast at each input and output) on Core ML:
the Casts are the ML Program's own I/O conversion, free as it is for an fp32 model, not GPU tasks between two ANE
partitions (which made such a file predict at twice its fp32 twin)."""

from __future__ import annotations

import pytest

from compiler.backends.base import as_tasks
from compiler.graph import Graph, Node
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, graph, weight


def _convs(io_casts: bool) -> Graph:
    dt = "float16" if io_casts else "float32"
    values = [act("x", [1, 16, 56, 56]), act("x16", [1, 16, 56, 56], dt), weight("w", [16, 16, 3, 3], dt),
              act("c", [1, 16, 56, 56], dt), act("r", [1, 16, 56, 56], dt), act("y", [1, 16, 56, 56])]
    conv = Node("conv", "conv", "Conv", inputs=["x16" if io_casts else "x", "w"], outputs=["c"],
                attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]})
    relu = Node("relu", "relu", "Relu", inputs=["c"], outputs=["r" if io_casts else "y"])
    if not io_casts:
        return graph([conv, relu], values, ["x"], ["y"])
    return graph([Node("in_cast", "in_cast", "Cast", inputs=["x"], outputs=["x16"], attributes={"to": 10}), conv, relu,
                  Node("out_cast", "out_cast", "Cast", inputs=["r"], outputs=["y"], attributes={"to": 1})],
                 values, ["x"], ["y"])


@pytest.mark.parametrize("target", ["coreml/apple-a17", "coreml/apple-a14"])
def test_io_casts_of_an_fp16_model_cost_what_an_fp32_model_pays(target: str) -> None:
    fp16, fp32 = as_tasks(_convs(True)), as_tasks(_convs(False))
    r16, r32 = sweep(fp16, target, source=fp16), sweep(fp32, target, source=fp32)
    ms16 = totals(r16.bulk, r16.per_op, "fp32", {})["latency_ms"]
    ms32 = totals(r32.bulk, r32.per_op, "fp32", {})["latency_ms"]
    assert ms16 == pytest.approx(ms32, rel=0.05), (ms16, ms32)
    ids = [n.id for n in fp16.nodes]
    lat = {i: row[0] for i, row in zip(ids, r16.bulk["metrics"]["latency_ms"])}
    assert lat["in_cast"] == 0.0 and lat["out_cast"] == 0.0 and lat["conv"] > 0
