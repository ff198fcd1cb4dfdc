"""Cost functions against hand-computed MACs, FLOPs and element counts."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.costs import Estimate, work_of
from simulator.folding import fold_constants
from tests.simulator.helpers import act, conv_chain, graph, weight


def test_conv_macs_and_elements() -> None:
    g = conv_chain()
    w = work_of(g.node("conv1"), g)
    # 16 x 32 x 32 outputs, each 3 x 3 x 3 MACs. Three input channels: the few-channel conv kind.
    assert w.kind == "convsmall"
    assert w.macs == 16 * 32 * 32 * 27
    assert w.in_elements == 3 * 32 * 32 and w.out_elements == 16 * 32 * 32
    assert w.kernel_elements == 16 * 27 and w.kernel_out_channels == 16
    assert w.aux_weight_elements == 16  # the bias


def test_wide_conv_is_plain_conv() -> None:
    g = graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"])],
              [act("x", [1, 32, 4, 4]), weight("w", [8, 32, 1, 1]), act("y", [1, 8, 4, 4])], ["x"], ["y"])
    w = work_of(g.nodes[0], g)
    # A plain ONNX Conv: in an ORT-compiled graph, one ORT left in NCHW (MLAS's SGEMM path); its NCHWc form is conv.
    assert (w.kind, w.macs) == ("convnchw", 8 * 4 * 4 * 32)
    g.nodes[0].domain = "com.microsoft.nchwc"
    assert (work_of(g.nodes[0], g).kind, work_of(g.nodes[0], g).macs) == ("conv", w.macs)


def test_depthwise_conv() -> None:
    g = conv_chain()
    w = work_of(g.node("dw"), g)
    # A plain ONNX Conv: in an ORT-compiled graph, one ORT left in NCHW (im2col per channel); its NCHWc form is dwconv.
    assert w.kind == "dwconvnchw" and w.im2col_elements == w.macs
    assert w.macs == 16 * 32 * 32 * 9  # one input channel per output
    assert w.kernel_elements == 16 * 9
    g.node("dw").domain = "com.microsoft.nchwc"
    w2 = work_of(g.node("dw"), g)
    # Its im2col elements are recorded too, for the paths that leave it in NCHW (fp16 behind a shared Cast).
    assert (w2.kind, w2.macs, w2.im2col_elements) == ("dwconv", w.macs, w.macs)


def test_depthwise_conv_with_a_channel_multiplier_pays_no_stride() -> None:
    """FastViT's 7x7 stride-2 downsampler (48 groups, 2 outputs each) runs MLAS's im2col + SGEMM with no strided
    gather (conv_work.multiplied_depthwise): the unit-stride expansion, where a multiplier-1 one pays the stride."""
    def dw(m: int) -> object:
        g = graph([Node("dw", "dw", "Conv", inputs=["x", "w"], outputs=["y"],
                        attributes={"group": 48, "strides": [2, 2], "pads": [3, 3, 3, 3]})],
                  [act("x", [1, 48, 64, 64]), weight("w", [48 * m, 1, 7, 7]), act("y", [1, 48 * m, 32, 32])],
                  ["x"], ["y"])
        return work_of(g.nodes[0], g)

    one, two = dw(1), dw(2)
    assert one.kind == two.kind == "dwconvnchw" and two.macs == 2 * one.macs
    assert (one.im2col_elements, one.im2col_strided) == (2 * one.macs, one.macs)
    assert (two.im2col_elements, two.im2col_strided) == (two.macs, 0.0)


def test_gemm_and_matmul() -> None:
    g = conv_chain()
    w = work_of(g.node("fc"), g)
    assert (w.kind, w.macs, w.kernel_elements) == ("gemm", 16 * 10, 160)
    # Activation x activation MatMul (attention scores): [2, 8, 64] x [2, 64, 8].
    g2 = graph([Node("mm", "mm", "MatMul", inputs=["q", "k"], outputs=["s"])],
               [act("q", [2, 8, 64]), act("k", [2, 64, 8]), act("s", [2, 8, 8])], ["q", "k"], ["s"])
    w2 = work_of(g2.nodes[0], g2)
    assert (w2.kind, w2.macs, w2.kernel_elements) == ("matmul", 2 * 8 * 8 * 64, 0)
    assert w2.in_elements == 2 * 8 * 64 * 2 and w2.out_elements == 128


def test_gemm_trans_a_uses_rows_of_a() -> None:
    g = graph([Node("g", "g", "Gemm", inputs=["a", "b"], outputs=["y"], attributes={"transA": 1})],
              [act("a", [32, 4]), weight("b", [32, 6]), act("y", [4, 6])], ["a"], ["y"])
    assert work_of(g.nodes[0], g).macs == 4 * 6 * 32


def test_attention_contrib_op() -> None:
    # com.microsoft Attention: input [1, 16, 64], fused QKV weight [64, 192], 4 heads.
    g = graph([Node("att", "att", "Attention", inputs=["x", "w", "b"], outputs=["y"], domain="com.microsoft",
                    attributes={"num_heads": 4})],
              [act("x", [1, 16, 64]), weight("w", [64, 192]), weight("b", [192]), act("y", [1, 16, 64])], ["x"], ["y"])
    w = work_of(g.nodes[0], g)
    proj = 1 * 16 * 64 * 192  # QKV projection
    scores = 2 * 1 * 16 * 16 * 64  # QK^T and AV over all heads
    assert w.kind == "attention"
    assert w.macs == proj + scores
    assert w.flops == 5 * 1 * 4 * 16 * 16  # softmax


def test_pooling() -> None:
    g = conv_chain()
    w = work_of(g.node("gap"), g)
    # A plain-domain pool is one ORT left in NCHW (its own kernel and figures); its NCHWc form is the pool kind.
    assert (w.kind, w.macs, w.flops) == ("poolnchw", 0, 16 * 32 * 32)
    g2 = graph([Node("mp", "mp", "MaxPool", inputs=["x"], outputs=["y"],
                     attributes={"kernel_shape": [3, 3], "strides": [2, 2]})],
               [act("x", [1, 8, 9, 9]), act("y", [1, 8, 4, 4])], ["x"], ["y"])
    assert work_of(g2.nodes[0], g2).flops == 8 * 4 * 4 * 9
    g3 = graph([Node("mp", "mp", "MaxPool", inputs=["x"], outputs=["y"], domain="com.microsoft.nchwc",
                     attributes={"kernel_shape": [3, 3], "strides": [2, 2]})],
               [act("x", [1, 16, 9, 9]), act("y", [1, 16, 4, 4])], ["x"], ["y"])
    assert (work_of(g3.nodes[0], g3).kind, work_of(g3.nodes[0], g3).flops) == ("pool", 16 * 4 * 4 * 9)


@pytest.mark.parametrize("op,flops_per", [("Add", 1), ("Relu", 1), ("Sigmoid", 4), ("Gelu", 10)])
def test_elementwise(op: str, flops_per: int) -> None:
    ins = ["a", "b"] if op == "Add" else ["a"]
    g = graph([Node("e", "e", op, inputs=ins, outputs=["y"])],
              [act("a", [2, 100]), act("b", [2, 100]), act("y", [2, 100])], ins, ["y"])
    w = work_of(g.nodes[0], g)
    assert w.kind == "elementwise" and w.flops == flops_per * 200
    assert w.in_elements == 200 * len(ins) and w.out_elements == 200
    est = w.estimate()
    assert est.bytes_read == 4 * 200 * len(ins) and est.bytes_written == 800


def test_estimate_adds() -> None:
    assert Estimate(1, 2, 3, 4) + Estimate(10, 20, 30, 40) == Estimate(11, 22, 33, 44)


def test_fused_conv_counts_activation_and_residual() -> None:
    g = graph([Node("fc", "fc", "FusedConv", inputs=["x", "w", "", "z"], outputs=["y"], domain="com.microsoft",
                    attributes={"activation": "Relu"})],
              [act("x", [1, 4, 8, 8]), weight("w", [4, 4, 1, 1]), act("z", [1, 4, 8, 8]), act("y", [1, 4, 8, 8])],
              ["x", "z"], ["y"])
    w = work_of(g.nodes[0], g)
    # FusedConv applies its activation as a separate pass (MLAS): epilogue FLOPs, not kernel FLOPs.
    assert w.macs == 4 * 8 * 8 * 4 and w.flops == 4 * 8 * 8 and w.epilogue_flops == 4 * 8 * 8
    assert w.fused_activation


def test_nchwc_conv_fuses_relu_in_kernel_but_not_clip() -> None:
    def conv(activation: str) -> object:
        return graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"], domain="com.microsoft.nchwc",
                           attributes={"activation": activation})],
                     [act("x", [1, 16, 8, 8]), weight("w", [16, 16, 1, 1]), act("y", [1, 16, 8, 8])], ["x"], ["y"])

    relu, clip = conv("Relu"), conv("Clip")
    assert work_of(relu.nodes[0], relu).epilogue_flops == 0 and work_of(relu.nodes[0], relu).flops == 1024
    assert work_of(clip.nodes[0], clip).epilogue_flops == 2 * 1024 and work_of(clip.nodes[0], clip).flops == 0
    # On ORT CPU the Clip pass costs element-wise time; int8 folds it into the output range.
    from simulator.sweep import sweep

    r_relu, r_clip = sweep(relu, "ort-cpu/host"), sweep(clip, "ort-cpu/host")
    names = [p["name"] for p in r_clip.bulk["presets"]]
    fp32, int8 = names.index("fp32"), names.index("int8-static")
    lat = lambda r, p: r.bulk["metrics"]["latency_ms"][0][p]  # noqa: E731
    clip_pass = lat(r_clip, fp32) - lat(r_relu, fp32)
    assert clip_pass > 0
    # under int8 no pass of its own: what is left is the in-kernel clamp's few FLOPs at the int8 rate
    assert abs(lat(r_clip, int8) - lat(r_relu, int8)) < 0.1 * clip_pass


def test_constant_only_ops_are_folded_into_weights() -> None:
    # TorchScript wraps weights in Identity; the Conv's kernel is the folded weight.
    g = graph([Node("id", "id", "Identity", inputs=["w0"], outputs=["w"]),
               Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"])],
              [weight("w0", [8, 4, 1, 1]), Value_("w", [8, 4, 1, 1]), act("x", [1, 4, 2, 2]), act("y", [1, 8, 2, 2])],
              ["x"], ["y"])
    view, folded = fold_constants(g)
    assert folded == {"id"}
    assert work_of(g.node("c"), view).kernel_elements == 32


def Value_(name: str, shape: list[int]):  # noqa: N802 - an activation-typed value filled by folding
    return act(name, shape)


def test_reduction_over_outer_axes_is_strided() -> None:
    """ORT reduces the innermost axes in one streaming pass; over an outer axis (a channel mean of NCHW, magika's
    ReduceSum over dim 1) it reads with strides, many times slower per element (STRIDED_REDUCE_FLOPS)."""
    from compiler.graph import WeightStats, Value
    from simulator.reductions import STRIDED_REDUCE_FLOPS

    def reduce(op: str, shape: list[int], axes: list[int], as_input: bool = False) -> float:
        out = [1 if i in axes else d for i, d in enumerate(shape)]
        values = [act("x", shape), act("y", out)]
        inputs = ["x"]
        attrs = {} if as_input else {"axes": axes}
        if as_input:  # opset 13+ ReduceSum: axes is a constant input, of which the graph keeps min and max
            values.append(Value("axes", [len(axes)], "int64",
                                weight=WeightStats(len(axes), 8 * len(axes), float(min(axes)), float(max(axes)), 0.0)))
            inputs.append("axes")
        g = graph([Node("r", "r", op, inputs=inputs, outputs=["y"], attributes=attrs)], values, ["x"], ["y"])
        w = work_of(g.nodes[0], g)
        assert w.kind == "reduce"
        return w.flops / w.in_elements

    assert reduce("ReduceMean", [1, 64, 56, 56], [2, 3]) == 1.0  # global pooling: contiguous
    assert reduce("ReduceMean", [1, 64, 56, 56], [1]) == STRIDED_REDUCE_FLOPS  # channel mean
    assert reduce("ReduceSum", [1, 512, 256], [1], as_input=True) == STRIDED_REDUCE_FLOPS
    assert reduce("ReduceSum", [1, 512, 256], [2], as_input=True) == 1.0
    assert reduce("ReduceMax", [4, 1, 8], [0, 1]) == STRIDED_REDUCE_FLOPS  # the kept axis 2 follows
    assert reduce("ReduceMax", [4, 8, 1], [1]) == 1.0  # only a size-1 axis follows
