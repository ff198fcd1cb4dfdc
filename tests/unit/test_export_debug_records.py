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


def _dynamo_like(path: Path) -> Path:
    """Three MatMuls at a dynamic batch, with dynamo's records on the graph (its signature, range constraints), its
    inputs and outputs (original names, input kinds) and its nodes, IR 10 as dynamo writes."""
    import numpy as np
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, h = [], [], "x"
    for i in range(3):
        inits.append(numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), f"w{i}"))
        nodes += [_with_records(helper.make_node("MatMul", [h, f"w{i}"], [f"m{i}"], name=f"node_mm_{i}")),
                  _with_records(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"node_relu_{i}"))]
        h = f"r{i}"
    g = helper.make_graph(nodes, "main_graph", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["s77", 64])],
                          [helper.make_tensor_value_info(h, TensorProto.FLOAT, ["s77", 64])], inits)
    g.metadata_props.add(key="pkg.torch.export.ExportedProgram.graph_signature", value="p: PARAMETER\n" * 40)
    g.metadata_props.add(key="pkg.torch.export.ExportedProgram.range_constraints", value="{s77: VR[0, int_oo]}")
    for v in [*g.input, *g.output]:
        v.metadata_props.add(key="pkg.torch.export.graph_signature.InputSpec.kind", value="USER_INPUT")
        v.metadata_props.add(key="pkg.torch.onnx.original_node_name", value=v.name)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 10
    onnx.save(m, path)
    return path


def test_the_graphs_and_its_inputs_records_go_and_no_empty_doc_string_is_written(tmp_path: Path) -> None:
    """torch/gnn's dynamo-dyn exports (40-74 KB) were 2.1-3.5% over their predicted size: dynamo's records on the
    graph and on its inputs and outputs (1.3 KB) stayed, and ORT saved an empty doc_string (2 bytes) on every node
    of the IR-10 file, which named_copy had set to "" rather than cleared."""
    from compiler.optimize.onnx_export import preprocess

    src = _dynamo_like(tmp_path / "d.onnx")
    named = named_copy(src, tmp_path / "named.onnx")
    out = onnx.load(named)
    assert not out.graph.metadata_props
    assert not any(v.metadata_props for v in [*out.graph.input, *out.graph.output])
    assert not any(n.HasField("doc_string") or n.metadata_props for n in out.graph.node)
    pre = preprocess(named, tmp_path / "pre.onnx")  # ORT's save of it
    assert not any(n.HasField("doc_string") for n in pre.graph.node)

