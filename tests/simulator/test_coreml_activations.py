"""A SiLU / GELU as an ONNX export writes it (Sigmoid + Mul; Div, Erf, Add, Mul, Mul) is one Core ML silu / gelu op,
as coremltools converts the PyTorch module (simulator/coreml_rules.py "act_part"), and a SiLU after a conv or linear
whose output only it reads runs in that producer's output stage on the ANE ("ane_fused"), as a Relu does; a GELU is
one pass of its own. Not on ORT's CoreML EP (which hands Core ML the ONNX ops one by one) nor on the QNN targets for
the SiLU."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.targets import get_target
from simulator.profiles import load_profile
from simulator.published.latency import latency_ms, plan_latency
from tests.simulator.helpers import act, exported_gelu, graph, weight

SHAPE = [1, 64, 56, 56]


def _conv_silu(extra_reader: bool = False, producer: str = "Conv") -> Graph:
    values = [act("x", SHAPE), weight("w", [64, 64, 1, 1]), act("c", SHAPE), act("s", SHAPE), act("y", SHAPE)]
    first = (Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["c"], attributes={"kernel_shape": [1, 1]})
             if producer == "Conv" else Node("conv", "conv", "Relu", inputs=["x"], outputs=["c"]))
    nodes = [first, Node("sig", "sig", "Sigmoid", inputs=["c"], outputs=["s"]),
             Node("mul", "mul", "Mul", inputs=["s", "c"], outputs=["y"])]
    outputs = ["y"]
    if extra_reader:  # the conv's output is read by another op too: the activation cannot run inside the conv
        values.append(act("z", SHAPE))
        nodes.append(Node("other", "other", "Tanh", inputs=["c"], outputs=["z"]))
        outputs.append("z")
    return graph(nodes, values, ["x"], outputs)


def _linear_gelu(half_first: bool) -> Graph:
    return exported_gelu(1036, 384, 1536, half_first, bias=True)


def _gone(g: Graph, target: str, preset: str) -> dict[str, bool]:
    t = get_target(target)
    lp = plan_latency(g, t, load_profile(t.profile, t.backend), preset)
    return {nd.id: bool(x) for nd, x in zip(g.nodes, lp.gone)}


@pytest.mark.parametrize("target", ["coreml/apple-a17", "coreml/apple-a14"])
@pytest.mark.parametrize("preset", ["fp16", "fp32", "int8-static"])
def test_a_silu_after_its_conv_runs_inside_the_conv(target: str, preset: str) -> None:
    gone = _gone(_conv_silu(), target, preset)
    assert not gone["conv"] and gone["sig"] and gone["mul"]
    # Read by another op too: one silu pass of its own (the Mul's), the Sigmoid still part of it.
    gone = _gone(_conv_silu(extra_reader=True), target, preset)
    assert gone["sig"] and not gone["mul"] and not gone["other"]
    # After an op that is no conv / linear: one pass, not fused.
    gone = _gone(_conv_silu(producer="Relu"), target, preset)
    assert gone["sig"] and not gone["mul"]


@pytest.mark.parametrize("half_first", [False, True])
def test_a_gelu_is_one_pass_of_its_own(half_first: bool) -> None:
    gone = _gone(_linear_gelu(half_first), "coreml/apple-a17", "fp16")
    assert not gone["mm"] and not gone["bias"] and not gone["erf"]
    assert all(gone[k] for k in ("div", "add", "mul", "half")), gone


def test_the_gelu_costs_one_pass_over_its_tensor() -> None:
    """The GELU's five ONNX tasks cost what one element-wise pass over the tensor costs (the Erf's); the ORT CoreML
    EP's plan keeps all five (it converts op by op)."""
    g = _linear_gelu(False)
    t = get_target("coreml/apple-a17")
    hw = load_profile(t.profile, t.backend)
    values = list(g.values.values())
    full = latency_ms(plan_latency(g, t, hw, "fp16"), hw)
    erf = graph([*g.nodes[:2], Node("erf", "erf", "Erf", inputs=["x"], outputs=["y"])], values, ["a"], ["y"])
    linear = graph(g.nodes[:2], values, ["a"], ["x"])
    assert full == pytest.approx(latency_ms(plan_latency(erf, t, hw, "fp16"), hw), rel=1e-6)
    assert full > latency_ms(plan_latency(linear, t, hw, "fp16"), hw)
    assert not any(_gone(g, "ort-coreml/apple-a17", "fp16")[k] for k in ("div", "erf", "add", "mul", "half"))


def test_not_a_silu_on_the_qnn_ep() -> None:
    """The SiLU's Sigmoid is the Core ML rule's, not the ORT QNN EP's (which lowers it to Sigmoid + Mul)."""
    gone = _gone(_conv_silu(), "ort-qnn/snapdragon-8g3", "fp32")
    assert not gone["sig"] and not gone["mul"]


def test_an_ml_programs_own_silu_after_its_conv_runs_inside_it() -> None:
    """An .mlpackage's silu (read as Swish) is placed as the ONNX pair is, and costed alike; its gelu (Gelu) is a pass
    of its own."""
    t = get_target("coreml/apple-a17")
    hw = load_profile(t.profile, t.backend)
    values = [act("x", SHAPE), weight("w", [64, 64, 1, 1]), act("c", SHAPE), act("y", SHAPE)]

    def conv_then(op: str) -> Graph:
        return graph([Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["c"], attributes={"kernel_shape": [1, 1]}),
                      Node("act", "act", op, inputs=["c"], outputs=["y"])], values, ["x"], ["y"])

    assert _gone(conv_then("Swish"), "coreml/apple-a17", "fp16") == {"conv": False, "act": True}
    assert _gone(conv_then("Gelu"), "coreml/apple-a17", "fp16") == {"conv": False, "act": False}
    swish = latency_ms(plan_latency(conv_then("Swish"), t, hw, "fp16"), hw)
    assert swish == pytest.approx(latency_ms(plan_latency(_conv_silu(), t, hw, "fp16"), hw), rel=1e-6)
