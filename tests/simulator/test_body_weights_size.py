"""Predicted ONNX file sizes of a model with weights inside a Loop body: the exporter's quantizers and palettizer
act on the top-level graph only, so a body's weights stay float in every export but fp16 (which converts bodies),
and a weight a top-level node quantizes that the body reads too is stored twice (simulator.onnx_file._body_tasks).
The corpus's greedy decoder was predicted 0.95 MB under int8-static against a 3.91 MB file."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from simulator.predict import optimize_model

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)

HOST = "ort-cpu/host"
D = 256


def _save_looped(path: Path, name: str, body_nodes: list[onnx.NodeProto], top_nodes: list[onnx.NodeProto],
                 consts: list[onnx.TensorProto]) -> Path:
    """`top_nodes` (x -> b), then a Loop of 3 trips over state b whose body is `body_nodes` (s_in -> s_out)."""
    state = helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [1, D])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"), *body_nodes],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), state],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1, D])])
    nodes = [*top_nodes, helper.make_node("Loop", ["trips", "cond", "b"], ["y"], name="loop", body=body)]
    consts = [*consts, numpy_helper.from_array(np.array(3, np.int64), "trips"),
              numpy_helper.from_array(np.array(True), "cond")]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, D])], consts)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _loop_model(path: Path) -> Path:
    """x @ w_top, then a Loop of 3 trips whose body runs state @ w_body and state @ w_top (a weight shared with the
    top level, as a scripted decoder's output layer): 3 float kernels of 256 x 256 (768 KB), two of them the body's."""
    rng = np.random.default_rng(0)
    w_top = numpy_helper.from_array(rng.standard_normal((D, D)).astype(np.float32), "w_top")
    w_body = numpy_helper.from_array(rng.standard_normal((D, D)).astype(np.float32), "w_body")
    w_mid = numpy_helper.from_array(rng.standard_normal((D, D)).astype(np.float32), "w_mid")
    body = [helper.make_node("MatMul", ["s_in", "w_body"], ["h"], name="body_mm"),
            helper.make_node("MatMul", ["h", "w_top"], ["h2"], name="body_shared_mm"),
            helper.make_node("Tanh", ["h2"], ["s_out"], name="body_tanh")]
    top = [helper.make_node("MatMul", ["x", "w_top"], ["a"], name="top_mm"),
           helper.make_node("MatMul", ["a", "w_mid"], ["b"], name="mid_mm")]
    return _save_looped(path, "looped", body, top, [w_top, w_body, w_mid])


@pytest.mark.parametrize("option", ["int8-static", "int8-dynamic", "fp16", "palettize-4bit"])
def test_body_weights_are_sized_as_the_exporter_writes_them(tmp_path: Path, option: str) -> None:
    src = _loop_model(tmp_path / "loop.onnx")
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"loop-{option}.onnx", HOST, option, {}, tmp_path / "w")
    written = onnx.load(str(tmp_path / f"loop-{option}.onnx"))
    body = next(a.g for n in written.graph.node if n.op_type == "Loop" for a in n.attribute if a.name == "body")
    assert "body_mm" in [n.name for n in body.node]  # the body's MatMul is still the float op
    if option != "fp16":  # the body's own weight is written float: 256 KB of the file
        inits = {t.name: t for t in written.graph.initializer}
        assert inits["w_body"].data_type == TensorProto.FLOAT
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"],
                                                                            r["size_bytes"])


def _shared_gemm_model(path: Path) -> Path:
    """A transB Gemm whose weight a Loop body's Gemm reads too (the greedy decoder's output layer), then a MatMul:
    the exporter keeps that Gemm (its weight's layout is the body's), which MatMulNBits does not replace."""
    rng = np.random.default_rng(1)
    w_out = numpy_helper.from_array(rng.standard_normal((D, D)).astype(np.float32), "w_out")
    b_out = numpy_helper.from_array(rng.standard_normal(D).astype(np.float32), "b_out")
    w_mid = numpy_helper.from_array(rng.standard_normal((D, D)).astype(np.float32), "w_mid")
    body = [helper.make_node("Gemm", ["s_in", "w_out", "b_out"], ["h"], name="body_gemm", transB=1),
            helper.make_node("Tanh", ["h"], ["s_out"], name="body_tanh")]
    top = [helper.make_node("Gemm", ["x", "w_out", "b_out"], ["a"], name="top_gemm", transB=1),
           helper.make_node("MatMul", ["a", "w_mid"], ["b"], name="mid_mm")]
    return _save_looped(path, "shared", body, top, [w_out, b_out, w_mid])


@pytest.mark.parametrize("option", ["int4-weights", "int8-static", "int8-dynamic"])
def test_a_gemm_kept_for_a_body_is_sized_as_written(tmp_path: Path, option: str) -> None:
    """(int8-dynamic: quantize_dynamic renames the kept Gemm `top_gemm_MatMul` as it splits it, and the exporter asked
    for `top_gemm`: the export failed its check, "kept float weights"; it is asked under both names now.)"""
    src = _shared_gemm_model(tmp_path / "shared.onnx")
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"shared-{option}.onnx", HOST, option, {}, tmp_path / "w")
    written = onnx.load(str(tmp_path / f"shared-{option}.onnx"))
    ops = {n.name: n.op_type for n in written.graph.node}
    if option == "int4-weights":  # the shared weight stays float under its Gemm; the MatMul's is 4-bit
        assert ops.get("top_gemm") == "Gemm" and "MatMulNBits" in ops.values()
    if option == "int8-dynamic":
        assert sum(op == "MatMulInteger" for op in ops.values()) == 2  # top_gemm's and mid_mm's
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"],
                                                                            r["size_bytes"])


def _traced(node: onnx.NodeProto) -> onnx.NodeProto:
    """The node with debug records as torch's dynamo exporter writes them (a stack trace per node, ~4 KB)."""
    for key, value in (("namespace", ": looped/body"), ("pkg.torch.onnx.stack_trace", "File \"model.py\" " * 300)):
        p = node.metadata_props.add()
        p.key, p.value = key, value
    return node


@pytest.mark.parametrize("option", ["fp32", "int8-dynamic", "int8-static", "int4-weights"])
def test_debug_records_of_body_nodes_are_not_sized_into_rewritten_files(tmp_path: Path, option: str) -> None:
    """`torch/cond-while` (dynamo) was sized +25% under int8-dynamic and int8-static: its body nodes' stack traces
    were charged to the body tasks' float combos, which every option keeps, though only the fp32 export (the upload
    itself) holds them. Here two 64 KB body weights behind 3 traced body nodes (~12 KB of records) and a small top-level
    MatMul: the file as uploaded and every rewritten one sized within 2%, no task sized below zero."""
    rng = np.random.default_rng(2)
    w_top = numpy_helper.from_array(rng.standard_normal((D, 16)).astype(np.float32), "w_top")
    w_up = numpy_helper.from_array(rng.standard_normal((16, D)).astype(np.float32), "w_up")
    w_body = numpy_helper.from_array(rng.standard_normal((D, 64)).astype(np.float32), "w_body")
    w_back = numpy_helper.from_array(rng.standard_normal((64, D)).astype(np.float32), "w_back")
    body = [_traced(helper.make_node("MatMul", ["s_in", "w_body"], ["h"], name="body_mm")),
            _traced(helper.make_node("MatMul", ["h", "w_back"], ["h2"], name="body_back")),
            _traced(helper.make_node("Tanh", ["h2"], ["s_out"], name="body_tanh"))]
    top = [helper.make_node("MatMul", ["x", "w_top"], ["a"], name="top_mm"),
           helper.make_node("MatMul", ["a", "w_up"], ["b"], name="up_mm")]
    src = _save_looped(tmp_path / "traced.onnx", "traced", body, top, [w_top, w_up, w_body, w_back])
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"traced-{option}.onnx", HOST, option, {}, tmp_path / "w")
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"],
                                                                            r["size_bytes"])
    assert min(op["weight_bytes"] for op in r["prediction"]["ops"]) >= 0


@pytest.mark.parametrize("option", ["fp32", "int8-dynamic", "int8-static"])
def test_debug_records_of_a_model_all_in_its_bodies(tmp_path: Path, option: str) -> None:
    """A model whose weights are all in its bodies (a voice-activity model: `Equal` on a sample rate, then an `If`
    whose branches hold the network) has no top-level kernel to carry its bodies' records in the float state: its
    dynamo export's int8-static file (rewritten, no records) was sized +14.5%, as the upload. The records go to the
    top-level tasks then: in the files that keep every top-level op float (fp32, int8-dynamic here: the upload
    itself), not in the others."""
    rng = np.random.default_rng(3)
    w_body = numpy_helper.from_array(rng.standard_normal((D, 64)).astype(np.float32), "w_body")
    w_back = numpy_helper.from_array(rng.standard_normal((64, D)).astype(np.float32), "w_back")
    body = [_traced(helper.make_node("MatMul", ["s_in", "w_body"], ["h"], name="body_mm")),
            _traced(helper.make_node("MatMul", ["h", "w_back"], ["h2"], name="body_back")),
            _traced(helper.make_node("Tanh", ["h2"], ["s_out"], name="body_tanh"))]
    top = [helper.make_node("Relu", ["x"], ["b"], name="top_relu")]
    src = _save_looped(tmp_path / "bodies.onnx", "bodies", body, top, [w_body, w_back])
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"bodies-{option}.onnx", HOST, option, {}, tmp_path / "w")
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"],
                                                                            r["size_bytes"])
