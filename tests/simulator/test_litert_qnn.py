"""LiteRT with the QNN delegate (`litert-qnn/*`): a predicted target of its own for .tflite uploads, on profiles of
its own (simulator/hardware/snapdragon-*-litert-qnn.yaml): TFLite builtins on the HTP, fp32 models at fp16, the rest
on LiteRT's CPU; and the HTP's in-place channel concat in TFLite's layout (NHWC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import frontends
from compiler.graph import Graph, Node
from compiler.vocabulary.options import BACKEND_NOTES
from compiler.vocabulary.targets import TargetFormatError, check_targets_format, get_target, targets_for_format
from simulator.profiles import load_profile
from simulator.published.latency import plan_latency
from simulator.sweep import sweep
from simulator.totals import totals
from testkit import tflite_builder
from tests.simulator.helpers import act, graph

LITERT_QNN = ("litert-qnn/snapdragon-8g3", "litert-qnn/snapdragon-8-elite")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    # Wide enough that compute, not the per-run overhead, sets the time.
    return frontends.load(tflite_builder.cnn(tmp_path_factory.mktemp("lq") / "cnn.tflite", resolution=224, width=96))


@pytest.mark.parametrize("target", LITERT_QNN)
def test_the_target_runs_tflite_on_its_own_profile(target: str) -> None:
    t = get_target(target)
    assert (t.backend, t.export, t.float_format, t.measurable) == ("litert-qnn", "tflite", "fp16", False)
    assert t.profile.endswith("-litert-qnn") and target in targets_for_format("tflite")
    assert target in targets_for_format("pt2") and target not in targets_for_format("onnx")
    with pytest.raises(TargetFormatError, match="cannot run a onnx model"):
        check_targets_format([target], "onnx")
    # The chip's figures are the ORT profile's; the HTP's op list is TFLite's.
    own, ort = load_profile(t.profile, t.backend), load_profile(t.profile.removesuffix("-litert-qnn"))
    assert own.dram_bandwidth_bytes_per_s == ort.dram_bandwidth_bytes_per_s
    assert own.units[0].peak_ops_per_s == ort.units[0].peak_ops_per_s
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL"} <= own.units[0].ops
    assert "Conv" not in own.units[0].ops and not own.units[0].quantized_ops_except


def test_options_table_names_what_each_option_does_on_the_delegate() -> None:
    notes = BACKEND_NOTES["litert-qnn"]
    assert {"fp16", "int8-static", "int8-dynamic"} <= notes.keys()
    assert "w8a8" in notes["int8-static"] and "w8a16" in notes["int8-dynamic"]


@pytest.mark.parametrize("target", LITERT_QNN)
def test_a_small_tflite_cnn_runs_on_the_htp_under_every_preset(cnn: Graph, target: str) -> None:
    r = sweep(cnn, target)
    b = r.bulk
    assert b["unit_names"] == ["htp", "cpu"]
    presets = [p["name"] for p in b["presets"]]
    for p in ("fp32", "fp16", "int8-static"):
        col = presets.index(p)
        assert {row[col] for row in b["units"]} == {"htp"}, p
    fp32 = totals(b, r.per_op, "fp32", {})["latency_ms"]
    fp16 = totals(b, r.per_op, "fp16", {})["latency_ms"]
    int8 = totals(b, r.per_op, "int8-static", {})["latency_ms"]
    # fp32 runs at fp16 on the HTP (the delegate's default precision), not on the CPU: within 10% of the fp16
    # model's time (its input conversions differ); int8 is faster.
    assert fp32 == pytest.approx(fp16, rel=0.1) and 0 < int8 < fp32 < 5
    assert b["label"]["baseline"] == "predicted"


def test_an_op_the_delegate_does_not_take_runs_on_litert_cpu(tmp_path: Path) -> None:
    g = frontends.load(tflite_builder.with_custom_op(tmp_path / "custom.tflite"))
    b = sweep(g, "litert-qnn/snapdragon-8g3").bulk
    col = [p["name"] for p in b["presets"]].index("fp32")
    units = {op: row[col] for op, row in zip(b["ops"], b["units"])}
    kinds = {nd.id: nd.op_type for nd in g.nodes}
    assert {units[i] for i, op in kinds.items() if op == "EdgescopeTestOp"} == {"cpu"}
    assert {units[i] for i, op in kinds.items() if op == "CONV_2D"} == {"htp"}


@pytest.mark.parametrize("target", LITERT_QNN)
def test_a_tflite_channel_concat_costs_nothing_on_the_htp(target: str) -> None:
    """TFLite is NHWC: the channel axis is 3 (or -1)."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    for axis, gone in ((3, True), (-1, True), (1, False)):
        out = [1, 16, 16, 16] if axis != 1 else [1, 32, 16, 8]
        values = [act("a", [1, 16, 16, 8]), act("b", [1, 16, 16, 8]), act("c", out), act("y", out)]
        nodes = [Node("cat", "cat", "CONCATENATION", inputs=["a", "b"], outputs=["c"], attributes={"axis": axis}),
                 Node("add", "add", "ADD", inputs=["c", "c"], outputs=["y"])]
        g = graph(nodes, values, ["a", "b"], ["y"])
        g.format = "tflite"
        assert bool(plan_latency(g, t, hw, "fp32").gone[0]) is gone, axis


@pytest.mark.parametrize("target", LITERT_QNN)
def test_a_float_graph_pays_the_htps_float_run_cost_and_a_w8a8_one_does_not(cnn: Graph, target: str) -> None:
    """The fitted `float_graph_run_s` reaches the table as the totals rule's float-graph term: an fp16 / fp32 model
    pays it once, an int8-static one does not, and one op of the int8 model put back in fp16 on the HTP brings it
    back (the term alone: its own row and conversions aside)."""
    from simulator.totals import evaluate, float_graph_terms

    hw = load_profile(get_target(target).profile, "litert-qnn")
    ms = hw.units[0].float_graph_run_s * 1e3
    assert 0.1 < ms < 0.4  # fitted: AI Hub's float TFLite jobs ~0.2-0.3 ms slower per run than their w8a8 ones
    r = sweep(cnn, target)
    b = r.bulk
    assert b["constants"]["float_graph_ms"] == {"htp": ms}
    term = {}
    for preset, ov in (("fp32", {}), ("fp16", {}), ("int8-static", {})):
        e = evaluate(b, r.per_op, preset, ov)
        term[preset] = float_graph_terms(b, e.combo, e.unit or [], e.latency_ms)
    assert term == {"fp32": [ms], "fp16": [ms], "int8-static": [0.0]}
    p = [x["name"] for x in b["presets"]].index("int8-static")
    op = next(i for i, row in enumerate(b["units"]) if row[p] == "htp" and "fp16/fp16/-/0" in r.per_op[i]["combos"])
    one = evaluate(b, r.per_op, "int8-static", {b["ops"][op]: "fp16/fp16/-/0"})
    assert one.latency_ms[op] > 0 and float_graph_terms(b, one.combo, one.unit or [], one.latency_ms) == [ms]
    # The ops table's time outside the tasks (GET /ops) is the base state's: the fp32 base pays the term.
    from simulator.table_schema import per_inference_ms
    from worker.results import base_per_inference_ms

    assert b["base"]["preset"] == "fp32" and base_per_inference_ms(b) == per_inference_ms(b) + ms


@pytest.mark.parametrize("target", LITERT_QNN)
def test_a_tflite_reshape_that_moves_no_element_costs_nothing_on_the_htp(target: str) -> None:
    """litert-torch's RESHAPEs around a FULLY_CONNECTED merge or split outer dims (the innermost kept), and those
    around a LayerNorm's statistics add unit dims: no element moves. A channel shuffle's split of the innermost dim
    does move them."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    for shape_in, shape_out, gone in (([1, 14, 14, 64], [1, 196, 64], True), ([1, 196, 64], [196, 64], True),
                                      ([196], [1, 196, 1], True), ([1, 14, 14, 64], [1, 14, 14, 2, 32], False)):
        values = [act("x", shape_in), act("r", shape_out), act("y", shape_out)]
        nodes = [Node("r", "r", "RESHAPE", inputs=["x"], outputs=["r"]),
                 Node("add", "add", "ADD", inputs=["r", "r"], outputs=["y"])]
        g = graph(nodes, values, ["x"], ["y"])
        g.format = "tflite"
        assert bool(plan_latency(g, t, hw, "fp32").gone[0]) is gone, (shape_in, shape_out)
        assert not plan_latency(g, t, hw, "fp32").gone[1]


def _shuffle(tail_perm: tuple[int, ...]) -> Graph:
    """litert-torch's NHWC channel shuffle: TRANSPOSE to NCHW, RESHAPE, TRANSPOSE, RESHAPE, TRANSPOSE back."""
    from compiler.graph import Value, WeightStats

    def perm(name: str, p: tuple[int, ...]) -> Value:
        return Value(name, [len(p)], "int32", weight=WeightStats(len(p), 4 * len(p), 0.0, float(len(p) - 1), 0.0,
                                                                  ints=p))

    values = [act("x", [1, 8, 8, 16]), perm("p0", (0, 3, 1, 2)), act("a", [1, 16, 8, 8]), act("b", [1, 2, 8, 8, 8]),
              perm("p1", (0, 2, 1, 3, 4)), act("c", [1, 8, 2, 8, 8]), act("d", [1, 16, 8, 8]), perm("p2", tail_perm),
              act("e", [1, 8, 8, 16]), act("y", [1, 8, 8, 16])]
    nodes = [Node("t0", "t0", "TRANSPOSE", inputs=["x", "p0"], outputs=["a"]),
             Node("r0", "r0", "RESHAPE", inputs=["a"], outputs=["b"]),
             Node("t1", "t1", "TRANSPOSE", inputs=["b", "p1"], outputs=["c"]),
             Node("r1", "r1", "RESHAPE", inputs=["c"], outputs=["d"]),
             Node("t2", "t2", "TRANSPOSE", inputs=["d", "p2"], outputs=["e"]),
             Node("add", "add", "ADD", inputs=["e", "e"], outputs=["y"])]
    g = graph(nodes, values, ["x"], ["y"])
    g.format = "tflite"
    return g


@pytest.mark.parametrize("target", LITERT_QNN)
def test_a_channel_shuffle_moves_its_tensor_once_on_the_htp(target: str) -> None:
    """The shuffle's outer TRANSPOSEs (NHWC -> NCHW and back) cancel: one QNN ChannelShuffle, the middle TRANSPOSE's
    pass. Where the outer two do not cancel, each TRANSPOSE moves the tensor."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    for tail, head_gone in (((0, 2, 3, 1), True), ((0, 3, 1, 2), False)):
        lp = plan_latency(_shuffle(tail), t, hw, "fp32")
        transposes = [bool(lp.gone[i]) for i in (0, 2, 4)]
        assert transposes == [head_gone, False, head_gone], tail
        assert not lp.gone[5]


def _layer_norm(with_norm: bool = True) -> Graph:
    """FULLY_CONNECTED -> a LayerNorm as litert-torch writes it (MEAN, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, MUL, SUB,
    MUL, ADD and unit-dim RESHAPEs) -> FULLY_CONNECTED; or (`with_norm` False) the first FULLY_CONNECTED's output
    averaged over its rows (a MEAN no SQUARED_DIFFERENCE reads: a pooling, not a norm)."""
    from tests.simulator.helpers import weight

    t, d = 16, 64
    values = [act("inp", [1, t, d]), weight("w0", [d, d]), act("x", [1, t, d]), weight("ax", [1]),
              weight("eps", [1]), weight("beta", [d]), weight("w1", [d, d]), act("y", [1, t, d])]
    values += [act(n, [1, t, 1]) for n in ("m", "mr", "v", "ve", "r", "rm", "rr")]
    values += [act(n, [1, t, d]) for n in ("sd", "s", "sr", "xm", "ln")]
    nodes = [Node("fc0", "fc0", "FULLY_CONNECTED", inputs=["inp", "w0"], outputs=["x"])]
    if with_norm:
        nodes += [Node("m", "m", "MEAN", inputs=["x", "ax"], outputs=["m"]),
                  Node("mr", "mr", "RESHAPE", inputs=["m"], outputs=["mr"]),
                  Node("sd", "sd", "SQUARED_DIFFERENCE", inputs=["x", "mr"], outputs=["sd"]),
                  Node("v", "v", "MEAN", inputs=["sd", "ax"], outputs=["v"]),
                  Node("ve", "ve", "ADD", inputs=["v", "eps"], outputs=["ve"]),
                  Node("r", "r", "RSQRT", inputs=["ve"], outputs=["r"]),
                  Node("rm", "rm", "MUL", inputs=["r", "m"], outputs=["rm"]),
                  Node("s", "s", "SUB", inputs=["beta", "rm"], outputs=["s"]),
                  Node("rr", "rr", "RESHAPE", inputs=["r"], outputs=["rr"]),
                  Node("xm", "xm", "MUL", inputs=["x", "rr"], outputs=["xm"]),
                  Node("sr", "sr", "RESHAPE", inputs=["s"], outputs=["sr"]),
                  Node("ln", "ln", "ADD", inputs=["xm", "sr"], outputs=["ln"])]
    else:
        nodes += [Node("m", "m", "MEAN", inputs=["x", "ax"], outputs=["m"]),
                  Node("ln", "ln", "MUL", inputs=["x", "m"], outputs=["ln"])]
    nodes.append(Node("fc1", "fc1", "FULLY_CONNECTED", inputs=["ln", "w1"], outputs=["y"]))
    g = graph(nodes, values, ["inp"], ["y"])
    g.format = "tflite"
    return g


@pytest.mark.parametrize("target", LITERT_QNN)
def test_a_layer_norm_stays_float_between_a_dequantize_and_a_quantize_in_a_w8a8_model(target: str) -> None:
    """AI Hub's w8a8 ViT TFLite job counts 52 layers more than its float one: a DEQUANTIZE and a QUANTIZE around each
    of its 25 LayerNorms and the model's input / output pair. The norm's ops run fp16 on the HTP under int8-static,
    the FULLY_CONNECTEDs int8; one conversion into the island's ops from each int8 edge and one out of it; the float
    graph's run cost is paid. Under fp32 nothing changes; a MEAN that is no norm's statistic stays int8."""
    from simulator.device_facts import norm_islands

    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    g = _layer_norm()
    islands = norm_islands(g)
    assert [sorted(g.nodes[i].id for i in s) for s in islands] == [sorted(nd.id for nd in g.nodes[1:-1])]
    lp = plan_latency(g, t, hw, "int8-static")
    resolved = [lp.paths[k][0].resolved for k in lp.index]
    assert [r.input for r in resolved] == ["int8"] + ["fp16"] * 12 + ["int8"]
    assert lp.float_tasks is not None and lp.float_tasks[1:-1].all() and not lp.float_tasks[[0, -1]].any()
    pairs = {p: n for p, n, _ in lp.conversions}
    assert pairs["fp16>int8"] == 1 and pairs["int8>fp16"] == 3  # x is read by MEAN, SQUARED_DIFFERENCE and MUL
    fp32 = plan_latency(g, t, hw, "fp32")
    assert {fp32.paths[k][0].resolved.input for k in fp32.index} <= {"fp32", "fp16"}
    pool = plan_latency(_layer_norm(with_norm=False), t, hw, "int8-static")
    assert not norm_islands(_layer_norm(with_norm=False))
    assert {pool.paths[k][0].resolved.input for k in pool.index} == {"int8"}


def _silu_and_gate() -> Graph:
    """ADD -> a SiLU as litert-torch writes it (LOGISTIC, then a MUL of the LOGISTIC's input by its output) -> a gate
    (LOGISTIC of another tensor, a MUL of the SiLU's output by it: an SE block's scale, not a SiLU)."""
    values = [act(n, [1, 28, 28, 64]) for n in ("a", "b", "x", "s", "y", "g", "z")]
    nodes = [Node("add", "add", "ADD", inputs=["a", "b"], outputs=["x"]),
             Node("sig", "sig", "LOGISTIC", inputs=["x"], outputs=["s"]),
             Node("silu", "silu", "MUL", inputs=["x", "s"], outputs=["y"]),
             Node("gate", "gate", "LOGISTIC", inputs=["b"], outputs=["g"]),
             Node("scale", "scale", "MUL", inputs=["y", "g"], outputs=["z"])]
    g = graph(nodes, values, ["a", "b"], ["z"])
    g.format = "tflite"
    return g


@pytest.mark.parametrize("target", LITERT_QNN)
def test_a_silus_sigmoid_runs_in_its_multiplys_pass_on_the_htp(target: str) -> None:
    """x * sigmoid(x): the LOGISTIC costs nothing under float activations, its MUL carries the pass; a LOGISTIC whose
    MUL multiplies another tensor (a gate) keeps its own pass, and so does the SiLU's under int8-static."""
    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    lp = plan_latency(_silu_and_gate(), t, hw, "fp32")
    assert [bool(x) for x in lp.gone] == [False, True, False, False, False]
    q = plan_latency(_silu_and_gate(), t, hw, "int8-static")
    assert not q.gone.any()
