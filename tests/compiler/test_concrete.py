"""Concrete shapes written into the model before compile, shapes from inference and from the profiler's trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import frontends
from compiler.backends.ort import trace_shapes
from compiler.concrete import fix_onnx_inputs, observed_shapes
from compiler.errors import InputSpecError
from compiler.graph import Graph, Node, Value
from compiler.prepare import prepare


def _save(nodes: list, inputs: list, outputs: list, inits: list, path: Path) -> Path:
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    onnx.save(m, path)
    return path


def _shape_arith_model(path: Path) -> Path:
    """x [batch, seq, 8] -> Reshape to [batch * seq, 8] through Shape/Gather/Mul/Concat, then MatMul."""
    rng = np.random.default_rng(0)
    return _save(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i0"], ["b"]), helper.make_node("Gather", ["s", "i1"], ["t"]),
         helper.make_node("Mul", ["b", "t"], ["bt"]),
         helper.make_node("Concat", ["bt", "eight"], ["target"], axis=0),
         helper.make_node("Reshape", ["x", "target"], ["flat"]),
         helper.make_node("MatMul", ["flat", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0], np.int64), "i0"), numpy_helper.from_array(np.array([1], np.int64), "i1"),
         numpy_helper.from_array(np.array([8], np.int64), "eight"),
         numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")], path)


def test_fixed_input_dims_resolve_shape_arithmetic(tmp_path: Path) -> None:
    src = _shape_arith_model(tmp_path / "m.onnx")
    found = fix_onnx_inputs(src, tmp_path / "fixed.onnx", {"x": [2, 5, 8]})
    assert found["flat"] == ([10, 8], "float32") and found["y"] == ([10, 4], "float32")
    g = frontends.load(tmp_path / "fixed.onnx")
    assert g.values["x"].shape == [2, 5, 8] and g.values["y"].shape == [10, 4]


def test_trace_shapes_of_a_node_event() -> None:
    args = {"output_type_shape": [{"float": [1, 16, 160, 160]}, {"int64_t": [2]}, {"float": "?"}]}
    assert trace_shapes(args) == [([1, 16, 160, 160], "float32"), ([2], "int64"), None]
    # observed_shapes matches a node's non-empty outputs in order
    graph = Graph("g", "onnx", [Node("n", "n", "Split", inputs=["x"], outputs=["a", "", "b"])],
                  {"x": Value("x", None, "float32")}, ["x"], ["a", "b"])
    assert observed_shapes(graph, {"n": [[[1, 2], "float32"], [[3], "int64"]]}) == {"a": ([1, 2], "float32"),
                                                                                      "b": ([3], "int64")}


def _baked_reshape_model(path: Path) -> Path:
    """A traced export that baked seq = 64 in: x [batch, seq, 8] is reshaped to a constant [64, 8]."""
    rng = np.random.default_rng(0)
    return _save(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "target"], ["flat"]),
         helper.make_node("MatMul", ["flat", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 4])],
        [numpy_helper.from_array(np.array([64, 8], np.int64), "target"),
         numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")], path)


def test_prepare_sets_a_dim_the_model_requires(tmp_path: Path) -> None:
    src = _baked_reshape_model(tmp_path / "baked.onnx")
    plans_seen = []
    prep = prepare(src, frontends.load(src), tmp_path / "w", ["ort-cpu/host"], {}, {},
                   reload=lambda: frontends.load(src), on_plan=plans_seen.append)
    assert [p["x"].shape for p in plans_seen] == [[1, 128, 8], [1, 64, 8]]
    assert prep.plans["x"].set_by == "model" and "seq=64" in prep.plans["x"].note
    compiled, out = prep.compiled[0]
    assert out is not None and all(v.is_static for v in compiled.values.values() if v.name in ("flat", "y"))
    with pytest.raises(InputSpecError, match=r"Reshape '.*' gets 1x100x8 .* must give 64x8.*'x'") as e:
        prepare(src, frontends.load(src), tmp_path / "w2", ["ort-cpu/host"], {"x": [1, 100, 8]}, {},
                reload=lambda: frontends.load(src))
    # the user set seq: the error says the size the model needs
    assert str(e.value).endswith("The model needs seq=64 (the exporter kept that size): e.g. --input x=1x64x8.")


def test_an_opset_6_model_is_converted_to_the_opset_ort_runs(tmp_path: Path) -> None:
    """The onnx wheel's pytorch-converted test files are opset 6: ORT has no AveragePool(1) kernel and refused
    them ("Could not find an implementation"); the concrete copy is converted to opset 7 and compiles."""
    g = helper.make_graph([helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2, 2])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)])
    m.ir_version = 3
    src = tmp_path / "old.onnx"
    onnx.save(m, src)
    prep = prepare(src, frontends.load(src), tmp_path / "w", ["ort-cpu/host"], {}, {},
                   reload=lambda: frontends.load(src))
    compiled, out = prep.compiled[0]
    assert out is not None and [n.op_type for n in compiled.nodes] == ["AveragePool"]
    assert compiled.values["y"].shape == [1, 3, 7, 7]


def test_an_opset_6_prelu_keeps_its_per_channel_slope() -> None:
    """Opset 6 applies a [C] PRelu slope per channel; opset 7 broadcasts it from the right, and onnx's converter
    leaves it [C]: the onnx wheel's PReLU_*_multiparam files then failed in ONNX Runtime."""
    import onnxruntime as ort

    from compiler.opset import convert_opset

    slope = np.array([0.1, 0.2, 0.3], np.float32)
    g = helper.make_graph([helper.make_node("PRelu", ["x", "s"], ["y"], name="prelu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(slope, "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)])
    m.ir_version = 3
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    sess = ort.InferenceSession(convert_opset(m, 7).SerializeToString(), providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": x})[0]
    assert np.allclose(y, np.where(x > 0, x, x * slope[None, :, None, None]))


def _shared_weight_branches(path: str) -> None:
    """x -> MatMul(W) + b -> Reshape to a shape computed with Mod (which ONNX's data propagation does not follow),
    twice: the second branch reads W and b through Identity, as the TorchScript exporter writes weights it found
    equal (tied or shared layers, a cross-attention's keys and values of one memory in every decoder layer)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.ones((16, 8), np.float32), "W"), numpy_helper.from_array(
        np.zeros(8, np.float32), "b")] + [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
                                          {"c3": [3], "c2": [2], "zero": [0], "rest": [-1]}.items()]
    nodes = [helper.make_node("Identity", ["W"], ["W2"]), helper.make_node("Identity", ["b"], ["b2"])]
    for i, (w, b) in enumerate((("W", "b"), ("W2", "b2"))):
        nodes += [helper.make_node("MatMul", ["x", w], [f"m{i}"], f"mm{i}"),
                  helper.make_node("Add", [f"m{i}", b], [f"a{i}"], f"add{i}"),
                  helper.make_node("Shape", [f"a{i}"], [f"s{i}"], f"shape{i}"),
                  helper.make_node("Mod", ["c3", "c2"], [f"end{i}"], f"mod{i}"),
                  helper.make_node("Slice", [f"s{i}", "zero", f"end{i}"], [f"head{i}"], f"slice{i}"),
                  helper.make_node("Concat", [f"head{i}", "rest"], [f"t{i}"], f"concat{i}", axis=0),
                  helper.make_node("Reshape", [f"a{i}", f"t{i}"], [f"y{i}"], f"reshape{i}")]
    nodes.append(helper.make_node("Concat", ["y0", "y1"], ["out"], "join", axis=0))  # no branch is a graph output
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_shapes_resolved_by_onnx_runtime_reach_both_copies_of_a_shared_weight_branch(tmp_path: Path) -> None:
    """The fold that resolves shapes for predicted targets must not merge the two branches (ORT's CSE kept only
    the first, so every node of the second stayed 'work unknown' on every device target)."""
    from compiler.concrete import apply_plan, unknown_values
    from compiler.frontends import onnx as onnx_frontend
    from compiler.input_plan import plan_inputs

    path = tmp_path / "shared.onnx"
    _shared_weight_branches(str(path))
    source = onnx_frontend.load(path)
    assert "y1" in unknown_values(source)  # ONNX inference alone does not resolve the Reshape
    apply_plan(path, source, plan_inputs(source), tmp_path)
    assert source.values["y0"].shape == source.values["y1"].shape == [1, 32]


def _data_dependent_model(path: Path) -> Path:
    """x[1, 64] -> NonZero(x > 0) -> Transpose -> GatherND(x): how many survive depends on x's values (a
    detector's score threshold before NMS)."""
    zero = numpy_helper.from_array(np.zeros(1, np.float32), "zero")
    nodes = [helper.make_node("Greater", ["x", "zero"], ["mask"], "gt"),
             helper.make_node("NonZero", ["mask"], ["nz"], "nonzero"),
             helper.make_node("Transpose", ["nz"], ["idx"], "transpose", perm=[1, 0]),
             helper.make_node("GatherND", ["x", "idx"], ["kept"], "gather"),
             helper.make_node("ReduceSum", ["kept"], ["y"], "sum", keepdims=1)]
    return _save(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [zero], path)


def test_predicting_a_device_target_sees_data_dependent_shapes_in_one_run(tmp_path: Path) -> None:
    """No profile is made for a device target: the model runs once on ORT so NonZero and what follows it have
    known work (torchvision's whole SSD300: 1,027 tasks of unknown work on every device target before)."""
    from simulator.model import compile_for

    path = _data_dependent_model(tmp_path / "nz.onnx")
    source, compiled, _ = compile_for(path, "ort-qnn/snapdragon-8g3", tmp_path / "w")
    kept = compiled.values["kept"].shape
    assert compiled.values["nz"].is_static and kept is not None and len(kept) == 1 and 0 <= kept[0] <= 64
    assert source.values["idx"].shape == [kept[0], 2]


def test_a_runtime_that_cannot_run_leaves_data_dependent_shapes_unknown(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The one run is best effort: where ONNX Runtime cannot run the model here, the prediction is still made, with
    those tasks of unknown work (as before the run was added), never an error."""
    import compiler.backends as backends
    from simulator.model import compile_for

    real = backends.for_target

    def refusing(target: str) -> object:
        backend = real(target)
        if target != "ort-cpu/host":
            return backend

        class Refuses:
            def __getattr__(self, name: str) -> object:
                return getattr(backend, name)

            def profile(self, *_: object, **__: object) -> object:
                raise ImportError("onnxruntime cannot run here")
        return Refuses()

    monkeypatch.setattr(backends, "for_target", refusing)
    path = _data_dependent_model(tmp_path / "nz.onnx")
    _, compiled, _ = compile_for(path, "ort-qnn/snapdragon-8g3", tmp_path / "w")
    assert not compiled.values["nz"].is_static
