"""ORT's QNN EP op coverage (simulator/hardware/snapdragon-*.yaml `ops`, from the EP's op builders) and its LSTM
builder's conditions (simulator/device_facts.py "npu_refused"); the phone CPU's rate for an RNN's gate GEMMs."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.targets import get_target
from simulator.profiles import load_profile
from simulator.published.latency import latency_ms, plan_latency
from simulator.roofline import efficiency
from tests.simulator.helpers import act, graph, weight

QNN = ("ort-qnn/snapdragon-8g3", "ort-qnn/snapdragon-8-elite")


def _rnn(op: str = "LSTM", seq_lens: list[int] | None = None, **attributes: Any) -> Graph:
    """A bidirectional LSTM (or GRU) over 8 steps, batch 4, 16 features in, hidden 12, as torch.onnx exports one."""
    gates = 4 if op == "LSTM" else 3
    values = [act("x", [8, 4, 16]), weight("W", [2, gates * 12, 16]), weight("R", [2, gates * 12, 12]),
              weight("B", [2, 2 * gates * 12]), act("y", [8, 2, 4, 12])]
    inputs = ["x", "W", "R", "B"]
    if seq_lens is not None:
        lens = weight("lens", [4], "int32")
        lens.weight = type(lens.weight)(4, 16, float(min(seq_lens)), float(max(seq_lens)), 0.0)  # type: ignore[misc]
        values.append(lens)
        inputs.append("lens")
    node = Node("rnn", "rnn", op, inputs=inputs, outputs=["y"],
                attributes={"hidden_size": 12, "direction": "bidirectional", **attributes})
    return graph([node], values, ["x"], ["y"])


def _unit(g: Graph, target: str, preset: str = "fp32") -> str:
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    lp = plan_latency(g, t, hw, preset)
    assert latency_ms(lp, hw) > 0
    (unit,) = {hw.units[i].name for i in range(len(hw.units)) if lp.tasks_on(i)}
    return unit


@pytest.mark.parametrize("target", QNN)
@pytest.mark.parametrize("preset", ["fp32", "fp16"])
def test_an_exported_lstm_runs_on_the_htp(target: str, preset: str) -> None:
    assert _unit(_rnn(), target, preset) == "htp"
    assert _unit(_rnn(seq_lens=[8, 8, 8, 8]), target, preset) == "htp"  # constant, equal lengths


@pytest.mark.parametrize("target", QNN)
@pytest.mark.parametrize("why", [{"clip": 3.0}, {"layout": 1}, {"activations": ["Sigmoid", "Tanh", "Tanh"] * 2},
                                 {"activations": ["sigmoid", "relu", "tanh"]}, {"seq_lens": [8, 5, 8, 8]}])
def test_an_lstm_the_builder_refuses_stays_on_the_cpu(target: str, why: dict[str, Any]) -> None:
    """lstm_op_builder.cc refuses a clip, other activations (it compares lower-case names), layout 1 and unequal
    sequence lengths: the EP leaves the node to ORT's CPU EP, and says why."""
    assert _unit(_rnn(**why), target) == "cpu"
    assert _unit(_rnn(activations=["sigmoid", "tanh", "tanh"] * 2), target) == "htp"  # the builder's own spelling
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    lp = plan_latency(_rnn(**why), t, hw, "fp32")
    assert "LSTM builder refuses" in lp.paths[int(lp.index[0])][0].note


@pytest.mark.parametrize("target", QNN)
def test_a_gru_has_no_qnn_builder_in_ort_1_23(target: str) -> None:
    assert _unit(_rnn("GRU"), target) == "cpu"


@pytest.mark.parametrize("profile", ["snapdragon-8g3", "snapdragon-8-elite", "rpi5", "pixel-8"])
def test_the_phone_cpu_runs_rnn_gate_gemms_near_its_gemm_rate(profile: str) -> None:
    """ORT's CPU EP runs an LSTM's gate GEMMs (kind matmul) with MLAS SGEMM, as a Gemm: at a tenth of the gemm
    rate (the default efficiency) sequencer2d_s's 24 LSTMs took 36 ms each on the 8 Gen 3's CPU."""
    cpu = load_profile(profile).units[-1]
    assert 0.6 <= efficiency(cpu, "matmul", "fp32") / efficiency(cpu, "gemm", "fp32") <= 1.0


@pytest.mark.parametrize("target", QNN)
@pytest.mark.parametrize("op", ["Equal", "Not", "LogSoftmax", "Sin", "ReduceMin", "GridSample"])
def test_ops_the_ep_builds_are_on_the_htp(target: str, op: str) -> None:
    t = get_target(target)
    assert load_profile(t.profile, t.backend).units[0].runs(op)
