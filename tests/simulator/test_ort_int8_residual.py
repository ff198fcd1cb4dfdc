"""Static int8 on ONNX Runtime's CPU: a residual Add ORT fuses into the fp32 graph's Conv (its `Sum` input) runs as a
QLinearAdd of its own in the int8 file (simulator/ort_int8.py ORT_INT8_SUM). Integration tier: compiled by ORT."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_int8 import ORT_INT8_SUM, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")


def _residual(path: Path) -> Path:
    """Conv -> Relu -> Conv -> Add(the first Relu's output) -> Conv: ORT fuses the Add into the second Conv."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((32, 32, 1, 1)) * 0.1).astype(np.float32), f"w{i}")
             for i in range(3)]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0"), helper.make_node("Relu", ["a"], ["r"], name="r"),
             helper.make_node("Conv", ["r", "w1"], ["b"], name="c1"), helper.make_node("Add", ["b", "r"], ["s"], name="add"),
             helper.make_node("Conv", ["s", "w2"], ["y"], name="c2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 28, 28])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_the_fused_add_is_a_qlinearadd_in_the_int8_file_and_a_fact(tmp_path: Path) -> None:
    import onnx
    import onnxruntime as ort

    from compiler.optimize.onnx_export import export_onnx
    from simulator.model import compile_for

    src = _residual(tmp_path / "r.onnx")
    source, g, _ = compile_for(src, HOST.name, tmp_path / "w")
    facts = ort_task_facts(g, source)
    summed = [ORT_INT8_SUM in f for nd, f in zip(g.nodes, facts) if nd.op_type in ("Conv", "FusedConv")]
    assert "Add" not in [nd.op_type for nd in g.nodes] and summed.count(True) == 1, summed  # fused in fp32
    q = export_onnx(src, tmp_path / "r.int8.onnx", "int8-static").path
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "r.int8.opt.onnx")
    ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"])
    ops = [n.op_type for n in onnx.load(str(tmp_path / "r.int8.opt.onnx")).graph.node]
    assert ops.count("QLinearAdd") == 1 and ops.count("QLinearConv") == 3, ops


def test_the_qlinearadd_is_costed_under_int8_activations_only() -> None:
    hw = load_profile("host-cpu")
    fact = frozenset({ORT_INT8_SUM})
    for combo, costs in ((Combo("int8", "int8", "int8", 0), True), (Combo("fp32", "fp32", "int8", 0), False),
                         (Combo("fp32", "fp32", "fp32", 0), False)):
        plain = plan(HOST, hw, "Conv", "conv", combo, True, False)
        p = plan(HOST, hw, "Conv", "conv", combo, True, False, facts=fact)
        assert (p.extra_dispatches == plain.extra_dispatches + 1) is costs
        assert (p.extra_ops_per_out == plain.extra_ops_per_out + 3.0) is costs
        assert ("QLinearAdd" in p.note) is costs
