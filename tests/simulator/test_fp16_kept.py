"""fp16 of a model with a node ONNX Runtime cannot take in fp16 (compiler.optimize.onnx_rules.fp16_kept) writes that
node fp32 between Casts: the file loads and runs, and the option table predicts it so (offered, the node's combo
fp32, its Casts sized), where the session-43 sweep marked the whole option. Two such nodes:
- a Transpose moving the batch axis into a MatMul (a CRNN's LSTM output into its classifier, self-attention's
  (1, 0, 2)): ORT 1.32 segfaulted loading the fp16 file (MatmulTransposeFusion's ReorderCastAndTranspose on the Cast
  ORT inserts before the fp32-only MatMul, then the NCHWc transformer);
- a ScatterND with reduction add (a GNN's message passing, index_add_ through dynamo): ORT's CPU ScatterND has no
  fp16 reduction and failed at run time."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontends import onnx as onnx_frontend
from compiler.optimize.onnx_export import export_onnx
from compiler.vocabulary.options import OptionError
from simulator.sweep import sweep

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)


def _transpose_model(path: Path) -> Path:
    """x [t, b, 64] (dynamic t and b) -> Linear -> Transpose(1, 0, 2) -> MatMul -> [b, t, 32]."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "w2")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w1"], ["a"], name="fc1"),
                           helper.make_node("Relu", ["a"], ["r"], name="relu"),
                           helper.make_node("Transpose", ["r"], ["t"], name="swap", perm=[1, 0, 2]),
                           helper.make_node("MatMul", ["t", "w2"], ["y"], name="fc2")], "tmm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["t", "b", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "t", 32])], [w1, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _scatter_model(path: Path, layers: int = 3) -> Path:
    """Message passing as torch/gnn's dynamo export writes it, `layers` times: h = relu(h W);
    h = ScatterND(zeros_like(h), dst, h, reduction=add) + h, at a dynamic node count."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.zeros((), np.float32), "zero")]
    nodes, h = [], "x"
    for i in range(layers):
        inits.append(numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), f"w{i}"))
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"a{i}"], name=f"fc{i}"),
                  helper.make_node("Relu", [f"a{i}"], [f"h{i}"], name=f"relu{i}"),
                  helper.make_node("Shape", [f"h{i}"], [f"s{i}"], name=f"shape{i}"),
                  helper.make_node("Expand", ["zero", f"s{i}"], [f"z{i}"], name=f"zeros_like{i}"),
                  helper.make_node("ScatterND", [f"z{i}", "dst", f"h{i}"], [f"m{i}"], name=f"scatter{i}",
                                   reduction="add"),
                  helper.make_node("Add", [f"m{i}", f"h{i}"], [f"y{i}"], name=f"add{i}")]
        h = f"y{i}"
    g = helper.make_graph(nodes, "mp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64]),
                                        helper.make_tensor_value_info("dst", TensorProto.INT64, ["n", 1])],
                          [helper.make_tensor_value_info(h, TensorProto.FLOAT, ["n", 64])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _fp16_column(src: Path) -> tuple[dict, dict[str, str]]:
    g = onnx_frontend.load(src)
    r = sweep(g, "ort-cpu/host")
    p = [x["name"] for x in r.bulk["presets"]].index("fp16")
    return ({"ok": r.bulk["exportable"][p], "why": r.bulk["export_reasons"][p]},
            {n.name: r.bulk["combos"][i][p] for i, n in enumerate(g.nodes)})


def test_a_batch_transpose_into_a_matmul_stays_fp32_under_fp16(tmp_path: Path) -> None:
    src = _transpose_model(tmp_path / "tmm.onnx")
    mark, combos = _fp16_column(src)
    assert mark["ok"], mark["why"]
    # the table's combos are what runs: the Transpose fp32 (an fp16 one runs ORT's fp16 kernel: fp16/fp16/-/0),
    # the MatMul's fp16 weights through ORT's Cast to its fp32 kernel
    assert combos["swap"] == "fp32/fp32/-/0" and combos["fc2"] == "fp32/fp32/fp16/0"
    res = export_onnx(src, tmp_path / "fp16.onnx", "fp16", input_shapes={"x": [6, 2, 64]})  # loads and runs: checked
    m = onnx.load(str(tmp_path / "fp16.onnx"))
    producer = {o: n for n in m.graph.node for o in n.output}
    swap = next(n for n in m.graph.node if n.name == "swap")
    cast = producer[swap.input[0]]
    assert cast.op_type == "Cast" and cast.attribute[0].i == TensorProto.FLOAT  # the Transpose reads fp32
    w2 = next(t for t in m.graph.initializer if t.name.startswith("w2"))
    assert w2.data_type == TensorProto.FLOAT16  # its MatMul is fp16 as asked
    assert any("swap" in n and "fp32" in n for n in res.notes)
    with pytest.raises(OptionError, match="segfaults"):  # asked per op, refused in one sentence
        export_onnx(src, tmp_path / "o.onnx", "fp32", {"swap": "fp16/fp16/-/0"})


def test_a_scatter_nd_with_a_reduction_stays_fp32_under_fp16(tmp_path: Path) -> None:
    from simulator.predict import optimize_model

    src = _scatter_model(tmp_path / "mp.onnx")
    mark, combos = _fp16_column(src)
    assert mark["ok"], mark["why"]
    assert combos["scatter0"] == "fp32/fp32/-/0" and combos["fc0"] == "fp32/fp32/fp16/0"
    (tmp_path / "w").mkdir()
    shapes = {"x": [64, 64], "dst": [64, 1]}
    out = optimize_model(src, tmp_path / "fp16.onnx", "ort-cpu/host", "fp16", {}, tmp_path / "w", input_shapes=shapes)
    m = onnx.load(str(tmp_path / "fp16.onnx"))
    producer = {o: n for n in m.graph.node for o in n.output}
    scatter = next(n for n in m.graph.node if n.name == "scatter0")
    assert [producer[scatter.input[i]].op_type for i in (0, 2)] == ["Cast", "Cast"]
    # the Casts are sized (simulator.onnx_tools.charge_fp16_kept): 2.6% of this 26 KB file, 0.6% left (the
    # value_info of dynamic shapes, written with the file's symbolic dims)
    assert abs(out["predicted"]["size_bytes"] / out["size_bytes"] - 1) < 0.01, (out["predicted"], out["size_bytes"])
    with pytest.raises(OptionError, match="ScatterND has no fp16 kernel"):
        export_onnx(src, tmp_path / "o.onnx", "fp32", {"scatter0": "fp16/fp16/-/0"})
