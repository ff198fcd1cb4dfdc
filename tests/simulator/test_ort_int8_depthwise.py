"""Static int8 on ONNX Runtime's CPU: a depthwise QLinearConv whose channels are not a multiple of 16 runs MLAS's
generic depthwise kernel, not the symmetric one (simulator/ort_int8.py), so it is costed on its own path. Integration
tier: the graph is compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_int8 import ORT_INT8_DW_GENERIC
from simulator.ort_int8 import INT8_GENERIC_TAG, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")


def _depthwise(path: Path, channels: list[int]) -> Path:
    """1x1 Conv to each channel count, then a 3x3 depthwise Conv of it, side by side on one input."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, outs = [], [], []
    for c in channels:
        inits += [numpy_helper.from_array(rng.standard_normal((c, 16, 1, 1)).astype(np.float32), f"p{c}"),
                  numpy_helper.from_array(rng.standard_normal((c, 1, 3, 3)).astype(np.float32), f"d{c}")]
        nodes += [helper.make_node("Conv", ["x", f"p{c}"], [f"e{c}"], name=f"expand{c}"),
                  helper.make_node("Conv", [f"e{c}", f"d{c}"], [f"y{c}"], name=f"dw{c}", group=c, pads=[1, 1, 1, 1])]
        outs.append(helper.make_tensor_value_info(f"y{c}", TensorProto.FLOAT, [1, c, 14, 14]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 14, 14])], outs,
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_depthwise_channels_off_the_symmetric_kernel_are_task_facts(tmp_path: Path) -> None:
    from simulator.costs import kind_of
    from simulator.model import compile_for

    source, g, _ = compile_for(_depthwise(tmp_path / "dw.onnx", [64, 72, 58]), HOST.name, tmp_path / "work")
    dw = {nd.source_nodes[0]: i for i, nd in enumerate(g.nodes) if kind_of(nd, g) in ("dwconv", "dwconvnchw")}
    assert len(dw) == 3, [(nd.op_type, nd.source_nodes) for nd in g.nodes]
    names = {nd.id: nd.name for nd in source.nodes}
    by_name = {names[s]: i for s, i in dw.items()}
    facts = ort_task_facts(g, source)
    # 64 takes the symmetric kernel; 72 (ORT pads it to 80 in the NCHWc graph) and 58 (left NCHW) do not.
    assert [ORT_INT8_DW_GENERIC in facts[by_name[f"dw{c}"]] for c in (64, 72, 58)] == [False, True, True]
    # Without the source only the NCHW one keeps its own channel count in the compiled graph.
    alone = ort_task_facts(g)
    assert [ORT_INT8_DW_GENERIC in alone[by_name[f"dw{c}"]] for c in (64, 72, 58)] == [False, False, True]


def test_the_generic_depthwise_kernel_is_its_own_path_under_static_int8_only() -> None:
    hw = load_profile("host-cpu")
    fact = frozenset({ORT_INT8_DW_GENERIC})
    static, dyn, fp32 = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0), Combo("fp32", "fp32", "fp32", 0)
    p = plan(HOST, hw, "Conv", "dwconv", static, True, True, facts=fact)
    assert p.tag == INT8_GENERIC_TAG and "generic" in p.note
    assert plan(HOST, hw, "Conv", "dwconvnchw", static, True, False, facts=fact).tag == INT8_GENERIC_TAG
    for combo in (dyn, fp32):
        assert plan(HOST, hw, "Conv", "dwconv", combo, True, True, facts=fact) == plan(HOST, hw, "Conv", "dwconv",
                                                                                        combo, True, True)
    # The uncalibrated profile already prices it slower than the symmetric kernel (host-cpu.yaml's estimate).
    from simulator.roofline import efficiency

    assert efficiency(hw.units[p.unit], "dwconv", INT8_GENERIC_TAG) < efficiency(hw.units[p.unit], "dwconv", "int8")
