"""ORT compile: fused tasks map back to the source nodes they implement.

Fusions depend on the ORT version; the expectations below were recorded with the version in
EXPECTED. A new ORT gets skipped with a message until someone records its behaviour.
"""

from __future__ import annotations

from collections import Counter

import onnxruntime
import pytest

from compiler.backends import ort
from compiler.errors import ModelRunError
from compiler.graph import Graph

ORT = ".".join(onnxruntime.__version__.split(".")[:2])


def _nchwc_block() -> int:
    """ORT's NCHWc block: 16 channels with AVX-512, else 8; it decides where layouts are reordered."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return 8
    return 16 if " avx512f" in flags else 8


EXPECTED = {  # ORT minor version -> compiled op counts on the zoo models
    "1.32": {
        ("mobilenet_v2_like", "all"): {"Conv": 25, "ReorderOutput": {16: 4, 8: 1}[_nchwc_block()], "ReduceMean": 1,
                                       "Gemm": 1},
        ("mobilenet_v2_like", "extended"): {"FusedConv": 17, "Conv": 8, "Add": 3, "ReduceMean": 1, "Gemm": 1},
        ("bert_like", "all"): {"Gemm": 24, "FusedGemm": 1, "FusedMatMul": 4, "SkipLayerNormalization": 9, "Gelu": 4},
    },
}
known = pytest.mark.skipif(ORT not in EXPECTED, reason=f"fusions not recorded for onnxruntime {ORT}; add them to EXPECTED")


def compile_zoo(zoo, tmp_path, name: str, level: str = "all", **kw) -> tuple[Graph, Graph]:
    source = zoo.graph(name, **kw)
    return source, ort.compile(zoo.path(name, **kw), tmp_path / f"{name}.{level}.onnx", source, opt_level=level)


def by_op(g: Graph, op: str) -> list:
    return [n for n in g.nodes if n.op_type == op]


def assert_complete(source: Graph, compiled: Graph) -> None:
    """Every source node is in some task or eliminated, never both; every task has sources."""
    covered = {s for n in compiled.nodes for s in n.source_nodes}
    ids = {n.id for n in source.nodes}
    assert covered <= ids
    assert covered | set(compiled.eliminated) == ids
    assert not covered & set(compiled.eliminated)
    assert [n.id for n in compiled.nodes if not n.source_nodes] == []


def src_ops(source: Graph, node) -> list[str]:
    return [source.node(s).op_type for s in node.source_nodes]


@known
def test_mobilenet_nchwc(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "mobilenet_v2_like", "all")
    counts = Counter(n.op_type for n in compiled.nodes)
    assert {k: counts[k] for k in EXPECTED[ORT][("mobilenet_v2_like", "all")]} == EXPECTED[ORT][("mobilenet_v2_like", "all")]
    assert compiled.metadata["runtime"] == f"onnxruntime {onnxruntime.__version__}"
    assert_complete(source, compiled)
    nchwc = [n for n in compiled.nodes if n.domain == "com.microsoft.nchwc" and n.op_type == "Conv"]
    assert len(nchwc) == 25
    for n in nchwc:  # Conv + folded BatchNorm (+ ReLU6 Clip) in one kernel
        assert Counter(src_ops(source, n))["Conv"] == 1 and "BatchNormalization" in src_ops(source, n)
    # the residual Add fused into the projecting conv as its Sum input
    assert sum(1 for n in nchwc if "Add" in src_ops(source, n)) == 3
    for n in nchwc:  # logical NCHW shapes, taken from the source values they stand for
        assert len(compiled.values[n.outputs[0]].shape) == 4
    for r in by_op(compiled, "ReorderOutput"):  # layout transforms map to the Conv they serve
        assert src_ops(source, r) == ["Conv"]
        producer = compiled.node(compiled.producers()[r.inputs[0]])
        assert r.source_nodes[0] in producer.source_nodes
    assert set(source.node(s).op_type for s in compiled.eliminated) <= {"Constant", "Identity"}


@known
def test_mobilenet_fused_conv(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "mobilenet_v2_like", "extended")
    counts = Counter(n.op_type for n in compiled.nodes)
    exp = EXPECTED[ORT][("mobilenet_v2_like", "extended")]
    assert {k: counts[k] for k in exp} == exp
    assert_complete(source, compiled)
    for n in by_op(compiled, "FusedConv"):
        assert src_ops(source, n) == ["Conv", "BatchNormalization", "Clip"]
        assert n.attributes["activation"] == "Clip"


@known
def test_tiny_cnn_conv_relu(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "tiny_cnn", "extended")
    (fused,) = by_op(compiled, "FusedConv")
    assert fused.source_nodes == ["/conv/Conv", "/relu/Relu"]
    assert_complete(source, compiled)


@known
def test_bert_fusions(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "bert_like", "all")
    counts = Counter(n.op_type for n in compiled.nodes)
    exp = EXPECTED[ORT][("bert_like", "all")]
    assert {k: counts[k] for k in exp} == exp
    assert_complete(source, compiled)
    gemms = [n for n in by_op(compiled, "Gemm") if n.name.endswith("MatMulAddFusion")]
    assert len(gemms) == 24 and all(src_ops(source, n) == ["MatMul", "Add"] for n in gemms)
    for n in by_op(compiled, "FusedMatMul"):  # Q.K^T / sqrt(d)
        assert src_ops(source, n) == ["MatMul", "Div"]
    for n in by_op(compiled, "SkipLayerNormalization"):  # residual Add + LayerNorm
        assert src_ops(source, n) == ["Add", "LayerNormalization"]
    for n in by_op(compiled, "Gelu"):  # erf GELU: x * 0.5 * (1 + erf(x / sqrt 2))
        assert sorted(src_ops(source, n)) == ["Add", "Div", "Erf", "Mul", "Mul"]
        assert n.namespace.startswith("encoder.")
    # shapes through contrib ops: every activation has one; Gemm runs on the 2-D flattening
    acts = {v for n in compiled.nodes for v in n.inputs + n.outputs if v}
    assert all(compiled.values[v].shape is not None for v in acts)
    assert compiled.values[gemms[0].outputs[0]].shape == [32, 128]
    (pooler,) = by_op(compiled, "FusedGemm")  # Gemm + Tanh
    assert pooler.source_nodes == ["/pooler/Gemm", "/Tanh"]
    reshapes = [n for n in by_op(compiled, "Reshape") if n.name.startswith("gemm_")]
    assert reshapes and all(src_ops(source, n) == ["MatMul"] for n in reshapes)
    # ORT's core optimizer does not fuse this attention pattern (onnxruntime.transformers does)
    assert counts["Attention"] == 0 and counts["Softmax"] == 4


@known
def test_fp16_graph_probe_records_the_layernorms_left_unfused(zoo, tmp_path) -> None:
    """The compile also optimizes the fp16 export of a model with LayerNormalization and records which ones
    ORT leaves plain there (in fp32 all nine fuse into SkipLayerNormalization). In this BERT the attention
    blocks' norms feed the FFN through an fp16 Reshape, so ORT keeps them fp16 and apart from their Add; the
    last norm is the classifier's input (an fp16 Gather). The FFN blocks' norms are fused."""
    import json

    _, compiled = compile_zoo(zoo, tmp_path, "bert_like", "all")
    plain = json.loads(compiled.metadata["fp16_plain_norms"])
    assert plain == sorted([f"/encoder.{i}/ln1/LayerNormalization" for i in range(4)]
                           + ["/encoder.3/ln2/LayerNormalization"])
    skip_sources = {s for n in by_op(compiled, "SkipLayerNormalization") for s in n.source_nodes}
    assert set(plain) <= skip_sources  # each names a source node of a compiled (fp32) fusion
    _, cnn = compile_zoo(zoo, tmp_path, "mobilenet_v2_like", "all")
    assert "fp16_plain_norms" not in cnn.metadata  # no LayerNormalization: no probe


@known
def test_layernorm_fusion_from_arithmetic(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "bert_like", "all", opset=11)
    assert "LayerNormalization" not in {n.op_type for n in source.nodes}  # opset 11: written out
    assert_complete(source, compiled)
    skips = by_op(compiled, "SkipLayerNormalization")
    assert len(skips) == 9
    for n in skips:  # residual Add + mean, centre, square, mean, +eps, sqrt, divide, scale, shift
        assert Counter(src_ops(source, n)) == Counter(
            {"Add": 3, "ReduceMean": 2, "Sub": 1, "Pow": 1, "Sqrt": 1, "Div": 1, "Mul": 1})


def test_dynamic_bert_shape_arithmetic(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "bert_like", "all", layers=2, dynamic=True)
    assert source.values["input_ids"].shape == ["batch", "seq"]
    assert_complete(source, compiled)
    # ORT merges identical Shape nodes (CSE): the survivor implements all of them
    merged = [n for n in by_op(compiled, "Shape") if len(n.source_nodes) > 1]
    assert merged and all(set(src_ops(source, n)) == {"Shape"} for n in merged)


def test_flat_and_duplicate_names(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "flat_names", "all")
    assert_complete(source, compiled)  # ORT refuses repeated names: compile renamed them to ids
    assert {s for n in compiled.nodes for s in n.source_nodes} >= {"Relu_1", "Relu_3", "Relu_5"}


def test_large_chain_mapping_scales(zoo, tmp_path) -> None:
    source, compiled = compile_zoo(zoo, tmp_path, "large_chain", "all", n_nodes=10_000)
    assert_complete(source, compiled)
    assert len(compiled.nodes) < len(source.nodes)  # Mul by 1 removed


def test_compiled_node_names_are_ids(zoo, tmp_path) -> None:
    _, compiled = compile_zoo(zoo, tmp_path, "tiny_cnn", "all")
    assert all(n.name == n.id for n in compiled.nodes)  # profiler events key by name


def test_unknown_op_is_a_clear_error(zoo, tmp_path) -> None:
    source = zoo.graph("unknown_op")
    with pytest.raises(ModelRunError, match="ONNX Runtime cannot load the model.*FooBar") as e:
        ort.compile(zoo.path("unknown_op"), tmp_path / "u.onnx", source)
    assert "Load model from" not in str(e.value)  # ORT's prefix names the pipeline's working copy


def test_standalone_batchnorm_maps_to_its_nchwc_conv(tmp_path) -> None:
    """A BatchNormalization after no Conv (DenseNet's, after each Concat) becomes a depthwise NCHWc Conv ORT names
    `<output>_bn_nchwc`; it maps to the BatchNormalization (it had no source node, so its constants, made at run time
    in the ONNX zoo's light DenseNet-121, were charged to no task and the file was sized +56%)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from simulator.model import load_source

    rng = np.random.default_rng(0)
    c = 32
    inits = [numpy_helper.from_array((0.1 * rng.standard_normal([c, c, 1, 1])).astype(np.float32), "w0"),
             numpy_helper.from_array((0.1 * rng.standard_normal([c, 2 * c, 1, 1])).astype(np.float32), "w1"),
             *(numpy_helper.from_array((1 + 0.1 * rng.standard_normal(2 * c)).astype(np.float32), n)
               for n in ("scale", "bias", "mean", "var"))]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="conv0"),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Concat", ["b", "b"], ["cat"], name="concat", axis=1),
             helper.make_node("BatchNormalization", ["cat", "scale", "bias", "mean", "var"], ["bn"], name="bn"),
             helper.make_node("Conv", ["bn", "w1"], ["y"], name="conv1")]
    g = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 28, 28])], inits)
    src = tmp_path / "bn.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), src)
    source = load_source(src)
    compiled = ort.compile(src, tmp_path / "bn.all.onnx", source, opt_level="all")
    bn_tasks = [n for n in compiled.nodes if n.name.endswith("_bn_nchwc")]
    assert bn_tasks, [n.name for n in compiled.nodes]
    assert all(src_ops(source, n) == ["BatchNormalization"] for n in bn_tasks)



def test_shared_ir3_initializer_inputs_leave_the_saved_graph(tmp_path) -> None:
    """An IR 3 file lists its initializers as inputs; ORT's ConstantSharing keeps one of two equal constants and the
    saved graph kept the other's input without its initializer (the ONNX model zoo's light ShuffleNet: 251 such
    inputs, fed on every timed run). The saved graph asks for the image alone, as the upload does."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from compiler import frontends

    inits = [numpy_helper.from_array(np.array([1, 8, 256], np.int64), n) for n in ("shape_a", "shape_b")] + [
        numpy_helper.from_array(np.array([0.5], np.float32), n) for n in ("half_a", "half_b")]
    nodes = [helper.make_node("Reshape", ["x", "shape_a"], ["r1"]), helper.make_node("Add", ["r1", "half_a"], ["a1"]),
             helper.make_node("Reshape", ["a1", "shape_b"], ["r2"]), helper.make_node("Mul", ["r2", "half_b"], ["y"])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])] + [
        helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in inits]
    g = helper.make_graph(nodes, "ir3", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 3
    src, out = tmp_path / "ir3.onnx", tmp_path / "ir3.ort.onnx"
    onnx.save(m, src)
    compiled = ort.compile(src, out, frontends.load(src))
    assert compiled.inputs == ["x"]
    sess = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["x"]
