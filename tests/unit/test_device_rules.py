"""Device placement rules read from the profiles: the QNN EP leaves quantized weighted MatMuls to the CPU EP; and the
HTP's own rules (simulator/device_facts.py)."""

from __future__ import annotations

import copy

import pytest
import yaml

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import HARDWARE_DIR, ProfileError, load_profile, parse_profile
from simulator.published.latency import latency_ms, plan_latency
from tests.simulator.helpers import act, exported_gelu, graph, weight

QNN = ("ort-qnn/snapdragon-8g3", "ort-qnn/snapdragon-8-elite")


def _linear_3d(op: str):
    """A Linear on a [1, 197, 64] activation, as a MatMul + Add (the export's) or as a Gemm on 2-D."""
    if op == "MatMul":
        values = [act("x", [1, 197, 64]), weight("w", [64, 128]), weight("b", [128]), act("m", [1, 197, 128]),
                  act("y", [1, 197, 128])]
        nodes = [Node("mm", "mm", "MatMul", inputs=["x", "w"], outputs=["m"]),
                 Node("add", "add", "Add", inputs=["m", "b"], outputs=["y"])]
    else:
        values = [act("x", [197, 64]), weight("w", [128, 64]), weight("b", [128]), act("y", [197, 128])]
        nodes = [Node("mm", "mm", "Gemm", inputs=["x", "w", "b"], outputs=["y"], attributes={"transB": 1})]
    return graph(nodes, values, ["x"], ["y"])


@pytest.mark.parametrize("target", QNN)
@pytest.mark.parametrize("preset,cpu", [("fp32", 0), ("fp16", 0), ("int8-static", 1), ("int8-dynamic", 1)])
def test_qnn_leaves_quantized_weighted_matmuls_to_the_cpu(target: str, preset: str, cpu: int) -> None:
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    assert hw.units[-1].name == "cpu"
    assert plan_latency(_linear_3d("MatMul"), t, hw, preset).tasks_on(len(hw.units) - 1) == cpu
    assert plan_latency(_linear_3d("Gemm"), t, hw, preset).tasks_on(len(hw.units) - 1) == 0  # FullyConnected


def test_the_refused_unit_takes_no_fallback_either() -> None:
    """Under int8-static the HTP would run the MatMul at fp16 as a fallback; the EP gives the whole quantized node
    to the CPU EP instead."""
    t = get_target("ort-qnn/snapdragon-8g3")
    hw = load_profile(t.profile, t.backend)
    p = plan(t, hw, "MatMul", "gemm", Combo("int8", "int8", "int8", 0), True, False)
    assert hw.units[p.unit].name == "cpu"
    assert hw.units[plan(t, hw, "MatMul", "matmul", Combo("int8", "int8", "-", 0), False, False).unit].name == "htp"


@pytest.mark.parametrize("target", QNN)
def test_a_float_weight_op_between_int8_activations_falls_back_on_the_htp(target: str) -> None:
    """The EP refuses MatMuls with quantized weights; with float weights the op is a float node between the QDQ
    activations, which it runs on the HTP at fp16: the fallback costs what fp16/fp16/fp32 chosen itself does."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    fb = plan(t, hw, "MatMul", "matmul", Combo("int8", "int8", "fp32", 0), True, False)
    own = plan(t, hw, "MatMul", "matmul", Combo("fp16", "fp16", "fp32", 0), True, False)
    assert not fb.supported and fb.resolved == own.resolved and hw.units[fb.unit].name == "htp" == hw.units[own.unit].name
    int4 = plan(t, hw, "MatMul", "matmul", Combo("int8", "int8", "int4", 0), True, False)
    assert hw.units[int4.unit].name == "cpu"  # quantized weights: the whole QDQ node stays with the CPU EP


def test_quantized_ops_except_needs_its_source() -> None:
    data = yaml.safe_load((HARDWARE_DIR / "snapdragon-8g3.yaml").read_text())
    assert parse_profile(copy.deepcopy(data)).units[0].quantized_ops_except == frozenset({"MatMul"})
    del data["units"][0]["quantized_ops_except_source"]
    with pytest.raises(ProfileError, match="quantized_ops_except"):
        parse_profile(data)


def _conv_relu(extra_reader: bool):
    values = [act("x", [1, 8, 16, 16]), weight("w", [8, 8, 3, 3]), act("c", [1, 8, 16, 16]), act("y", [1, 8, 16, 16])]
    nodes = [Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["c"],
                  attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
             Node("relu", "relu", "Relu", inputs=["c"], outputs=["y"])]
    outputs = ["y"]
    if extra_reader:  # the conv's output is read twice: the quantizer cannot fold the Relu into it
        values.append(act("z", [1, 8, 16, 16]))
        nodes.append(Node("sig", "sig", "Sigmoid", inputs=["c"], outputs=["z"]))
        outputs.append("z")
    return graph(nodes, values, ["x"], outputs)


@pytest.mark.parametrize("target", QNN)
def test_a_relu_after_its_conv_runs_in_the_conv_on_the_htp(target: str) -> None:
    """Folded into the int8 output range under QDQ, and run in the conv's output stage on the HTP in float too (AI Hub's
    QNN float jobs with the Relu a layer of its own take what the TFLite jobs with it fused take); not when another op
    reads the conv's output."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    relu = 1  # task index
    for preset in ("int8-static", "fp32", "fp16", "int8-dynamic"):
        assert plan_latency(_conv_relu(False), t, hw, preset).gone[relu], preset
        assert not plan_latency(_conv_relu(True), t, hw, preset).gone[relu], preset
    # Not the QDQ rule on Core ML: there the Relu runs inside the conv's kernel on the ANE under every option
    # (simulator/coreml_rules.py), fp16 too, and not when another op reads the conv's output.
    a17 = load_profile("apple-a17", "coreml")
    assert all(plan_latency(_conv_relu(False), "coreml/apple-a17", a17, p).gone[relu] for p in ("fp16", "int8-static"))
    assert not plan_latency(_conv_relu(True), "coreml/apple-a17", a17, "fp16").gone[relu]


def _linear(rank: int):
    shape = [1, 56, 56, 256] if rank == 4 else [1, 3136, 256]
    values = [act("x", shape), weight("w", [256, 1024]), act("y", shape[:-1] + [1024])]
    return graph([Node("mm", "mm", "MatMul", inputs=["x", "w"], outputs=["y"])], values, ["x"], ["y"])


@pytest.mark.parametrize("target", QNN)
def test_a_fully_connected_runs_at_the_conv_rate_on_the_htp(target: str) -> None:
    """A MatMul by a 2-D constant (any activation rank) and a Gemm are one QNN FullyConnected: the conv rate, in
    float; a MatMul of two activations keeps the matmul figure."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    conv_fast = hw.with_overrides({"units": {"htp": {"efficiency": {"conv.fp16": 1.0}}}})
    conv_slow = hw.with_overrides({"units": {"htp": {"efficiency": {"conv.fp16": 0.01}}}})
    for g in (_linear(4), _linear(3)):
        lp = plan_latency(g, t, hw, "fp32")
        assert latency_ms(lp, conv_slow) > 2 * latency_ms(lp, conv_fast)
    lp = plan_latency(_linear_3d("Gemm"), t, hw, "fp32")  # small: mostly the per-call cost
    assert latency_ms(lp, conv_slow) > latency_ms(lp, conv_fast)
    values = [act("x", [1, 197, 64]), act("k", [1, 64, 197]), act("y", [1, 197, 197])]
    two = graph([Node("mm", "mm", "MatMul", inputs=["x", "k"], outputs=["y"])], values, ["x", "k"], ["y"])
    lp = plan_latency(two, t, hw, "fp32")
    assert latency_ms(lp, conv_slow) == latency_ms(lp, conv_fast)
    # Not on a target without the QNN EP's rules.
    a17 = get_target("coreml/apple-a17")
    hw17 = load_profile(a17.profile, a17.backend)
    lp = plan_latency(_linear(3), a17, hw17, "fp16")
    assert latency_ms(lp, hw17.with_overrides({"units": {"ane": {"efficiency": {"conv": 0.01}}}})) == latency_ms(lp, hw17)



@pytest.mark.parametrize("target", QNN)
def test_a_weight_read_through_identity_is_a_fully_connected_on_the_htp(target: str) -> None:
    """The TorchScript exporter writes a weight several layers share once and reads it through Identity
    (nn.TransformerEncoder's deep-copied layers): ORT folds the Identity before the QNN EP takes the graph, so the
    second MatMul is a FullyConnected too (the session-38 sweep's padded-mask encoder: 0.188 ms per such MatMul
    against 0.011 for the first layer's, 2.38 ms in all against 0.78 for its dynamo export)."""
    from simulator.device_facts import qnn_task_facts

    values = [act("x", [1, 64, 256]), weight("w", [256, 256]), act("w2", [256, 256]), act("h", [1, 64, 256]),
              act("y", [1, 64, 256])]
    nodes = [Node("mm1", "mm1", "MatMul", inputs=["x", "w"], outputs=["h"]),
             Node("id", "id", "Identity", inputs=["w"], outputs=["w2"]),
             Node("mm2", "mm2", "MatMul", inputs=["h", "w2"], outputs=["y"])]
    g = graph(nodes, values, ["x"], ["y"])
    t = get_target(target)
    facts = qnn_task_facts(t, g)
    assert "fully_connected" in facts[0] and "fully_connected" in facts[2]
    hw = load_profile(t.profile, t.backend)
    lp = plan_latency(g, t, hw, "fp32")
    slow = hw.with_overrides({"units": {"htp": {"efficiency": {"conv.fp16": 0.01}}}})
    fast = hw.with_overrides({"units": {"htp": {"efficiency": {"conv.fp16": 1.0}}}})
    # both MatMuls at the conv rate: slowing it slows the model about twice what one MatMul would
    one = plan_latency(graph(nodes[:1], values[:2] + values[3:4], ["x"], ["h"]), t, hw, "fp32")
    grow = latency_ms(lp, slow) - latency_ms(lp, fast)
    assert grow > 1.8 * (latency_ms(one, slow) - latency_ms(one, fast))

def _batchnorm():
    values = [act("x", [1, 64, 28, 28]), weight("s", [64]), weight("b", [64]), weight("m", [64]), weight("v", [64]),
              act("y", [1, 64, 28, 28])]
    nodes = [Node("bn", "bn", "BatchNormalization", inputs=["x", "s", "b", "m", "v"], outputs=["y"])]
    return graph(nodes, values, ["x"], ["y"])


@pytest.mark.parametrize("target", QNN)
def test_a_batchnorm_is_an_elementwise_multiply_add_on_the_htp(target: str) -> None:
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    lp = plan_latency(_batchnorm(), t, hw, "fp32")
    path, kind = lp.paths[lp.index[0]]
    assert kind == "norm" and path.rate_kind == "elementwise"
    fast = hw.with_overrides({"units": {"htp": {"kind_bandwidth_bytes_per_s": {"elementwise": 1e13},
                                                  "efficiency": {"elementwise": 1.0}}}})
    assert latency_ms(lp, fast) < latency_ms(lp, hw)


def _concat(op: str, axis: int, shape_in: list[int], shape_out: list[int]) -> Graph:
    """Two 3x3 convs (ONNX NCHW) concatenated, then a third conv reading the concat."""
    values = [act("x", shape_in), weight("w1", [8, shape_in[1], 3, 3]), weight("w2", [8, shape_in[1], 3, 3]),
              act("a", [1, 8, 16, 16]), act("b", [1, 8, 16, 16]), act("c", shape_out),
              weight("w3", [8, shape_out[1], 1, 1]), act("y", [1, 8, 16, 16])]
    conv = {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    nodes = [Node("c1", "c1", "Conv", inputs=["x", "w1"], outputs=["a"], attributes=conv),
             Node("c2", "c2", "Conv", inputs=["x", "w2"], outputs=["b"], attributes=conv),
             Node("cat", "cat", op, inputs=["a", "b"], outputs=["c"], attributes={"axis": axis}),
             Node("c3", "c3", "Conv", inputs=["c", "w3"], outputs=["y"], attributes={"kernel_shape": [1, 1]})]
    return graph(nodes, values, ["x"], ["y"])


@pytest.mark.parametrize("target", ["ort-qnn/snapdragon-8g3", "ort-qnn/snapdragon-8-elite"])
@pytest.mark.parametrize("preset", ["fp32", "int8-static"])
def test_a_channel_concat_costs_nothing_on_the_htp(target: str, preset: str) -> None:
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    cat = 2  # task index
    lp = plan_latency(_concat("Concat", 1, [1, 8, 16, 16], [1, 16, 16, 16]), t, hw, preset)
    assert lp.gone[cat] and latency_ms(lp, hw) > 0
    # Along another axis it is a copy, as is a channel concat on a CPU-only target.
    assert not plan_latency(_concat("Concat", 2, [1, 8, 16, 16], [1, 8, 32, 16]), t, hw, preset).gone[cat]
    cpu = get_target("ort-xnnpack/rpi5")
    assert not plan_latency(_concat("Concat", 1, [1, 8, 16, 16], [1, 16, 16, 16]), cpu,
                            load_profile(cpu.profile, cpu.backend), preset).gone[cat]


def _gelu(half_first: bool, sqrt2: float = 2 ** 0.5) -> Graph:
    return exported_gelu(197, 64, 768, half_first, sqrt2=sqrt2)


@pytest.mark.parametrize("half_first", [False, True])
@pytest.mark.parametrize("preset", ["fp32", "int8-static"])
def test_the_qnn_ep_runs_an_erf_gelu_as_one_op(half_first: bool, preset: str) -> None:
    """ORT's QNN EP fuses Div(sqrt 2), Erf, Add(1), Mul, Mul(0.5) into one QNN Gelu (gelu_fusion.cc): the Erf's task
    stays, the other four go; not on LiteRT, nor when the divisor is not sqrt 2."""
    t = get_target("ort-qnn/snapdragon-8g3")
    hw = load_profile(t.profile, t.backend)
    order = ["mm", "div", "erf", "add"] + (["half", "mul"] if half_first else ["mul", "half"])
    gone = dict(zip(order, plan_latency(_gelu(half_first), t, hw, preset).gone))
    assert not gone["mm"] and not gone["erf"]
    assert gone["div"] and gone["add"] and gone["mul"] and gone["half"]
    assert not any(plan_latency(_gelu(half_first, 2.0), t, hw, preset).gone[1:])
    lt = get_target("litert-qnn/snapdragon-8g3")
    assert not any(plan_latency(_gelu(half_first), lt, load_profile(lt.profile, lt.backend), preset).gone[1:])
