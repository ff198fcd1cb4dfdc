"""Static int8 on ONNX Runtime's CPU: a squeeze-excite's spatial ReduceMean of data that leaves a Conv reduces H and W of
NHWC data (ORT's transpose optimizer rewrites its axes), strided reads (simulator/ort_int8.py ORT_INT8_NHWC_REDUCE:
`reduce.int8.nhwc` per element read).
Integration tier: the graphs are compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_int8 import NHWC_REDUCE_KEY, ORT_INT8_NHWC_REDUCE, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
STATIC, DYNAMIC = Combo("int8", "int8", "-", 0), Combo("fp32", "fp32", "-", 0)


def _se(path: Path, after_conv: bool) -> Path:
    """Conv (or nothing) -> squeeze-excite (ReduceMean over H, W -> 1x1 Conv -> Sigmoid -> Mul) -> Conv."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal((32, 32, 1, 1)) * 0.1).astype(np.float32), "ws")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="c0", pads=[1, 1, 1, 1])] if after_conv else []
    a = "c" if after_conv else "x"
    nodes += [helper.make_node("ReduceMean", [a], ["m"], name="se_mean", axes=[2, 3], keepdims=1),
              helper.make_node("Conv", ["m", "ws"], ["s"], name="se_conv"),
              helper.make_node("Sigmoid", ["s"], ["g"], name="se_gate"),
              helper.make_node("Mul", [a, "g"], ["e"], name="se_mul"),
              helper.make_node("Conv", ["e", "w"], ["y"], name="c1", pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 28, 28])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_int8_file_reduces_nhwc_axes_and_the_fact_follows_a_conv_only(tmp_path: Path) -> None:
    import onnx
    import onnxruntime as ort

    from compiler.optimize.onnx_export import export_onnx
    from simulator.model import compile_for

    # The premise, in ORT itself: the static int8 file's optimized graph reduces axes [1, 2] (NHWC).
    src = _se(tmp_path / "se.onnx", True)
    q = export_onnx(src, tmp_path / "se.int8.onnx", "int8-static").path
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "se.int8.opt.onnx")
    ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"])
    opt = onnx.load(str(tmp_path / "se.int8.opt.onnx"))
    means = [n for n in opt.graph.node if n.op_type == "ReduceMean"]
    assert len(means) == 1, [n.op_type for n in opt.graph.node]
    axes = next((list(a.ints) for a in means[0].attribute if a.name == "axes"), None)
    assert axes == [1, 2], axes

    for after_conv in (True, False):
        source, g, _ = compile_for(_se(tmp_path / f"s{after_conv}.onnx", after_conv), HOST.name, tmp_path / f"w{after_conv}")
        facts = ort_task_facts(g, source)
        got = [f for nd, f in zip(g.nodes, facts) if nd.op_type == "ReduceMean"]
        assert len(got) == 1
        # The input image itself is NCHW in the int8 file too: no Transpose to push through.
        assert got[0] == (frozenset({f"{ORT_INT8_NHWC_REDUCE}784"}) if after_conv else frozenset()), got


def test_the_nhwc_reduce_costs_strided_reads_under_int8_activations_only() -> None:
    hw = load_profile("host-cpu")
    fact = frozenset({f"{ORT_INT8_NHWC_REDUCE}784"})
    for combo, costs in ((STATIC, True), (DYNAMIC, False)):
        p = plan(HOST, hw, "ReduceMean", "reduce", combo, False, False, facts=fact)
        # `reduce.int8.nhwc` per element read: its figure over the 784 elements each output reduces
        assert (p.span_key == NHWC_REDUCE_KEY and p.span_elements == 1 / 784) is costs, p
        assert (not p.fp32_equivalent) is costs  # a measured fp32 (contiguous) time does not apply
        assert ("strided" in p.note) is costs
