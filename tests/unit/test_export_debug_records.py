"""The exporter leaves out the torch exporters' debug records (node metadata_props: stack traces, module paths) in
If / Loop bodies as on the top-level graph: the size predicted for every option leaves them out, and ORT's optimizer
writes a body back as read. The session-38 sweep's torch.cond + while_loop model (dynamo): fp32 export 98,807 B
written against 85,577 predicted (-13.4%), 87,113 once the bodies' records go (-1.8%)."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from compiler.optimize.onnx_prepare import named_copy


def _with_records(node: onnx.NodeProto) -> onnx.NodeProto:
    for k in ("namespace", "pkg.torch.onnx.stack_trace", "pkg.torch.onnx.fx_node"):
        node.metadata_props.add(key=k, value="x" * 300)
    node.doc_string = "a torch stack trace"
    return node


def _model() -> onnx.ModelProto:
    then = helper.make_graph([_with_records(helper.make_node("Relu", ["x"], ["t"], name="relu"))], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])])
    els = helper.make_graph([_with_records(helper.make_node("Neg", ["x"], ["e"], name="neg"))], "else", [],
                            [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4])])
    nodes = [_with_records(helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum")),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
             _with_records(helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=els, name="if"))]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                          [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_body_nodes_lose_their_debug_records_too(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(_model(), src)
    out = onnx.load(named_copy(src, tmp_path / "named.onnx"))
    body_nodes = [n for node in out.graph.node for a in node.attribute if a.type == onnx.AttributeProto.GRAPH
                  for n in a.g.node]
    assert len(body_nodes) == 2
    for n in [*out.graph.node, *body_nodes]:
        assert not n.metadata_props and not n.doc_string, n.name
    assert (tmp_path / "named.onnx").stat().st_size < src.stat().st_size - 4 * 900
