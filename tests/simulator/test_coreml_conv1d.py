"""A 1-D conv (Conv on a 3-D [N, C, L] tensor, what torch.nn.Conv1d exports) on Core ML: MACs by
N * Co * Lo * Ci / g * k, and the same predicted time as its 2-D twin over [N, C, 1, L] (coremltools converts a
conv1d to a conv2d over an inserted unit axis). The session-37 sweep saw a waveform CNN at 0.007 ms on
coreml/apple-a17: the conv's work and time are the 2-D twin's, the low total is the A17 ANE's per-call figures."""

from __future__ import annotations

import pytest

from compiler.backends.base import as_tasks
from compiler.graph import Graph, Node
from simulator.costs import work_of
from simulator.sweep import sweep
from tests.simulator.helpers import act, graph, weight

_L, _K, _S, _CI, _CO = 16000, 80, 4, 1, 64
_LO = (_L - _K) // _S + 1


def _conv(two_d: bool) -> Graph:
    unit = [1] if two_d else []
    values = [act("x", [1, _CI, *unit, _L]), weight("w", [_CO, _CI, *unit, _K]), act("y", [1, _CO, *unit, _LO])]
    conv = Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["y"],
                attributes={"kernel_shape": [*unit, _K], "strides": [*unit, _S], "pads": [0, 0] * (1 + len(unit))})
    return graph([conv], values, ["x"], ["y"])


@pytest.mark.parametrize("target", ["coreml/apple-a17", "coreml/apple-a14", "ort-qnn/snapdragon-8g3"])
def test_conv1d_work_and_time_match_its_2d_twin(target: str) -> None:
    one, two = as_tasks(_conv(False)), as_tasks(_conv(True))
    macs = 1 * _CO * _LO * _CI * _K
    assert work_of(one.nodes[0], one).macs == macs == work_of(two.nodes[0], two).macs
    ms = [sweep(g, target, source=g).bulk["metrics"]["latency_ms"][0] for g in (one, two)]
    assert ms[0] == pytest.approx(ms[1], rel=0.02), ms
    assert min(ms[0]) > 0.0
