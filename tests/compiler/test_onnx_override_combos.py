"""Per-op overrides the option table offers, exported from real architectures (a transformers BERT exported by
TorchScript, torchvision's MobileNetV3 by dynamo): every file loads and runs in ONNX Runtime, and holds what was
asked, no more. Before: int8-dynamic with fp16 on any one node of the BERT wrote a file ORT refused ("Duplicate
definition of name"), and fp16 on one node wrote a Cast round trip after every other node of the model."""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import corpus.torchvision_compat  # noqa: F401  (torchvision importable beside CPU torch)
from compiler.optimize.onnx_export import export_onnx
from compiler.optimize.onnx_prepare import MAX_CAUSE, drop_cast_pairs, one_line, topo_sort
from tests.real_onnx import BERT_SHAPES, bert_onnx

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)
pytestmark = pytest.mark.slow  # exports of real models: 2-10 s each on a 2-vCPU VM


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bert_onnx(tmp_path_factory.mktemp("bert") / "bert.onnx")


@pytest.fixture(scope="module")
def mobilenet(shared_models) -> Path:  # type: ignore[no-untyped-def]
    """MobileNetV3-Small by the dynamo exporter (tests/formats/test_pt2_modules.py reads the same file)."""
    return shared_models.path("mobilenet_v3_small_dynamo")


def _node(path: Path, op_type: str, k: int = 0) -> str:
    return [n.name for n in onnx.load(str(path)).graph.node if n.op_type == op_type][k]


def _float_casts(m: onnx.ModelProto) -> int:
    """Casts between float types of activations: not of an initializer (folded when ORT loads the file), nor of
    the int32 a MatMulInteger / ConvInteger of dynamic int8 writes."""
    inits = {t.name for t in m.graph.initializer}
    ints = {o for n in m.graph.node if n.op_type in ("MatMulInteger", "ConvInteger") for o in n.output}
    return sum(n.op_type == "Cast" and n.input[0] not in inits | ints
               and n.attribute[0].i in (TensorProto.FLOAT, TensorProto.FLOAT16) for n in m.graph.node)


def _outputs_unique(m: onnx.ModelProto) -> bool:
    c = Counter(o for n in m.graph.node for o in n.output)
    return max(c.values()) == 1


@pytest.mark.parametrize("op_type", ["LayerNormalization", "Add"])
def test_bert_int8_dynamic_with_fp16_on_a_skip_layernorm_node_loads(bert: Path, tmp_path: Path, op_type: str) -> None:
    # ORT fuses the residual Add and the LayerNorm after it into SkipLayerNormalization on ort-cpu/host; an
    # override of that task reaches both. The second LayerNorm is the first inside the encoder.
    node = _node(bert, op_type, 1)
    res = export_onnx(bert, tmp_path / "o.onnx", "int8-dynamic", {node: "fp16/fp16/fp16/0"},
                      input_shapes=BERT_SHAPES)  # raises if ORT refuses or cannot run the file
    m = onnx.load(str(res.path))
    assert _outputs_unique(m)
    assert res.choices[node] == "fp16/fp16/-/0"  # no weight of its own
    ops = Counter(n.op_type for n in m.graph.node)
    assert ops["DynamicQuantizeLinear"] > 0 or ops["DynamicQuantizeMatMul"] > 0 or ops["MatMulInteger"] > 0
    # Casts only at the fp16 node's edges (two activations in at most, one out), not around every float node.
    assert 1 <= _float_casts(m) <= 3


@pytest.mark.parametrize("model_wide,combo", [("fp32", "fp16/fp16/fp16/0"), ("int8-static", "fp16/fp16/fp16/0"),
                                              ("fp16", "fp32/fp32/fp32/0"), ("fp16", "int8/int8/int8/0")])
def test_mobilenet_dynamo_one_node_override_writes_only_its_casts(mobilenet: Path, tmp_path: Path, model_wide: str,
                                                                 combo: str) -> None:
    add = _node(mobilenet, "Add", 2)
    res = export_onnx(mobilenet, tmp_path / "o.onnx", model_wide, {add: combo}, input_shapes={"x": [1, 3, 224, 224]},
                      calibration_samples=2)
    m = onnx.load(str(res.path))
    assert _outputs_unique(m)
    casts = _float_casts(m)
    # Two inputs and one output of the Add, plus the fp16 model's input and output Casts (keep_io_types).
    assert casts <= 3 + (2 if model_wide == "fp16" else 0), casts


def test_fp16_on_one_node_leaves_the_rest_of_the_model_exact(mobilenet: Path, tmp_path: Path) -> None:
    """fp32 elsewhere means fp32 (the converter's round trips rounded every activation of the model to fp16): the
    file computes what the upload does, but for the one Add's rounding."""
    add = _node(mobilenet, "Add", 2)
    res = export_onnx(mobilenet, tmp_path / "o.onnx", "fp32", {add: "fp16/fp16/fp16/0"},
                      input_shapes={"x": [1, 3, 224, 224]})
    x = {"x": np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    ref = ort.InferenceSession(str(mobilenet), so, providers=["CPUExecutionProvider"]).run(None, x)[0]
    got = ort.InferenceSession(str(res.path), so, providers=["CPUExecutionProvider"]).run(None, x)[0]
    assert np.abs(got - ref).max() < 1e-3 * np.abs(ref).max()


def test_cast_round_trip_at_a_graph_output_is_removed() -> None:
    f, h = TensorProto.FLOAT, TensorProto.FLOAT16
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Cast", ["r"], ["r16"], to=h, name="a"),
         helper.make_node("Cast", ["r16"], ["y"], to=f, name="b"),
         helper.make_node("Cast", ["x"], ["x16"], to=h, name="c"),  # a Cast into fp16 work stays
         helper.make_node("Neg", ["x16"], ["z"], name="neg")],
        "g", [helper.make_tensor_value_info("x", f, [2])],
        [helper.make_tensor_value_info("y", f, [2]), helper.make_tensor_value_info("z", h, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert drop_cast_pairs(m) == 2
    assert [(n.name, list(n.output)) for n in m.graph.node] == [("relu", ["y"]), ("c", ["x16"]), ("neg", ["z"])]
    onnx.checker.check_model(m, full_check=True)


def test_topo_sort_puts_producers_first_and_keeps_a_sorted_graph() -> None:
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Neg", ["b"], ["c"], name="n2"), helper.make_node("Relu", ["x"], ["a"], name="n0"),
             helper.make_node("Abs", ["a"], ["b"], name="n1"), helper.make_node("Relu", ["x"], ["d"], name="n3")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", f, [2])],
                          [helper.make_tensor_value_info("c", f, [2]), helper.make_tensor_value_info("d", f, [2])])
    assert topo_sort(g)
    assert [n.name for n in g.node] == ["n0", "n1", "n2", "n3"]
    assert not topo_sort(g)  # already in order: untouched


def test_a_failed_step_is_cut_at_a_word_with_the_full_text_logged(caplog: pytest.LogCaptureFixture) -> None:
    long = ("[ONNXRuntimeError] : 1 : FAIL : Load model from /tmp/x/out.onnx failed:This is an invalid model. "
            + "Error: Duplicate definition of names (" + ", ".join(f"/m/encoder/layer.{i}/output/LayerNorm" for i in range(12))
            + ").")
    with caplog.at_level(logging.WARNING, logger="compiler.optimize.onnx_prepare"):
        text = one_line(RuntimeError(long))
    assert long in caplog.text  # the whole of it, for the server's log
    assert "[ONNXRuntimeError]" not in text and "/tmp/x" not in text
    assert text.startswith("RuntimeError: This is an invalid model") and text.endswith(" …")
    assert len(text) <= len("RuntimeError: ") + MAX_CAUSE + 2
    cut = text.removesuffix(" …").split()[-1]
    assert cut in [w.strip(",.()") for w in long.split()]  # a whole word, not a piece of one
    short = one_line(ValueError("Inferred shape and existing shape differ in dimension 0: (192) vs (1000)."))
    assert short == "ValueError: Inferred shape and existing shape differ in dimension 0: (192) vs (1000)"


def test_the_jobs_error_is_cut_at_a_word_too() -> None:
    from worker.messages import MAX_CHARS, public_message

    out = public_message("ORT's dynamic quantization failed on this model (" + "tensorname " * 100 + ")")
    assert out.endswith(" …") and len(out) <= MAX_CHARS + 1
    assert set(out.removesuffix(" …").split()[-40:]) == {"tensorname"}
