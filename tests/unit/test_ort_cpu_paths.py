"""ORT CPU (x86) execution paths the fidelity benchmark exposed: fp16 through Casts, per-path setup,
per-channel setup of dynamically quantized depthwise convs (the joint calibration fit that finds them:
tests/simulator/test_calibration_fit.py)."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import act, conv_chain, graph, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
FP16 = Combo("fp16", "fp16", "fp16", 0)


def test_fp16_compute_op_runs_fp32_between_casts_and_loses_its_fused_activation() -> None:
    p = plan(HOST, HW, "Conv", "conv", FP16, True, fused=True)  # an NCHWc Conv with a fused activation
    assert p.supported and p.resolved == Combo("fp32", "fp32", "fp16", 0) and p.tag == "cast16"
    assert p.extra_dispatches == 3  # the activation and the two reorders around the Conv
    assert p.extra_out_bytes == pytest.approx(4 * p.out_bytes) and not p.fp32_equivalent
    unfused = plan(HOST, HW, "Conv", "conv", FP16, True, fused=False)
    assert unfused.extra_dispatches == 0 and unfused.extra_in_bytes == 0.0


def test_fp16_data_movement_runs_fp16_natively_and_softmax_is_inlined() -> None:
    t = plan(HOST, HW, "Transpose", "layout", Combo("fp16", "fp16", "-", 0), False, False)
    assert t.resolved.input == "fp16" and t.in_bytes == 2.0 and t.extra_dispatches == 0
    s = plan(HOST, HW, "Softmax", "softmax", Combo("fp16", "fp16", "-", 0), False, False)
    assert s.resolved.input == "fp32" and s.extra_dispatches == 4


def test_fp16_casts_are_paid_on_edges_to_fp16_ops_only() -> None:
    """Gemm -> Reshape -> Gemm under fp16: the Gemms run fp32, so the two edges to and from the Reshape
    (fp16 natively) convert; a Gemm -> Gemm edge would not."""
    values = [act("x", [8, 64]), weight("w1", [64, 64]), act("a", [8, 64]), weight("s", [2]),
              act("b", [8, 64]), weight("w2", [64, 64]), act("y", [8, 64])]
    s = values[3]
    values[3] = type(s)(s.name, s.shape, "int64", weight=s.weight)
    nodes = [Node("g1", "g1", "Gemm", inputs=["x", "w1"], outputs=["a"]),
             Node("r", "r", "Reshape", inputs=["a", "s"], outputs=["b"]),
             Node("g2", "g2", "Gemm", inputs=["b", "w2"], outputs=["y"])]
    r = sweep(graph(nodes, values, ["x"], ["y"]), HOST)
    j = [p["name"] for p in r.bulk["presets"]].index("fp16")
    fmts = [c[j] for c in r.bulk["combos"]]
    assert fmts == ["fp32/fp32/fp16/0", "fp16/fp16/-/0", "fp32/fp32/fp16/0"]


def test_setup_of_a_path_overrides_the_kinds_and_dwconv_int8dyn_pays_it_per_channel() -> None:
    g = conv_chain()
    dw = [nd.id for nd in g.nodes].index("dw")

    def lat(over: dict) -> float:
        r = sweep(g, HOST, hardware=HW.with_overrides({"units": {"cpu": {"kind_overhead_s": over}}}))
        return r.bulk["metrics"]["latency_ms"][dw][[p["name"] for p in r.bulk["presets"]].index("int8-dynamic")]

    base = lat({"dwconv": 0.0, "dwconv.int8dyn": 0.0})
    assert lat({"dwconv": 1e-3}) == pytest.approx(base + 1e-3 * 16 * 1e3)  # 16 channels x 1 ms
    assert lat({"dwconv": 1e-3, "dwconv.int8dyn": 0.0}) == pytest.approx(base)  # the path's own figure wins
    assert plan(HOST, HW, "Conv", "conv", Combo("fp32", "fp32", "int8", 0), True, False).setup_per_channel is False


def test_static_int8_gemm_runs_its_bias_add_as_qlinearadd() -> None:
    """The QDQ export splits Gemm into MatMul + Add; the Add is an int8 element-wise kernel of its own."""
    int8 = Combo("int8", "int8", "int8", 0)
    g, m = (plan(HOST, HW, op, "gemm", int8, True, False) for op in ("Gemm", "MatMul"))
    assert g.extra_ops_per_out == 3.0 and g.extra_dispatches == m.extra_dispatches + 1
    assert m.extra_ops_per_out == 0.0
    values = [act("x", [8, 64]), weight("w", [64, 64]), weight("b", [64]), act("y", [8, 64])]

    def lat(op: str) -> float:
        inputs = ["x", "w", "b"] if op == "Gemm" else ["x", "w"]
        r = sweep(graph([Node("g", "g", op, inputs=inputs, outputs=["y"])], values, ["x"], ["y"]), HOST)
        return r.bulk["metrics"]["latency_ms"][0][[p["name"] for p in r.bulk["presets"]].index("int8-static")]

    assert lat("Gemm") > lat("MatMul")


def _convs_sharing_a_bias() -> tuple:
    """x -> c1 -> c2 -> c3 -> c4: c1 and c2 read one bias through Identity wrappers (TorchScript's export of
    deduplicated BatchNorm-folded biases), c3 owns its bias, and c4's bias is also read by a Clip (which
    runs fp16 itself, so it needs no Cast). Same shapes, so only the bias sharing differs."""
    sh = [1, 32, 16, 16]
    values = [act("x", sh), weight("bs", [32]), act("bs1", [32]), act("bs2", [32]), weight("b3", [32]),
              weight("b4", [32]), act("y", sh)]
    nodes = [Node("id1", "id1", "Identity", inputs=["bs"], outputs=["bs1"]),
             Node("id2", "id2", "Identity", inputs=["bs"], outputs=["bs2"])]
    x = "x"
    for i, b in enumerate(("bs1", "bs2", "b3", "b4"), 1):
        values += [weight(f"w{i}", [32, 32, 3, 3]), act(f"c{i}", sh)]
        nodes.append(Node(f"c{i}", f"c{i}", "Conv", inputs=[x, f"w{i}", b], outputs=[f"c{i}"],
                          attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}))
        x = f"c{i}"
    nodes.append(Node("clip", "clip", "Clip", inputs=["c4", "b4"], outputs=["y"]))
    return graph(nodes, values, ["x"], ["y"]), ["c1", "c2", "c3", "c4"]


def test_fp16_gemms_of_one_row_pack_no_shared_weight() -> None:
    """A weight read by several Gemms stays behind a kept Cast in an fp16 file: Gemms of several rows pack it on every
    run (MLAS's SGEMM), a Gemm of one row (a decoder step) runs MLAS's M = 1 kernel on it as it is, packing nothing
    (a greedy decoder's fp16 Gemms were priced 4.6x their fp32 price and measured the same as fp32)."""
    from simulator.ort_fp16 import fp16_shared_casts

    values = [weight("w", [256, 768])]
    nodes = []
    for i, rows in enumerate((1, 1, 4, 4)):
        values += [act(f"x{i}", [rows, 256]), act(f"y{i}", [rows, 768])]
        nodes.append(Node(f"g{i}", f"g{i}", "Gemm", inputs=[f"x{i}", "w"], outputs=[f"y{i}"]))
    g = graph(nodes, values, [f"x{i}" for i in range(4)], [f"y{i}" for i in range(4)])
    assert fp16_shared_casts(HOST, g) == [False, False, True, True]
    # a batched MatMul of one row per batch is no M = 1 call: its rows are the batch's
    values = [weight("w", [256, 768]), act("a", [1, 1, 256]), act("b", [2, 1, 256]), act("ya", [1, 1, 768]),
              act("yb", [2, 1, 768])]
    nodes = [Node("ma", "ma", "MatMul", inputs=["a", "w"], outputs=["ya"]),
             Node("mb", "mb", "MatMul", inputs=["b", "w"], outputs=["yb"])]
    assert fp16_shared_casts(HOST, graph(nodes, values, ["a", "b"], ["ya", "yb"])) == [False, True]


def test_fp16_convs_reading_a_shared_constant_stay_nchw() -> None:
    """ORT keeps the Cast of an fp16 constant that several fp32-only nodes read, so those Convs have a
    non-constant bias and no NCHWc form: a plain Conv with its own rate (`cast16nchw`) and no reorders."""
    from simulator.ort_fp16 import fp16_shared_casts

    g, convs = _convs_sharing_a_bias()
    flags = dict(zip([nd.id for nd in g.nodes], fp16_shared_casts(HOST, g)))
    assert [flags[c] for c in convs] == [True, True, False, False]
    assert fp16_shared_casts(get_target("coreml/apple-a17"), g) == [False] * len(g.nodes)  # fp16 natively

    nchw = plan(HOST, HW, "Conv", "conv", FP16, True, fused=True, shared_cast=True)
    nchwc = plan(HOST, HW, "Conv", "conv", FP16, True, fused=True)
    assert nchw.tag == "cast16nchw" and nchwc.tag == "cast16"
    assert nchw.extra_dispatches == nchwc.extra_dispatches - 2  # the activation, but no reorders
    assert plan(HOST, HW, "Conv", "conv", Combo("fp32", "fp32", "fp32", 0), True, True, shared_cast=True).tag == "fp32"

    # With the NCHW rate below the NCHWc one (as calibrated on x86 hosts), only fp16 tells the Convs apart.
    hw = HW.with_overrides({"units": {"cpu": {"efficiency": {"conv.cast16": 0.8, "conv.cast16nchw": 0.55}}}})
    r = sweep(g, HOST, hardware=hw)
    lat = r.bulk["metrics"]["latency_ms"]
    names = [p["name"] for p in r.bulk["presets"]]
    fp16, fp32 = names.index("fp16"), names.index("fp32")
    row = {op: i for i, op in enumerate(r.bulk["ops"])}
    assert lat[row["c2"]][fp32] == pytest.approx(lat[row["c3"]][fp32])
    assert lat[row["c2"]][fp16] > 1.2 * lat[row["c3"]][fp16]
    assert lat[row["c4"]][fp16] == pytest.approx(lat[row["c3"]][fp16])  # a Clip's read needs no Cast
    assert any("plain NCHW Conv" in n for n in r.per_op[row["c2"]]["notes"])
    assert not any("plain NCHW Conv" in n for n in r.per_op[row["c3"]]["notes"])


def test_static_int8_conv_requantizes_its_int32_accumulators() -> None:
    """ORT's QLinearConv writes int32 accumulators and requantizes them in a second pass: a cost per output
    element, so a narrow pointwise conv (few input channels per output) costs more per MAC than a wide one;
    only the depthwise kernel also pays per output pixel. QLinearMatMul pays the same per output element.
    Float and dynamic int8 paths are unchanged."""
    int8 = Combo("int8", "int8", "int8", 0)
    for kind in ("conv", "convsmall", "dwconv"):
        p = plan(HOST, HW, "Conv", kind, int8, True, False)
        f = plan(HOST, HW, "Conv", kind, Combo("fp32", "fp32", "fp32", 0), True, False)
        assert p.extra_out_bytes >= f.extra_out_bytes + 8 and p.setup_per_pixel is (kind == "dwconv")
        assert not f.setup_per_pixel
    assert not plan(HOST, HW, "Conv", "conv", Combo("fp32", "fp32", "int8", 0), True, False).setup_per_pixel
    # QLinearMatMul requantizes a full int32 buffer too; dynamic int8 MatMul dequantizes to float instead.
    assert plan(HOST, HW, "MatMul", "gemm", int8, True, False).extra_out_bytes == 8.0
    assert plan(HOST, HW, "MatMul", "gemm", Combo("fp32", "fp32", "int8", 0), True, False).extra_out_bytes == 0.0

    def per_mac(cin: int, cout: int) -> float:
        # Same MACs (cin * cout = 4096) on 32 x 32 pixels: only the output size differs.
        values = [act("x", [1, cin, 32, 32]), weight("w", [cout, cin, 1, 1]), act("y", [1, cout, 32, 32])]
        r = sweep(graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"])], values, ["x"], ["y"]), HOST)
        names = [p["name"] for p in r.bulk["presets"]]
        lat = r.bulk["metrics"]["latency_ms"][0]
        return lat[names.index("int8-static")] / lat[names.index("fp32")]

    assert per_mac(16, 256) > per_mac(256, 16)  # int8 gains less where the output is large against the MACs


def test_static_int8_depthwise_pays_per_output_pixel() -> None:
    """`dwconv.int8.pixel` is charged per output pixel (output elements / channels), not per channel."""
    def lat(c: int, s: int, pixel: float) -> float:
        values = [act("x", [1, c, s, s]), weight("w", [c, 1, 3, 3]), act("y", [1, c, s, s])]
        g = graph([Node("d", "d", "Conv", inputs=["x", "w"], outputs=["y"], attributes={"group": c, "pads": [1] * 4})],
                  values, ["x"], ["y"])
        r = sweep(g, HOST, hardware=HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {"dwconv.int8.pixel": pixel}}}}))
        return r.bulk["metrics"]["latency_ms"][0][[p["name"] for p in r.bulk["presets"]].index("int8-static")]

    for c, s in ((32, 16), (128, 8)):
        assert lat(c, s, 1e-6) - lat(c, s, 0.0) == pytest.approx(s * s * 1e-3)  # s * s pixels x 1 us, in ms


def test_fp16_gelu_runs_unfused() -> None:
    """ORT fuses the Div/Erf/Add/Mul/Mul of GELU only in fp32: under fp16 the five run as their own kernels
    between Casts: fp16 adds more to Gelu than to Relu, which only pays its Casts."""
    values = [act("x", [64, 1024]), act("y", [64, 1024])]

    def lat(op: str, preset: str) -> float:
        r = sweep(graph([Node("a", "a", op, inputs=["x"], outputs=["y"])], values, ["x"], ["y"]), HOST)
        return r.bulk["metrics"]["latency_ms"][0][[p["name"] for p in r.bulk["presets"]].index(preset)]

    p16 = plan(HOST, HW, "Gelu", "elementwise", Combo("fp16", "fp16", "-", 0), False, False)
    assert "Gelu not fused" in p16.note and p16.extra_dispatches >= 4
    # Both pay the same Casts; Gelu also pays four more passes over its 64K elements (2 MB of traffic).
    gelu_extra, relu_extra = lat("Gelu", "fp16") - lat("Gelu", "fp32"), lat("Relu", "fp16") - lat("Relu", "fp32")
    assert gelu_extra > relu_extra + 0.01


def test_static_int8_skip_layernorm_loses_its_fusion() -> None:
    """The QDQ exporter quantizes the residual Add that ORT fuses into SkipLayerNormalization, so under
    int8-static the task runs QLinearAdd + a plain LayerNormalization: at LayerNormalization's rate (the
    fused kernel is far slower per element on the host), plus the Add's own kernel."""
    q = Combo("int8", "int8", "-", 0)
    p = plan(HOST, HW, "SkipLayerNormalization", "skipnorm", q, False, False)
    assert not p.supported and p.resolved.input == "fp32"  # LayerNormalization itself stays float
    assert p.rate_kind == "norm" and p.extra_dispatches == 1 and "QLinearAdd" in p.note
    fp32 = plan(HOST, HW, "SkipLayerNormalization", "skipnorm", Combo("fp32", "fp32", "-", 0), False, False)
    assert fp32.rate_kind == "" and fp32.extra_dispatches == 0
    # In a sweep, the task's int8-static latency takes the norm rate (host-cpu yaml: 5x skipnorm's efficiency).
    values = [act("x", [1, 64, 256]), act("s", [1, 64, 256]), act("y", [1, 64, 256])]
    r = sweep(graph([Node("n", "n", "SkipLayerNormalization", inputs=["x", "s"], outputs=["y"])], values,
                    ["x", "s"], ["y"]), HOST)
    names = [x["name"] for x in r.bulk["presets"]]
    lat = r.bulk["metrics"]["latency_ms"][0]
    assert lat[names.index("int8-static")] < 0.7 * lat[names.index("fp32")]


def test_static_int8_softmax_runs_qlinearsoftmax_at_its_own_rate() -> None:
    """ORT runs a quantized Softmax as QLinearSoftmax (a uint8 kernel): int8 in and out, no conversions
    around it, at the `softmax.int8` efficiency calibration fits."""
    q = plan(HOST, HW, "Softmax", "softmax", Combo("int8", "int8", "-", 0), False, False)
    assert q.supported and q.tag == "int8" and q.in_bytes == q.out_bytes == 1.0
    slow = HW.with_overrides({"units": {"cpu": {"efficiency": {"softmax.int8": 0.001}}}})
    values = [act("x", [4, 64, 64]), act("y", [4, 64, 64])]
    g = graph([Node("s", "s", "Softmax", inputs=["x"], outputs=["y"], attributes={"axis": -1})], values, ["x"], ["y"])

    def at(hw: object, preset: str) -> float:
        r = sweep(g, HOST, hardware=hw)
        return r.bulk["metrics"]["latency_ms"][0][[x["name"] for x in r.bulk["presets"]].index(preset)]

    assert at(slow, "int8-static") > 2 * at(HW, "int8-static")
    assert at(slow, "fp32") == pytest.approx(at(HW, "fp32"))


def test_static_int8_keeps_only_qlinear_elementwise_ops_in_int8() -> None:
    """ORT has uint8 kernels for Add, Mul, Sigmoid, LeakyRelu (and folds Relu/Clip into the output range);
    Div, Erf and the like stay float between DequantizeLinear and QuantizeLinear, and a fused Gelu runs as
    its five parts again."""
    q = Combo("int8", "int8", "-", 0)
    for op in ("Add", "Mul", "Sigmoid", "Relu"):
        p = plan(HOST, HW, op, "elementwise", q, False, False)
        assert p.supported and p.resolved == q, op
    for op in ("Div", "Erf", "Tanh"):
        p = plan(HOST, HW, op, "elementwise", q, False, False)
        assert not p.supported and p.resolved.input == "fp32" and p.extra_dispatches == 0, op
    g = plan(HOST, HW, "Gelu", "elementwise", q, False, False)
    assert not g.supported and g.resolved.input == "fp32" and g.extra_dispatches == 4 and "not fused" in g.note
    # Other backends keep their own int8 rules: the XNNPACK-based board runs any element-wise kind in int8.
    rpi = load_profile("rpi5")
    assert plan(get_target("ort-xnnpack/rpi5"), rpi, "Div", "elementwise", q, False, False).resolved == q


def test_fp16_skip_layernorm_that_ort_leaves_unfused_runs_as_add_and_fp16_norm() -> None:
    """Where the compile's fp16 probe found the LayerNormalization left plain, the SkipLayerNormalization task
    runs under fp16 as an fp32 Add, a Cast and an fp16 LayerNormalization at the norm's rate; elsewhere (and
    without a probe) it keeps the fused fp32 kernel between Casts. fp32 is the same either way."""
    import json

    from simulator.ort_fp16 import fp16_unfused_norms

    values = [act("x", [1, 64, 256]), act("s", [1, 64, 256]), act("y", [1, 64, 256]), act("z", [1, 64, 256])]
    nodes = [Node("sk", "sk", "SkipLayerNormalization", inputs=["x", "s"], outputs=["y"], source_nodes=["add", "ln"]),
             Node("r", "r", "Relu", inputs=["y"], outputs=["z"], source_nodes=["relu"])]
    g = graph(nodes, values, ["x", "s"], ["z"])
    assert fp16_unfused_norms(HOST, g) == [False, False]  # no probe recorded
    probed = graph(nodes, values, ["x", "s"], ["z"])
    probed.metadata["fp16_plain_norms"] = json.dumps(["ln"])
    assert fp16_unfused_norms(HOST, probed) == [True, False]
    assert fp16_unfused_norms(get_target("coreml/apple-a17"), probed) == [False, False]  # fp16 natively there

    def lat(gr: object, preset: str) -> tuple[float, str]:
        r = sweep(gr, HOST)
        j = [x["name"] for x in r.bulk["presets"]].index(preset)
        return r.bulk["metrics"]["latency_ms"][0][j], r.bulk["combos"][0][j]

    assert lat(probed, "fp32") == lat(g, "fp32")
    (fused_ms, fused_combo), (plain_ms, plain_combo) = lat(g, "fp16"), lat(probed, "fp16")
    assert fused_combo.startswith("fp32/fp32") and plain_combo.startswith("fp32/fp16")
    assert plain_ms < fused_ms  # host-cpu yaml: LayerNormalization's rate is 5x the fused kernel's
    p = plan(HOST, HW, "SkipLayerNormalization", "skipnorm", Combo("fp16", "fp16", "-", 0), False, False,
             plain_norm=True)
    assert p.rate_kind == "norm" and p.out_bytes == 2.0 and p.extra_dispatches == 2



def test_depthwise_conv_ort_leaves_in_nchw_runs_im2col_per_channel() -> None:
    """A depthwise Conv ORT did not convert to NCHWc (a plain Conv in the compiled graph: ShuffleNet v2's 58-channel
    ones, tests/simulator/test_ort_layouts.py) runs MLAS's NCHW path channel by channel: im2col + GEMM."""
    from simulator.costs import work_of

    c = 58
    g = graph([Node("dw", "dw", "Conv", inputs=["x", "w"], outputs=["y"],
                    attributes={"group": c, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]})],
              [act("x", [1, c, 32, 32]), weight("w", [c, 1, 3, 3]), act("y", [1, c, 16, 16])], ["x"], ["y"])
    work = work_of(g.nodes[0], g)
    assert work.kind == "dwconvnchw" and work.macs == c * 16 * 16 * 9 and work.im2col_elements == 2 * work.macs

    fp32 = Combo("fp32", "fp32", "fp32", 0)
    p = plan(HOST, HW, "Conv", "dwconvnchw", fp32, True, False)
    assert p.im2col and p.tag == "nchw" and p.rate_kind == "dwconvnchw" and p.setup_per_channel and p.fp32_equivalent
    # Pruned: the same dense kernel (zeros computed); other options are the NCHWc depthwise conv's paths.
    assert plan(HOST, HW, "Conv", "dwconvnchw", Combo("fp32", "fp32", "fp32", 50), True, False).tag == "nchw"
    int8 = Combo("int8", "int8", "int8", 0)
    assert plan(HOST, HW, "Conv", "dwconvnchw", int8, True, False).tag == plan(HOST, HW, "Conv", "dwconv", int8, True, False).tag
    # A profile without the path's figures (host-cpu.yaml has them, measured) keeps the NCHWc ones.
    bare = dataclasses.replace(HW, units=tuple(dataclasses.replace(u, kind_overhead_s={}) for u in HW.units))
    assert plan(HOST, bare, "Conv", "dwconvnchw", fp32, True, False).tag == "fp32"
    # Its im2col buffer is every channel's taps (read at stride 2 here): the time grows with it at the path's rate,
    # and its fixed cost is per channel.
    lat = [sweep(g, HOST, hardware=HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {
        "dwconvnchw.nchw.im2col": im, "dwconvnchw.nchw": ch}}}})).bulk for im, ch in ((2e-10, 0.0), (3e-10, 0.0),
                                                                                     (2e-10, 1e-6))]
    j = [q["name"] for q in lat[0]["presets"]].index("fp32")
    ms = [b["metrics"]["latency_ms"][0][j] for b in lat]
    assert ms[1] - ms[0] == pytest.approx(1e-10 * work.im2col_elements * 1e3)
    assert ms[2] - ms[0] == pytest.approx(1e-6 * c * 1e3)


def test_fp16_depthwise_convs_left_in_nchw_take_the_grouped_nchw_path() -> None:
    """An fp16 depthwise Conv behind a shared Cast (or one ORT already leaves in NCHW) runs MLAS's grouped NCHW Conv,
    im2col + a one-row SGEMM per channel, at the plain Conv's rates over every channel's taps: not the NCHWc
    depthwise kernel's rate (an fp16 MobileNetV2's depthwise convs measured 12.6x their fp32 time, predicted 1.2x)."""
    from simulator.costs import work_of

    shared = plan(HOST, HW, "FusedConv", "dwconv", FP16, True, fused=True, shared_cast=True)
    assert shared.tag == "nchw" and shared.im2col and shared.rate_kind == "dwconvnchw" and shared.setup_per_channel
    assert not shared.fp32_equivalent  # fp32 ran the NCHWc kernel: its measured time is not this path's
    plain = plan(HOST, HW, "Conv", "dwconvnchw", FP16, True, fused=False)
    assert plain.tag == "nchw" and plain.im2col and plain.rate_kind == "dwconvnchw"
    nchwc = plan(HOST, HW, "FusedConv", "dwconv", FP16, True, fused=True)
    assert nchwc.tag == "cast16" and not nchwc.im2col and nchwc.rate_kind == ""
    # The buffer is every channel's taps: the im2col time is that of the whole MACs, not one channel's.
    c = 96
    g = graph([Node("dw", "dw", "Conv", inputs=["x", "w"], outputs=["y"], domain="com.microsoft.nchwc",
                    attributes={"group": c, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})],
              [act("x", [1, c, 56, 56]), weight("w", [c, 1, 3, 3]), act("y", [1, c, 56, 56])], ["x"], ["y"])
    assert work_of(g.nodes[0], g).im2col_elements == c * 56 * 56 * 9


def test_dynamic_int8_convs_pay_their_im2col_per_row() -> None:
    """ConvInteger expands its input row by row (ORT's Im2col<uint8_t>): a fixed cost per row besides the elements.
    Rows: input channels per group x taps x output rows, over every group (a depthwise 5x5, stride 2 here); a 1x1
    stride-1 conv expands nothing; fp32's NCHWc kernel has no im2col."""
    from simulator.costs import work_of

    c = 24
    g = graph([Node("dw", "dw", "Conv", inputs=["x", "w"], outputs=["y"],
                    attributes={"group": c, "kernel_shape": [5, 5], "pads": [2, 2, 2, 2], "strides": [2, 2]},
                    domain="com.microsoft.nchwc"),  # converted to NCHWc by ORT (a plain one: `dwconvnchw`)
               Node("pw", "pw", "Conv", inputs=["y", "w2"], outputs=["z"], attributes={"kernel_shape": [1, 1]})],
              [act("x", [1, c, 28, 28]), weight("w", [c, 1, 5, 5]), act("y", [1, c, 14, 12]),
               weight("w2", [32, c, 1, 1]), act("z", [1, 32, 14, 12])], ["x"], ["z"])
    dw, pw = (work_of(nd, g) for nd in g.nodes)
    assert dw.kind == "dwconv" and dw.im2col_rows == c * 25 * 14 and dw.im2col_elements == 2 * dw.macs
    assert pw.im2col_rows == 24 * 14  # counted, but a 1x1 stride-1 conv reads its input as it is (below)
    assert plan(HOST, HW, "Conv", "dwconv", Combo("fp32", "fp32", "int8", 0), True, False).im2col

    def lat(row_s: float) -> list[float]:
        over = {f"{k}.int8dyn.im2col.row": row_s for k in ("dwconv", "conv", "convsmall")}
        b = sweep(g, HOST, hardware=HW.with_overrides({"units": {"cpu": {"kind_overhead_s": over}}})).bulk
        j = [p["name"] for p in b["presets"]].index("int8-dynamic")
        f = [p["name"] for p in b["presets"]].index("fp32")
        return [b["metrics"]["latency_ms"][i][k] for i in (0, 1) for k in (j, f)]

    lo, hi = lat(0.0), lat(1e-8)
    assert hi[0] - lo[0] == pytest.approx(1e-8 * dw.im2col_rows * 1e3)  # int8-dynamic depthwise: per row
    assert hi[1] == lo[1] and hi[2] == lo[2] and hi[3] == lo[3]  # fp32, and the 1x1 conv: no expansion


@pytest.mark.parametrize("shared_cast", [False, True])
def test_a_fallback_runs_as_its_combo_chosen_itself(shared_cast: bool) -> None:
    """An fp16 combo with int4 weights, which no ORT CPU conv kernel runs, falls back to fp16/fp16/fp32/0 and costs
    what that combo costs when chosen: fp32 between its Casts (it was an fp16 kernel at the fp32 rate, so the per-op
    dialog's "runs as" showed another time than its target combo)."""
    asked = plan(HOST, HW, "Conv", "conv", Combo("fp16", "fp16", "int4", 0), True, False, shared_cast=shared_cast)
    itself = plan(HOST, HW, "Conv", "conv", Combo("fp16", "fp16", "fp32", 0), True, False, shared_cast=shared_cast)
    assert not asked.supported and "runs as fp16/fp16/fp32/0" in asked.note
    assert dataclasses.replace(asked, supported=True, note=itself.note) == itself
